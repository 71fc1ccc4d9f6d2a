// Loopback octet: 127.0.15.x (the old master comes back EMPTY: it must become a replica and never
// be followed, so nobody's data is wiped).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { addr } from '../../support/redis-server.ts';
import { threeNodeSet, missingKeys, redisClient, waitUntil } from './mini-manager.ts';

const N = 15;

async function setUp(t: TestContext, first: number) {
  const { m } = await threeNodeSet(t, N, first, { sidecarIp: addr(N, 250) });
  await m.converge((p) => p.steps.length === 0 && m.pods.every((x) => x.annotations['redis.example.com/link'] === 'up'));
  const c = redisClient(m.pod('master-0').ip!);
  await c.connect();
  const keys = Array.from({ length: 500 }, (_, i) => `e${i}`);
  for (let i = 0; i < keys.length; i += 100) await c.mset(...keys.slice(i, i + 100).flatMap((k) => [k, k]));
  assert.equal(Number(await c.call('WAIT', '2', '2000')), 2);
  c.disconnect();
  return { m, keys };
}

/** Samples DBSIZE of the given nodes every few ms; `lowest` is the smallest count seen per node. */
function watchDbsize(ips: string[]) {
  const lowest = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    const clients = ips.map((ip) => redisClient(ip));
    await Promise.all(clients.map((c) => c.connect().catch(() => {})));
    while (running) {
      await Promise.all(
        clients.map(async (c, i) => {
          const n = await c.dbsize().catch(() => undefined);
          if (n !== undefined) lowest.set(ips[i]!, Math.min(lowest.get(ips[i]!) ?? Infinity, n));
        }),
      );
      await new Promise((r) => setTimeout(r, 5));
    }
    for (const c of clients) c.disconnect();
  })();
  return {
    lowest,
    async stop() {
      running = false;
      await loop;
    },
  };
}

test('the old master returns empty after the failover: re-pointed to the new master, data copied to it, nobody wiped', async (t) => {
  const { m, keys } = await setUp(t, 1);
  const old = m.pod('master-0');
  const survivors = m.pods.filter((p) => p !== old).map((p) => p.ip!);
  const watch = watchDbsize(survivors);
  t.after(() => watch.stop());
  await old.server.kill();
  await m.converge((p) => p.decision.kind === 'promote');
  await m.converge((p) => p.steps.length === 0);
  const master = m.publishedMaster()!;
  assert.notEqual(master, old);
  // The container restarts without its data (no volume), same pod and IP.
  await old.server.wipe();
  const p = await m.converge((x) => x.steps.some((s) => s.kind === 'replicaof' && s.pod === old.name));
  assert.equal(p.decision.kind, 'keep', 'the returning node does not disturb the master');
  assert.match(p.steps.find((s) => s.kind === 'replicaof')!.reason, /started as a replica of nowhere/);
  await m.converge((x) => x.steps.length === 0 && m.pods.every((y) => y.annotations['redis.example.com/link'] === 'up'));
  await watch.stop();
  for (const ip of survivors) assert.equal(watch.lowest.get(ip), keys.length, `${ip} never lost a key`);
  for (const pod of m.pods) assert.deepEqual(await missingKeys(pod.ip!, keys), [], `${pod.name} has every key`);
  assert.equal(m.publishedMaster(), master);
});

test('the master restarts empty so fast that the sidecar never saw it silent: still no wipe', async (t) => {
  const { m, keys } = await setUp(t, 11);
  const old = m.pod('master-0');
  const others = m.pods.filter((p) => p !== old);
  const watch = watchDbsize(others.map((p) => p.ip!));
  t.after(() => watch.stop());
  const t0 = performance.now();
  await old.server.wipe(); // SIGKILL + empty restart, same IP: the label still says master
  const p = await m.converge((x) => x.decision.kind === 'promote');
  assert.ok(p.decision.kind === 'promote');
  assert.notEqual(p.decision.master, old.name, `the empty node is never chosen: ${p.decision.reason}`);
  assert.match(p.decision.reason, /answers as a replica of 127\.0\.0\.1:1/);
  assert.match(p.decision.reason, /cache-master-0: another replication history/);
  t.diagnostic(`empty restart of the master -> promotion of ${p.decision.master} in ${Math.round(performance.now() - t0)} ms`);
  await m.converge((x) => x.steps.length === 0 && m.pods.every((y) => y.annotations['redis.example.com/link'] === 'up'));
  await watch.stop();
  for (const pod of others) assert.equal(watch.lowest.get(pod.ip!), keys.length, `${pod.name} never lost a key`);
  for (const pod of m.pods) assert.deepEqual(await missingKeys(pod.ip!, keys), [], `${pod.name} has every key`);
  await waitUntil('old master labelled replica', () => old.labels['redis.example.com/role'] === 'replica');
});
