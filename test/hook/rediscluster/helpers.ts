// Builders for RedisCluster hook requests in tests: the design article's RedisCluster, cluster
// pods with the node record the sidecar writes, and shard StatefulSets as the API server would
// return them after the hook's last sync (with Metacontroller's last-applied annotation).
import {
  CLUSTER_NODE_ANNOTATION,
  clusterNodeRecord,
  shardPodSelectorLabels,
  type ClusterNodeRecord,
} from '../../../src/api/rediscluster-names.ts';
import { COMPONENT_LABEL, REVISION_LABEL, ROLE_LABEL } from '../../../src/api/labels.ts';
import { LAST_APPLIED_ANNOTATION } from '../../../src/hook/common/observed.ts';
import {
  parseHookRequest,
  syncRedisCluster,
  type HookRequest,
  type KubeObject,
  type RedisClusterResponse,
} from '../../../src/hook/index.ts';
import { NS, objectMap, UID, type Json, type KeyShape } from '../common/helpers.ts';

export { NS, UID, type Json };
export const NAME = 'order-cache';
export const AT = '2026-12-01T10:00:00Z';

/** The design article's RedisCluster spec, verbatim. */
export function articleSpec(): Json {
  return {
    version: '7.0',
    master: { replicas: 3 },
    replicas: 2,
    autoscaling: { enabled: true, minReplicas: 2, maxReplicas: 5, targetMemoryUtilization: 70 },
    sentinel: { enabled: true, replicas: 3, downAfterMilliseconds: 5000, failoverTimeout: 10000 },
    backup: {
      schedule: '0 */6 * * *',
      retention: 7,
      storage: { s3: { bucket: 'redis-backups', region: 'us-east-1' } },
    },
    monitoring: {
      enabled: true,
      alerts: [
        { name: 'HighMemoryUsage', threshold: 80, duration: '5m' },
        { name: 'ReplicationLag', threshold: '10s' },
      ],
    },
  };
}

/**
 * The article's spec with a memory limit (maxmemory 80% of 1 GiB) and no backup: capacity and autoscaling can be
 * measured.
 */
export function limitedSpec(overrides: Json = {}): Json {
  const { backup: _backup, ...rest } = articleSpec();
  return { ...rest, resources: { limits: { memory: '1Gi' } }, ...overrides };
}

export const MAXMEMORY = Math.floor(1024 ** 3 * 0.8);

export function redisCluster(
  spec: unknown = articleSpec(),
  extra: { name?: string; status?: unknown; annotations?: Record<string, string> } = {},
): Json {
  return {
    apiVersion: 'redis.example.com/v1',
    kind: 'RedisCluster',
    metadata: {
      name: extra.name ?? NAME,
      namespace: NS,
      uid: UID,
      generation: 1,
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec,
    ...(extra.status !== undefined ? { status: extra.status } : {}),
  };
}

/** A 40-hex node id made from a short tag (n0-0 -> deterministic). */
export function nodeId(tag: string): string {
  return Buffer.from(tag).toString('hex').padEnd(40, '0').slice(0, 40);
}

export interface RedisClusterPodOptions {
  shard: number;
  ordinal: number;
  ready?: boolean;
  terminating?: boolean;
  revision?: string;
  /** The node record; null writes none, a string writes it verbatim (an unreadable record). */
  record?: Partial<ClusterNodeRecord> | null | string;
  name?: string;
}

export function podName(shard: number, ordinal: number, name = NAME): string {
  return `${name}-shard-${shard}-${ordinal}`;
}

/** A node record for pod (shard, ordinal): a master of `slots`, or a replica of the shard's pod 0. */
export function record(shard: number, ordinal: number, r: Partial<ClusterNodeRecord> = {}): ClusterNodeRecord {
  const master = (r.role ?? (ordinal === 0 ? 'master' : 'replica')) === 'master';
  return {
    id: nodeId(`n${shard}-${ordinal}`),
    role: master ? 'master' : 'replica',
    slots: [],
    masterId: master ? null : nodeId(`n${shard}-0`),
    linkUp: true,
    usedMemory: 1024 ** 2,
    maxMemory: MAXMEMORY,
    keys: 0,
    at: AT,
    ...r,
  };
}

export function redisClusterPod(o: RedisClusterPodOptions): KubeObject {
  const annotations: Record<string, string> = {};
  const r =
    o.record === undefined
      ? record(o.shard, o.ordinal)
      : o.record === null || typeof o.record === 'string'
        ? o.record
        : record(o.shard, o.ordinal, o.record);
  if (typeof r === 'string') annotations[CLUSTER_NODE_ANNOTATION] = r;
  else if (r !== null) annotations[CLUSTER_NODE_ANNOTATION] = clusterNodeRecord(r);
  const labels: Record<string, string> = {
    ...shardPodSelectorLabels(NAME, o.shard),
    [COMPONENT_LABEL]: 'shard',
    [REVISION_LABEL]: o.revision ?? `${NAME}-shard-${o.shard}-rev1`,
  };
  if (r !== null && typeof r !== 'string') labels[ROLE_LABEL] = r.role;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: o.name ?? podName(o.shard, o.ordinal),
      namespace: NS,
      labels,
      annotations,
      ...(o.terminating ? { deletionTimestamp: AT } : {}),
    },
    spec: { containers: [{ name: 'redis', image: 'redis:7.0' }] },
    status: {
      phase: 'Running',
      podIP: `10.0.${o.shard}.${o.ordinal + 10}`,
      conditions: [{ type: 'Ready', status: o.ready === false ? 'False' : 'True', lastTransitionTime: AT }],
    },
  };
}

