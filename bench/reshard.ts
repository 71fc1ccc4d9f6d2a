// Resharding benchmark (a benchmark, not a test): `npm run bench:reshard` (RedisCluster's "Tests and
// measurement"). Network: subnet 87 (pods 198.18.87.x),
// which no test or other bench uses.
//
// A RedisCluster of three shards (one replica each: the issue's ~1 GB then costs ~2 GB of RAM,
// not 3) on a real cluster here (test/system/cluster.ts: real node, the operator's Deployment), loaded with BENCH_MB of
// data (default 1024) in values of VALUE_BYTES (8192), then, under an application of two ioredis
// Cluster clients (plain SET + GET checking what it reads; SET + WAIT 1), in order:
// 1. baseline: steady traffic for BASELINE_S (10) s, no reshard: the longest gap between two
//    acknowledged writes (what the writers, the machine and the control plane cost at rest), and
//    the load rate of the data set through the client (the same machine's copy speed);
// 2. `kubectl scale rediscluster --replicas=4`, timed until the reshard record says Done and the
//    row 4 shards Running, every pod Ready and linked (and the slots' moving alone, from the
//    sidecar's ReshardDone Event: reshard_rate_vs_load is that rate over the load rate); then
//    `--replicas=3`, until 3 shards and the fourth StatefulSet gone; then 3 -> 4 again, turned
//    back to 3 while slots are moving (the first version of this bench did that by accident and
//    lost 1,663 keys: the hook removed the new shard on records that still said empty);
//    where the longest write gap comes from (bench/reshard-gaps.ts): each reshard's own, the writer
//    without WAIT beside the one with it, the slot groups' longest MIGRATE batch, replica wait and
//    close, and the nodes' SLOWLOG;
// 3. every loaded key read back and compared, and every acknowledged write: the keys lost;
// 4. KILLS (3) master kills, one per shard: SIGKILL of the redis-server, timed until the cluster's
//    own election made a replica master (INFO), until its pod is labelled master, and until the
//    WAIT writer has a write stored, then one acknowledged, on a slot the killed master served
//    (with one replica a shard, acknowledged waits for the killed node to return as a replica,
//    after the restart hold of downAfterMilliseconds + failoverTimeout + 2 s). The sidecar forces
//    the election at once on a crash; cluster-node-timeout (downAfterMilliseconds, 5000 as in the
//    article, printed as cluster_node_timeout_ms) is the cluster's own failure detection, which it
//    no longer waits for;
// 5. HANGS (3) hung masters, one per shard (bench/cluster-failover.ts): SIGSTOP, timed until a
//    replica is master in Redis, then SIGCONT; and the elections the sidecar forced that no
//    fault called for (cluster_false_failovers);
// 6. a rollout of a pod-template change by the sidecar under traffic (bench/cluster-rollout.ts):
//    cluster_rollout_pause_ms_max, the longest write pause while it ran.
// Prints `name=value` lines on stdout (notes on `# ` lines), the issue's five figures last;
// progress goes to stderr. The cluster is stopped on every exit path, SIGINT/SIGTERM included.
import { performance } from 'node:perf_hooks';
import { CLUSTER_NODE_ANNOTATION, readClusterNodeRecord } from '../src/api/rediscluster-names.ts';
import {
  clusterClient,
  ClusterWriter,
  keySlot,
  loadKeys,
  missingFromCluster,
  type Written,
} from '../test/support/cluster-writer.ts';
import { median } from '../test/sidecar/redis/manager/harness.ts';
import type { SystemCluster } from '../test/system/cluster.ts';
import { benchOnSystemCluster, cleanups, log, note } from './system-main.ts';
import { clusterRolloutFigures } from './cluster-rollout.ts';
import { forcedFailovers, hangMaster, type Hang } from './cluster-failover.ts';
import {
  healthy,
  isRedisMaster,
  labelledMaster,
  openSlots,
  reshardOf,
  row,
  secretValue,
  seedsOf,
  shardPods,
} from '../test/system/rediscluster-support.ts';
import { NS, sleep } from '../test/system/support.ts';
import { groupStats, groupTimes, movingSeconds } from './reshard-timing.ts';
import { describeGap, describeSlowlog, longestGapOf, resetSlowlogs, slowlogSummary } from './reshard-gaps.ts';

