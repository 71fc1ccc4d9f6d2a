// The slots a RedisCluster shard serves, as the node a shard's backup reads sees them: the
// `CLUSTER NODES` line of its master (the node itself when it is a master, else the master it
// replicates). Recorded with the shard's snapshot so that a restore gives the same slots to the
// same shard. Pure parsing; readShardSlots does the one command.
// Invariants:
// - A shard with a slot being moved in or out (a `[slot->-id]` / `[slot-<-id]` entry) has no
//   layout to record: its keys of that slot may sit in two shards, so the backup refuses (the
//   Job retries) rather than record a layout a restore would break on.
// - Only ranges that parse as slot ranges are recorded (api parseSlotRanges), never raw text.
import type { ConnectionOptions } from 'node:tls';
import { Redis } from 'ioredis';
import { formatSlotRanges, parseSlotRanges, rangesOf } from '../api/rediscluster-names.ts';

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, k) => a + k);

export type ShardSlots = { ok: true; slots: string } | { ok: false; reason: string };

/** The slots of the shard of the node whose `CLUSTER NODES` output this is. */
export function shardSlotsOf(clusterNodes: string): ShardSlots {
  const lines = clusterNodes
    .split('\n')
    .map((l) => l.trim().split(' '))
    .filter((f) => f.length >= 8);
  const self = lines.find((f) => f[2]!.split(',').includes('myself'));
  if (self === undefined) return { ok: false, reason: 'CLUSTER NODES has no myself line' };
  const isMaster = self[2]!.split(',').includes('master');
  const master = isMaster ? self : lines.find((f) => f[0] === self[3]);
  if (master === undefined)
    return { ok: false, reason: `the master ${self[3]} of this replica is not in CLUSTER NODES` };
  const entries = master.slice(8);
  const moving = entries.filter((e) => e.startsWith('['));
  if (moving.length > 0)
    return { ok: false, reason: `slots are being moved (${moving.slice(0, 3).join(' ')}): no layout to record yet` };
  const ranges = parseSlotRanges(entries.join(','));
  if (ranges === null) return { ok: false, reason: `unreadable slots ${JSON.stringify(entries.join(' '))}` };
  if (ranges.length === 0) return { ok: false, reason: 'the shard serves no slot' };
  // As the status shows a shard's slots: sorted and merged (api rangesOf), whatever order the node printed.
  return { ok: true, slots: formatSlotRanges(rangesOf(ranges.flatMap(([a, b]) => range(a, b)))) };
}

export interface SlotsSource {
  host: string;
  port: number;
  username: string;
  password: string;
  tls: ConnectionOptions | undefined;
}

/** `CLUSTER NODES` on the node, read as shardSlotsOf. */
export async function readShardSlots(source: SlotsSource): Promise<ShardSlots> {
  const c = new Redis({
    host: source.host,
    port: source.port,
    username: source.username,
    password: source.password,
    lazyConnect: true,
    connectTimeout: 3000,
    commandTimeout: 5000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    ...(source.tls ? { tls: source.tls } : {}),
  });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return shardSlotsOf(String(await c.call('CLUSTER', 'NODES')));
  } catch (err) {
    return { ok: false, reason: `CLUSTER NODES failed: ${(err as Error).message}` };
  } finally {
    c.disconnect();
  }
}