/** Slots of shard i when `shards` share the 16384 evenly (as redis-cli --cluster create would). */
export function evenSlots(i: number, shards: number): Array<[number, number]> {
  const per = Math.floor(16384 / shards);
  const start = i * per;
  const end = i === shards - 1 ? 16383 : start + per - 1;
  return [[start, end]];
}

/** A healthy cluster's pods: `shards` shards of 1 + replicas pods, pod 0 the master of its even share. */
export function healthyRedisClusterPods(shards = 3, replicas = 2, usedMemory = 1024 ** 2): KubeObject[] {
  const pods: KubeObject[] = [];
  for (let s = 0; s < shards; s++) {
    for (let o = 0; o <= replicas; o++)
      pods.push(
        redisClusterPod({
          shard: s,
          ordinal: o,
          record: o === 0 ? { slots: evenSlots(s, shards), usedMemory, keys: 100 } : { usedMemory },
        }),
      );
  }
  return pods;
}

export function request(opts: {
  parent?: Json;
  children?: readonly KubeObject[];
  related?: readonly KubeObject[];
  shape?: KeyShape;
  finalizing?: boolean;
}): HookRequest {
  const parsed = parseHookRequest({
    controller: { kind: 'CompositeController' },
    parent: opts.parent ?? redisCluster(),
    children: objectMap(opts.children ?? [], opts.shape),
    related: objectMap(opts.related ?? [], opts.shape),
    finalizing: opts.finalizing ?? false,
  });
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.request;
}

/**
 * The children a sync returns, as the API server would hold them afterwards: the last-applied
 * annotation, a generation its controller has seen, and a StatefulSet's update revision.
 */
export function applied(children: readonly KubeObject[]): KubeObject[] {
  return children.map((c) => {
    const observed: KubeObject = {
      ...structuredClone(c),
      metadata: {
        ...structuredClone(c.metadata),
        generation: 1,
        annotations: { ...(c.metadata.annotations ?? {}), [LAST_APPLIED_ANNOTATION]: JSON.stringify(c) },
      },
    };
    if (c.kind === 'StatefulSet')
      observed['status'] = {
        observedGeneration: 1,
        updateRevision: `${c.metadata.name}-rev1`,
        replicas: (c['spec'] as Json)['replicas'],
      };
    return observed;
  });
}

/** One sync of `spec` with nothing observed, then its children as observed. */
export function observedFor(spec: unknown = articleSpec(), pods: readonly KubeObject[] = []): KubeObject[] {
  return applied(syncRedisCluster(request({ parent: redisCluster(spec), related: pods })).children);
}

export function sync(opts: Parameters<typeof request>[0]): RedisClusterResponse {
  return syncRedisCluster(request(opts));
}

export function named(children: readonly KubeObject[]): string[] {
  return children.map((c) => `${c.kind}/${c.metadata.name}`);
}