const SUBNET = 87;
const NAME = 'bench-shards';
const BENCH_MB = Number(process.env['BENCH_MB'] ?? 1024);
const VALUE_BYTES = Number(process.env['VALUE_BYTES'] ?? 8192);
const BASELINE_S = Number(process.env['BASELINE_S'] ?? 10);
const KILLS = Number(process.env['KILLS'] ?? 3);
const HANGS = Number(process.env['HANGS'] ?? 3);
const NODE_TIMEOUT_MS = 5000;
const BOUND_MS = 600_000;
const KEYS = Math.ceil((BENCH_MB * 1024 * 1024) / VALUE_BYTES);

const ms = (x: number) => Math.round(x);
const s1 = (x: number) => (x / 1000).toFixed(1);

const key = (j: number) => `bulk:${j}`;
const value = (j: number) => `${j}:`.padEnd(VALUE_BYTES, 'v');

/** The longest gap between consecutive acknowledged writes that overlaps [from, to]. */
function longestGap(acked: readonly Written[], from: number, to: number): number {
  let worst = 0;
  for (let i = 1; i < acked.length; i++)
    if (acked[i]!.at > from && acked[i - 1]!.at < to) worst = Math.max(worst, acked[i]!.at - acked[i - 1]!.at);
  return worst;
}

async function load(c: SystemCluster, password: string): Promise<number> {
  const client = clusterClient({ seeds: seedsOf(c, NAME), password, bulk: true });
  try {
    const t0 = performance.now();
    for (let j = 0; j < KEYS; j += 1000) {
      const part = Array.from({ length: Math.min(1000, KEYS - j) }, (_, i) => ({
        key: key(j + i),
        value: value(j + i),
      }));
      await loadKeys(client, part);
      if (j % 20_000 === 0) log(`loaded ${j}/${KEYS} keys`);
    }
    return performance.now() - t0;
  } finally {
    client.disconnect();
  }
}

/**
 * How many of `count` keys do not read back with their value (`at(i)` gives key i and its
 * value), read 1,000 at a time through a fresh client: the 1 GiB of values is rebuilt as it is
 * checked, never held (missingFromCluster takes the values in a list).
 */
async function lost(
  c: SystemCluster,
  password: string,
  count: number,
  at: (i: number) => { key: string; value: string },
): Promise<number> {
  const client = clusterClient({ seeds: seedsOf(c, NAME), password, bulk: true });
  let missing = 0;
  try {
    for (let j = 0; j < count; j += 1000) {
      const part = Array.from({ length: Math.min(1000, count - j) }, (_, i) => at(j + i));
      const got = await Promise.all(part.map((w) => client.get(w.key)));
      got.forEach((g, i) => {
        if (g !== part[i]!.value) missing++;
      });
    }
  } finally {
    client.disconnect();
  }
  return missing;
}

const lostBulk = (c: SystemCluster, password: string) =>
  lost(c, password, KEYS, (i) => ({ key: key(i), value: value(i) }));
/** The writers' keys are few enough to hold: test/support's own check. */
const lostWrites = async (c: SystemCluster, password: string, written: readonly Written[]) =>
  (await missingFromCluster({ seeds: seedsOf(c, NAME), password }, written)).length;

async function reshard(c: SystemCluster, to: number): Promise<number> {
  const t0 = performance.now();
  await c.scale(NAME, to, NS, 'rediscluster');
  // The row alone says Running before the sidecar has started moving (the new shard's master is
  // Ready with no slot yet): the reshard record must say Done for this count.
  await c.waitFor(
    () => {
      const r = reshardOf(c, NAME);
      return (
        r?.to === to &&
        r.state === 'Done' &&
        row(c, NAME) === `${NAME} ${to} ${to} ${to} 16384 Running` &&
        healthy(c, NAME, to, 2)
      );
    },
    BOUND_MS,
    `${to} shards Running, the reshard record Done`,
  );
  if (to === 3)
    await c.waitFor(
      () => c.get('statefulsets', `${NAME}-shard-3`, NS) === undefined,
      BOUND_MS,
      'the shard-3 StatefulSet removed',
    );
  return performance.now() - t0;
}

