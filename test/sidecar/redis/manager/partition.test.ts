// Loopback octet: 127.0.23.x (the real manager under network partitions made with iptables: the sidecar alone cut off
// from the master; the master cut off from its replicas, moved; cut off from its only replica, kept; the master cut off
// from everyone). The sidecar's Redis connections come from 127.0.23.250 so one rule can cut only its link; the writer
// connects from 127.0.0.1 and is never cut.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { addr, cutLink, startRedis, sweepRules } from '../../../support/redis-server.ts';
import { Cluster, missingKeys, redisCall, replicationOf, settle, sleep, until, Writer } from './harness.ts';

const N = 23;
Cluster.shareApiServer();
const SIDECAR = addr(N, 250);
const extra = { 'repl-diskless-sync-delay': '0' };

async function threeNodes(t: TestContext, first: number, maxLag = 5) {
  sweepRules(N);
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache', { failover: { minReplicasMaxLagSeconds: maxLag } });
  const servers = await Promise.all(
    [0, 1, 2].map((i) => startRedis(t, { ip: addr(N, first + i), minReplicasMaxLag: maxLag, extra })),
  );
  await cluster.addPods('cache', servers);
  const masters = cluster.watchMasters('cache');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: SIDECAR });
  await until('a linked set', () => linkedAll(cluster));
  return { cluster, servers, masters, a };
}

function linkedAll(cluster: Cluster): boolean {
  const r = Object.values(cluster.roles('cache'));
  return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
}

test('only the sidecar loses the master (the replicas still hear it): no failover, one FailoverBlocked event, writes go on', async (t) => {
  const { cluster, servers, masters, a } = await threeNodes(t, 1);
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('writes', () => writer.acked.length > 50);
  const master = servers[0]!;
  const t0 = performance.now();
  const cut = cutLink(t, SIDECAR, master.ip);
  // Long enough for every detection path: downAfter 1 s, replica silence 2 s + confirmation.
  await sleep(6000);
  const events = cluster.events('cache');
  assert.deepEqual(
    events.filter((e) => e.reason === 'FailoverStarted'),
    [],
    'no failover',
  );
  const blocked = events.filter((e) => e.reason === 'FailoverBlocked');
  assert.equal(blocked.length, 1, 'told once, not every tick');
  assert.match(blocked[0]!.message, /still hear.*the sidecar lost contact, the master did not fail; no failover/);
  assert.deepEqual(cluster.masters('cache'), ['cache-master-0']);
  assert.ok(writer.ackedAfter(t0 + 5000, master.ip), 'the master kept taking acknowledged writes');
  const worker = a.manager.worker('redis-test', 'cache')!;
  assert.equal(worker.lastPlan?.decision.kind, 'wait');
  // The sidecar cannot tell the pod's link state: the annotation says what it last knew, and the
  // metrics say it cannot reach it.
  assert.match(
    await a.metrics.registry.metrics(),
    /redis_operator_pod_up\{namespace="redis-test",redis="cache",pod="cache-master-0"\} 0/,
  );
  cut.restore();
  await until('back to keep', () => worker.lastPlan?.decision.kind === 'keep');
  await writer.stop();
  await settle(master.ip, 2);
  const keys = writer.acked.map((x) => x.key);
  for (const s of servers) assert.deepEqual(await missingKeys(s.ip, keys), []);
  assert.deepEqual(masters.violations, []);
});

test('the master cut off from its replicas (the sidecar still reaches it): fenced, it is moved to the best replica and demoted; writes come back, none acknowledged is lost', async (t) => {
  const { cluster, servers, masters } = await threeNodes(t, 11, 1);
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('writes', () => writer.acked.length > 100);
  // Both replicas must hold the stream before the cut: a replica whose link just came up can still
  // be at offset 0 (the master sends what it buffered after the replica loaded the snapshot), and
  // such a replica is rightly no witness (cut-off.ts), so on a loaded machine the move never came.
  await until('both replicas hold the writes', async () => {
    for (const r of servers.slice(1))
      if (Number((await replicationOf(r.ip))['slave_repl_offset'] ?? 0) <= 0) return false;
    return true;
  });
  const old = servers[0]!;
  const t0 = performance.now();
  const cuts = servers.slice(1).map((r) => cutLink(t, old.ip, r.ip));
  const newName = await until(
    'the master moved to a replica',
    () => {
      const m = cluster.masters('cache');
      return m.length === 1 && m[0] !== 'cache-master-0' && m[0];
    },
    15_000,
  );
  const newIp = cluster.pod(newName)!.status!.podIP!;
  const first = await until('an acknowledged write on the new master', () => writer.ackedAfter(t0, newIp), 10_000);
  t.diagnostic(`replica cut -> first acknowledged write on the new master: ${Math.round(first.at - t0)} ms`);
  // The sidecar still reaches the old master: it is demoted at once, not when the cut heals.
  await until('the old master demoted while the cut lasts', async () => {
    const r = await replicationOf(old.ip);
    return r['role'] === 'slave' && r['master_host'] === newIp;
  });
  const started = (
    await cluster.eventsWhen('cache', 'the failover told', (e) => e.some((x) => x.reason === 'FailoverStarted'))
  ).filter((e) => e.reason === 'FailoverStarted');
  assert.equal(started.length, 1, 'one failover');
  assert.match(started[0]!.message, /replicas have lost it/);
  for (const c of cuts) c.restore();
  await until(
    'the old master following again',
    async () => (await replicationOf(old.ip))['master_link_status'] === 'up',
  );
  await until('all linked again', () => linkedAll(cluster));
  await writer.stop();
  await settle(newIp, 2);
  const keys = writer.acked.map((x) => x.key);
  for (const s of servers)
    assert.deepEqual(await missingKeys(s.ip, keys), [], `${s.ip} holds every acknowledged write`);
  assert.deepEqual(masters.violations, []);
});

