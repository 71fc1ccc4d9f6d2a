// System test: day-2 operations of a RedisCluster on the real control plane, under SET + WAIT 1
// traffic through ioredis' Cluster client, on the article's RedisCluster (three shards of a master
// and two replicas, on three nodes). In order, on one cluster:
// 1. a pod-template change (resources.requests.cpu) rolls out one pod at a time: every pod is
//    replaced, every replica before any master, each shard's master only after a switchover (never
//    deleted while labelled master), the Updated condition tells the rollout and ends True, Events
//    say each step; nothing acknowledged is lost; the longest write pause is reported;
// 2. a switchover by annotation (`shard-1`): the record says Done, shard 1's master moved to one of
//    its replicas; a target that is no pod of it is refused with why, and nothing moves;
// 3. a switchover by `kubectl redis switchover rediscluster/NAME --shard 2`, waiting for Done;
// 4. `kubectl redis hibernate rediscluster/NAME` after keys written with WAIT 1: every pod gone,
//    every claim, Service and the ConfigMap kept, the row and the Hibernated condition say so, no
//    Warning Event; `kubectl redis wake`: the pods back on their claims at new addresses, every
//    node cluster_state:ok, each shard the same slots, every acknowledged key read back.
// Figures are reported with t.diagnostic. Network: subnet 89.
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SWITCHOVER_STATUS_ANNOTATION } from '../../src/api/labels.ts';
import { ClusterWriter, missingFromCluster } from '../support/cluster-writer.ts';
import { missing, type SystemCluster } from './cluster.ts';
import { borrowCluster, giveBack } from './lane.ts';
import { PLUGIN, run } from './plugin-run.ts';
import {
  admin,
  clusterOf,
  condition,
  healthy,
  livePods,
  labelledMaster,
  openSlots,
  row,
  secretValue,
  seedsOf,
  shardPods,
  statusOf,
  type Json,
} from './rediscluster-support.ts';
import { longestGap, rollOut } from './rediscluster-rollout.ts';
import { NS } from './support.ts';

const SUBNET = 89;
const NAME = 'order-cache';
const IMAGES = ['redis-7.0'];
const skip = missing(IMAGES) ?? false;

const record = (c: SystemCluster) =>
  clusterOf(c, NAME)?.['metadata']?.['annotations']?.[SWITCHOVER_STATUS_ANNOTATION] as string | undefined;
const annotate = (c: SystemCluster, value: string) =>
  c.kubectl(['annotate', 'rediscluster', NAME, '-n', NS, '--overwrite', `redis.example.com/switchover=${value}`]);

