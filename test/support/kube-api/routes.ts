// Where a request goes: a URL path is a resource target (group, version, plural, namespace, name,
// subresource; legacy /watch/ paths too), a discovery document (/api, /apis, /apis/<g>[/<v>],
// /version) or a health check, all derived from the resource table.
// Invariant: a path the real server would not serve is 'missing' (a 404 Status), including a
// namespaced name without a namespace and a subresource the kind does not have.
import type { ResourceDef, ResourceTable } from './resources.ts';

export interface Target {
  def: ResourceDef;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  legacyWatch: boolean;
}

export type Route = { kind: 'resource'; target: Target } | { kind: 'json'; body: unknown } | { kind: 'text'; body: string } | { kind: 'missing' };

export function routeOf(pathname: string, table: ResourceTable, at: { readonly host: string; readonly port: number }): Route {
  const seg = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (seg.length === 0) return { kind: 'json', body: { paths: ['/api', '/api/v1', '/apis', '/version', '/healthz', '/readyz', '/livez'] } };
  if (seg.length === 1 && ['healthz', 'readyz', 'livez'].includes(seg[0]!)) return { kind: 'text', body: 'ok' };
  if (seg[0] === 'version' && seg.length === 1) {
    return {
      kind: 'json',
      body: { major: '1', minor: '33', gitVersion: 'v1.33.0-redis-operator-stand-in', platform: `${process.platform}/${process.arch}` },
    };
  }
  let group: string;
  let version: string | undefined;
  let rest: string[];
  if (seg[0] === 'api') {
    if (seg.length === 1)
      return {
        kind: 'json',
        body: {
          kind: 'APIVersions',
          versions: ['v1'],
          serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `${at.host}:${at.port}` }],
        },
      };
    group = '';
    version = seg[1];
    rest = seg.slice(2);
  } else if (seg[0] === 'apis') {
    if (seg.length === 1) return { kind: 'json', body: groupList(table) };
    group = seg[1]!;
    if (seg.length === 2) {
      const g = groupList(table).groups.find((x) => x.name === group);
      return g ? { kind: 'json', body: { kind: 'APIGroup', apiVersion: 'v1', ...g } } : { kind: 'missing' };
    }
    version = seg[2];
    rest = seg.slice(3);
  } else {
    return { kind: 'missing' };
  }
  const defs = table.all.filter((d) => d.group === group && d.version === version);
  if (defs.length === 0) return { kind: 'missing' };
  if (rest.length === 0) return { kind: 'json', body: resourceList(group, version!, defs) };
  let legacyWatch = false;
  if (rest[0] === 'watch') {
    legacyWatch = true;
    rest = rest.slice(1);
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3 && defs.some((d) => d.namespaced && d.resource === rest[2])) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const def = defs.find((d) => d.resource === rest[0]);
  if (!def || rest.length > 3) return { kind: 'missing' };
  const name = rest[1];
  const subresource = rest[2];
  if (def.namespaced && name !== undefined && namespace === undefined) return { kind: 'missing' };
  if (!def.namespaced && namespace !== undefined) return { kind: 'missing' };
  if (subresource !== undefined && !((subresource === 'status' && def.statusSubresource) || (subresource === 'scale' && def.scale))) return { kind: 'missing' };
  return { kind: 'resource', target: { def, namespace, name, subresource, legacyWatch } };
}

function groupList(table: ResourceTable) {
  const groups = new Map<string, string[]>();
  for (const d of table.all) {
    if (!d.group) continue;
    const versions = groups.get(d.group) ?? [];
    if (!versions.includes(d.version)) versions.push(d.version);
    groups.set(d.group, versions);
  }
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [...groups].map(([name, versions]) => ({
      name,
      versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })),
      preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] },
    })),
  };
}

function resourceList(group: string, version: string, defs: ResourceDef[]) {
  const verbs = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
  const resources: Record<string, unknown>[] = [];
  for (const d of defs) {
    resources.push({
      name: d.resource,
      singularName: d.singular,
      namespaced: d.namespaced,
      kind: d.kind,
      verbs,
      ...(d.shortNames ? { shortNames: d.shortNames } : {}),
    });
    if (d.statusSubresource)
      resources.push({ name: `${d.resource}/status`, singularName: '', namespaced: d.namespaced, kind: d.kind, verbs: ['get', 'patch', 'update'] });
    if (d.scale)
      resources.push({
        name: `${d.resource}/scale`,
        singularName: '',
        namespaced: d.namespaced,
        group: 'autoscaling',
        version: 'v1',
        kind: 'Scale',
        verbs: ['get', 'patch', 'update'],
      });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
}
