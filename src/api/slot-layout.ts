// A RedisCluster's slot layout as a backup records it (one slot-range text per shard) and as a
// restore forms the cluster from it. Pure. Invariant: a layout is usable only when the shards'
// slots are disjoint and together cover every slot; anything else is refused with the slot or
// the count that is wrong, never repaired by guessing.
import { CLUSTER_SLOTS } from './rediscluster-schema.ts';
import { parseSlotRanges, slotCount } from './rediscluster-names.ts';

export interface ShardSlots {
  shard: number;
  /** "0-5460,5462" (formatSlotRanges). */
  slots?: string | undefined;
}

/** Why these shards' slots are not one whole layout, or undefined when they are. */
export function slotLayoutProblem(shards: readonly ShardSlots[]): string | undefined {
  const owner = new Map<number, number>();
  let covered = 0;
  for (const s of shards) {
    const ranges = parseSlotRanges(s.slots ?? '');
    if (ranges === null) return `shard ${s.shard}'s slots ${JSON.stringify(s.slots)} are not slot ranges`;
    for (const [a, b] of ranges) {
      for (let slot = a; slot <= b; slot++) {
        const other = owner.get(slot);
        if (other !== undefined) return `slot ${slot} is recorded for shard ${other} and shard ${s.shard}`;
        owner.set(slot, s.shard);
      }
    }
    covered += slotCount(ranges);
  }
  return covered === CLUSTER_SLOTS ? undefined : `the shards' slots cover ${covered} of ${CLUSTER_SLOTS} slots`;
}
