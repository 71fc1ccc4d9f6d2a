// bench:reshard's rollout figures (called from bench/reshard.ts on its RedisCluster): a pod-template
// change (resources.requests.cpu) rolled out by the sidecar under an application of two ioredis
// Cluster clients (plain SET; SET + WAIT 1), timed until every pod was replaced, every pod Ready and
// linked, Updated=True. cluster_rollout_pause_ms_max is the longest gap between two stored writes
// of the plain client while it ran: the longest any write waited, the pause of a shard's master move
// (CLUSTER FAILOVER pauses the old master's writes until the replica has them all) included. The
// WAIT client's gaps are not it: with one replica a shard, its WAITs time out (500 ms each) while
// that replica is replaced, which pauses no write. Every acknowledged write is read back.
import type { SystemCluster } from '../test/system/cluster.ts';
import { ClusterWriter, missingFromCluster } from '../test/support/cluster-writer.ts';
import { longestGap, rollOut } from '../test/system/rediscluster-rollout.ts';
import { seedsOf } from '../test/system/rediscluster-support.ts';
import { cleanups, log, note } from './system-main.ts';

export async function clusterRolloutFigures(
  c: SystemCluster,
  name: string,
  password: string,
  shape: { shards: number; perShard: number },
  boundMs: number,
): Promise<string[]> {
  const seeds = seedsOf(c, name);
  const plain = new ClusterWriter({ seeds, password, prefix: 'roll-plain' }).start();
  const acked = new ClusterWriter({ seeds, password, prefix: 'roll-acked', waitReplicas: 1, waitTimeoutMs: 500 });
  acked.start();
  cleanups.push(() => Promise.all([plain.stop(), acked.stop()]));
  await c.waitFor(() => plain.acked.length >= 100 && acked.acked.length >= 50, 60_000, 'rollout traffic flowing');
  log('rollout: resources.requests.cpu changed, every pod replaced by the sidecar');
  const r = await rollOut(c, name, { resources: { requests: { cpu: '20m' } } }, shape, boundMs);
  await plain.stop();
  await acked.stop();
  const pause = longestGap(plain.acked, r.from, r.to);
  const lost = (await missingFromCluster({ seeds: seedsOf(c, name), password }, [...plain.acked, ...acked.acked]))
    .length;
  // WAITs a switchover unblocked are never acknowledged writes: the writer counts them apart from errors.
  const all = [...plain.errors, ...acked.errors];
  const unblocked = plain.unblocked.length + acked.unblocked.length;
  const errors = all.length;
  note(
    `rollout: ${r.deletions.map((d) => d.pod).join(', ')} deleted in that order (masters before: ${r.mastersBefore.join(', ')}); plain ${plain.acked.length} writes, acked ${acked.acked.length}, not acknowledged ${acked.unacked.length}; longest acked gap ${Math.round(longestGap(acked.acked, r.from, r.to))} ms`,
  );
  if (all.length > 0) note(`rollout client errors: ${all.slice(0, 5).join(' | ')}`);
  return [
    `cluster_rollout_s=${(r.ms / 1000).toFixed(1)}`,
    `cluster_rollout_keys_lost=${lost}`,
    `cluster_rollout_client_errors=${errors}`,
    `cluster_rollout_wait_unblocked=${unblocked}`,
    `cluster_rollout_pause_ms_max=${Math.round(pause)}`,
  ];
}
