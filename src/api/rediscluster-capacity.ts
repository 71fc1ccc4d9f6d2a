// How many shards a RedisCluster's data needs, and how many its memory use recommends. Pure;
// shared by the hook (status, and refusing a shard count that cannot hold the data) and the
// sidecar (refusing the same reshard, and the autoscaler), so both always give the same answer.
// Invariants: a count is never recommended or accepted below what holds the data with
// CAPACITY_HEADROOM to spare, nor outside [MIN_REDIS_CLUSTER_SHARDS, MAX_REDIS_CLUSTER_SHARDS]; without a
// maxmemory (no memory limit) capacity is unknown and nothing is refused or recommended.
import { MAX_REDIS_CLUSTER_SHARDS, MIN_REDIS_CLUSTER_SHARDS } from './rediscluster-schema.ts';

/**
 * Share of the shards' maxmemory the data may fill after a reshard: the rest absorbs growth and
 * a slot's keys in flight during MIGRATE (they exist on both sides until deleted at the source).
 */
export const CAPACITY_HEADROOM = 0.9;

export interface RedisClusterMemory {
  /** used_memory summed over the masters of the shards that hold slots. */
  usedBytes: number;
  /** maxmemory of one master (every shard runs the same spec); 0 when unlimited. */
  maxmemoryPerShard: number;
}

/** Fewest shards that hold the data with headroom; null when capacity is unknown (no maxmemory). */
export function shardsNeeded(m: RedisClusterMemory): number | null {
  if (m.maxmemoryPerShard <= 0) return null;
  return Math.max(MIN_REDIS_CLUSTER_SHARDS, Math.ceil(m.usedBytes / (m.maxmemoryPerShard * CAPACITY_HEADROOM)));
}

export type CapacityVerdict = { ok: true; reason: string } | { ok: false; needed: number; reason: string };

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;

/** Can `shards` shards hold the data? The reason names spec.master.replicas when they cannot. */
export function checkShardCount(shards: number, m: RedisClusterMemory): CapacityVerdict {
  const needed = shardsNeeded(m);
  if (needed === null) return { ok: true, reason: 'no maxmemory (no memory limit): capacity is not checked' };
  if (shards >= needed)
    return { ok: true, reason: `${shards} shards hold ${mib(m.usedBytes)} (at least ${needed} needed)` };
  return {
    ok: false,
    needed,
    reason:
      `spec.master.replicas ${shards} cannot hold the data: the masters use ${mib(m.usedBytes)} and ${shards} shards of ` +
      `maxmemory ${mib(m.maxmemoryPerShard)} hold ${mib(shards * m.maxmemoryPerShard * CAPACITY_HEADROOM)} at ${CAPACITY_HEADROOM * 100}%; at least ${needed} are needed`,
  };
}

export interface AutoscaleBounds {
  minReplicas: number;
  maxReplicas: number;
  /** Percent. */
  targetMemoryUtilization: number;
}

export interface Recommendation {
  /** Used memory over the current shards' maxmemory, in percent (rounded); null when unknown. */
  utilization: number | null;
  shards: number;
  reason: string;
}

/**
 * The shard count memory use asks for: the current count scaled by utilization / target (as a
 * HorizontalPodAutoscaler does), within the bounds (the floor raised to MIN_REDIS_CLUSTER_SHARDS) and
 * never below what holds the data.
 */
export function recommendShards(current: number, m: RedisClusterMemory, bounds: AutoscaleBounds): Recommendation {
  const floor = Math.max(MIN_REDIS_CLUSTER_SHARDS, bounds.minReplicas);
  const ceiling = Math.min(MAX_REDIS_CLUSTER_SHARDS, Math.max(floor, bounds.maxReplicas));
  if (m.maxmemoryPerShard <= 0 || current <= 0) {
    return {
      utilization: null,
      shards: current,
      reason: 'no maxmemory (set resources.limits.memory): memory use cannot be measured against a limit',
    };
  }
  const utilization = (m.usedBytes / (current * m.maxmemoryPerShard)) * 100;
  // Within 10% of the target counts as on target (HPA's tolerance): no flapping on noise.
  const ratio = utilization / bounds.targetMemoryUtilization;
  const raw = Math.abs(ratio - 1) <= 0.1 ? current : Math.ceil(current * ratio);
  const needed = shardsNeeded(m) ?? floor;
  const shards = Math.min(ceiling, Math.max(floor, raw, needed));
  const pct = Math.round(utilization);
  const bound =
    shards === ceiling && raw > ceiling
      ? ` (capped at maxReplicas ${ceiling})`
      : shards === floor && raw < floor
        ? ` (floor ${floor})`
        : '';
  return {
    utilization: pct,
    shards,
    reason: `memory ${pct}% of maxmemory over ${current} shards, target ${bounds.targetMemoryUtilization}%: ${shards} shards${bound}`,
  };
}
