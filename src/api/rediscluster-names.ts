// The names the RedisCluster hook and the sidecar agree on: kind, labels, annotations and their
// record formats, child names, ports. Like labels.ts for Redis, changing a value here is an API
// change for running clusters.
// Invariants: the sidecar is the only writer of the node record and the role label on pods and
// of the reshard record on the RedisCluster; the hook only reads them (status is computed from
// what the pods say). Cluster pods carry app.kubernetes.io/name=redis-cluster, never `redis`, so
// the Redis replication manager (which lists name=redis) can never act on a cluster node.
import { DATA_MOUNT, GROUP, INSTANCE_LABEL, MANAGED_BY, MANAGED_BY_LABEL, NAME_LABEL } from './labels.ts';

export const REDIS_CLUSTER_KIND = 'RedisCluster';
export const REDIS_CLUSTER_PLURAL = 'redisclusters';
export const REDIS_CLUSTER_SINGULAR = 'rediscluster';
export const REDIS_CLUSTER_SHORT_NAMES = ['rdc'];

/** app.kubernetes.io/name of every cluster pod. */
export const REDIS_CLUSTER_APP_NAME = 'redis-cluster';
/** On every pod and StatefulSet of one shard: its index. Static (set by the hook); the role moves. */
export const SHARD_LABEL = `${GROUP}/shard`;
/** The cluster bus (node-to-node gossip and failover votes): the data port + 10000, Redis' default. */
export const CLUSTER_BUS_PORT = 16379;
/** Container port names of a cluster pod: `redis` (6379, as on Redis pods) and this one (16379). */
export const CLUSTER_BUS_PORT_NAME = 'cluster-bus';
/** app.kubernetes.io/component of the shard StatefulSets and their pods (the shard label tells them apart). */
export const COMPONENT_SHARD = 'shard';

/**
 * The node's cluster state file (nodes.conf), relative to the data directory: redis.conf says
 * `cluster-config-file nodes.conf` after `dir`, which Redis resolves there, so the node keeps its
 * id and view of the cluster across restarts exactly as long as the data volume lives.
 */
export const NODES_CONF = 'nodes.conf';
export const NODES_CONF_PATH = `${DATA_MOUNT}/${NODES_CONF}`;

/**
 * Longest RedisCluster name: the backup CronJob of shard 63, <name>-shard-63-backup, must stay
 * within 52 characters (a CronJob's Jobs add 11 and a Job name must fit a label value), which
 * also keeps <name>-shard-<i> plus the StatefulSet revision hash within 63.
 */
export const MAX_REDIS_CLUSTER_NAME_LENGTH = 36;

/**
 * app.kubernetes.io/name of the backup Jobs and pods of a RedisCluster (not redis-backup: a Redis of the same name must
 * not see them).
 */
export const REDIS_CLUSTER_BACKUP_APP = 'redis-cluster-backup';

