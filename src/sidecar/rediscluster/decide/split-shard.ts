// A shard served by two masters is brought back to one. It happens when a node restarts after
// its replica took its shard over and is given a slot before gossip makes it a replica
// (CLUSTER SETSLOT NODE bumps its epoch, so it keeps that slot), or by a hand-made SETSLOT. Left
// alone it is silent and permanent: neither master has a replica, so the shard has no failover
// and a reshard waits for one forever. Pure.
// Invariants:
// - The shard's master is the one serving most of its slots (shardMaster); the others' slots
//   move to it live (MIGRATING/IMPORTING: clients follow ASK, no key is dropped), at most
//   MERGE_MOVES_PER_ROUND a round so that a round stays short and failures are seen between.
// - Only in a cluster with no slot open, between two healthy masters that know each other; a
//   split shard is always told once as a Warning, with why it waits when it does.
// - A master of the shard that is failing or silent is not a split: the failover decides.
import { label, nodesOfShard, shardMaster } from './shard-master.ts';
import { healthyMaster, knows, slotCounts, type Topology } from './topology.ts';
import type { ClusterStep, Decided, Hold } from './types.ts';

export const MERGE_MOVES_PER_ROUND = 16;

export function mergeSplitShards(t: Topology): Decided {
  const steps: ClusterStep[] = [];
  const holds: Hold[] = [];
  const counts = slotCounts(t);
  // Every round runs this: only a shard with two nodes serving slots is looked at further.
  const serving = new Map<number, number>();
  for (const n of t.nodes.values())
    if (n.shard !== null && (counts.get(n.id) ?? 0) > 0) serving.set(n.shard, (serving.get(n.shard) ?? 0) + 1);
  const split = [...serving].flatMap(([shard, nodes]) => (nodes > 1 ? [shard] : []));
  for (const shard of split.sort((a, b) => a - b)) {
    const master = shardMaster(t, shard).node;
    if (!master?.pod) continue;
    const others = nodesOfShard(t, shard).filter(
      (n) => n.id !== master.id && (counts.get(n.id) ?? 0) > 0 && healthyMaster(n),
    );
    for (const other of others) {
      const key = `split/${shard}/${other.id}`;
      // No slot counts in the reason: it is told again whenever it changes, and the counts do every round.
      const what = `shard ${shard} is served by two masters, ${label(master)} and ${label(other)}`;
      const wait = (why: string) => holds.push({ key, reason: `${what}: ${why}`, warn: true });
      if (t.openSlots.length > 0) wait('merged once no slot is open');
      else if (!healthyMaster(master)) wait(`merged once ${label(master)} answers as a healthy master`);
      else if (!knows(t, master.id, other.id) || !knows(t, other.id, master.id))
        wait('merged once they know each other');
      else {
        holds.push({
          key,
          reason: `${what}: ${label(other)}'s slots move to ${label(master)}, then it becomes its replica`,
          warn: true,
        });
        for (let slot = 0; slot < t.owner.length && steps.length < MERGE_MOVES_PER_ROUND; slot++) {
          if (t.owner[slot] !== other.id) continue;
          steps.push({
            kind: 'move',
            slot,
            from: other.pod!.name,
            to: master.pod.name,
            cold: false,
            quiet: true,
            reason: `shard ${shard} merged: slot ${slot} goes from ${label(other)} to ${label(master)}`,
          });
        }
      }
    }
  }
  return { steps, holds };
}
