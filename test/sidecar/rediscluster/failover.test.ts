// Failures of a RedisCluster's masters, with the real cluster manager and real redis-servers:
// - a master killed: the sidecar sees it crashed (port refused, the replica's link down) and forces
//   its replica's election at once, well before cluster-node-timeout (5 s here); labels and
//   records follow; the pod recreated empty (new address, new node id) is met, made a replica of
//   its shard's new master, and the dead node id is forgotten by every node; no acknowledged key
//   is lost;
// - a master hung (SIGSTOP): the sidecar and most of the cluster's nodes wait for it, and its
//   replica is forced in before cluster-node-timeout; once it resumes it is a replica of the new
//   master;
// - a master lost with its pod (nothing left for the sidecar to judge) in a shard whose replica will
//   not fail over by itself (cluster-replica-no-failover): after sentinel.failoverTimeout the
//   sidecar forces the election on it (FailoverForced);
// - a master restarted empty faster than the cluster noticed: its replica, which still holds the
//   data, is promoted before it copies the empty data set.
// Network: 127.0.34.x (tests at .1-.9, .21-.29, .41-.46; the sidecar's source address .100).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { addr } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { ClusterEnv, NS, podName } from './harness.ts';
import { REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL } from '../../../src/api/rediscluster-names.ts';
import { allCovered, myself, nodesOf } from './nodes.ts';
import { SlotWriter } from './writer.ts';

const OCTET = 34;
const SPEC = { master: { replicas: 3 }, replicas: 1, sentinel: { downAfterMilliseconds: 1000, failoverTimeout: 3000 } };
/** cluster-node-timeout 5 s, as in the benchmark: the cluster's own failover cannot come before it. */
const NODE_TIMEOUT_MS = 5000;
const SLOW_SPEC = { ...SPEC, sentinel: { downAfterMilliseconds: NODE_TIMEOUT_MS, failoverTimeout: 10_000 } };

async function formed(
  t: TestContext,
  name: string,
  base: number,
  extra: (shard: number, ordinal: number) => Record<string, string> = () => ({}),
  spec: typeof SPEC = SPEC,
) {
  const env = await ClusterEnv.start(t);
  await env.createSecrets(name);
  await env.createCluster(name, spec);
  const ip = (s: number, o: number) => addr(OCTET, base + s * 2 + o);
  for (let s = 0; s < 3; s++)
    for (let o = 0; o < 2; o++)
      await env.startNode(t, name, s, o, ip(s, o), extra(s, o), spec.sentinel.downAfterMilliseconds);
  await env.startInstance({ id: 'sidecar-a', sourceIp: addr(OCTET, 100) });
  const ips = [0, 1, 2].flatMap((s) => [ip(s, 0), ip(s, 1)]);
  await until('the cluster formed', () => allCovered(ips, 6), 30_000, { everyMs: 100, dump: () => env.dump(name) });
  await until('every replica linked', () => [...env.records(name).values()].every((r) => r.record?.linkUp), 15_000, {
    everyMs: 50,
  });
  return { env, ip, ips };
}

