// System test: the design article's RedisCluster on the real control plane, with the
// real hook (its own CompositeController), the real sidecars and ioredis' Cluster client as the
// application (test/support/cluster-writer.ts). In order, on one cluster:
// 1. manifests/examples/rediscluster.yaml applied verbatim: nine pods, every slot covered, the
//    kubectl row, and conditions saying how the sentinel block and autoscaling were applied;
// 2. a master's redis-server SIGKILLed under SET + WAIT traffic: the sidecar sees it crashed and
//    forces its replica's election at once, before cluster-node-timeout (5000) could even start
//    the cluster's own; labels and status follow, the restarted node rejoins as a replica, no
//    slot is left uncovered, nothing acknowledged is lost;
// 3. `kubectl scale rediscluster --replicas=4` then 3 under traffic, the sidecar acting SIGKILLed
//    in the middle of the first migration: slots move to the new shard and back, the survivor
//    finishes, no slot stays migrating or importing, no key is lost, the client sees no error but
//    redirections; then 3 -> 4 again, turned back to 3 while it runs: nothing lost either;
// 4. a second RedisCluster with memory limits: autoscaling adds a shard on memory use (an Event
//    with the reason) and a scale-down the data cannot fit is refused, naming the field, nothing
//    removed.
// Real control plane only (Jobs, Leases and the scale subresource as a user meets them).
// Network: subnet 86.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import { ClusterWriter, clusterClient, loadKeys, missingFromCluster } from '../support/cluster-writer.ts';
import { missing, type SystemCluster } from './cluster.ts';
import { borrowCluster, giveBack } from './lane.ts';
import {
  clusterOf,
  condition,
  healthy,
  isRedisMaster,
  labelledMaster,
  livePods,
  mastersUsedMemory,
  openSlots,
  reshardOf,
  row,
  secretValue,
  seedsOf,
  shardPods,
  statusOf,
  type Json,
} from './rediscluster-support.ts';
import { NS } from './support.ts';

const SUBNET = 86;
const NAME = 'order-cache';
const EXAMPLE = readFileSync(new URL('../../manifests/examples/rediscluster.yaml', import.meta.url), 'utf8');

/** The article's example asks for Redis 7.0: Debian's redis-server in the redis:7.0 image. */
const IMAGES = ['redis-7.0'];
const skip = missing(IMAGES) ?? false;

