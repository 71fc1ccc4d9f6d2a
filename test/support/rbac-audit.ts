// The operator's RBAC against the table of the sidecar's calls (src/sidecar/adapters/kube/api-calls.ts):
// what the roles must grant, which client-node methods the sources call, and, for the real API
// server, the access reviews an install must pass (each call allowed where it lands, every other
// verb and place refused) with one `kubectl create` of SubjectAccessReviews.
// Invariant: expectations are computed from the table alone, so a row added without its grant, or
// a grant left without a row, fails whoever uses them.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as client from '@kubernetes/client-node';
import {
  RESOURCE_VERBS,
  SIDECAR_API_CALLS,
  type ApiCall,
  type ApiScope,
  type Verb,
} from '../../src/sidecar/adapters/kube/api-calls.ts';

type Obj = Record<string, any>;

/** The roles each scope's grants live in (manifests/rbac.yaml, the chart's templates/rbac.yaml). */
export const SCOPE_ROLES: Record<ApiScope, { kind: 'ClusterRole' | 'Role'; name: string }> = {
  watched: { kind: 'ClusterRole', name: 'redis-operator-sidecar' },
  cluster: { kind: 'ClusterRole', name: 'redis-operator-sidecar-cluster-scoped' },
  operator: { kind: 'Role', name: 'redis-operator-leader-election' },
};

const grantKey = (group: string, resource: string, verb: string) => `${group}/${resource}:${verb}`;

/** "group/resource:verb" the table needs in one scope, sorted. */
export function neededGrants(scope: ApiScope, calls: readonly ApiCall[] = SIDECAR_API_CALLS): string[] {
  const out = new Set<string>();
  for (const c of calls.filter((c) => c.scope === scope))
    for (const v of c.verbs) out.add(grantKey(c.group, c.resource, v));
  return [...out].sort();
}

/** "group/resource:verb" a role grants, sorted (a rule with resourceNames or URLs fails: none are expected). */
export function roleGrants(role: Obj): string[] {
  const out = new Set<string>();
  for (const rule of (role['rules'] ?? []) as Obj[]) {
    if (rule['resourceNames'] !== undefined || rule['nonResourceURLs'] !== undefined)
      throw new Error(`${role['metadata']['name']}: unexpected ${JSON.stringify(rule)}`);
    for (const g of rule['apiGroups'] as string[])
      for (const r of rule['resources'] as string[])
        for (const v of rule['verbs'] as string[]) out.add(grantKey(g, r, v));
  }
  return [...out].sort();
}

/**
 * client-node's generic client: its methods (create, delete, list, ...) are named like any
 * Map's, so a source scan cannot find its calls; the sidecar must not use it (the test says so).
 */
export const GENERIC_CLIENT = 'KubernetesObjectApi';

/** Every method of client-node's generated API classes (CoreV1Api, AppsV1Api, CustomObjectsApi, ...). */
export function clientApiMethods(): Set<string> {
  const out = new Set<string>();
  for (const [name, value] of Object.entries(client)) {
    if (!/Api$/.test(name) || name === GENERIC_CLIENT || typeof value !== 'function') continue;
    for (const m of Object.getOwnPropertyNames((value as { prototype: object }).prototype))
      if (m !== 'constructor') out.add(m);
  }
  return out;
}

/** The .ts files under `dir`. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** method -> the files of `dir` that call it (`.method(`), for every client-node API method called there. */
export function apiMethodsCalled(dir: string): Map<string, string[]> {
  const methods = clientApiMethods();
  const out = new Map<string, string[]>();
  for (const file of sourceFiles(dir)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\.([A-Za-z]\w*)\s*\(/g)) {
      const name = m[1]!;
      if (!methods.has(name)) continue;
      const files = out.get(name) ?? [];
      if (!files.includes(file)) files.push(file);
      out.set(name, files);
    }
  }
  return out;
}

// ---- access reviews

/** One question to the API server's authorizer, with the answer an install must give. */
export interface AccessCheck {
  verb: string;
  group: string;
  /** Plural, with `/subresource`. */
  resource: string;
  /** Undefined: cluster-scoped, or a namespaced resource across all namespaces. */
  namespace?: string;
  allowed: boolean;
  why: string;
}

/** An install: which namespaces the sidecar's namespaced rules are bound in ('all': a ClusterRoleBinding). */
export interface InstallShape {
  watched: 'all' | readonly string[];
  operatorNamespace: string;
  /** Namespaces to probe that are not watched (for 'all', probes that every namespace is allowed). */
  elsewhere: readonly string[];
}

const where = (ns: string | undefined) => (ns === undefined ? 'across all namespaces' : `in ${ns}`);

/**
 * Every check the table implies for an install: each call allowed where it lands, refused elsewhere, and every other
 * verb refused.
 */
