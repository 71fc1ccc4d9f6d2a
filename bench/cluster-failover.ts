// The RedisCluster failover figures bench/reshard.ts prints besides the crash's: a HUNG master
// (SIGSTOP of its redis-server: it accepts connections and answers nothing), timed until a replica
// of its shard is master in Redis, then SIGCONT and the cluster healthy again (the resumed node
// a replica); and the false failovers: elections the sidecar forced (FailoverForced Events) that
// no fault of the bench called for. Progress goes to stderr (log).
import { performance } from 'node:perf_hooks';
import type { ClusterWriter } from '../test/support/cluster-writer.ts';
import type { SystemCluster } from '../test/system/cluster.ts';
import { healthy, isRedisMaster, labelledMaster, shardPods } from '../test/system/rediscluster-support.ts';
import { NS } from '../test/system/support.ts';
import { log } from './system-main.ts';

const BOUND_MS = 600_000;

export interface Hang {
  shard: number;
  promotedMs: number;
}

/** Elections the sidecar forced on this RedisCluster so far (each Event's count included). */
export function forcedFailovers(c: SystemCluster, name: string): number {
  return c.events({ namespace: NS, name, reason: 'FailoverForced' }).reduce((sum, e) => sum + Math.max(1, e.count), 0);
}

/** SIGSTOP the shard's master until a replica of it is master in Redis; then SIGCONT, until healthy again. */
export async function hangMaster(
  c: SystemCluster,
  name: string,
  shards: number,
  writer: ClusterWriter,
  shard: number,
): Promise<Hang> {
  await c.waitFor(() => healthy(c, name, shards, 2), BOUND_MS, 'a healthy cluster before the hang');
  const victim = labelledMaster(c, name, shard)!;
  const others = shardPods(c, name, shard).filter((p) => p.metadata.name !== victim.metadata.name);
  const before = writer.acked.length;
  const t0 = performance.now();
  if (!(await c.killPodProcess(NS, victim.metadata.name, 'SIGSTOP')))
    throw new Error(`could not stop ${victim.metadata.name}`);
  let promoted: number;
  try {
    promoted = await c.waitFor(
      async () => {
        for (const p of others) if (await isRedisMaster(c, name, p.status!.podIP!)) return performance.now();
        return undefined;
      },
      BOUND_MS,
      `a replica of shard ${shard} promoted while its master hangs`,
    );
  } finally {
    await c.killPodProcess(NS, victim.metadata.name, 'SIGCONT');
  }
  await c.waitFor(
    () => healthy(c, name, shards, 2),
    BOUND_MS,
    `shard ${shard} healthy again, the resumed node a replica`,
  );
  await c.waitFor(() => writer.acked.length > before + 50, BOUND_MS, 'writes acknowledged again');
  const h = { shard, promotedMs: promoted - t0 };
  log(`hang ${victim.metadata.name}: a replica master in Redis ${Math.round(h.promotedMs)} ms`);
  return h;
}