test('the master cut off from its only replica: no move (the replica alone could not acknowledge writes either); it stays fenced', async (t) => {
  sweepRules(N);
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache', { replicas: 1, failover: { minReplicasMaxLagSeconds: 1 } });
  const servers = await Promise.all(
    [0, 1].map((i) => startRedis(t, { ip: addr(N, 31 + i), minReplicasMaxLag: 1, extra })),
  );
  await cluster.addPods('cache', servers);
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: SIDECAR });
  await until(
    'a linked pair',
    () => Object.values(cluster.roles('cache')).filter((v) => v.endsWith('/up')).length === 2,
  );
  const master = servers[0]!;
  cutLink(t, master.ip, servers[1]!.ip);
  await until(
    'NOREPLICAS',
    async () => (await redisCall(master.ip, 'SET', `x${performance.now()}`, '1')) === 'NOREPLICAS',
    10_000,
    100,
  );
  // Past every hold: the replica's testimony (about 2 s) plus downAfterMilliseconds.
  await sleep(4000);
  assert.deepEqual(cluster.masters('cache'), ['cache-master-0']);
  assert.deepEqual(
    cluster.events('cache').filter((e) => e.reason === 'FailoverStarted'),
    [],
  );
  assert.equal(a.manager.worker('redis-test', 'cache')!.lastPlan?.decision.kind, 'keep');
  assert.equal(
    await redisCall(master.ip, 'CONFIG', 'GET', 'min-replicas-to-write'),
    JSON.stringify(['min-replicas-to-write', '1']),
  );
});

test('the master cut off from everyone but its clients: fenced, failover, no acknowledged write lost; healed, it is demoted', async (t) => {
  const { cluster, servers, masters } = await threeNodes(t, 21, 1);
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('writes', () => writer.acked.length > 100);
  const old = servers[0]!;
  const t0 = performance.now();
  const cuts = [SIDECAR, servers[1]!.ip, servers[2]!.ip].map((ip) => cutLink(t, old.ip, ip));
  const newName = await until(
    'failover',
    () => {
      const m = cluster.masters('cache');
      return m.length === 1 && m[0] !== 'cache-master-0' && m[0];
    },
    15_000,
  );
  const newIp = cluster.pod(newName)!.status!.podIP!;
  const first = await until('an acknowledged write on the new master', () => writer.ackedAfter(t0, newIp), 10_000);
  t.diagnostic(`partitioned master -> first acknowledged write on the new master: ${Math.round(first.at - t0)} ms`);
  // Meanwhile the old master, still reachable by clients, refuses writes: Redis re-counts its
  // good replicas once a second, so a write may slip in until then (it is never acknowledged by
  // WAIT, so no client was told it is safe); bound how long that lasts.
  await until(
    'the isolated old master refusing writes',
    async () => (await redisCall(old.ip, 'SET', 'split', '1')) === 'NOREPLICAS',
    3_000,
  );
  for (const c of cuts) c.restore();
  await until('the old master demoted and following', async () => {
    const r = await replicationOf(old.ip);
    return r['role'] === 'slave' && r['master_host'] === newIp && r['master_link_status'] === 'up';
  });
  await until('all linked again', () => linkedAll(cluster));
  await writer.stop();
  await settle(newIp, 2);
  const keys = writer.acked.map((x) => x.key);
  for (const s of servers)
    assert.deepEqual(await missingKeys(s.ip, keys), [], `${s.ip} holds every acknowledged write`);
  assert.deepEqual(masters.violations, []);
});
