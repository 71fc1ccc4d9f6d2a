// Loopback octet: 127.0.12.x (bootstrap and re-pointing, decisions + adapter on real redis-server).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ROLE_LABEL } from '../../../src/api/labels.ts';
import { addr, startRedis, type RedisServerOptions } from '../../support/redis-server.ts';
import { MiniManager, missingKeys, redisClient, waitUntil } from './mini-manager.ts';

const N = 12;
const extra = { 'repl-diskless-sync-delay': '0' };

async function threeNodes(t: TestContext, first: number, opts: Partial<RedisServerOptions> = {}) {
  const m = new MiniManager({ name: 'cache', sidecarIp: addr(N, 250) });
  t.after(() => m.close());
  const [s0, s1, s2] = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, first + i), extra, ...opts })));
  m.addPod('master-0', s0!);
  m.addPod('replica-0', s1!);
  m.addPod('replica-1', s2!);
  return m;
}

const linkedAll = (m: MiniManager) => (p: { steps: unknown[] }) =>
  p.steps.length === 0 && m.pods.every((x) => x.annotations['redis.example.com/link'] === 'up');

async function write(ip: string, n: number, prefix: string): Promise<string[]> {
  const c = redisClient(ip);
  await c.connect();
  const keys = Array.from({ length: n }, (_, i) => `${prefix}${i}`);
  for (const k of keys) await c.set(k, k);
  await c.call('WAIT', '2', '2000');
  c.disconnect();
  return keys;
}

test('bootstrap of a fresh set: master-0 promoted, the others replicate from it, labels follow', async (t) => {
  const m = await threeNodes(t, 1);
  const first = await m.converge((p) => p.decision.kind === 'promote');
  assert.equal(first.decision.kind === 'promote' && first.decision.cause, 'bootstrap');
  assert.equal(first.decision.kind === 'promote' && first.decision.master, 'cache-master-0');
  await m.converge(linkedAll(m));
  assert.deepEqual(
    m.pods.map((p) => [p.name, p.labels[ROLE_LABEL]]),
    [
      ['cache-master-0', 'master'],
      ['cache-replica-0', 'replica'],
      ['cache-replica-1', 'replica'],
    ],
  );
  const master = m.pod('master-0');
  const probe = await m.adapter.probe({ host: master.ip!, port: 6379 });
  assert.ok(probe.ok && probe.facts.minReplicasToWrite === 1, 'fencing back at the spec value once replicas are linked');
  const keys = await write(master.ip!, 100, 'b');
  assert.deepEqual(await missingKeys(m.pod('replica-1').ip!, keys), []);
  // A healthy set is quiet: no step at all on further rounds.
  await m.probeAll();
  assert.deepEqual((await m.tick()).steps, []);
});