export function accessChecks(install: InstallShape, calls: readonly ApiCall[] = SIDECAR_API_CALLS): AccessCheck[] {
  const checks: AccessCheck[] = [];
  const asked = new Set<string>();
  // Two calls of one resource and verb (a list per namespace, or across all) ask the same question once.
  const add = (c: Omit<AccessCheck, 'why'>, why: string) => {
    const key = `${c.verb} ${c.group}/${c.resource} ${c.namespace ?? ''}`;
    if (asked.has(key)) return;
    asked.add(key);
    checks.push({
      ...c,
      why: `${c.allowed ? 'may' : 'may not'} ${c.verb} ${c.resource} ${where(c.namespace)}: ${why}`,
    });
  };
  const watched = install.watched === 'all' ? [install.operatorNamespace, ...install.elsewhere] : install.watched;
  const unwatched =
    install.watched === 'all'
      ? []
      : [...install.elsewhere, install.operatorNamespace].filter((n) => !watched.includes(n));
  for (const call of calls) {
    for (const verb of call.verbs) {
      const base = { verb, group: call.group, resource: call.resource };
      if (call.scope === 'cluster') add({ ...base, allowed: true }, call.caller);
      if (call.scope === 'operator') {
        add({ ...base, namespace: install.operatorNamespace, allowed: true }, call.caller);
        for (const ns of install.elsewhere)
          add({ ...base, namespace: ns, allowed: false }, 'Leases only in the operator namespace');
        add({ ...base, allowed: false }, 'Leases only in the operator namespace');
      }
      if (call.scope === 'watched') {
        for (const ns of watched) add({ ...base, namespace: ns, allowed: true }, call.caller);
        for (const ns of unwatched) add({ ...base, namespace: ns, allowed: false }, 'not a watched namespace');
        // WATCH_NAMESPACES empty: the informers list and watch every namespace at once.
        if (verb === 'list' || verb === 'watch')
          add(
            { ...base, allowed: install.watched === 'all' },
            install.watched === 'all' ? call.caller : 'a list namespace by namespace only',
          );
      }
    }
  }
  // Every verb nothing calls, on each resource the table names, is refused everywhere.
  const resources = new Map<string, { group: string; resource: string; scope: ApiScope; verbs: Set<Verb> }>();
  for (const c of calls) {
    const k = `${c.group}/${c.resource}`;
    const r = resources.get(k) ?? { group: c.group, resource: c.resource, scope: c.scope, verbs: new Set<Verb>() };
    for (const v of c.verbs) r.verbs.add(v);
    resources.set(k, r);
  }
  for (const r of resources.values())
    for (const verb of RESOURCE_VERBS.filter((v) => !r.verbs.has(v))) {
      const places =
        r.scope === 'cluster'
          ? [undefined]
          : r.scope === 'operator'
            ? [install.operatorNamespace]
            : [...watched, undefined];
      for (const namespace of places)
        add({ verb, group: r.group, resource: r.resource, namespace, allowed: false }, 'no call needs it');
    }
  return checks;
}

/** Calls the sidecar never makes, on resources it never names: each refused in a watched namespace and across all. */
export const NEVER: ReadonlyArray<Pick<AccessCheck, 'verb' | 'group' | 'resource'>> = [
  { verb: 'get', group: '', resource: 'configmaps' },
  { verb: 'list', group: '', resource: 'services' },
  { verb: 'create', group: '', resource: 'serviceaccounts/token' },
  { verb: 'create', group: '', resource: 'pods/exec' },
  { verb: 'create', group: '', resource: 'pods/eviction' },
  { verb: 'create', group: '', resource: 'pods' },
  { verb: 'update', group: 'redis.example.com', resource: 'redises/status' },
  { verb: 'patch', group: 'redis.example.com', resource: 'redises/status' },
  { verb: 'update', group: 'redis.example.com', resource: 'redises/finalizers' },
  { verb: 'patch', group: 'redis.example.com', resource: 'redisclusters/status' },
  { verb: 'create', group: 'redis.example.com', resource: 'redisbackups' },
  { verb: 'create', group: 'batch', resource: 'jobs' },
  { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings' },
  { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'roles' },
  { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
  { verb: 'impersonate', group: '', resource: 'users' },
  { verb: 'impersonate', group: '', resource: 'serviceaccounts' },
  { verb: 'update', group: 'apps', resource: 'statefulsets/scale' },
  { verb: 'create', group: 'events.k8s.io', resource: 'events' },
  { verb: 'list', group: '', resource: 'nodes' },
  { verb: 'list', group: '', resource: 'namespaces' },
];

/** The answers of the API server's authorizer for `user` (its ServiceAccount groups included), in the order asked. */
export async function reviewAccess(
  kubectl: (args: string[], input?: string) => Promise<string>,
  user: string,
  checks: readonly AccessCheck[],
): Promise<boolean[]> {
  const ns = user.split(':')[2] ?? '';
  const items = checks.map((c) => {
    const [resource, subresource] = c.resource.split('/');
    return {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
        resourceAttributes: {
          verb: c.verb,
          group: c.group,
          resource,
          ...(subresource ? { subresource } : {}),
          ...(c.namespace ? { namespace: c.namespace } : {}),
        },
      },
    };
  });
  // kubectl creates the List's items one by one and prints each object (pretty JSON, one after another).
  const out = await kubectl(
    ['create', '-o', 'json', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
  );
  const answered = out
    .trim()
    .split(/\n(?=\{)/)
    .map((text) => JSON.parse(text) as Obj);
  if (answered.length !== checks.length)
    throw new Error(`asked ${checks.length} access reviews, got ${answered.length} answers`);
  answered.forEach((r, i) => {
    const asked = r['spec']['resourceAttributes'] as Obj;
    if (asked['verb'] !== checks[i]!.verb || (asked['namespace'] ?? undefined) !== checks[i]!.namespace)
      throw new Error(`answer ${i} is not about ${checks[i]!.why}`);
  });
  return answered.map((r) => r['status']?.['allowed'] === true);
}