describe('RedisCluster day-2: rollout and switchover', { skip, timeout: 1_200_000 }, () => {
  let c: SystemCluster;
  let writer: ClusterWriter;
  let password = '';
  before(async () => {
    c = await borrowCluster({ subnet: SUBNET, nodes: 3, images: IMAGES });
    await c.apply({
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisCluster',
      metadata: { name: NAME, namespace: NS },
      spec: {
        version: '7.0',
        master: { replicas: 3 },
        replicas: 2,
        sentinel: { downAfterMilliseconds: 5000, failoverTimeout: 10_000 },
      },
    });
    await c.waitFor(
      () => row(c, NAME) === `${NAME} 3 3 6 16384 Running` && healthy(c, NAME, 3, 3),
      300_000,
      'nine pods Running, a master per shard, every node linked',
    );
    password = secretValue(c, `${NAME}-auth`);
    writer = new ClusterWriter({
      seeds: seedsOf(c, NAME),
      password,
      prefix: 'ack',
      waitReplicas: 1,
      waitTimeoutMs: 500,
    }).start();
    await c.waitFor(() => writer.acked.length >= 200, 60_000, '200 acknowledged writes');
  });
  after(async () => {
    await writer?.stop();
    if (c) await giveBack(c);
  });

  test(
    'a template change rolls out one pod at a time, replicas first, each master last after a switchover, nothing lost',
    { timeout: 900_000 },
    async (t) => {
      const sawUpdated = new Set<string>();
      const watchStatus = setInterval(() => {
        const u = condition(c, NAME, 'Updated');
        if (u && u['status'] === 'False') sawUpdated.add(String(u['reason']));
      }, 100);
      t.after(() => clearInterval(watchStatus));
      const acked0 = writer.acked.length;
      const r = await rollOut(
        c,
        NAME,
        { resources: { requests: { cpu: '20m' } } },
        { shards: 3, perShard: 3 },
        600_000,
      );
      clearInterval(watchStatus);
      const order = r.deletions.map((d) => `${d.pod}${d.role === 'master' ? ' (master)' : ''}`);
      const pause = longestGap(writer.acked, r.from, r.to);
      t.diagnostic(
        `rollout of 9 pods: ${Math.round(r.ms / 1000)} s; WAITs unblocked by a switchover: ${writer.unblocked.length}; longest pause between acknowledged writes ${Math.round(pause)} ms; deleted in order: ${order.join(', ')}; Updated reasons seen: ${[...sawUpdated].join(', ')}`,
      );
      assert.equal(new Set(r.deletions.map((d) => d.pod)).size, 9, `every pod deleted once: ${order.join(', ')}`);
      assert.equal(r.deletions.length, 9, `one deletion per pod: ${order.join(', ')}`);
      assert.deepEqual(
        r.deletions.filter((d) => d.role === 'master').map((d) => d.pod),
        [],
        'no pod deleted while labelled master',
      );
      const firstMaster = r.deletions.findIndex((d) => r.mastersBefore.includes(d.pod));
      assert.equal(firstMaster, 6, `the six replicas first, then the three former masters: ${order.join(', ')}`);
      const switchovers = c.events({ name: NAME, reason: 'Switchover' });
      for (const m of r.mastersBefore)
        assert.ok(
          switchovers.some((e) => e.message.includes(`over from ${m}`)),
          `${m} was moved by a switchover before its pod went`,
        );
      assert.ok(c.events({ name: NAME, reason: 'RolloutStep' }).length >= 9, 'a RolloutStep Event per pod');
      await c.waitFor(
        () => c.events({ name: NAME, reason: 'RolloutCompleted' }).length > 0,
        30_000,
        'a RolloutCompleted Event',
      );
      assert.ok(sawUpdated.has('RollingOut'), 'the Updated condition showed the rollout');
      assert.match(String(condition(c, NAME, 'Updated')?.['message']), /9 of 9 pods run the current template/);
      const since = writer.acked.length;
      await c.waitFor(() => writer.acked.length >= since + 100, 30_000, 'writes keep being acknowledged');
      assert.deepEqual(writer.errors, [], 'no application-visible error but a WAIT unblocked by a switchover');
      assert.deepEqual(
        await missingFromCluster({ seeds: seedsOf(c, NAME), password }, writer.acked.slice(acked0)),
        [],
        'every acknowledged write reads back',
      );
      assert.deepEqual(await openSlots(c, NAME), []);
    },
  );

  test("a switchover by annotation moves one shard's master; a pod not of this RedisCluster is refused", async () => {
    const before = labelledMaster(c, NAME, 1)!.metadata.name;
    await annotate(c, 'shard-1');
    const done = await c.waitFor(
      () => (record(c)?.startsWith('shard-1: ') ? record(c) : undefined),
      60_000,
      'the switchover record for shard-1',
    );
    assert.match(done, /^shard-1: Done: order-cache-shard-1-\d is the master of shard 1$/);
    const now = await c.waitFor(
      () => {
        const m = labelledMaster(c, NAME, 1)?.metadata.name;
        return m !== undefined && m !== before ? m : undefined;
      },
      30_000,
      'another pod of shard 1 labelled master',
    );
    assert.ok(done.includes(now), `${done} names ${now}`);
    await c.waitFor(() => healthy(c, NAME, 3, 3), 60_000, 'every node linked again');
    await annotate(c, 'order-cache-shard-9-9');
    const refused = await c.waitFor(
      () => (record(c)?.startsWith('order-cache-shard-9-9: ') ? record(c) : undefined),
      60_000,
      'the refusal record',
    );
    assert.match(refused, /Refused: no pod order-cache-shard-9-9 belongs to this RedisCluster/);
    assert.equal(labelledMaster(c, NAME, 1)?.metadata.name, now, 'a refused request moves nothing');
    assert.ok(c.events({ name: NAME, reason: 'SwitchoverRefused' }).length > 0, 'a SwitchoverRefused Event');
  });

  test('kubectl redis switchover rediscluster/NAME --shard 2 waits for Done', async (t) => {
    const before = labelledMaster(c, NAME, 2)!.metadata.name;
    const acked0 = writer.acked.length;
    const r = await run(PLUGIN, ['switchover', `rediscluster/${NAME}`, '--shard', '2', '-n', NS], {
      KUBECONFIG: c.kubeconfig,
    });
    t.diagnostic(`$ kubectl redis switchover rediscluster/${NAME} --shard 2\n${r.stdout}${r.stderr}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /requested shard-2/);
    assert.match(r.stdout, /Done: order-cache-shard-2-\d is the master of shard 2/);
    const now = await c.waitFor(
      () => {
        const m = labelledMaster(c, NAME, 2)?.metadata.name;
        return m !== undefined && m !== before ? m : undefined;
      },
      30_000,
      'another pod of shard 2 labelled master',
    );
    assert.ok(shardPods(c, NAME, 2).some((p) => p.metadata.name === now));
    const bad = await run(PLUGIN, ['switchover', `rediscluster/${NAME}`, '-n', NS], { KUBECONFIG: c.kubeconfig });
    assert.equal(bad.code, 2, 'neither --shard nor --to: a usage error');
    assert.match(bad.stderr, /--shard N/);
    await c.waitFor(() => healthy(c, NAME, 3, 3), 60_000, 'every node linked again');
    const since = writer.acked.length;
    await c.waitFor(() => writer.acked.length >= since + 100, 30_000, 'writes keep being acknowledged');
    await writer.stop();
    assert.deepEqual(writer.errors, [], 'no application-visible error but a WAIT unblocked by a switchover');
    assert.deepEqual(
      await missingFromCluster({ seeds: seedsOf(c, NAME), password }, writer.acked.slice(acked0)),
      [],
      'every acknowledged write reads back',
    );
  });

  test('kubectl redis hibernate stops every pod keeping the claims; wake brings the same slots and every key back', async (t) => {
    await writer.stop(); // idempotent: run alone (--test-name-pattern), the day's writer still runs
    const hib = new ClusterWriter({
      seeds: seedsOf(c, NAME),
      password,
      prefix: 'hib',
      waitReplicas: 1,
      waitTimeoutMs: 500,
    });
    hib.start();
    await c.waitFor(() => hib.acked.length >= 500, 60_000, '500 writes acknowledged by a replica');
    await hib.stop();
    assert.deepEqual(hib.errors, []);
    const layout = () =>
      ((statusOf(c, NAME)['shardStatus'] ?? []) as Json[]).map((s) => `${s['index']}: ${s['slots']}`);
    const slotsBefore = layout();
    const ipsBefore = new Set(livePods(c, NAME).map((p) => p.status!.podIP!));
    const selector = { namespace: NS, labelSelector: `app.kubernetes.io/instance=${NAME}` };
    const claims = () => c.list('persistentvolumeclaims', selector).map((p) => `${p.metadata.name} ${p.metadata.uid}`);
    const kept = () =>
      [...c.list('services', selector), ...c.list('configmaps', selector)].map((o) => o.metadata.uid).sort();
    const claimsBefore = claims();
    const keptBefore = kept();
    assert.equal(claimsBefore.length, 9, claimsBefore.join(', '));
    // A step that failed once and was retried (StepFailed) is no alarm; every other Warning is.
    const warningList = () => c.events({ name: NAME }).filter((e) => e.type === 'Warning' && e.reason !== 'StepFailed');
    const warnings = () => warningList().length;
    const warningsBefore = warnings();
    const eventsBefore = c.events({ name: NAME }).length;
    const env = { KUBECONFIG: c.kubeconfig };

    let t0 = performance.now();
    const sleep = await run(PLUGIN, ['hibernate', `rediscluster/${NAME}`, '-n', NS, '--timeout', '3m'], env);
    const sleepMs = performance.now() - t0;
    t.diagnostic(`$ kubectl redis hibernate rediscluster/${NAME}\n${sleep.stdout}${sleep.stderr}`);
    assert.equal(sleep.code, 0, sleep.stderr);
    assert.match(sleep.stdout, /Hibernated: every pod is stopped/);
    assert.equal(c.pods(NAME).length, 0, 'every pod gone');
    assert.equal(row(c, NAME), `${NAME} 3 0 0 0 Hibernated`);
    assert.equal(condition(c, NAME, 'Ready')?.['reason'], 'Hibernated');
    for (let i = 0; i < 3; i++)
      assert.equal((c.get('statefulsets', `${NAME}-shard-${i}`, NS)?.['spec'] as Json)['replicas'], 0);
    assert.deepEqual(claims(), claimsBefore, 'every claim kept');
    assert.deepEqual(kept(), keptBefore, 'the Services and the ConfigMap kept');
    assert.ok(c.get('secrets', `${NAME}-auth`, NS), 'the password Secret kept');
    // Asleep a while: long enough for the node timeout and the operator's failover timeout to pass.
    await new Promise((r) => setTimeout(r, 15_000));
    assert.equal(warnings(), warningsBefore, 'no Warning Event while hibernated');
    assert.equal(statusOf(c, NAME)['phase'], 'Hibernated');

    const reasons = new Set<string>();
    const watch = setInterval(() => reasons.add(String(condition(c, NAME, 'Hibernated')?.['reason'])), 100);
    t.after(() => clearInterval(watch));
    t0 = performance.now();
    const wake = await run(PLUGIN, ['wake', `rediscluster/${NAME}`, '-n', NS, '--timeout', '5m'], env);
    const wakeMs = performance.now() - t0;
    t.diagnostic(`$ kubectl redis wake rediscluster/${NAME}\n${wake.stdout}${wake.stderr}`);
    assert.equal(wake.code, 0, `${wake.stderr}\n${await nodesDump(c)}`);
    await c.waitFor(() => healthy(c, NAME, 3, 3), 120_000, 'nine pods Ready, a master per shard, every node linked');
    t.diagnostic(
      `hibernate -> every pod stopped: ${Math.round(sleepMs)} ms; wake -> Running and Ready: ${Math.round(wakeMs)} ms`,
    );
    clearInterval(watch);
    assert.ok(reasons.has('Waking'), `the Hibernated condition said Waking: ${[...reasons].join(', ')}`);
    await c.waitFor(
      () => condition(c, NAME, 'Hibernated')?.['reason'] === 'Awake',
      30_000,
      'the Hibernated condition Awake',
    );
    const ipsAfter = livePods(c, NAME).map((p) => p.status!.podIP!);
    t.diagnostic(`pod addresses kept: ${ipsAfter.filter((ip) => ipsBefore.has(ip)).length} of 9`);
    assert.deepEqual(layout(), slotsBefore, 'each shard serves the slots it served before');
    assert.deepEqual(claims(), claimsBefore, 'the pods came back on the same claims');
    // A fail flag set while a node was still at its old address clears once it is reachable (a
    // master's after twice the node timeout).
    await c.waitFor(
      async () => (await viewsProblem(c)) === null,
      60_000,
      'every node cluster_state:ok, knowing nine nodes, none failed',
    );
    assert.equal(await viewsProblem(c), null);
    t.diagnostic(
      `Events while asleep and waking: ${c
        .events({ name: NAME })
        .slice(eventsBefore)
        .map((e) => `${e.type} ${e.reason}: ${e.message}`)
        .join(' | ')}`,
    );
    assert.deepEqual(warningList().slice(warningsBefore), [], 'no Warning Event while waking');
    assert.deepEqual(
      await missingFromCluster({ seeds: seedsOf(c, NAME), password }, hib.acked),
      [],
      'every key acknowledged before the hibernation reads back',
    );
    assert.deepEqual(await openSlots(c, NAME), []);
  });
});

/** Every pod's replication and cluster view, for a failure message. */
async function nodesDump(c: SystemCluster): Promise<string> {
  const out: string[] = [condition(c, NAME, 'ShardsReady')?.['message'] as string];
  for (const p of livePods(c, NAME)) {
    const r = admin(c, NAME, p.status!.podIP!);
    try {
      const info = (await r.info('replication')).split('\r\n').filter((l) => /^(role|master_host|master_link)/.test(l));
      out.push(`${p.metadata.name} ${p.status!.podIP!} ${info.join(' ')}\n${String(await r.call('CLUSTER', 'NODES'))}`);
    } catch (err) {
      out.push(`${p.metadata.name}: ${String(err)}`);
    } finally {
      r.disconnect();
    }
  }
  return out.join('\n');
}

/** What is wrong with some node's view (cluster_state, the nodes it knows, their flags), or null. */
async function viewsProblem(c: SystemCluster): Promise<string | null> {
  for (const p of livePods(c, NAME)) {
    const r = admin(c, NAME, p.status!.podIP!);
    try {
      if (!String(await r.call('CLUSTER', 'INFO')).includes('cluster_state:ok'))
        return `${p.metadata.name}: cluster_state not ok`;
      const nodes = String(await r.call('CLUSTER', 'NODES'));
      if (nodes.trim().split('\n').length !== 9 || /fail|noaddr|handshake/.test(nodes))
        return `${p.metadata.name}: ${nodes}`;
    } catch (err) {
      return `${p.metadata.name}: ${String(err)}`;
    } finally {
      r.disconnect();
    }
  }
  return null;
}
