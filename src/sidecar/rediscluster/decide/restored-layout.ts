// The slots each shard of a restored RedisCluster is formed with: those it served when it was
// backed up, as the hook fixed them in status.restore.shards. Pure.
// Invariant: a layout is used only when it is whole (every slot exactly once: api/slot-layout.ts)
// and names exactly the shards wanted; anything else gives null, and bring-up keeps its even
// ranges (the hook never creates the pods of a restore it could not resolve, so that is no restore).
import { parseSlotRanges } from '../../../api/rediscluster-names.ts';
import type { RedisClusterRestoreStatus } from '../../../api/rediscluster-schema.ts';
import { slotLayoutProblem } from '../../../api/slot-layout.ts';

export type Layout = ReadonlyArray<ReadonlyArray<[number, number]>>;

export function restoredLayout(restore: RedisClusterRestoreStatus | undefined, shards: number): Layout | null {
  const recorded = restore?.shards;
  if (recorded === undefined || recorded.length !== shards) return null;
  if (slotLayoutProblem(recorded) !== undefined) return null;
  const out: Array<Array<[number, number]>> = [];
  for (let i = 0; i < shards; i++) {
    const ranges = parseSlotRanges(recorded.find((s) => s.shard === i)?.slots ?? '');
    if (ranges === null || ranges.length === 0) return null;
    out.push(ranges);
  }
  return out;
}