test('a master killed: the sidecar forces its replica in before cluster-node-timeout; the pod recreated empty is re-attached and the dead id forgotten everywhere; a hung master likewise', async (t) => {
  const name = 'sessions';
  const { env, ip, ips } = await formed(t, name, 1, undefined, SLOW_SPEC);
  const writer = new SlotWriter(ips);
  t.after(() => writer.close());
  for (let i = 0; i < 3000; i++)
    if (await writer.write(`k:${i}`, `v${i}`)) writer.acked.push({ key: `k:${i}`, value: `v${i}` });
  assert.equal(writer.acked.length, 3000);

  const deadId = myself(await nodesOf(ip(0, 0)))!.id;
  const killedAt = performance.now();
  await env.servers.get(podName(name, 0, 0))!.kill();
  await until(
    "shard 0 pod 1 labelled master with the shard's slots",
    () => {
      const r = env.records(name).get(podName(name, 0, 1));
      return r?.role === 'master' && r.record?.slots.length === 1 && r.record.slots[0]![0] === 0;
    },
    20_000,
    { everyMs: 20, dump: () => env.dump(name) },
  );
  const failoverMs = performance.now() - killedAt;
  // Not a timing race: without the sidecar, no node could even suspect the dead one before cluster-node-timeout.
  assert.ok(failoverMs < NODE_TIMEOUT_MS, `forced in before cluster-node-timeout (${Math.round(failoverMs)} ms)`);
  const crashed = (await env.eventsWith(name, { FailoverForced: 1 })).filter((e) => e.reason === 'FailoverForced');
  assert.match(crashed.map((e) => e.message).join('\n'), /crashed: .*refused connections.*reports the link down/);
  // The series the RedisCluster's FrequentFailovers alert reads, on the instance that saw it
  // (counted just after the round's label writes: polled, not read once).
  const failoversLine = `redis_operator_failovers_total{namespace="${NS}",redis="${name}"} 1`;
  await until(
    failoversLine,
    async () => {
      for (const i of env.instances)
        if (
          (await i.registry.getSingleMetricAsString('redis_operator_failovers_total'))
            .split('\n')
            .includes(failoversLine)
        )
          return true;
      return false;
    },
    10_000,
    { everyMs: 50, dump: () => env.dump(name) },
  );
  // And the phase its NotRunning alert reads, from the status the hook writes (here by hand).
  await env.store.patch(
    CLUSTER_PLURAL,
    NS,
    name,
    { status: { phase: 'Resharding' } },
    { type: 'merge', subresource: 'status' },
  );
  await until(
    'redis_operator_redis_phase of the RedisCluster',
    async () =>
      (await env.instances[0]!.registry.getSingleMetricAsString('redis_operator_redis_phase')).includes(
        `{namespace="${NS}",redis="${name}",phase="Resharding"} 1`,
      ),
    10_000,
  );
  const dead = env.records(name).get(podName(name, 0, 0))!;
  assert.equal(dead.record?.linkUp, false, "the dead master's record says its link is down");
  assert.ok(await allCovered(ips.slice(1), 6), 'every slot is served again');

  // The StatefulSet recreates the pod: a new address, an empty data directory (no volume), a new node id.
  await env.deletePod(podName(name, 0, 0));
  const newIp = addr(OCTET, 9);
  await env.servers.get(podName(name, 0, 0))!.wipe({ ip: newIp });
  await env.addPod(name, 0, 0, newIp);
  const live = [newIp, ...ips.slice(1)];
  await until(
    "the recreated pod replicates shard 0's new master and no node knows the dead id",
    async () => {
      const views = await Promise.all(live.map(nodesOf));
      const me = myself(views[0]!);
      const master = myself(views[1]!);
      return (
        me?.role === 'replica' &&
        me.masterId === master?.id &&
        views.every((v) => v?.length === 6 && !v.some((n) => n.id === deadId))
      );
    },
    30_000,
    { everyMs: 100, dump: () => env.dump(name) },
  );
  await until(
    'the recreated pod labelled replica, linked',
    () => {
      const r = env.records(name).get(podName(name, 0, 0));
      return r?.role === 'replica' && r.record?.linkUp;
    },
    15_000,
    { everyMs: 50 },
  );
  const reasons = (await env.eventsWith(name, { MasterChanged: 1, NodeForgotten: 1 })).map((e) => e.reason);
  assert.ok(reasons.includes('MasterChanged'), reasons.join(','));
  assert.ok(reasons.includes('NodeForgotten'), reasons.join(','));

  // A hung master: forced over by the sidecar once the cluster's nodes wait for it too; resumed, it is a replica of the
  // new master.
  const hung = env.servers.get(podName(name, 2, 0))!;
  const hungAt = performance.now();
  hung.stop();
  await until(
    'shard 2 pod 1 labelled master',
    () => env.records(name).get(podName(name, 2, 1))?.role === 'master',
    20_000,
    {
      everyMs: 20,
      dump: () => env.dump(name),
    },
  );
  const hungMs = performance.now() - hungAt;
  hung.cont();
  assert.ok(hungMs < NODE_TIMEOUT_MS, `forced in before cluster-node-timeout (${Math.round(hungMs)} ms)`);
  const forcedHung = (await env.eventsWith(name, { FailoverForced: 2 })).filter((e) => e.reason === 'FailoverForced');
  assert.match(forcedHung.map((e) => e.message).join('\n'), /hung: .*waited >= \d+ ms for its pong/);
  await until(
    "the resumed master is a replica of shard 2's new master, labelled so",
    async () => {
      const me = myself(await nodesOf(ip(2, 0)));
      const master = myself(await nodesOf(ip(2, 1)));
      const r = env.records(name).get(podName(name, 2, 0));
      return me?.role === 'replica' && me.masterId === master?.id && r?.role === 'replica' && r.record?.linkUp;
    },
    20_000,
    { everyMs: 100, dump: () => env.dump(name) },
  );
  assert.ok(await allCovered(live, 6));
  assert.deepEqual(await writer.missing(writer.acked), [], 'every acknowledged write survived both failovers');
  t.diagnostic(
    `killed master -> replica labelled master: ${Math.round(failoverMs)} ms; hung: ${Math.round(hungMs)} ms (cluster-node-timeout ${NODE_TIMEOUT_MS} ms)`,
  );
});

