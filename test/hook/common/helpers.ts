// Builders for hook requests in tests: the design's Redis, pods with a role/readiness/link, and
// children maps in either hook version's key shape.
import { readFileSync } from 'node:fs';
import { LINK_ANNOTATION, ROLE_LABEL, podSelectorLabels } from '../../../src/api/labels.ts';
import { parseHookRequest, sync, type HookRequest, type KubeObject, type ObjectMap } from '../../../src/hook/index.ts';

export type Json = Record<string, unknown>;

export const NS = 'default';
export const UID = '6f1c2b9e-3d4a-4c8e-9b7f-2a1d5e8c4b10';

/** The design article's Redis, verbatim. */
export function designSpec(): Json {
  return {
    version: '7.2',
    master: { replicas: 1 },
    replicas: 2,
    persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '10Gi' },
    resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '512Mi', cpu: '500m' } },
  };
}

export function redis(
  spec: unknown = designSpec(),
  extra: { name?: string; status?: unknown; metadata?: Json } = {},
): Json {
  return {
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name: extra.name ?? 'my-redis', namespace: NS, uid: UID, generation: 1, ...extra.metadata },
    spec,
    ...(extra.status !== undefined ? { status: extra.status } : {}),
  };
}

export type KeyShape = 'v1' | 'v2';

/** A children/related map as Metacontroller builds it. */
export function objectMap(
  objects: readonly KubeObject[],
  shape: KeyShape = 'v2',
  emptyGroups: string[] = [],
): ObjectMap {
  const map: ObjectMap = {};
  for (const g of emptyGroups) map[g] = {};
  for (const o of objects) {
    const group = `${o.kind}.${o.apiVersion}`;
    const key = shape === 'v2' ? `${o.metadata.namespace ?? ''}/${o.metadata.name}` : o.metadata.name;
    (map[group] ??= {})[key] = o;
  }
  return map;
}

export interface PodOptions {
  name: string;
  role?: 'master' | 'replica' | undefined;
  ready?: boolean;
  link?: 'up' | 'down' | undefined;
  ip?: string | undefined;
  phase?: string;
  instance?: string;
  namespace?: string;
  readySince?: string;
  terminating?: boolean;
}

export function pod(o: PodOptions): KubeObject {
  const set = o.name.replace(/-[0-9]+$/, '');
  const labels: Record<string, string> = {
    ...podSelectorLabels(o.instance ?? 'my-redis'),
    'app.kubernetes.io/component': set.endsWith('-master') ? 'master-set' : 'replica-set',
  };
  if (o.role !== undefined) labels[ROLE_LABEL] = o.role;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: o.name,
      namespace: o.namespace ?? NS,
      labels,
      annotations: o.link !== undefined ? { [LINK_ANNOTATION]: o.link } : {},
      ...(o.terminating ? { deletionTimestamp: '2025-01-15T11:00:00Z' } : {}),
    },
    spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] },
    status: {
      phase: o.phase ?? 'Running',
      ...(o.ip !== undefined ? { podIP: o.ip } : {}),
      conditions: [
        {
          type: 'Ready',
          status: o.ready === false ? 'False' : 'True',
          lastTransitionTime: o.readySince ?? '2025-01-15T10:00:31Z',
        },
      ],
    },
  };
}

/** The three healthy pods of the design. */
export function healthyPods(): KubeObject[] {
  return [
    pod({ name: 'my-redis-master-0', role: 'master', link: 'up', ip: '10.244.1.12' }),
    pod({ name: 'my-redis-replica-0', role: 'replica', link: 'up', ip: '10.244.2.9' }),
    pod({ name: 'my-redis-replica-1', role: 'replica', link: 'up', ip: '10.244.3.15' }),
  ];
}

export function request(opts: {
  parent?: Json;
  children?: readonly KubeObject[];
  related?: readonly KubeObject[];
  shape?: KeyShape;
  finalizing?: boolean;
}): HookRequest {
  const body = {
    controller: { kind: 'CompositeController' },
    parent: opts.parent ?? redis(),
    children: objectMap(opts.children ?? [], opts.shape),
    related: objectMap(opts.related ?? [], opts.shape),
    finalizing: opts.finalizing ?? false,
  };
  const parsed = parseHookRequest(body);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.request;
}

/** The desired children for a spec, as a fresh sync with nothing observed returns them. */
export function desiredFor(spec: unknown = designSpec(), name?: string): KubeObject[] {
  return sync(request({ parent: redis(spec, name !== undefined ? { name } : {}) })).children;
}

/** Paths of the empty lists in a value (the API server stores none of them). */
export function emptyLists(value: unknown, at = ''): string[] {
  if (Array.isArray(value)) return value.length === 0 ? [at] : value.flatMap((v, i) => emptyLists(v, `${at}[${i}]`));
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => emptyLists(v, `${at}.${k}`));
  return [];
}

export function loadFixture(): Json {
  return JSON.parse(readFileSync(new URL('../../fixtures/sync-request.json', import.meta.url), 'utf8')) as Json;
}

export function fixtureRequest(mutate?: (body: Json) => void): HookRequest {
  const body = loadFixture();
  mutate?.(body);
  const parsed = parseHookRequest(body);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.request;
}

export function find(children: readonly KubeObject[], kind: string, name: string): KubeObject {
  const found = children.find((c) => c.kind === kind && c.metadata.name === name);
  if (found === undefined)
    throw new Error(`no ${kind} ${name} among ${children.map((c) => `${c.kind}/${c.metadata.name}`).join(', ')}`);
  return found;
}

/** Reads a nested field for assertions. */
export function get(value: unknown, ...path: Array<string | number>): unknown {
  let current: unknown = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

export function condition(status: unknown, type: string): Json | undefined {
  const list = get(status, 'conditions');
  return Array.isArray(list) ? (list.find((c) => get(c, 'type') === type) as Json | undefined) : undefined;
}
