// Which shard StatefulSets the hook returns, and how many pods each must keep: the core of
// "nothing lost" on the hook's side. Pure.
// Invariants:
// - A shard with index >= spec.master.replicas (leaving) is returned while any of its pods may
//   hold data: a record with slots or keys, no readable record (unknown may hold data), or a pod
//   of the set missing (its volume may hold data). It is dropped only when every pod the set asks
//   for reports no slots and no keys, the sidecar's reshard record says Done for this very shard
//   count, and its StatefulSet controller has seen its volume policy (so the policy the user chose
//   is the one applied when it goes). The records alone are not enough: a record lags the move of
//   slots into a shard (bench:reshard lost 1,663 keys when a 3 -> 4 reshard was turned back to 3
//   while it ran: the new shard's records still said empty). Done for this count is written by
//   the sidecar only once every slot is served by a shard below it.
// - A scale-down the data cannot fit (checkShardCount on the masters' memory, shared with the
//   sidecar) is refused while a leaving shard still holds data: every shard StatefulSet is kept,
//   and the refusal names spec.master.replicas, the reason and the needed count.
// - A shard keeps at least (its master's ordinal + 1) pods: lowering spec.replicas removes the
//   highest ordinals, and removing the master's pod would turn a planned change into a failover.
// - Hibernation (spec.hibernate) stops every shard's pods only while no reshard is moving slots
//   (record Running): a slot in flight is never left open with its pods stopped; the reshard
//   finishes first. While hibernating, every leaving shard is kept: with its pods stopped no
//   record tells whether its volumes hold data.
import { shardIndexOf, type ReshardRecord } from '../../api/rediscluster-names.ts';
import { checkShardCount, type RedisClusterMemory } from '../../api/rediscluster-capacity.ts';
import type { RedisClusterSpec } from '../../api/rediscluster-schema.ts';
import { retentionSettled } from '../common/retention.ts';
import { ofKind } from '../common/observed.ts';
import { maxmemoryBytes } from '../common/redis-conf.ts';
import type { KubeObject } from '../common/types.ts';
import { at, int } from '../common/util.ts';
import { holdsData, type RedisClusterPodView } from './pods.ts';

export interface LeavingShard {
  index: number;
  /** Still returned this sync. */
  kept: boolean;
  why: string;
}

export interface ShardPlan {
  /** Shard indices whose StatefulSet (and PDB, and backup CronJob) is returned, ascending. */
  keep: number[];
  /** Fewest pods per shard: its master's ordinal + 1 (absent: no master known). */
  floors: Map<number, number>;
  /** A scale-down refused because the remaining shards cannot hold the data. */
  refusal: { needed: number; reason: string } | undefined;
  leaving: LeavingShard[];
  memory: RedisClusterMemory;
  /** Hibernation: every shard StatefulSet at 0 pods, claims kept. */
  stopped: boolean;
}

/** Observed shard StatefulSets by index. */
export function observedShardSets(
  observed: readonly KubeObject[],
  name: string,
  namespace: string,
): Map<number, KubeObject> {
  const out = new Map<number, KubeObject>();
  for (const set of ofKind(observed, 'apps/v1', 'StatefulSet', namespace)) {
    const index = shardIndexOf(name, set.metadata.name);
    if (index !== undefined) out.set(index, set);
  }
  return out;
}

/**
 * The memory the masters serving slots use, and the maxmemory a shard has: the smallest of the
 * spec's (from the memory limit) and what the masters report, since a pod keeps the maxmemory it
 * started with until the rollout replaces it and data may only move onto
 * what the remaining pods hold now.
 */
export function redisClusterMemory(
  views: readonly RedisClusterPodView[],
  spec: Pick<RedisClusterSpec, 'resources'>,
): RedisClusterMemory {
  const seen = new Set<string>();
  let usedBytes = 0;
  const limits: number[] = [];
  const fromSpec = maxmemoryBytes(spec);
  if (fromSpec !== undefined) limits.push(fromSpec);
  for (const v of views) {
    const r = v.record;
    if (r === null || r.role !== 'master' || r.slots.length === 0 || seen.has(r.id)) continue;
    seen.add(r.id);
    usedBytes += r.usedMemory;
    if (r.maxMemory > 0) limits.push(r.maxMemory);
  }
  return { usedBytes, maxmemoryPerShard: limits.length > 0 ? Math.min(...limits) : 0 };
}

