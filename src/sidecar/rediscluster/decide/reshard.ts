// Resharding: when the slots are not spread evenly over spec.master.replicas shards, which slots
// move where, or why nothing moves yet (or at all). Pure.
// Invariants:
// - Slots move only in a quiet cluster: every slot served by a healthy master of a known shard
//   that answers us, no slot open. (A silent replica does not hold a reshard up: a move only
//   involves the two masters, and a node that comes back with a slot open is dealt with then.)
//   A failure mid-way stops the moves; the next quiet round plans the rest from what the nodes
//   say, so a reshard resumes wherever it stopped.
// - A shard receives slots only when its master answers, every serving master knows it, and its
//   replicas are linked (at least one when spec.replicas > 0): moved keys are replicated at once.
// - A count below the shards serving now that checkShardCount says cannot hold the data is
//   refused: nothing moves (the same rule as the hook's, from api/rediscluster-capacity.ts).
import { checkShardCount, type RedisClusterMemory as ClusterMemory } from '../../../api/rediscluster-capacity.ts';
import { planMoves } from './layout.ts';
import { label, nodesOfShard, shardMaster } from './shard-master.ts';
import { healthyMaster, knows, slotCounts, type Topology } from './topology.ts';
import type { ClusterSpecView, ClusterStep } from './types.ts';

export type ReshardDecision =
  | { kind: 'balanced'; from: number; to: number }
  | { kind: 'wait'; from: number; to: number; reason: string }
  | { kind: 'refuse'; from: number; to: number; reason: string }
  | { kind: 'move'; from: number; to: number; moves: Array<Extract<ClusterStep, { kind: 'move' }>>; reason: string };

/** used_memory over the masters serving slots, and their maxmemory (0 when unknown or unlimited). */
export function clusterMemory(t: Topology): ClusterMemory {
  const counts = slotCounts(t);
  let usedBytes = 0;
  let maxmemoryPerShard = 0;
  for (const [id, n] of counts) {
    if (n === 0) continue;
    const info = t.nodes.get(id)?.info;
    usedBytes += info?.usedMemory ?? 0;
    maxmemoryPerShard = Math.max(maxmemoryPerShard, info?.maxMemory ?? 0);
  }
  return { usedBytes, maxmemoryPerShard };
}

/** How many shards serve slots now. */
export function servingShards(t: Topology): number {
  const shards = new Set<number>();
  for (const id of t.owner) {
    const shard = id === null ? null : t.nodes.get(id)?.shard;
    if (shard !== null && shard !== undefined) shards.add(shard);
  }
  return shards.size;
}

export function planReshard(t: Topology, spec: ClusterSpecView): ReshardDecision {
  const to = spec.shards;
  const from = servingShards(t);
  const wait = (reason: string): ReshardDecision => ({ kind: 'wait', from, to, reason });
  if (t.openSlots.length > 0) return wait(`${t.openSlots.length} slot(s) are open`);
  const ownerShard: number[] = [];
  for (let s = 0; s < t.owner.length; s++) {
    const node = t.owner[s] ? t.nodes.get(t.owner[s]!) : undefined;
    if (!healthyMaster(node)) return wait(`slot ${s} is not served by a healthy master`);
    if (node.shard === null) return wait(`slot ${s} is served by ${label(node)}, whose shard is unknown`);
    if (!node.info?.clusterOk) return wait(`${label(node)} does not serve queries (cluster_state is not ok)`);
    ownerShard.push(node.shard);
  }
  const planned = planMoves(ownerShard, to);
  if (planned.length === 0) return { kind: 'balanced', from, to };
  if (to < from) {
    const verdict = checkShardCount(to, clusterMemory(t));
    if (!verdict.ok) return { kind: 'refuse', from, to, reason: verdict.reason };
  }
  const servers = [...new Set(t.owner)].map((id) => t.nodes.get(id!)!);
  const receivers = new Map<number, string>();
  for (const shard of new Set(planned.map((m) => m.to))) {
    const m = shardMaster(t, shard);
    const master = m.node;
    if (!healthyMaster(master)) return wait(`shard ${shard} has no master to receive slots yet (${m.reason})`);
    if (!master.info?.clusterOk) return wait(`${label(master)} does not serve queries yet (cluster_state is not ok)`);
    const unaware = servers.filter((s) => !knows(t, s.id, master.id) || !knows(t, master.id, s.id));
    if (unaware.length > 0)
      return wait(`${label(master)} and ${unaware.map(label).join(', ')} do not know each other yet`);
    const linked = nodesOfShard(t, shard).filter(
      (n) => n.role === 'replica' && n.masterId === master.id && n.info?.linkUp,
    ).length;
    const needed = Math.min(spec.replicasPerShard, 1);
    if (linked < needed) return wait(`shard ${shard}'s master ${label(master)} has no linked replica yet`);
    receivers.set(shard, master.pod!.name);
  }
  const moves = planned.map((m) => {
    const source = t.nodes.get(t.owner[m.slot]!)!;
    return {
      kind: 'move' as const,
      slot: m.slot,
      from: source.pod!.name,
      to: receivers.get(m.to)!,
      cold: false,
      reason: `reshard ${from}->${to}: slot ${m.slot} from shard ${m.from} to shard ${m.to}`,
    };
  });
  return { kind: 'move', from, to, moves, reason: `${moves.length} slots to move for even shares over ${to} shards` };
}
