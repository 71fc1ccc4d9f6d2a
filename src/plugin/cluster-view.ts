// `kubectl redis status` for a RedisCluster: its status, its pods and their node records, its
// events and the sidecar instance that leads it in; lines or JSON out. Pure, like view.ts.
// Invariants: only the cluster's own pods are shown (the StatefulSets' pod selector, never the
// backup Jobs' labels); every figure is one the operator writes (status, the sidecar's
// cluster-node record on each pod, its Events, its Leases). The record carries no replication
// offset, so a cluster pod's replication shows as its link, not as a lag in bytes.
import {
  CLUSTER_NODE_ANNOTATION,
  redisClusterPodSelectorLabels as clusterPodSelectorLabels,
  formatSlotRanges,
  readClusterNodeRecord,
  SHARD_LABEL,
} from '../api/rediscluster-names.ts';
import type { RedisClusterStatus } from '../api/rediscluster-schema.ts';
import { leaderLines, type LeaderLookup } from './leader.ts';
import {
  bytes,
  conditionLines,
  conditionViews,
  eventViews,
  good,
  paintedTable,
  retainedEventLines,
  selectedPods,
  type ConditionView,
  type EventView,
  type Paint,
} from './view.ts';

/** The reasons the cluster sidecar gives a shard's change of master (src/sidecar/rediscluster/manager). */
export const CLUSTER_MASTER_CHANGE_REASONS = ['MasterChanged', 'FailoverForced'] as const;

interface PodLike {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { conditions?: Array<{ type?: string; status?: string }> };
}

export interface ClusterPodView {
  name: string;
  shard: string;
  /** master or replica as the node says (its record); `none` before the sidecar's first record. */
  role: string;
  ready: boolean;
  /**
   * A replica's link to its master, a master's standing in the cluster (up: not flagged failed); `unknown` without a
   * record.
   */
  link: string;
  slots: string;
  memory: string;
  keys: number | null;
  at: string | null;
}

export interface ClusterStatusView {
  kind: 'RedisCluster';
  name: string;
  namespace: string;
  phase: string;
  masters: string | null;
  replicas: string | null;
  slotsCovered: number | null;
  shards: RedisClusterStatus['shardStatus'];
  conditions: ConditionView[];
  pods: ClusterPodView[];
  resharding: string | null;
  failovers: EventView[];
  operator: LeaderLookup | null;
}

function podView(p: PodLike): ClusterPodView {
  const r = readClusterNodeRecord(p.metadata?.annotations?.[CLUSTER_NODE_ANNOTATION]);
  return {
    name: p.metadata?.name ?? '',
    shard: p.metadata?.labels?.[SHARD_LABEL] ?? '-',
    role: r?.role ?? 'none',
    ready: (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
    link: r === null ? 'unknown' : r.linkUp ? 'up' : 'down',
    slots: r === null ? '-' : formatSlotRanges(r.slots),
    memory: r === null ? '-' : `${bytes(r.usedMemory)}${r.maxMemory > 0 ? ` / ${bytes(r.maxMemory)}` : ''}`,
    keys: r?.keys ?? null,
    at: r?.at ?? null,
  };
}

export function clusterStatusView(
  cluster: { metadata: { name: string; namespace?: string }; status?: RedisClusterStatus },
  pods: PodLike[],
  events: Parameters<typeof eventViews>[0],
  operator: LeaderLookup | null = null,
): ClusterStatusView {
  const s = cluster.status ?? {};
  return {
    kind: 'RedisCluster',
    name: cluster.metadata.name,
    namespace: cluster.metadata.namespace ?? '',
    phase: s.phase ?? 'Unknown',
    masters: s.summary?.masters ?? null,
    replicas: s.summary?.replicas ?? null,
    slotsCovered: s.slotsCovered ?? null,
    shards: s.shardStatus ?? [],
    conditions: conditionViews(s.conditions),
    pods: selectedPods(pods, clusterPodSelectorLabels(cluster.metadata.name), podView),
    resharding: s.resharding ?? null,
    failovers: eventViews(events)
      .filter((e) => (CLUSTER_MASTER_CHANGE_REASONS as readonly string[]).includes(e.reason))
      .slice(-5),
    operator,
  };
}

export function clusterStatusLines(v: ClusterStatusView, paint: Paint): string[] {
  const ok = v.phase === 'Running' || v.phase === 'Hibernated';
  const out = [
    `${paint('bold', `RedisCluster ${v.namespace}/${v.name}`)}  phase ${good(paint, ok, v.phase)}  masters ${v.masters ?? '-'}  replicas ${v.replicas ?? '-'}  slots ${v.slotsCovered ?? '-'}/16384`,
  ];
  if (v.operator) out.push('', paint('bold', 'Operator'), ...leaderLines(v.operator));
  out.push(...conditionLines(v.conditions, paint));
  out.push('', paint('bold', 'Shards'));
  const shardRows = [['SHARD', 'MASTER', 'REPLICAS LINKED', 'SLOTS', 'HEALTH']].concat(
    (v.shards ?? []).map((s) => [String(s.index), s.master ?? '-', s.replicas.join(',') || '-', s.slots, s.health]),
  );
  out.push(...paintedTable(shardRows, v.shards ?? [], (s) => s.health !== 'Healthy', paint));
  out.push('', paint('bold', 'Pods'));
  const rows = [['NAME', 'SHARD', 'ROLE', 'READY', 'LINK', 'SLOTS', 'MEMORY', 'KEYS', 'READ AT']].concat(
    v.pods.map((p) => [
      p.name,
      p.shard,
      p.role,
      p.ready ? 'yes' : 'no',
      p.link,
      p.slots,
      p.memory,
      p.keys === null ? '-' : String(p.keys),
      p.at ?? '-',
    ]),
  );
  out.push(...paintedTable(rows, v.pods, (p) => !p.ready || p.link !== 'up', paint));
  if (v.resharding) out.push('', `${paint('bold', 'Last reshard')}  ${v.resharding}`);
  out.push('', paint('bold', 'Failovers'));
  out.push(...retainedEventLines(v.failovers, paint));
  return out;
}