interface Kill {
  shard: number;
  promotedMs: number;
  labelledMs: number;
  /** Until the first write stored on a slot the killed master served (the shard's outage as a client sees it). */
  storedMs: number;
  /** Until the first such write acknowledged by a replica (WAIT 1). */
  backMs: number;
}

async function killMaster(c: SystemCluster, writer: ClusterWriter, shard: number): Promise<Kill> {
  await c.waitFor(() => healthy(c, NAME, 3, 2), BOUND_MS, 'a healthy cluster before the kill');
  const victim = labelledMaster(c, NAME, shard)!;
  const ranges = readClusterNodeRecord(victim.metadata.annotations?.[CLUSTER_NODE_ANNOTATION])?.slots ?? [];
  const ownSlot = (key: string) => {
    const slot = keySlot(key);
    return ranges.some(([a, b]) => slot >= a && slot <= b);
  };
  const others = shardPods(c, NAME, shard).filter((p) => p.metadata.name !== victim.metadata.name);
  const t0 = performance.now();
  if (!(await c.killPodProcess(NS, victim.metadata.name, 'SIGKILL')))
    throw new Error(`could not kill ${victim.metadata.name}`);
  // The signal has landed: nothing the killed node answers is later than this.
  const killed = performance.now();
  const promoted = await c.waitFor(
    async () => {
      for (const p of others) if (await isRedisMaster(c, NAME, p.status!.podIP!)) return performance.now();
      return undefined;
    },
    BOUND_MS,
    `a replica of shard ${shard} promoted`,
  );
  const labelled = await c.waitFor(
    () => {
      const m = labelledMaster(c, NAME, shard);
      return m && m.metadata.name !== victim.metadata.name ? performance.now() : undefined;
    },
    BOUND_MS,
    `another pod of shard ${shard} labelled master`,
  );
  // Stored (SET answered OK) is when the shard takes writes again; acknowledged (WAIT 1 counted a
  // replica) needs a replica: with one replica a shard, the killed node coming back as one.
  // A write answered before the signal landed was the killed node's; after it, the new master's.
  const first = (list: readonly Written[]) => list.find((w) => w.at > killed && ownSlot(w.key));
  const stored = await c.waitFor(
    () => first([...writer.acked, ...writer.unacked].sort((a, b) => a.at - b.at)),
    BOUND_MS,
    `a write stored on shard ${shard}'s slots`,
  );
  const back = await c.waitFor(
    () => first(writer.acked),
    BOUND_MS,
    `a write acknowledged on shard ${shard}'s slots after the kill`,
  );
  const k = {
    shard,
    promotedMs: promoted - t0,
    labelledMs: labelled - t0,
    storedMs: stored.at - t0,
    backMs: back.at - t0,
  };
  log(
    `kill ${victim.metadata.name}: promoted in Redis ${ms(k.promotedMs)} ms, labelled ${ms(k.labelledMs)} ms, its slots written ${ms(k.storedMs)} ms, acknowledged ${ms(k.backMs)} ms`,
  );
  return k;
}