/** Why shard `index` may still hold data, or undefined when every pod its set asks for reports none. */
export function dataHeldBy(index: number, set: KubeObject, views: readonly RedisClusterPodView[]): string | undefined {
  const pods = views.filter((v) => v.shard === index);
  const expected = Math.max(0, int(at(set, 'spec', 'replicas')) ?? 0);
  for (let ordinal = 0; ordinal < expected; ordinal++) {
    const pod = pods.find((p) => p.ordinal === ordinal);
    if (pod === undefined) return `pod ${set.metadata.name}-${ordinal} is missing (its volume may hold data)`;
    const held = holdsData(pod);
    if (held === 'unknown') return `pod ${pod.name} has no readable cluster-node record (it may hold data)`;
    if (held === 'yes')
      return `pod ${pod.name} still holds ${pod.record!.slots.length > 0 ? 'slots' : `${pod.record!.keys} keys`}`;
  }
  // Pods beyond what the set asks for are on their way out, but still count while they say they hold data.
  const extra = pods.find((p) => (p.ordinal ?? 0) >= expected && holdsData(p) !== 'no');
  return extra === undefined ? undefined : `pod ${extra.name} may still hold data`;
}

export function planShards(
  spec: RedisClusterSpec,
  sets: ReadonlyMap<number, KubeObject>,
  views: readonly RedisClusterPodView[],
  reshard: ReshardRecord | null = null,
): ShardPlan {
  const desired = spec.master.replicas;
  const memory = redisClusterMemory(views, spec);
  const leavingSets = [...sets.entries()].filter(([i]) => i >= desired).sort(([a], [b]) => a - b);
  const held = new Map(leavingSets.map(([i, set]) => [i, dataHeldBy(i, set, views)]));
  const stillHeld = [...held.values()].some((why) => why !== undefined);
  const capacity = stillHeld ? checkShardCount(desired, memory) : undefined;
  const refusal =
    capacity !== undefined && !capacity.ok ? { needed: capacity.needed, reason: capacity.reason } : undefined;

  const stopped = hibernationStopsPods(spec, reshard);
  const leaving: LeavingShard[] = leavingSets.map(([index, set]) => {
    if (refusal !== undefined) return { index, kept: true, why: `kept: ${refusal.reason}` };
    if (spec.hibernate)
      return { index, kept: true, why: 'kept while hibernating: its pods are stopped, so nothing says it is empty' };
    const why = held.get(index);
    if (why !== undefined) return { index, kept: true, why: `kept until its slots and keys have moved away: ${why}` };
    if (reshard === null || reshard.state !== 'Done' || reshard.to !== desired) {
      const record = reshard === null ? 'none yet' : `${reshard.from} -> ${reshard.to} ${reshard.state}`;
      return {
        index,
        kept: true,
        why: `kept until the sidecar reports the reshard to ${desired} shards Done (its record: ${record})`,
      };
    }
    if (!retentionSettled(set, spec.persistence.whenDeleted)) {
      return {
        index,
        kept: true,
        why: `empty; kept until its StatefulSet has applied whenDeleted: ${spec.persistence.whenDeleted}`,
      };
    }
    return { index, kept: false, why: 'empty: removed' };
  });

  const keep = [...Array.from({ length: desired }, (_, i) => i), ...leaving.filter((l) => l.kept).map((l) => l.index)];
  const floors = new Map<number, number>();
  for (const v of views) {
    if (v.shard === undefined || v.ordinal === undefined || v.record?.role !== 'master') continue;
    floors.set(v.shard, Math.max(floors.get(v.shard) ?? 0, v.ordinal + 1));
  }
  return { keep, floors, refusal, leaving, memory, stopped };
}

/** spec.hibernate, unless a reshard is moving slots: it finishes before the pods stop. */
export function hibernationStopsPods(
  spec: Pick<RedisClusterSpec, 'hibernate'>,
  reshard: ReshardRecord | null,
): boolean {
  return spec.hibernate && reshard?.state !== 'Running';
}
