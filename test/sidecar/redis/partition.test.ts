// Loopback octet: 127.0.16.x (network partitions with iptables: the sidecar alone cut off from
// the master; the master cut off from its replicas; the master cut off from everyone).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { addr, cutLink, sweepRules } from '../../support/redis-server.ts';
import { threeNodeSet, missingKeys, redisClient, waitUntil, Writer, assertAllHold } from './mini-manager.ts';

const N = 16;
const SIDECAR = addr(N, 250);

async function setUp(t: TestContext, first: number, lagSeconds = 5) {
  sweepRules(N);
  const { m } = await threeNodeSet(t, N, first, { sidecarIp: SIDECAR, spec: { minReplicasMaxLagSeconds: lagSeconds } });
  await m.converge((p) => p.steps.length === 0 && m.pods.every((x) => x.annotations['redis.example.com/link'] === 'up'));
  return m;
}

/** SET through a plain client (source 127.0.0.1, never cut): 'OK' or the error's first word. */
async function trySet(ip: string, key: string): Promise<string> {
  const c = redisClient(ip);
  try {
    await c.connect();
    return String(await c.set(key, key));
  } catch (err) {
    return String((err as Error).message).split(' ')[0]!;
  } finally {
    c.disconnect();
  }
}

test('only the sidecar loses the master (replicas still see it): no failover, writes go on', async (t) => {
  const m = await setUp(t, 1);
  m.start();
  t.after(() => m.stop());
  const writer = new Writer(m);
  writer.start();
  t.after(() => writer.stop());
  await waitUntil('writes', () => writer.acked.length > 20);
  const master = m.publishedMaster()!;
  const t0 = performance.now();
  const cut = cutLink(t, SIDECAR, master.ip!);
  // Long enough for every detection path: downAfter 1 s, replica silence 2 s + confirmation.
  await new Promise((r) => setTimeout(r, 6000));
  const promotions = m.decisions.filter((d) => d.at >= t0 && d.plan.decision.kind === 'promote');
  assert.deepEqual(
    promotions.map((d) => d.plan.decision.reason),
    [],
    'no failover',
  );
  assert.equal(m.lastPlan?.decision.kind, 'wait', 'the manager noticed it cannot reach the master');
  assert.match(m.lastPlan!.decision.reason, /still hear.*the sidecar lost contact, the master did not fail; no failover/);
  t.diagnostic(m.lastPlan!.decision.reason);
  assert.ok(
    writer.acked.some((a) => a.at > t0 + 5000 && a.via === master.ip),
    'the master kept taking acknowledged writes',
  );
  assert.equal(m.publishedMaster(), master);
  cut.restore();
  await waitUntil('back to keep', () => m.decisions.at(-1)?.plan.decision.kind === 'keep');
  await writer.stop();
  assert.deepEqual(
    await missingKeys(
      master.ip!,
      writer.acked.map((a) => a.key),
    ),
    [],
  );
});

test('the master cut off from its replicas (the sidecar still reaches all): it refuses writes, no failover', async (t) => {
  const m = await setUp(t, 11, 1);
  const master = m.pod('master-0');
  assert.equal(await trySet(master.ip!, 'before'), 'OK');
  for (const r of m.pods.filter((p) => p !== master)) cutLink(t, master.ip!, r.ip!);
  const t0 = performance.now();
  const refused = await waitUntil(
    'NOREPLICAS',
    async () => ((await trySet(master.ip!, `x${performance.now()}`)) === 'NOREPLICAS' ? true : undefined),
    10000,
    100,
  );
  t.diagnostic(`isolated master refused writes ${Math.round(performance.now() - t0)} ms after the cut (min-replicas-max-lag 1 s)`);
  assert.equal(refused, true);
  // The decisions keep it master (it answers) and keep its fencing on: the replicas cut off
  // from it still count as replicas that can exist.
  const p = await m.converge(() => true);
  assert.equal(p.decision.kind, 'keep');
  assert.deepEqual(
    p.steps.filter((s) => s.kind === 'config' || s.kind === 'promote'),
    [],
  );
});

test('the master cut off from everyone: it fences itself, the replicas testify, failover; healed, it is demoted', async (t) => {
  const m = await setUp(t, 21, 1);
  m.start();
  t.after(() => m.stop());
  const writer = new Writer(m);
  writer.start();
  t.after(() => writer.stop());
  await waitUntil('writes', () => writer.acked.length > 20);
  const old = m.publishedMaster()!;
  const cuts = [cutLink(t, SIDECAR, old.ip!), ...m.pods.filter((p) => p !== old).map((r) => cutLink(t, old.ip!, r.ip!))];
  const t0 = performance.now();
  // A client that can still reach the old master (another address) is refused once the lag passes.
  const refused = await waitUntil(
    'NOREPLICAS on the isolated old master',
    async () => ((await trySet(old.ip!, `iso${performance.now()}`)) === 'NOREPLICAS' ? true : undefined),
    10000,
    100,
  );
  assert.equal(refused, true);
  const promoted = await waitUntil('failover', () => m.firstDecision(t0, (d) => d.plan.decision.kind === 'promote'), 10000);
  t.diagnostic(`partitioned master: failover after ${Math.round(promoted.at - t0)} ms (${promoted.plan.decision.reason})`);
  const fresh = m.publishedMaster()!;
  assert.notEqual(fresh, old);
  await waitUntil('acknowledged writes on the new master', () => writer.acked.some((a) => a.at > promoted.at && a.via === fresh.ip));
  for (const c of cuts) c.restore();
  await waitUntil('old master demoted and following', async () => {
    const r = await m.adapter.probe({ host: old.ip!, port: 6379 });
    return r.ok && r.facts.replication.role === 'replica' && r.facts.replication.masterHost === fresh.ip && r.facts.replication.masterLinkStatus === 'up';
  });
  await writer.stop();
  const keys = writer.acked.map((a) => a.key);
  await assertAllHold(m.pods, keys);
});