test('re-point: a replica on a stale address, a replica recreated with a new IP, the master recreated with a new IP', async (t) => {
  const m = await threeNodes(t, 11, { save: '' });
  await m.converge(linkedAll(m));
  const keys = await write(m.pod('master-0').ip!, 200, 'r');

  // 1. Someone (or a stale config) points replica-1 at an address where nothing listens.
  const r1 = m.pod('replica-1');
  await m.adapter.replicaOf({ host: r1.ip!, port: 6379 }, { host: addr(N, 99), port: 6379 });
  const fixed = await m.converge((p) => p.steps.some((s) => s.kind === 'replicaof' && s.pod === 'cache-replica-1'));
  assert.match(fixed.steps.find((s) => s.kind === 'replicaof')!.reason, /replicates from 127\.0\.12\.99:6379, not the master's address/);
  await m.converge(linkedAll(m));

  // 2. replica-0's pod is recreated with a new IP (same volume): back as a replica of nowhere.
  const r0 = m.pod('replica-0');
  await r0.server.restart({ ip: addr(N, 21) });
  m.recreated(r0);
  const p2 = await m.converge((p) => p.steps.some((s) => s.kind === 'replicaof' && s.pod === 'cache-replica-0'));
  assert.match(p2.steps.find((s) => s.kind === 'replicaof')!.reason, /started as a replica of nowhere/);
  await m.converge(linkedAll(m));
  assert.deepEqual(await missingKeys(r0.ip!, keys), []);

  // 3. The master's pod is recreated with a new IP and its RDB (saved just before): no pod is
  //    labelled master any more; the node with the most data (a tie: master-0 wins as the master
  //    StatefulSet's pod) is chosen and every replica is re-pointed from the old address.
  const c = redisClient(m.pod('master-0').ip!);
  await c.connect();
  await c.call('SAVE');
  c.disconnect();
  const m0 = m.pod('master-0');
  const oldIp = m0.ip;
  await m0.server.restart({ ip: addr(N, 22) });
  m.recreated(m0);
  const p3 = await m.converge((p) => p.decision.kind === 'promote');
  assert.equal(p3.decision.kind === 'promote' && p3.decision.master, 'cache-master-0', p3.decision.reason);
  const reasons = p3.steps.filter((s) => s.kind === 'replicaof').map((s) => s.reason);
  assert.equal(reasons.length, 2);
  for (const r of reasons) assert.match(r, new RegExp(`replicates from ${oldIp!.replace(/\./g, '\\.')}:6379`));
  await m.converge(linkedAll(m));
  assert.equal(m.publishedMaster()?.ip, addr(N, 22));
  for (const p of m.pods) assert.deepEqual(await missingKeys(p.ip!, keys), [], `${p.name} has every key`);
});

test('full restart from RDB: the node with the most data becomes master, nobody is wiped', async (t) => {
  const m = await threeNodes(t, 31);
  await m.converge(linkedAll(m));
  const early = await write(m.pod('master-0').ip!, 50, 'e');
  // Snapshot master-0 and replica-0 now; replica-1 only after more writes: it has the most data.
  for (const name of ['master-0', 'replica-0']) {
    const c = redisClient(m.pod(name).ip!);
    await c.connect();
    await c.call('SAVE');
    c.disconnect();
  }
  const late = await write(m.pod('master-0').ip!, 50, 'l');
  const c = redisClient(m.pod('replica-1').ip!);
  await c.connect();
  await c.call('SAVE');
  c.disconnect();
  // Everything goes down; pods come back (new IPs, no labels), loading their RDB files.
  for (const p of m.pods) await p.server.kill();
  m.tracks.clear();
  let next = 41;
  for (const p of m.pods) {
    await p.server.restart({ ip: addr(N, next++) });
    m.recreated(p);
  }
  m.spec = { ...m.spec, persistence: true };
  const p = await m.converge((x) => x.decision.kind === 'promote');
  assert.equal(p.decision.kind === 'promote' && p.decision.master, 'cache-replica-1', p.decision.reason);
  assert.match(p.decision.reason, /most data/);
  await m.converge(linkedAll(m));
  for (const pod of m.pods) {
    assert.deepEqual(await missingKeys(pod.ip!, [...early, ...late]), [], `${pod.name} has every key`);
  }
  const probe = await m.adapter.probe({ host: m.pod('master-0').ip!, port: 6379 });
  assert.ok(probe.ok);
  t.diagnostic(`after a full restart from RDB: ${probe.ok && probe.facts.keys} keys on the old master-0, which now follows replica-1`);
});

test('what a node restarted from RDB or AOF reports (documented in types.ts)', async (t) => {
  const rdb = await startRedis(t, { ip: addr(N, 51), minReplicasToWrite: 0, extra });
  const replica = await startRedis(t, { ip: addr(N, 52), minReplicasToWrite: 0, extra });
  const aof = await startRedis(t, { ip: addr(N, 53), minReplicasToWrite: 0, appendonly: true, extra });
  const m = new MiniManager({ name: 'x', sidecarIp: addr(N, 250) });
  t.after(() => m.close());
  const a = m.adapter;
  await a.replicaOf(rdb.endpoint, null);
  await a.replicaOf(replica.endpoint, rdb.endpoint);
  await a.replicaOf(aof.endpoint, rdb.endpoint);
  await waitUntil('linked', async () => {
    const [x, y] = await Promise.all([a.probe(replica.endpoint), a.probe(aof.endpoint)]);
    return x.ok && y.ok && x.facts.replication.masterLinkStatus === 'up' && y.facts.replication.masterLinkStatus === 'up';
  });
  const keys = await write(rdb.ip, 20, 'p');
  const before = await a.probe(rdb.endpoint);
  assert.ok(before.ok);
  for (const s of [rdb, replica]) {
    const c = redisClient(s.ip);
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