/** The labels of every backup Job and pod of the RedisCluster called `name` (each also carries SHARD_LABEL). */
export function redisClusterBackupSelectorLabels(name: string): Record<string, string> {
  return { [NAME_LABEL]: REDIS_CLUSTER_BACKUP_APP, [INSTANCE_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY };
}

/** Parses `<name>-shard-<i>` (a shard StatefulSet or PDB name) into i; undefined for any other name. */
export function shardIndexOf(name: string, objectName: string): number | undefined {
  const prefix = `${name}-shard-`;
  if (!objectName.startsWith(prefix)) return undefined;
  const rest = objectName.slice(prefix.length);
  return /^(0|[1-9][0-9]?)$/.test(rest) ? Number(rest) : undefined;
}

/** Names of the objects that belong to one RedisCluster called `name`. */
export function redisClusterChildNames(name: string) {
  return {
    /** The StatefulSet of shard i: pods <name>-shard-<i>-0 .. -<replicas>. */
    shardSet: (i: number) => `${name}-shard-${i}`,
    shardPdb: (i: number) => `${name}-shard-${i}`,
    /** Headless, publishing not-ready addresses: stable pod DNS names for the nodes. */
    headless: `${name}-headless`,
    /** ClusterIP in front of every ready node: where a cluster-aware client starts (it follows MOVED). */
    client: name,
    config: `${name}-config`,
    /** Only with spec.backup: the scheduled backup of shard i (from a replica of it, its master when it has none). */
    shardBackup: (i: number) => `${name}-shard-${i}-backup`,
    generatedAuthSecret: `${name}-auth`,
    operatorSecret: `${name}-operator`,
    metricsService: `${name}-metrics`,
  } as const;
}

/** The labels every pod of one RedisCluster carries (never the role, never the shard). */
export function redisClusterPodSelectorLabels(name: string): Record<string, string> {
  return { [NAME_LABEL]: REDIS_CLUSTER_APP_NAME, [INSTANCE_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY };
}

/** The labels of the pods of shard i: the StatefulSet's selector, the PDB's, and the default anti-affinity's. */
export function shardPodSelectorLabels(name: string, shard: number): Record<string, string> {
  return { ...redisClusterPodSelectorLabels(name), [SHARD_LABEL]: String(shard) };
}

/** True when labels and namespace make an object a pod (or claim) of RedisCluster `name` in `namespace`. */
export function redisClusterPodBelongsTo(
  meta: { namespace?: string | undefined; labels?: Readonly<Record<string, string>> | undefined },
  redisCluster: { namespace: string; name: string },
): boolean {
  if (meta.namespace !== redisCluster.namespace) return false;
  const labels = meta.labels ?? {};
  return Object.entries(redisClusterPodSelectorLabels(redisCluster.name)).every(([k, v]) => labels[k] === v);
}

/**
 * Written by the sidecar on each cluster pod: the node as the cluster sees it. Rewritten at once
 * when id, role, slots, master or link change; the memory and key figures at most once a minute
 * and only when they moved by 5% or more (a cluster at rest costs no API write).
 */
export const CLUSTER_NODE_ANNOTATION = `${GROUP}/cluster-node`;

export interface ClusterNodeRecord {
  /** The node id (40 hex characters). */
  id: string;
  role: 'master' | 'replica';
  /** Slot ranges it serves (masters), e.g. [[0, 5460]]; empty for replicas and slotless masters. */
  slots: Array<[number, number]>;
  /** A replica's master node id; null for a master. */
  masterId: string | null;
  /** A replica: its replication link is up; a master: it is not flagged failed by the cluster. */
  linkUp: boolean;
  usedMemory: number;
  /** maxmemory; 0 when unlimited. */
  maxMemory: number;
  keys: number;
  /** ISO time the record was read. */
  at: string;
}

/** "0-5460,5462" from [[0,5460],[5462,5462]]; "-" for none. */
export function formatSlotRanges(ranges: ReadonlyArray<readonly [number, number]>): string {
  if (ranges.length === 0) return '-';
  return ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(',');
}

/** The inverse of formatSlotRanges; null when the text is not slot ranges. */
export function parseSlotRanges(text: string): Array<[number, number]> | null {
  if (text === '-' || text === '') return [];
  const out: Array<[number, number]> = [];
  for (const part of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) return null;
    const a = Number(m[1]);
    const b = m[2] === undefined ? a : Number(m[2]);
    if (a > b || b > 16383) return null;
    out.push([a, b]);
  }
  return out;
}

/** How many slots the ranges hold. */
export function slotCount(ranges: ReadonlyArray<readonly [number, number]>): number {
  return ranges.reduce((n, [a, b]) => n + b - a + 1, 0);
}

/** Sorted, merged ranges of a set of slots. */
export function rangesOf(slots: Iterable<number>): Array<[number, number]> {
  const sorted = [...new Set(slots)].sort((a, b) => a - b);
  const out: Array<[number, number]> = [];
  for (const s of sorted) {
    const last = out[out.length - 1];
    if (last && last[1] === s - 1) last[1] = s;
    else out.push([s, s]);
  }
  return out;
}

export function clusterNodeRecord(r: ClusterNodeRecord): string {
  return [
    `id=${r.id}`,
    `role=${r.role}`,
    `slots=${formatSlotRanges(r.slots)}`,
    `master=${r.masterId ?? '-'}`,
    `link=${r.linkUp ? 'up' : 'down'}`,
    `mem=${r.usedMemory}/${r.maxMemory}`,
    `keys=${r.keys}`,
    `at=${r.at}`,
  ].join(' ');
}

/** The record in a cluster-node annotation; null when absent or not one. */
export function readClusterNodeRecord(value: string | undefined): ClusterNodeRecord | null {
  const m =
    /^id=([0-9a-f]{40}) role=(master|replica) slots=(\S+) master=([0-9a-f]{40}|-) link=(up|down) mem=(\d+)\/(\d+) keys=(\d+) at=(\S+)$/.exec(
      value ?? '',
    );
  if (!m || Number.isNaN(Date.parse(m[9]!))) return null;
  const slots = parseSlotRanges(m[3]!);
  if (!slots) return null;
  return {
    id: m[1]!,
    role: m[2] as 'master' | 'replica',
    slots,
    masterId: m[4] === '-' ? null : m[4]!,
    linkUp: m[5] === 'up',
    usedMemory: Number(m[6]),
    maxMemory: Number(m[7]),
    keys: Number(m[8]),
    at: m[9]!,
  };
}

/**
 * Written by the sidecar on the RedisCluster: the reshard in progress or the last one.
 * `<from>-><to> <state> moved=<slots moved>/<slots to move> at=<iso>[: why]`, state one of
 * Running, Done, Refused. The hook shows it in status.resharding and the Resharded condition.
 */
export const RESHARD_ANNOTATION = `${GROUP}/reshard`;

export interface ReshardRecord {
  from: number;
  to: number;
  state: 'Running' | 'Done' | 'Refused';
  moved: number;
  total: number;
  at: string;
  why: string;
}

export function reshardRecord(r: ReshardRecord): string {
  return `${r.from}->${r.to} ${r.state} moved=${r.moved}/${r.total} at=${r.at}${r.why ? `: ${r.why}` : ''}`;
}

export function readReshardRecord(value: string | undefined): ReshardRecord | null {
  const m = /^(\d+)->(\d+) (Running|Done|Refused) moved=(\d+)\/(\d+) at=(\S+?)(?:: (.*))?$/.exec(value ?? '');
  if (!m || Number.isNaN(Date.parse(m[6]!))) return null;
  return {
    from: Number(m[1]),
    to: Number(m[2]),
    state: m[3] as ReshardRecord['state'],
    moved: Number(m[4]),
    total: Number(m[5]),
    at: m[6]!,
    why: m[7] ?? '',
  };
}
