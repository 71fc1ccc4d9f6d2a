// Loopback octet: 127.0.21.x (the real manager: SIGKILL of the master under SET+WAIT 1 writes,
// the old master returning empty, a hung master (SIGSTOP) and its return).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { addr, startRedis, type RedisServer } from '../../support/redis-server.ts';
import { Cluster, missingKeys, redisClient, replicationOf, settle, until, Writer, NS } from './harness.ts';

const N = 21;
const extra = { 'repl-diskless-sync-delay': '0' };

async function threeNodes(t: TestContext, first: number) {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  cluster.createAuthSecret('cache');
  cluster.createRedis('cache');
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, first + i), extra })));
  const names = ['master-0', 'replica-0', 'replica-1'];
  names.forEach((n, i) => cluster.addPod('cache', n, servers[i]!.ip));
  const masters = cluster.watchMasters('cache');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250) });
  await until('a linked set', () => linkedAll(cluster));
  const byPod = new Map(names.map((n, i) => [`cache-${n}`, servers[i]!]));
  return { cluster, servers, masters, a, byPod };
}

function linkedAll(cluster: Cluster): boolean {
  const r = Object.values(cluster.roles('cache'));
  return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
}

async function keyCount(ip: string): Promise<number> {
  const c = redisClient(ip);
  try {
    await c.connect();
    return await c.dbsize();
  } catch {
    return -1;
  } finally {
    c.disconnect();
  }
}

test('SIGKILL of the master: failover, labels moved, no acknowledged write lost; the old master returns empty and becomes a replica without wiping anyone', async (t) => {
  const { cluster, masters, a, byPod } = await threeNodes(t, 1);
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('acknowledged writes', () => writer.acked.length > 200);

  const oldName = cluster.masters('cache')[0]!;
  const old = byPod.get(oldName)!;
  const t0 = performance.now();
  await old.kill();
  // The kubelet notices the container died about a second later (PLEG) and marks the pod NotReady.
  setTimeout(() => cluster.setPodStatus(oldName, old.ip, false), 1000);
  const newName = await until('the master label on another pod', () => {
    const m = cluster.masters('cache');
    return m.length === 1 && m[0] !== oldName && m[0];
  });
  const newIp = cluster.pod(newName)!.status!.podIP!;
  const first = await until('an acknowledged write on the new master', () => writer.ackedAfter(t0, newIp), 10_000);
  t.diagnostic(`kill -> first acknowledged write via the published master: ${Math.round(first.at - t0)} ms`);
  assert.equal(cluster.roles('cache')[oldName], 'replica/down', 'the dead master lost its label in the same round');

  // The old master's container restarts: same pod and IP, empty (no persistence). It must become
  // a replica and never be followed: the new master's key count never drops.
  let minKeys = Infinity;
  const sampler = setInterval(() => {
    void keyCount(newIp).then((n) => {
      if (n >= 0) minKeys = Math.min(minKeys, n);
    });
  }, 20);
  t.after(() => clearInterval(sampler));
  const keysAtRestart = await keyCount(newIp);
  await old.restart();
  cluster.setPodStatus(oldName, old.ip, false);
  await until('the old master replicating from the new one', async () => {
    const r = await replicationOf(old.ip);
    return r['role'] === 'slave' && r['master_host'] === newIp && r['master_link_status'] === 'up';
  });
  cluster.setPodStatus(oldName, old.ip, true);
  await until('all linked again', () => linkedAll(cluster));
  clearInterval(sampler);
  assert.ok(minKeys >= keysAtRestart, `the new master kept its data (min ${minKeys} >= ${keysAtRestart} keys)`);
  assert.deepEqual(cluster.masters('cache'), [newName], 'the returning old master is not labelled master');

  await writer.stop();
  await settle(newIp, 2);
  const keys = writer.acked.map((x) => x.key);
  for (const [name, s] of byPod) {
    const missing = await missingKeys(s.ip, keys);
    if (missing.length > 0) {
      for (const [n2, s2] of byPod) t.diagnostic(`${n2}: ${JSON.stringify(await replicationOf(s2.ip))} dbsize ${await keyCount(s2.ip)}`);
      for (const l of a.logs) {
        const j = JSON.parse(l) as { msg: string; steps?: string[]; reason?: string };
        if (j.msg === 'applied' || j.msg === 'decision') t.diagnostic(`${j.msg} ${j.reason ?? ''} ${(j.steps ?? []).join('; ')}`);
      }
    }
    assert.deepEqual(missing.slice(0, 5), [], `${name} holds every acknowledged write (${keys.length}): ${missing.length} missing`);
  }

  const events = cluster.events('cache');
  const started = events.filter((e) => e.reason === 'FailoverStarted');
  const completed = events.filter((e) => e.reason === 'FailoverCompleted');
  assert.equal(started.length, 1, JSON.stringify(events));
  assert.equal(completed.length, 1);
  assert.match(
    started[0]!.message,
    new RegExp(`^failing over from ${oldName} to ${newName}: ${oldName} crashed: its port has refused connections for \\d+ ms`),
  );
  assert.match(completed[0]!.message, new RegExp(`^failover from ${oldName} to ${newName} completed in \\d+ ms`));
  assert.ok(events.some((e) => e.reason === 'ReplicaRepointed' && e.message.startsWith(`${oldName} now replicates from ${newName}`)));
  const text = await a.metrics.registry.metrics();
  assert.match(text, new RegExp(`redis_operator_failovers_total\\{namespace="${NS}",redis="cache"\\} 1`));
  assert.match(text, /redis_operator_last_failover_duration_seconds\{namespace="redis-test",redis="cache"\} (0\.\d+|[12]\.\d+)/);
  assert.deepEqual(masters.violations, []);
});