async function run(c: SystemCluster): Promise<string[]> {
  await c.apply({
    apiVersion: 'redis.example.com/v1',
    kind: 'RedisCluster',
    metadata: { name: NAME, namespace: NS },
    spec: {
      version: '7.0',
      master: { replicas: 3 },
      replicas: 1,
      sentinel: { downAfterMilliseconds: NODE_TIMEOUT_MS, failoverTimeout: 10_000 },
    },
  });
  await c.waitFor(
    () => row(c, NAME) === `${NAME} 3 3 3 16384 Running` && healthy(c, NAME, 3, 2),
    BOUND_MS,
    'three shards Running',
  );
  const password = secretValue(c, `${NAME}-auth`);
  log(`loading ${KEYS} keys of ${VALUE_BYTES} bytes (${BENCH_MB} MiB)`);
  const loadMs = await load(c, password);
  const loadRate = BENCH_MB / (loadMs / 1000);
  log(`loaded in ${s1(loadMs)} s (${loadRate.toFixed(0)} MiB/s)`);

  const seeds = seedsOf(c, NAME);
  const plain = new ClusterWriter({ seeds, password, prefix: 'plain', verifyReads: true }).start();
  const acked = new ClusterWriter({ seeds, password, prefix: 'acked', waitReplicas: 1, waitTimeoutMs: 500 }).start();
  cleanups.push(() => Promise.all([plain.stop(), acked.stop()]));
  await c.waitFor(() => acked.acked.length >= 100, 60_000, 'writes flowing');
  log(`steady traffic for ${BASELINE_S} s (the baseline)`);
  const b0 = performance.now();
  await sleep(BASELINE_S * 1000);
  const baselineGap = longestGap(acked.acked, b0, performance.now());

  await resetSlowlogs(c, NAME);
  log('scale 3 -> 4');
  const r0 = performance.now();
  const upMs = await reshard(c, 4);
  const upEnd = performance.now();
  const upMovingS = await movingSeconds(c, NS, NAME, 4);
  note(`3 -> 4 slot groups: ${groupTimes(c)}`);
  const upLongest = groupStats(c).longest;
  const upSlow = await slowlogSummary(c, NAME);
  note(`3 -> 4 SLOWLOG (over 10 ms): ${describeSlowlog(upSlow)}`);
  await resetSlowlogs(c, NAME);
  log(`3 -> 4 in ${s1(upMs)} s (slots moving ${upMovingS.toFixed(1)} s); scale 4 -> 3`);
  const downMs = await reshard(c, 3);
  const downEnd = performance.now();
  log(`4 -> 3 in ${s1(downMs)} s; 3 -> 4 again, turned back to 3 while it runs`);
  await c.scale(NAME, 4, NS, 'rediscluster');
  await c.waitFor(
    () => {
      const r = reshardOf(c, NAME);
      return r?.to === 4 && r.state === 'Running' && r.moved > 0 && r.moved < r.total;
    },
    BOUND_MS,
    'a second 3 -> 4 under way',
  );
  const backMs = await reshard(c, 3);
  const r1 = performance.now();
  log(`turned back in ${s1(backMs)} s`);
  const reshardGap = longestGap(
    acked.acked,
    r0,
    (await c.waitFor(() => acked.ackedAfter(r1), BOUND_MS, 'a write after the reshard')).at,
  );
  await plain.stop();
  const end = acked.ackedAfter(r1)!.at;
  const gaps = {
    up: longestGapOf(acked.acked, r0, upEnd, r0),
    down: longestGapOf(acked.acked, upEnd, downEnd, r0),
    back: longestGapOf(acked.acked, downEnd, end, r0),
    plain: longestGapOf(plain.acked, r0, end, r0),
  };
  for (const [phase, g] of Object.entries(gaps)) note(`longest write gap, ${phase}: ${describeGap(g)}`);
  note(`4 -> 3 and back SLOWLOG (over 10 ms): ${describeSlowlog(await slowlogSummary(c, NAME))}`);
  const open = await openSlots(c, NAME);
  if (open.length > 0) note(`slots left open: ${open.join(', ')}`);
  const bulkLost = await lostBulk(c, password);
  const writesLost = await lostWrites(c, password, [...plain.acked, ...acked.acked]);
  const clientErrors = plain.errors.length + acked.errors.length + plain.readMismatches.length;
  note(
    `reshard traffic: plain ${plain.acked.length} writes ${plain.reads} reads, acked ${acked.acked.length}; redirections ${plain.redirections + acked.redirections}; transient ${plain.transient + acked.transient}`,
  );
  if (clientErrors > 0)
    note(`client errors: ${[...plain.errors, ...acked.errors, ...plain.readMismatches].slice(0, 5).join(' | ')}`);

  const kills: Kill[] = [];
  const killsFrom = acked.acked.length;
  // Forced elections before any fault, and more than one per fault, are false failovers.
  let falseFailovers = forcedFailovers(c, NAME);
  const once = async <T>(fault: () => Promise<T>): Promise<T> => {
    const before = forcedFailovers(c, NAME);
    const out = await fault();
    falseFailovers += Math.max(0, forcedFailovers(c, NAME) - before - 1);
    return out;
  };
  for (let i = 0; i < KILLS; i++) kills.push(await once(() => killMaster(c, acked, i % 3)));
  const hangs: Hang[] = [];
  for (let i = 0; i < HANGS; i++) hangs.push(await once(() => hangMaster(c, NAME, 3, acked, i % 3)));
  await acked.stop();
  const killsLost = await lostWrites(c, password, acked.acked.slice(killsFrom));
  note(
    `failovers: ${kills.map((k) => `shard ${k.shard} ${ms(k.promotedMs)}/${ms(k.labelledMs)}/${ms(k.storedMs)}/${ms(k.backMs)}`).join(', ')} (promoted in Redis / labelled / its slots written / acknowledged, ms)`,
  );
  note(`hung masters: ${hangs.map((h) => `shard ${h.shard} ${ms(h.promotedMs)}`).join(', ')} (promoted in Redis, ms)`);
  note(`elections the sidecar forced: ${forcedFailovers(c, NAME)} for ${KILLS + HANGS} faults`);
  const rollout = await clusterRolloutFigures(c, NAME, password, { shards: 3, perShard: 2 }, BOUND_MS);
  const moved = BENCH_MB / 4;
  const movingRate = moved / upMovingS;
  return [
    `keys_loaded=${KEYS}`,
    `load_mib_per_s=${loadRate.toFixed(0)}`,
    `reshard_up_mib_per_s=${(moved / (upMs / 1000)).toFixed(1)}`,
    `reshard_up_vs_load=${(moved / (upMs / 1000) / loadRate).toFixed(2)}`,
    `reshard_up_moving_s=${upMovingS.toFixed(1)}`,
    `reshard_rate_mib_per_s=${movingRate.toFixed(1)}`,
    `reshard_rate_vs_load=${(movingRate / loadRate).toFixed(2)}`,
    `baseline_write_gap_ms_max=${ms(baselineGap)}`,
    `reshard_write_gap_ms_max=${ms(reshardGap)}`,
    `reshard_up_write_gap_ms_max=${ms(gaps.up.ms)}`,
    `reshard_down_write_gap_ms_max=${ms(gaps.down.ms)}`,
    `reshard_back_write_gap_ms_max=${ms(gaps.back.ms)}`,
    `reshard_plain_write_gap_ms_max=${ms(gaps.plain.ms)}`,
    `reshard_up_migrate_pipeline_ms_max=${upLongest['migrate'] ?? 0}`,
    `reshard_up_replicas_wait_ms_max=${upLongest['replicas'] ?? 0}`,
    `reshard_up_close_ms_max=${upLongest['close'] ?? 0}`,
    `reshard_up_slowlog_ms_max=${ms(Math.max(0, ...[...upSlow.values()].map((v) => v.maxMs)))}`,
    `reshard_slots_left_open=${open.length}`,
    `reshard_turned_back_s=${s1(backMs)}`,
    `cluster_node_timeout_ms=${NODE_TIMEOUT_MS}`,
    `cluster_failover_labelled_ms_p50=${ms(median(kills.map((k) => k.labelledMs)))}`,
    `cluster_failover_writes_back_ms_p50=${ms(median(kills.map((k) => k.storedMs)))}`,
    `cluster_failover_acked_back_ms_p50=${ms(median(kills.map((k) => k.backMs)))}`,
    `cluster_failover_acked_lost=${killsLost}`,
    `reshard_up_s=${s1(upMs)}`,
    `reshard_down_s=${s1(downMs)}`,
    `reshard_keys_lost=${bulkLost + writesLost}`,
    `reshard_client_errors=${clientErrors}`,
    `cluster_false_failovers=${falseFailovers}`,
    `cluster_failover_ms_p50=${ms(median(kills.map((k) => k.promotedMs)))}`,
    `cluster_hung_failover_ms_p50=${ms(median(hangs.map((h) => h.promotedMs)))}`,
    ...rollout,
  ];
}

// Its RedisCluster runs Redis 7.0 (version above), whose image is not in the default install.
benchOnSystemCluster(SUBNET, run, { images: ['redis-7.0'] });