describe('RedisCluster on the real control plane', { skip, timeout: 1_200_000 }, () => {
  let c: SystemCluster;
  let seeds: Array<{ host: string; port: number }> = [];
  let password = '';
  before(async () => {
    c = await borrowCluster({ subnet: SUBNET, nodes: 3, images: IMAGES });
  });
  after(() => c && giveBack(c));

  test(
    "the article's RedisCluster applied verbatim: nine pods, every slot covered, the row, and how sentinel and autoscaling were applied",
    { timeout: 180_000 },
    async (t) => {
      const t0 = performance.now();
      await c.apply(EXAMPLE);
      await c.waitFor(
        () => row(c, NAME) === `${NAME} 3 3 6 16384 Running`,
        120_000,
        `the row "${NAME} 3 3 6 16384 Running"`,
      );
      await c.waitFor(() => healthy(c, NAME, 3, 3), 60_000, 'nine Ready pods, a master per shard, every node linked');
      t.diagnostic(`apply -> "${row(c, NAME)}" and every node linked: ${Math.round(performance.now() - t0)} ms`);
      const pods = livePods(c, NAME).map((p) => p.metadata.name);
      for (let s = 0; s < 3; s++)
        for (let o = 0; o < 3; o++) assert.ok(pods.includes(`${NAME}-shard-${s}-${o}`), `${NAME}-shard-${s}-${o}`);
      const shards = statusOf(c, NAME)['shardStatus'] as Json[];
      assert.deepEqual(
        shards.map((s) => s['slotCount']),
        [5462, 5461, 5461],
        'slots split evenly in contiguous ranges',
      );
      assert.ok(
        shards.every((s) => s['health'] === 'Healthy' && (s['replicas'] as string[]).length === 2),
        JSON.stringify(shards),
      );
      // A master and its replicas prefer separate nodes (three nodes, three pods per shard).
      for (let s = 0; s < 3; s++) {
        const nodes = shardPods(c, NAME, s).map((p) => (p['spec'] as Json)['nodeName']);
        assert.equal(new Set(nodes).size, 3, `shard ${s} spread over three nodes: ${nodes.join(', ')}`);
      }
      const failover = condition(c, NAME, 'FailoverConfigured');
      assert.equal(failover?.['status'], 'True');
      assert.match(String(failover?.['message']), /cluster-node-timeout 5000/);
      assert.match(String(failover?.['message']), /no Sentinel/i);
      const autoscaling = condition(c, NAME, 'Autoscaling');
      assert.match(String(autoscaling?.['message']), /3/, 'the floor of 2 is taken as 3');
      assert.match(
        String(autoscaling?.['message']),
        /memory limit|maxmemory/,
        'no memory limit: nothing to measure against',
      );

      password = secretValue(c, `${NAME}-auth`);
      seeds = seedsOf(c, NAME);
      const client = clusterClient({ seeds, password });
      try {
        await client.set('hello', 'world');
        assert.equal(await client.get('hello'), 'world');
      } finally {
        client.disconnect();
      }
    },
  );

  test(
    'a master SIGKILLed under SET + WAIT traffic: the sidecar has its replica take over before cluster-node-timeout, labels and status follow, the node rejoins as a replica, nothing acknowledged lost',
    { timeout: 180_000 },
    async (t) => {
      const writer = new ClusterWriter({ seeds, password, prefix: 'ack', waitReplicas: 1, waitTimeoutMs: 500 }).start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 300, 30_000, '300 acknowledged writes');
      const victim = labelledMaster(c, NAME, 1)!;
      assert.ok(victim, 'shard 1 has a labelled master');
      const t0 = performance.now();
      assert.ok(await c.killPodProcess(NS, victim.metadata.name, 'SIGKILL'));
      // When a replica became master (INFO on the shard's other pods), apart from when the label followed.
      const others = shardPods(c, NAME, 1).filter((p) => p.metadata.name !== victim.metadata.name);
      const promotedInRedis = c.waitFor(
        async () => {
          for (const p of others) if (await isRedisMaster(c, NAME, p.status!.podIP!)) return performance.now() - t0;
          return undefined;
        },
        60_000,
        'a replica of shard 1 promoted',
      );
      // One master label in the shard, on another pod: the dead one loses its label while it is
      // down (its slots were taken over), not only once it is back.
      const promoted = await c.waitFor(
        () => {
          const m = shardPods(c, NAME, 1).filter((p) => p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER);
          return m.length === 1 && m[0]!.metadata.name !== victim.metadata.name ? m[0]!.metadata.name : undefined;
        },
        60_000,
        'another pod of shard 1 labelled master, and only that one',
      );
      const labelledMs = performance.now() - t0;
      // The bound that tells the sidecar's failover from the cluster's: no node even suspects the
      // killed one before cluster-node-timeout (5000 ms, the example's downAfterMilliseconds).
      const promotedMs = await promotedInRedis;
      assert.ok(
        promotedMs < 5000,
        `a replica master ${Math.round(promotedMs)} ms after the kill, before cluster-node-timeout`,
      );
      const forced = await c.waitFor(
        () => c.events({ namespace: NS, name: NAME, reason: 'FailoverForced' }).find((e) => /crashed/.test(e.message)),
        30_000,
        'a FailoverForced Event saying the master crashed',
      );
      assert.match(forced.message, /refused connections|container .* not running/);
      assert.match(forced.message, /CLUSTER FAILOVER FORCE on .*highest replication offset/);
      await c.waitFor(
        () => row(c, NAME) === `${NAME} 3 3 6 16384 Running` && healthy(c, NAME, 3, 3),
        90_000,
        'every slot covered and the killed node back as a replica',
      );
      assert.equal(
        livePods(c, NAME).find((p) => p.metadata.name === victim.metadata.name)?.metadata.labels?.[ROLE_LABEL],
        'replica',
      );
      // The status follows the pods one hook sync later.
      await c.waitFor(
        () =>
          (statusOf(c, NAME)['shardStatus'] as Json[] | undefined)?.find((s) => s['index'] === 1)?.['master'] ===
          promoted,
        30_000,
        `status names the new master ${promoted}`,
      );
      const since = writer.acked.length;
      await c.waitFor(() => writer.acked.length >= since + 200, 30_000, 'writes keep being acknowledged');
      await writer.stop();
      t.diagnostic(
        `SIGKILL ${victim.metadata.name} -> ${promoted} master in Redis at ${Math.round(promotedMs)} ms, labelled at ${Math.round(labelledMs)} ms (cluster-node-timeout 5000); acked ${writer.acked.length}, not acknowledged ${writer.unacked.length}, transient ${writer.transient}`,
      );
      assert.deepEqual(writer.errors, [], 'no application-visible error');
      assert.deepEqual(
        await missingFromCluster({ seeds, password }, writer.acked),
        [],
        'every acknowledged write reads back',
      );
      assert.deepEqual(await openSlots(c, NAME), []);
    },
  );

  test(
    'kubectl scale to 4 and back to 3 under traffic, the acting sidecar SIGKILLed mid-migration, then a scale-up turned back mid-way: slots move and come back, nothing lost, no client error, no slot left open',
    // 109 s alone since slots move in groups (3 -> 4 in 17 s with the sidecar killed, 4 -> 3 in 9 s);
    // 156 s before, and over 300 s in CI beside other clusters on two cores (a 4 -> 3 took 195 s).
    { timeout: 600_000 },
    async (t) => {
      // Some data to move: 30,000 keys of 1 KiB.
      const loader = clusterClient({ seeds, password, bulk: true });
      t.after(() => loader.disconnect());
      const bulk = Array.from({ length: 30_000 }, (_, j) => ({ key: `bulk:${j}`, value: 'x'.repeat(1024), at: 0 }));
      await loadKeys(loader, bulk);
      loader.disconnect();
      const plain = new ClusterWriter({ seeds, password, prefix: 'plain', verifyReads: true }).start();
      const acked = new ClusterWriter({
        seeds,
        password,
        prefix: 'acked',
        waitReplicas: 1,
        waitTimeoutMs: 500,
      }).start();
      t.after(() => Promise.all([plain.stop(), acked.stop()]));
      await c.waitFor(() => plain.acked.length >= 200, 30_000, 'writes flowing');

      const t0 = performance.now();
      await c.scale(NAME, 4, NS, 'rediscluster');
      const acting = c.leader(NAME, NS)!;
      const running = await c.waitFor(
        () => {
          const r = reshardOf(c, NAME);
          return r && r.to === 4 && r.state === 'Running' && r.moved > 0 && r.moved < r.total ? r : undefined;
        },
        120_000,
        'the 3 -> 4 reshard under way',
      );
      await c.killSidecar(acting);
      t.diagnostic(`${acting} SIGKILLed with ${running.moved}/${running.total} slots moved`);
      await c.waitFor(
        () => row(c, NAME) === `${NAME} 4 4 8 16384 Running` && healthy(c, NAME, 4, 3),
        240_000,
        `the row "${NAME} 4 4 8 16384 Running"`,
      );
      const upMs = performance.now() - t0;
      assert.equal(reshardOf(c, NAME)?.state, 'Done');
      assert.deepEqual(
        (statusOf(c, NAME)['shardStatus'] as Json[]).map((s) => s['slotCount']),
        [4096, 4096, 4096, 4096],
      );
      assert.deepEqual(await openSlots(c, NAME), [], 'no slot left migrating or importing after the takeover');
      await c.restartSidecar(acting);

      const t1 = performance.now();
      await c.scale(NAME, 3, NS, 'rediscluster');
      await c.waitFor(
        () => row(c, NAME) === `${NAME} 3 3 6 16384 Running` && healthy(c, NAME, 3, 3),
        240_000,
        `back to "${NAME} 3 3 6 16384 Running"`,
      );
      await c.waitFor(
        () => c.get('statefulsets', `${NAME}-shard-3`, NS) === undefined,
        60_000,
        'the shard-3 StatefulSet removed once empty',
      );
      const downMs = performance.now() - t1;

      // Turned back mid-way: 3 -> 4 running, the user scales to 3 again. Slots that reached the new
      // shard come back before it goes (bench:reshard lost 1,663 keys here before the hook waited
      // for the sidecar's Done record: the new shard's records still said empty).
      await c.scale(NAME, 4, NS, 'rediscluster');
      await c.waitFor(
        () => {
          const r = reshardOf(c, NAME);
          return r && r.to === 4 && r.state === 'Running' && r.moved > 0 && r.moved < r.total ? r : undefined;
        },
        // The new shard's pods come back on the claims the scale-down kept (old nodes.conf, every
        // address new). In one loaded CI run its replicas were not linked 2 minutes on: a replica can
        // take its master's new address from gossip and still replicate from the old one (Redis
        // re-points it only on its master's own ping); seen here too, and the sidecar now tells it
        // to REPLICATE again (decide/formation.ts). A reshard starts only once one is linked.
        240_000,
        'a second 3 -> 4 reshard under way',
      );
      const t2 = performance.now();
      await c.scale(NAME, 3, NS, 'rediscluster');
      await c.waitFor(
        () =>
          reshardOf(c, NAME)?.to === 3 &&
          reshardOf(c, NAME)?.state === 'Done' &&
          c.get('statefulsets', `${NAME}-shard-3`, NS) === undefined,
        240_000,
        'turned back to 3 shards: Done, and shard 3 removed once empty',
      );
      await c.waitFor(
        () => row(c, NAME) === `${NAME} 3 3 6 16384 Running` && healthy(c, NAME, 3, 3),
        120_000,
        `"${NAME} 3 3 6 16384 Running" again`,
      );
      const backMs = performance.now() - t2;
      await Promise.all([plain.stop(), acked.stop()]);
      t.diagnostic(
        `3 -> 4 in ${Math.round(upMs / 1000)} s (a sidecar killed on the way), 4 -> 3 in ${Math.round(downMs / 1000)} s, turned back mid-way in ${Math.round(backMs / 1000)} s; plain ${plain.acked.length} writes, ${plain.reads} reads; acked ${acked.acked.length}; redirections ${acked.redirections}; transient ${plain.transient}+${acked.transient}`,
      );
      assert.deepEqual(plain.errors, [], 'no client error other than redirections');
      assert.deepEqual(acked.errors, []);
      assert.deepEqual(plain.readMismatches, []);
      assert.deepEqual(
        await missingFromCluster({ seeds: seedsOf(c, NAME), password }, [...plain.acked, ...acked.acked]),
        [],
      );
      assert.deepEqual(
        await missingFromCluster({ seeds: seedsOf(c, NAME), password }, bulk),
        [],
        'every bulk key moved and back',
      );
      assert.deepEqual(await openSlots(c, NAME), []);
    },
  );

  test(
    'memory autoscaling adds a shard (an Event says why); a scale-down the data cannot fit is refused naming the field, nothing removed',
    { timeout: 300_000 },
    async (t) => {
      const SMALL = 'small-cache';
      // 40Mi limit: maxmemory 32 MiB a shard. Target 60%, window 10 s (a scale-up after 1 s).
      await c.apply({
        apiVersion: 'redis.example.com/v1',
        kind: 'RedisCluster',
        metadata: { name: SMALL, namespace: NS },
        spec: {
          version: '7.0',
          master: { replicas: 3 },
          replicas: 0,
          resources: { limits: { memory: '40Mi' } },
          autoscaling: {
            enabled: true,
            minReplicas: 3,
            maxReplicas: 4,
            targetMemoryUtilization: 60,
            stabilizationWindowSeconds: 10,
          },
          sentinel: { downAfterMilliseconds: 2000 },
        },
      });
      await c.waitFor(() => row(c, SMALL) === `${SMALL} 3 3 0 16384 Running`, 120_000, `${SMALL} running`);
      const pw = secretValue(c, `${SMALL}-auth`);
      const smallSeeds = () => seedsOf(c, SMALL);
      // Values are loaded until the masters' own used_memory reaches a share of their maxmemory
      // (per-key overhead is Redis's business, not the test's): 75% of three shards of 32 MiB
      // against the 60% target asks for four shards.
      const client = clusterClient({ seeds: smallSeeds(), password: pw, bulk: true });
      t.after(() => client.disconnect());
      const keys: Array<{ key: string; value: string; at: number }> = [];
      const loadUntil = async (bytes: number) => {
        while ((await mastersUsedMemory(c, SMALL)) < bytes) {
          const from = keys.length;
          const batch = Array.from({ length: 512 }, (_, j) => ({
            key: `fill:${from + j}`,
            value: `${from + j}:`.padEnd(1024, 'y'),
            at: 0,
          }));
          await loadKeys(client, batch);
          keys.push(...batch);
        }
      };
      const MIB = 1024 * 1024;
      await loadUntil(0.75 * 3 * 32 * MIB);
      const t0 = performance.now();
      await c.waitFor(
        () => (clusterOf(c, SMALL)?.['spec']?.['master']?.['replicas'] === 4 ? true : undefined),
        90_000,
        'the autoscaler raising master.replicas to 4',
      );
      // The Event is sent after the scale write: it may reach the cache a little later.
      const scaled = await c.waitFor(
        () => {
          const up = c.events({ name: SMALL }).filter((e) => e.reason === 'AutoscaleUp');
          return up.length > 0 ? up : undefined;
        },
        30_000,
        'an AutoscaleUp Event',
      );
      assert.match(scaled[0]!.message, /memory \d+%.*target 60%/);
      await c.waitFor(() => row(c, SMALL) === `${SMALL} 4 4 0 16384 Running`, 180_000, `${SMALL} resharded to 4`);
      t.diagnostic(
        `${keys.length} keys -> 4 shards Running ${Math.round((performance.now() - t0) / 1000)} s later; Event: ${scaled[0]!.message}`,
      );

      // More data, to 10% above what three shards hold at 90% (86.4 MiB), still well within four.
      await loadUntil(1.1 * 3 * 32 * MIB * 0.9);
      await c.apply({
        apiVersion: 'redis.example.com/v1',
        kind: 'RedisCluster',
        metadata: { name: SMALL, namespace: NS },
        spec: { autoscaling: { enabled: false }, master: { replicas: 3 } },
      });
      const refused = await c.waitFor(
        () => {
          const r = reshardOf(c, SMALL);
          return r && r.to === 3 && r.state === 'Refused' ? r : undefined;
        },
        60_000,
        'the 4 -> 3 reshard refused',
      );
      assert.match(refused.why, /spec\.master\.replicas 3 cannot hold the data/);
      await c.waitFor(
        () => /spec\.master\.replicas/.test(String(condition(c, SMALL, 'Resharded')?.['message'] ?? '')),
        90_000,
        'the Resharded condition naming spec.master.replicas',
      );
      assert.ok(c.get('statefulsets', `${SMALL}-shard-3`, NS), 'shard 3 kept');
      assert.equal(livePods(c, SMALL).length, 4, 'no pod removed');
      assert.equal(row(c, SMALL), `${SMALL} 4 4 0 16384 Running`);
      assert.deepEqual(
        await missingFromCluster({ seeds: smallSeeds(), password: pw }, keys),
        [],
        'every key still there',
      );
    },
  );
});
