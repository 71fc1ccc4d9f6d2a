// System test: a seeded, randomized run of faults against the design article's RedisCluster under
// SET + WAIT 1 traffic (ioredis' Cluster client, test/support/cluster-writer.ts), on three real
// nodes. The schedule (test/support/fault-schedule.ts) is drawn from a seed, printed first, so a
// failure is replayed with REDISCLUSTER_FAULTS_SEED=<seed>; without it the seed is fixed, so CI is
// deterministic. 8 to 10 faults, mixed: a master's redis-server SIGKILLed, a pod deleted (a master
// or a replica), a shard's master cut from its replicas (iptables in the pods' namespaces, undone
// after 6-10 s), the acting sidecar frozen then SIGKILLed, `kubectl scale rediscluster` 3 -> 4
// and, later, 4 -> 3 (the fault after a scale sometimes made while its slots move), and a rollout
// of a pod-template change (ROLLOUT_FAULTS below).
// After each fault, within a bound: the row and the pods healthy, every node cluster_state:ok,
// each slot exactly one master in every node's view, no slot open, the reshard Done, writes
// acknowledged again, and no shard's master changed that the fault had no business moving (a
// partition, a replica's pod, a sidecar or a scale never fails a master over).
// At the end: every acknowledged key reads back with its value, no client error but redirections.
// Network: subnet 88.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { ClusterWriter, missingFromCluster } from '../support/cluster-writer.ts';
import { describeFault, falseFailovers, faultSchedule, type Fault } from '../support/fault-schedule.ts';
import { missing, type SystemCluster } from './cluster.ts';
import { borrowCluster, giveBack } from './lane.ts';
import { clusterProblems, holdOutcome, injectFault, shardMasters, updated } from './rediscluster-faults.ts';
import { healthy, reshardOf, row, secretValue, seedsOf } from './rediscluster-support.ts';
import { NS, sleep } from './support.ts';

const SUBNET = 88;
const NAME = 'order-cache';
const EXAMPLE = readFileSync(new URL('../../manifests/examples/rediscluster.yaml', import.meta.url), 'utf8');
/** CI's seed: the run is the same every time unless REDISCLUSTER_FAULTS_SEED says otherwise. */
const DEFAULT_SEED = 3101;
const SEED = Number(process.env['REDISCLUSTER_FAULTS_SEED'] ?? DEFAULT_SEED);
/**
 * Rollout faults (the sidecar rolls a RedisCluster itself). The schedule a seed draws depends on
 * this, so a replay of a run from before they were on needs it false (the first line says which).
 */
const ROLLOUT_FAULTS = true;

const IMAGES = ['redis-7.0'];
const skip =
  missing(IMAGES) ??
  (Number.isInteger(SEED) && SEED >= 0 ? false : `REDISCLUSTER_FAULTS_SEED must be a whole number, not ${SEED}`);

/** How long the cluster may take to be whole again after each kind of fault. */
const SETTLE_MS: Record<Fault['kind'], number> = {
  'master-kill': 120_000,
  'pod-delete': 120_000,
  partition: 120_000,
  'sidecar-kill': 120_000,
  'scale-up': 300_000,
  'scale-down': 300_000,
  rollout: 420_000,
};
/** A reshard that still moves slots is waited for up to this long in all... */
const MAX_SETTLE_MS = 900_000;
/** ...as long as its record moves at least once in this long. */
const RESHARD_STALL_MS = 120_000;

