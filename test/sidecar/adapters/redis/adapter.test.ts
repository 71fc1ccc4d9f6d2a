// Loopback octet: 127.0.11.x (Redis adapter against real redis-server processes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { desiredRuntimeConfig } from '../../../../src/api/config-directives.ts';
import { RedisAdapter } from '../../../../src/sidecar/adapters/redis/index.ts';
import type { Endpoint } from '../../../../src/sidecar/adapters/redis/index.ts';
import {
  addr,
  cutLink,
  startRedis,
  sweepRules,
  TEST_PASSWORD,
  type RedisServer,
} from '../../../support/redis-server.ts';

const N = 11;
const SIDECAR_IP = addr(N, 250);

function adapter(t: { after(fn: () => void): void }, password = TEST_PASSWORD): RedisAdapter {
  const a = new RedisAdapter({ password, localAddress: SIDECAR_IP });
  t.after(() => a.close());
  return a;
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 10000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function linked(a: RedisAdapter, replica: Endpoint): Promise<void> {
  await waitFor('replica link up', async () => {
    const p = await a.probe(replica);
    return p.ok && p.facts.replication.masterLinkStatus === 'up';
  });
}

/** A master and `n` linked replicas, fencing off so writes work with any replica count. */
async function replicated(
  t: Parameters<typeof startRedis>[0],
  a: RedisAdapter,
  first: number,
  n: number,
): Promise<RedisServer[]> {
  const extra = { 'repl-diskless-sync-delay': '0' };
  const servers = await Promise.all(
    Array.from({ length: n + 1 }, (_, i) => startRedis(t, { ip: addr(N, first + i), minReplicasToWrite: 0, extra })),
  );
  const [master, ...replicas] = servers as [RedisServer, ...RedisServer[]];
  assert.equal((await a.replicaOf(master.endpoint, null)).ok, true);
  for (const r of replicas) assert.equal((await a.replicaOf(r.endpoint, master.endpoint)).ok, true);
  for (const r of replicas) await linked(a, r.endpoint);
  return servers;
}

test('probe reports a fresh node: replica of the placeholder, offset 0, priority and fencing settings', async (t) => {
  const s = await startRedis(t, { ip: addr(N, 1), replicaPriority: 42 });
  const a = adapter(t);
  const p = await a.probe(s.endpoint);
  assert.ok(p.ok, JSON.stringify(p));
  const f = p.facts;
  assert.equal(f.replication.role, 'replica');
  assert.equal(f.replication.masterHost, '127.0.0.1');
  assert.equal(f.replication.masterPort, 1);
  assert.equal(f.replication.masterLinkStatus, 'down');
  assert.equal(f.replication.masterReplOffset, 0);
  assert.equal(f.replicaPriority, 42);
  assert.equal(f.minReplicasToWrite, 1);
  assert.equal(f.minReplicasMaxLag, 5);
  assert.equal(f.keys, 0);
  assert.equal(f.loading, false);
  assert.match(f.runId, /^[0-9a-f]{40}$/);
  // The same CONFIG GET reads every runtime-managed directive: a fresh node reports its engine's defaults.
  assert.deepEqual(f.runtimeConfig, { ...desiredRuntimeConfig(undefined), ...s.engine.ownDefaults });
  t.diagnostic(`probe latency ${p.latencyMs.toFixed(1)} ms (first, with connect)`);
});

test('error taxonomy against live nodes: refused, timeout (hung), auth, timeout (firewalled)', async (t) => {
  sweepRules(N);
  const s = await startRedis(t, { ip: addr(N, 2) });
  const a = adapter(t);

  const refused = await a.probe({ host: addr(N, 99), port: 6379 });
  assert.equal(refused.ok, false);
  assert.equal(!refused.ok && refused.error.kind, 'refused');

  const wrong = adapter(t, 'not-the-password');
  const auth = await wrong.probe(s.endpoint);
  assert.equal(!auth.ok && auth.error.kind, 'auth');

  assert.ok((await a.probe(s.endpoint)).ok);
  s.stop();
  const t0 = performance.now();
  const hung = await a.probe(s.endpoint);
  const hungMs = performance.now() - t0;
  assert.equal(!hung.ok && hung.error.kind, 'timeout');
  // A fresh connection to a stopped process: TCP completes in the kernel, AUTH never answers.
  const hung2 = await a.probe(s.endpoint);
  assert.equal(!hung2.ok && hung2.error.kind, 'timeout');
  s.cont();
  const back = await a.probe(s.endpoint);
  assert.ok(back.ok, 'reconnects after the hang without help');
  t.diagnostic(`hung node reported after ${hungMs.toFixed(0)} ms (commandTimeout 500)`);

  const cut = cutLink(t, SIDECAR_IP, s.ip);
  a.pool.drop(s.endpoint);
  const walled = await a.probe(s.endpoint);
  assert.equal(!walled.ok && walled.error.kind, 'timeout', JSON.stringify(walled));
  cut.restore();
  assert.ok((await a.probe(s.endpoint)).ok);
});

test('a node loading a big RDB answers the probe with loading=true', async (t) => {
  const s = await startRedis(t, { ip: addr(N, 3), minReplicasToWrite: 0 });
  const a = adapter(t);
  assert.ok((await a.replicaOf(s.endpoint, null)).ok);
  const admin = new Redis({
    host: s.ip,
    port: 6379,
    password: TEST_PASSWORD,
    lazyConnect: true,
    enableReadyCheck: false,
  });
  admin.on('error', () => {});
  t.after(() => admin.disconnect());
  await admin.connect();
  await admin.call('DEBUG', 'POPULATE', '1500000', 'key', '64');
  await admin.call('SAVE');
  admin.disconnect();
  a.close();
  await s.restart({ waitFor: 'accept' });
  const p = await waitFor('a probe during loading', async () => {
    const r = await a.probe(s.endpoint);
    return r.ok ? r : undefined;
  });
  assert.equal(p.facts.loading, true, 'caught while loading');
  const done = await waitFor(
    'loaded',
    async () => {
      const r = await a.probe(s.endpoint);
      return r.ok && !r.facts.loading ? r : undefined;
    },
    30000,
  );
  assert.equal(done.facts.keys, 1500000);
  assert.equal(done.facts.replication.role, 'replica', 'restarted as a replica of nowhere');
});

test('what a node restarted from RDB or AOF reports (documented in types.ts)', async (t) => {
  const a = adapter(t);
  const [rdb, replica] = await replicated(t, a, 51, 1);
  assert.ok(rdb && replica);
  const aof = await startRedis(t, {
    ip: addr(N, 53),
    minReplicasToWrite: 0,
    appendonly: true,
    extra: { 'repl-diskless-sync-delay': '0' },
  });
  assert.ok((await a.replicaOf(aof.endpoint, rdb.endpoint)).ok);
  await linked(a, aof.endpoint);
  const admin = new Redis({
    host: rdb.ip,
    port: 6379,
    password: TEST_PASSWORD,
    lazyConnect: true,
    enableReadyCheck: false,
  });
  admin.on('error', () => {});
  t.after(() => admin.disconnect());
  await admin.connect();
  // The master's PING to its replicas (every 10 s) moves the offset by 14 bytes: one landing between
  // the reading below and a SAVE would make the snapshots disagree with it.
  await admin.call('CONFIG', 'SET', 'repl-ping-replica-period', '3600');
  const keys = Array.from({ length: 20 }, (_, i) => `p${i}`);
  for (const k of keys) await admin.set(k, k);
  assert.equal(Number(await admin.call('WAIT', '2', '2000')), 2, 'both replicas hold every key before the snapshots');
  admin.disconnect();
  const before = await a.probe(rdb.endpoint);
  assert.ok(before.ok);
  // One snapshot taken on the master, one on a replica: both must restore the same history.
  for (const s of [rdb, replica]) {
    const c = new Redis({
      host: s.ip,
      port: 6379,
      password: TEST_PASSWORD,
      lazyConnect: true,
      enableReadyCheck: false,
    });
    c.on('error', () => {});
    await c.connect();
    await c.call('SAVE');
    c.disconnect();
  }
  // appendfsync everysec: let the last second reach the AOF file before the restart.
  await new Promise((r) => setTimeout(r, 1200));
  for (const s of [rdb, replica, aof]) await s.restart();
  a.close();
  const [pr, pp, pa] = await Promise.all([a.probe(rdb.endpoint), a.probe(replica.endpoint), a.probe(aof.endpoint)]);
  assert.ok(pr.ok && pp.ok && pa.ok);
  const id = before.facts.replication.masterReplid;
  const off = before.facts.replication.masterReplOffset;
  // RDB keeps history and offset, whether saved on a master or a replica; all restart as replicas of nowhere.
  for (const p of [pr, pp]) {
    assert.equal(p.facts.replication.role, 'replica');
    assert.equal(p.facts.replication.masterHost, '127.0.0.1');
    assert.equal(p.facts.replication.masterReplid, id);
    assert.equal(p.facts.replication.masterReplOffset, off);
    assert.equal(p.facts.replication.masterLinkDownSinceSeconds, null, 'never linked since start');
    assert.equal(p.facts.keys, keys.length);
  }
  // AOF keeps the data but NOT the history: a new random id and offset 0.
  assert.notEqual(pa.facts.replication.masterReplid, id);
  assert.equal(pa.facts.replication.masterReplOffset, 0);
  assert.equal(pa.facts.keys, keys.length);
});

test('pool: one connection per address, reused; retain() closes vanished addresses; password rotation', async (t) => {
  const s1 = await startRedis(t, { ip: addr(N, 4) });
  const s2 = await startRedis(t, { ip: addr(N, 5) });
  const a = adapter(t);
  const id = async (e: Endpoint) => a.pool.run(e, (c) => c.call('CLIENT', 'ID'));
  const first = await id(s1.endpoint);
  assert.equal(await id(s1.endpoint), first, 'same connection');
  await Promise.all([a.probe(s1.endpoint), a.probe(s1.endpoint), a.probe(s2.endpoint)]);
  assert.equal(a.pool.size, 2);
  assert.equal(await id(s1.endpoint), first, 'concurrent probes share it too');
  a.retain([s2.endpoint]);
  assert.equal(a.pool.size, 1);
  assert.notEqual(await id(s1.endpoint), first, 'reconnected after retain dropped it');

  // Rotation: the server's password changes, then ours.
  const admin = new Redis({
    host: s1.ip,
    port: 6379,
    password: TEST_PASSWORD,
    lazyConnect: true,
    enableReadyCheck: false,
  });
  admin.on('error', () => {});
  t.after(() => admin.disconnect());
  await admin.connect();
  await admin.call('CONFIG', 'SET', 'requirepass', 'rotated');
  admin.disconnect();
  a.pool.drop(s1.endpoint);
  const stale = await a.probe(s1.endpoint);
  assert.equal(!stale.ok && stale.error.kind, 'auth');
  a.setPassword('rotated');
  assert.equal(a.pool.size, 0, 'all connections closed on rotation');
  assert.ok((await a.probe(s1.endpoint)).ok);
});

test('pool: onLost is told when a node closes an established connection (its process died), never when the pool closes it', async (t) => {
  const s = await startRedis(t, { ip: addr(N, 40) });
  const lost: string[] = [];
  const a = new RedisAdapter({ password: TEST_PASSWORD, localAddress: SIDECAR_IP, onLost: (e) => lost.push(e.host) });
  t.after(() => a.close());
  assert.ok((await a.probe(s.endpoint)).ok);
  a.pool.drop(s.endpoint);
  assert.ok((await a.probe(s.endpoint)).ok);
  a.retain([]);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(lost, [], 'drop and retain close it themselves: not a loss');
  assert.ok((await a.probe(s.endpoint)).ok);
  await s.kill();
  await waitFor('onLost', async () => lost.length > 0, 5000);
  assert.deepEqual(lost, [s.ip]);
});

test('replicaOf / role / configSet', async (t) => {
  const a = adapter(t);
  const [m, r] = await replicated(t, a, 6, 1);
  assert.ok(m && r);
  const rm = await a.role(m.endpoint);
  assert.ok(rm.ok && rm.role === 'master');
  const rr = await a.role(r.endpoint);
  assert.ok(rr.ok && rr.role === 'replica' && rr.masterHost === m.ip && rr.masterPort === 6379);
  assert.ok((await a.replicaOf(r.endpoint, m.endpoint)).ok, 'idempotent');
  assert.ok((await a.setMinReplicas(m.endpoint, 1, 3)).ok);
  const p = await a.probe(m.endpoint);
  assert.ok(p.ok && p.facts.minReplicasToWrite === 1 && p.facts.minReplicasMaxLag === 3);
  const bad = await a.configSet(m.endpoint, { 'no-such-setting': 1 });
  assert.equal(!bad.ok && bad.error.kind, 'other');
  // The master lists its replica by the replica's own address (bind-source-addr in the harness).
  assert.deepEqual(p.ok && p.facts.replication.replicas.map((l) => l.ip), [r.ip]);
});

/** Writes SET+WAIT 1 continuously to whoever is master; records acknowledged keys. */
function writer(ips: string[]) {
  const clients = ips.map((ip) => {
    const c = new Redis({
      host: ip,
      port: 6379,
      password: TEST_PASSWORD,
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 1500,
      retryStrategy: () => 50,
    });
    c.on('error', () => {});
    return c;
  });
  const acked: string[] = [];
  let running = true;
  let i = 0;
  const loop = (async () => {
    await Promise.all(clients.map((c) => c.connect().catch(() => {})));
    while (running) {
      for (const c of clients) {
        const key = `k${i++}`;
        try {
          await c.set(key, '1');
          const n = Number(await c.call('WAIT', '1', '1000'));
          if (n >= 1) acked.push(key);
        } catch {
          // READONLY on the replica, or paused: only acknowledged keys count
        }
      }
    }
  })();
  return {
    acked,
    async stop() {
      if (!running) return;
      running = false;
      await loop;
      for (const c of clients) c.disconnect();
    },
  };
}

for (const method of ['pause-and-promote', 'failover-command'] as const) {
  test(`switchover (${method}) under writes loses no acknowledged write`, async (t) => {
    const a = adapter(t);
    const base = method === 'pause-and-promote' ? 10 : 20;
    const [m, r1, r2] = await replicated(t, a, base, 2);
    assert.ok(m && r1 && r2);
    const w = writer([m.ip, r1.ip]);
    // Stopped on failure too: a writer left running keeps the file's event loop alive for ever.
    t.after(() => w.stop());
    await waitFor('some writes', async () => w.acked.length > 50);
    const result = await a.switchover(m.endpoint, r1.endpoint, { method, timeoutMs: 3000 });
    assert.ok(result.ok, JSON.stringify(result));
    assert.ok((await a.replicaOf(r2.endpoint, r1.endpoint)).ok);
    const before = w.acked.length;
    await waitFor('writes on the new master', async () => w.acked.length > before + 50);
    await w.stop();
    const roleOld = await a.role(m.endpoint);
    assert.ok(
      roleOld.ok && roleOld.role === 'replica' && roleOld.masterHost === r1.ip,
      'old master follows the new one',
    );
    const check = new Redis({
      host: r1.ip,
      port: 6379,
      password: TEST_PASSWORD,
      lazyConnect: true,
      enableReadyCheck: false,
    });
    check.on('error', () => {});
    t.after(() => check.disconnect());
    await check.connect();
    const values = await check.mget(...w.acked);
    const missing = w.acked.filter((_, i) => values[i] !== '1');
    assert.deepEqual(missing, []);
    t.diagnostic(
      `${method}: switchover took ${result.ms.toFixed(0)} ms; ${w.acked.length} acknowledged writes all present`,
    );
  });
}

test('switchover (pause-and-promote) whose old master refuses REPLICAOF (going away): the target is master, the old one stays paused', async (t) => {
  const a = adapter(t);
  const [m, r1] = await replicated(t, a, 30, 1);
  assert.ok(m && r1);
  // Stands in for a master whose pod is being deleted: it answers everything but the demotion.
  const admin = new Redis({
    host: m.ip,
    port: 6379,
    password: TEST_PASSWORD,
    lazyConnect: true,
    enableReadyCheck: false,
  });
  admin.on('error', () => {});
  t.after(() => admin.disconnect());
  await admin.connect();
  await admin.call('ACL', 'SETUSER', 'default', '-replicaof');
  const result = await a.switchover(m.endpoint, r1.endpoint, { method: 'pause-and-promote', timeoutMs: 3000 });
  assert.ok(result.ok, JSON.stringify(result));
  assert.equal(result.demoted, false);
  const roleNew = await a.role(r1.endpoint);
  assert.ok(roleNew.ok && roleNew.role === 'master', 'the target was promoted');
  // Still paused for writes: a write on the old master does not complete while the pause lasts.
  const write = admin.set('late', '1').then(() => 'done');
  assert.equal(await Promise.race([write, new Promise((r) => setTimeout(() => r('blocked'), 300))]), 'blocked');
  await admin.call('CLIENT', 'UNPAUSE');
  assert.equal(await write, 'done');
});
