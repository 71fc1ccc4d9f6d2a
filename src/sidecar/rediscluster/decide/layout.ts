// Where the 16384 hash slots should be: the contiguous even split of a bring-up, and the fewest
// slot moves that bring any assignment to even shares over `shards` shards. Pure.
// Invariants: shares differ by at most one slot; shards at or above `shards` (leaving) get none;
// a plan moves each slot at most once, never a slot already where it may stay, so its length is
// exactly the surplus of the shards that give; donors give their highest slots first (what they
// keep stays contiguous from their low end).
import { CLUSTER_SLOTS } from '../../../api/rediscluster-schema.ts';

/** Slots per shard for an even split: the first (16384 mod shards) shards get one more. */
export function evenCounts(shards: number): number[] {
  const base = Math.floor(CLUSTER_SLOTS / shards);
  const extra = CLUSTER_SLOTS % shards;
  return Array.from({ length: shards }, (_, i) => base + (i < extra ? 1 : 0));
}

/** The contiguous range shard `i` gets at bring-up. */
export function bringUpRange(i: number, shards: number): [number, number] {
  const counts = evenCounts(shards);
  const start = counts.slice(0, i).reduce((a, b) => a + b, 0);
  return [start, start + counts[i]! - 1];
}

/** The shard whose bring-up range holds `slot`. */
export function bringUpShardOf(slot: number, shards: number): number {
  for (let i = 0; i < shards; i++) if (slot <= bringUpRange(i, shards)[1]) return i;
  return shards - 1;
}

export interface SlotMove {
  slot: number;
  from: number;
  to: number;
}

/**
 * The moves that give every shard below `shards` an even share and the others nothing.
 * `ownerShard[slot]` is the shard serving each slot now (every slot must have one). Where the
 * split leaves a remainder, the extra slots stay with the shards that have the most now.
 */
export function planMoves(ownerShard: readonly number[], shards: number): SlotMove[] {
  const slotsOf = new Map<number, number[]>();
  for (let s = 0; s < ownerShard.length; s++) {
    const shard = ownerShard[s]!;
    const list = slotsOf.get(shard) ?? [];
    list.push(s);
    slotsOf.set(shard, list);
  }
  const count = (i: number) => slotsOf.get(i)?.length ?? 0;
  const base = Math.floor(CLUSTER_SLOTS / shards);
  const extra = CLUSTER_SLOTS % shards;
  const desired = new Map<number, number>();
  const staying = Array.from({ length: shards }, (_, i) => i).sort((a, b) => count(b) - count(a) || a - b);
  staying.forEach((shard, rank) => desired.set(shard, base + (rank < extra ? 1 : 0)));

  const donors = [...new Set([...slotsOf.keys(), ...desired.keys()])].sort((a, b) => a - b);
  const given: Array<{ slot: number; from: number }> = [];
  for (const shard of donors) {
    const surplus = count(shard) - (desired.get(shard) ?? 0);
    if (surplus <= 0) continue;
    const mine = slotsOf.get(shard)!;
    for (const slot of mine.slice(mine.length - surplus)) given.push({ slot, from: shard });
  }
  const moves: SlotMove[] = [];
  let next = 0;
  for (let shard = 0; shard < shards; shard++) {
    const deficit = desired.get(shard)! - count(shard);
    for (let k = 0; k < deficit && next < given.length; k++, next++) moves.push({ ...given[next]!, to: shard });
  }
  return moves;
}