describe('RedisCluster under a seeded run of faults', { skip, timeout: 2_400_000 }, () => {
  let c: SystemCluster;
  before(async () => {
    c = await borrowCluster({ subnet: SUBNET, nodes: 3, images: IMAGES });
  });
  after(() => c && giveBack(c));

  test(
    'master kills, pod deletes, partitions, sidecar kills, 3 -> 4 -> 3: every acknowledged key back, each slot one master, cluster_state ok',
    { timeout: 2_300_000 },
    async (t) => {
      const schedule = faultSchedule(SEED, { rollout: ROLLOUT_FAULTS });
      t.diagnostic(
        `seed ${SEED} (replay: REDISCLUSTER_FAULTS_SEED=${SEED}), rollout faults ${ROLLOUT_FAULTS ? 'on' : 'off'}, ${schedule.length} faults:`,
      );
      schedule.forEach((f, i) => t.diagnostic(`  ${i + 1}. ${describeFault(f)}`));
      const t0 = performance.now();
      await c.apply(EXAMPLE);
      await settle(3, 'the example applied', 180_000);
      t.diagnostic(`apply -> whole: ${secs(t0)} s`);

      const password = secretValue(c, `${NAME}-auth`);
      const writer = new ClusterWriter({
        seeds: seedsOf(c, NAME),
        password,
        prefix: 'fault',
        waitReplicas: 1,
        waitTimeoutMs: 500,
        // About 150 writes a second: enough to be hit by every fault, not a load test on two cores.
        pauseMs: 5,
      }).start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 200, 30_000, '200 acknowledged writes');

      const masterChanges = () =>
        c.events({ name: NAME, reason: 'MasterChanged' }).flatMap((e) => Array<string>(e.count).fill(e.message));
      let changes: string[] = [];
      let masters = await shardMasters(c, NAME);
      let mayFailOver = new Set<number>();
      let anyMayFailOver = false;
      for (const [i, f] of schedule.entries()) {
        const label = `${i + 1}. ${describeFault(f)}`;
        const shardsAfter = f.kind === 'scale-up' ? 4 : f.kind === 'scale-down' ? 3 : f.shards;
        if (f.midReshard) {
          const r = await c.waitFor(
            () => {
              const x = reshardOf(c, NAME);
              return x && x.to === f.shards && (x.state !== 'Running' || x.moved > 0) ? x : undefined;
            },
            120_000,
            `the reshard to ${f.shards} shards moving slots`,
          );
          t.diagnostic(`  (the reshard at ${r.moved}/${r.total} slots, ${r.state}, when fault ${i + 1} is made)`);
        }
        const t1 = performance.now();
        if (!f.midReshard) changes = masterChanges();
        const done = await injectFault(t, c, NAME, f, i);
        if (done.mayFailOver === 'any') anyMayFailOver = true;
        else for (const s of done.mayFailOver) mayFailOver.add(s);
        // The fault after a scale may be made while the scale's slots still move: settle once, after both.
        if (schedule[i + 1]?.midReshard) {
          t.diagnostic(`${label}: ${done.note}`);
          continue;
        }
        await settle(shardsAfter, label, SETTLE_MS[f.kind] + (f.midReshard ? SETTLE_MS['scale-up'] : 0));
        if (f.kind === 'rollout' || schedule[i - 1]?.kind === 'rollout')
          await c.waitFor(() => updated(c, NAME), 300_000, 'every pod on its current template, Updated True');
        const now = await shardMasters(c, NAME);
        const moved = [...now].filter(([s, m]) => masters.get(s) !== undefined && masters.get(s) !== m).map(([s]) => s);
        assert.deepEqual(
          falseFailovers(masters, now, anyMayFailOver ? 'any' : mayFailOver),
          [],
          `${label}: no failover the fault should not cause`,
        );
        const acked = writer.acked.length;
        await c.waitFor(() => writer.acked.length >= acked + 50, 60_000, `${label}: writes acknowledged again`);
        const events = masterChanges().slice(changes.length);
        t.diagnostic(
          `${label}: ${done.note}; whole again in ${secs(t1)} s; failed over: ${moved.length ? moved.map((s) => `shard ${s}`).join(', ') : 'none'}${events.length ? ` (MasterChanged: ${events.join('; ')})` : ''}${done.victim ? `; ${done.victim}: ${holdOutcome(c, done.victim)}` : ''}; acked ${writer.acked.length}, transient ${writer.transient}, redirections ${writer.redirections}`,
        );
        masters = now;
        mayFailOver = new Set();
        anyMayFailOver = false;
      }

      await writer.stop();
      t.diagnostic(
        `${schedule.length} faults in ${secs(t0)} s; acked ${writer.acked.length}, not acknowledged ${writer.unacked.length}, transient ${writer.transient}, redirections ${writer.redirections}, WAITs unblocked by a switchover ${writer.unblocked.length}`,
      );
      assert.deepEqual(writer.errors, [], 'no application-visible error but WAITs a switchover unblocked');
      assert.deepEqual(
        await missingFromCluster({ seeds: seedsOf(c, NAME), password }, writer.acked),
        [],
        'every acknowledged write reads back with its value',
      );
      assert.deepEqual(await clusterProblems(c, NAME), [], 'cluster_state ok everywhere, each slot one master');
    },
  );

  /**
   * Waits until the cluster is whole with `shards` shards: the row, every pod Ready and linked, the
   * reshard (if any) Done, no StatefulSet of a removed shard, and every node agreeing on one master
   * per slot with cluster_state ok. The bound is on standing still: while the reshard record
   * moves, the wait goes on (up to MAX_SETTLE_MS), as slot moves are slow on a loaded machine.
   * On timeout, what was still wrong leads the message.
   */
  async function settle(shards: number, what: string, boundMs: number): Promise<void> {
    const t0 = performance.now();
    let deadline = t0 + boundMs;
    let progress = '';
    let why = 'not asked yet';
    let asked = 0;
    for (;;) {
      const now = performance.now();
      const r = reshardOf(c, NAME);
      const mark = r ? `${r.from}->${r.to} ${r.state} moved=${r.moved}/${r.total}` : 'none';
      if (mark !== progress) {
        progress = mark;
        deadline = Math.min(t0 + MAX_SETTLE_MS, Math.max(deadline, now + RESHARD_STALL_MS));
      }
      const shown = row(c, NAME);
      if (shown !== `${NAME} ${shards} ${shards} ${2 * shards} 16384 Running`) why = `the row is "${shown}"`;
      else if (!healthy(c, NAME, shards, 3)) why = 'not every pod Ready and linked with one master label per shard';
      else if (r && (r.to !== shards || r.state !== 'Done')) why = `the reshard is ${mark}`;
      else if (c.get('statefulsets', `${NAME}-shard-${shards}`, NS))
        why = `StatefulSet ${NAME}-shard-${shards} is left`;
      else if (now - asked >= 1000) {
        asked = now;
        const problems = await clusterProblems(c, NAME);
        if (problems.length === 0) return;
        why = `the nodes say: ${problems.join('; ')}`;
      }
      if (now > deadline)
        throw new Error(
          `${what}: not whole with ${shards} shards after ${secs(t0)} s (reshard ${progress}): ${why}\n${c.dump()}`,
        );
      await sleep(250);
    }
  }
});

const secs = (since: number) => ((performance.now() - since) / 1000).toFixed(1);