test('a master lost with its pod, in a shard whose replica does not fail over by itself: the sidecar forces the election after failoverTimeout', async (t) => {
  const name = 'carts';
  // Shard 1's replica never starts an election of its own (as a replica cut off from the other masters' votes would
  // not).
  const { env, ips } = await formed(t, name, 21, (s, o): Record<string, string> =>
    s === 1 && o === 1 ? { 'cluster-replica-no-failover': 'yes' } : {},
  );
  const killedAt = performance.now();
  // Its pod goes with it (a lost Kubernetes node): no pod, no probe, nothing but the cluster's own word that it failed.
  await env.deletePod(podName(name, 1, 0));
  await env.servers.get(podName(name, 1, 0))!.kill();
  await until(
    'shard 1 pod 1 promoted by a forced election',
    () => env.records(name).get(podName(name, 1, 1))?.role === 'master',
    30_000,
    {
      everyMs: 50,
      dump: () => env.dump(name),
    },
  );
  const ms = performance.now() - killedAt;
  assert.ok(ms >= 3000, `not before failoverTimeout (${Math.round(ms)} ms)`);
  const forced = (await env.eventsWith(name, { FailoverForced: 1 })).filter((e) => e.reason === 'FailoverForced');
  assert.equal(forced.length, 1, JSON.stringify(env.events(name)));
  assert.match(forced[0]!.message, /highest replication offset/);
  await until(
    'every slot served again (the dead node forgotten or not yet)',
    async () => {
      const live = ips.filter((_, i) => i !== 2);
      return (await allCovered(live, 5)) || (await allCovered(live, 6));
    },
    15_000,
    { everyMs: 100 },
  );
  const metrics = await env.instances[0]!.registry.metrics();
  assert.match(
    metrics,
    /redis_operator_cluster_forced_failovers_total\{namespace="cluster-test",rediscluster="carts"\} 1/,
  );
  t.diagnostic(`killed -> forced promotion labelled: ${Math.round(ms)} ms (failoverTimeout 3000 ms)`);
});

test('a master restarted empty before the cluster noticed: its replica, still holding the data, takes over at once', async (t) => {
  const name = 'orders';
  // Redis' default full-sync delay (5 s) on shard 0's master: the window in which the replica still has its data.
  const { env, ip, ips } = await formed(t, name, 41, (s, o): Record<string, string> =>
    s === 0 && o === 0 ? { 'repl-diskless-sync-delay': '5' } : {},
  );
  const writer = new SlotWriter(ips);
  t.after(() => writer.close());
  for (let i = 0; i < 2000; i++)
    if (await writer.write(`e:${i}`, `v${i}`)) writer.acked.push({ key: `e:${i}`, value: `v${i}` });
  assert.equal(writer.acked.length, 2000);
  // The container is killed and restarted at once (no data on disk, nodes.conf kept): an empty master with its slots.
  await env.servers.get(podName(name, 0, 0))!.restart();
  await until(
    'shard 0 pod 1 master again, pod 0 its replica',
    async () => {
      const replica = myself(await nodesOf(ip(0, 0)));
      const master = myself(await nodesOf(ip(0, 1)));
      return master?.role === 'master' && replica?.role === 'replica' && replica.masterId === master.id;
    },
    20_000,
    { everyMs: 50, dump: () => env.dump(name) },
  );
  const forced = (await env.eventsWith(name, { FailoverForced: 1 })).filter((e) => e.reason === 'FailoverForced');
  assert.equal(forced.length, 1, JSON.stringify(env.events(name)));
  // Whichever the sidecar saw first: the crash (port refused, link down) or the empty master that came back.
  assert.match(forced[0]!.message, /restarted empty|crashed/);
  assert.deepEqual(await writer.missing(writer.acked), [], 'every acknowledged write survived the empty restart');
});