test("a crash is seen when the master closes our connection, not at the probe loops' next turn: with loops 30 s apart the failover comes within 10 s", async (t) => {
  const { cluster, a, byPod } = await threeNodes(t, 7);
  // Hand over to an instance whose loops and rounds come 30 s apart: only a pod closing its
  // connection (onLost) can make it look before then. The set is linked and labelled already.
  const slow = { probeIntervalMs: 30_000, idleProbeIntervalMs: 30_000, tickIntervalMs: 30_000 };
  const b = await cluster.startInstance({ id: 'sidecar-b', sourceIp: addr(N, 251), timing: slow });
  await a.stop();
  await until('sidecar-b leads', () => b.elector.isLeader(), 15_000);
  // b's loops probed every pod when they started: it has seen the healthy set once.
  await until(
    'sidecar-b has probed every pod',
    () => ['master-0', 'replica-0', 'replica-1'].every((n) => b.manager.worker(NS, 'cache')?.trackOf(`cache-${n}`)?.facts),
    15_000,
  );
  const oldName = cluster.masters('cache')[0]!;
  await byPod.get(oldName)!.kill();
  const newName = await until(
    'the master label on another pod, long before any loop turns again',
    () => {
      const m = cluster.masters('cache');
      return m.length === 1 && m[0] !== oldName && m[0];
    },
    10_000,
  );
  assert.notEqual(newName, oldName);
  assert.ok(
    b.logs.some((l) => l.includes('crashed: its port has refused connections')),
    'the crash path decided it',
  );
});

test('SIGSTOP of the master: replicas testify, failover; when it resumes it is demoted before anyone follows it', async (t) => {
  const { cluster, masters, byPod } = await threeNodes(t, 11);
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('acknowledged writes', () => writer.acked.length > 200);
  const oldName = cluster.masters('cache')[0]!;
  const old: RedisServer = byPod.get(oldName)!;
  const t0 = performance.now();
  old.stop();
  t.after(() => {
    if (old.running) old.cont();
  });
  const newName = await until(
    'the master label on another pod',
    () => {
      const m = cluster.masters('cache');
      return m.length === 1 && m[0] !== oldName && m[0];
    },
    10_000,
  );
  const newIp = cluster.pod(newName)!.status!.podIP!;
  const first = await until('an acknowledged write on the new master', () => writer.ackedAfter(t0, newIp), 10_000);
  t.diagnostic(`SIGSTOP -> first acknowledged write via the published master: ${Math.round(first.at - t0)} ms`);
  const started = cluster.events('cache').find((e) => e.reason === 'FailoverStarted');
  assert.match(started?.message ?? '', /report the link down, no I\/O for >= 2 s or no byte for >= 1000 ms/);

  // It wakes up believing it is master: demoted to a replica of the new master.
  old.cont();
  await until('the old master following the new one', async () => {
    const r = await replicationOf(old.ip);
    return r['role'] === 'slave' && r['master_host'] === newIp && r['master_link_status'] === 'up';
  });
  await until('all linked again', () => linkedAll(cluster));
  assert.deepEqual(cluster.masters('cache'), [newName]);
  await writer.stop();
  await settle(newIp, 2);
  const keys = writer.acked.map((x) => x.key);
  for (const [name, s] of byPod) assert.deepEqual(await missingKeys(s.ip, keys), [], `${name} holds every acknowledged write (${keys.length})`);
  assert.ok(cluster.events('cache').some((e) => e.reason === 'ReplicaRepointed' && e.message.startsWith(`${oldName} claimed to be master; demoted`)));
  assert.deepEqual(masters.violations, []);
});

test('the master restarts empty so fast the sidecar barely saw it silent: a replica with the data is promoted, the empty node follows it', async (t) => {
  const { cluster, masters, byPod } = await threeNodes(t, 21);
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('acknowledged writes', () => writer.acked.length > 200);
  const oldName = cluster.masters('cache')[0]!;
  const old = byPod.get(oldName)!;
  const counts = new Map<string, number>();
  for (const [name, s] of byPod) if (s !== old) counts.set(name, await keyCount(s.ip));
  // Same pod, same IP, empty data directory, back within milliseconds (a container restart).
  await old.wipe();
  const newName = await until(
    'the master label on a replica',
    () => {
      const m = cluster.masters('cache');
      return m.length === 1 && m[0] !== oldName && m[0];
    },
    10_000,
  );
  const newIp = cluster.pod(newName)!.status!.podIP!;
  await until('the empty node follows the new master', async () => {
    const r = await replicationOf(old.ip);
    return r['master_host'] === newIp && r['master_link_status'] === 'up';
  });
  await writer.stop();
  await settle(newIp, 2);
  for (const [name, s] of byPod) {
    if (s === old) continue;
    assert.ok((await keyCount(s.ip)) >= counts.get(name)!, `${name} was not wiped`);
  }
  const keys = writer.acked.map((x) => x.key);
  for (const [name, s] of byPod) assert.deepEqual((await missingKeys(s.ip, keys)).length, 0, `${name} holds every acknowledged write`);
  assert.deepEqual(masters.violations, []);
});
