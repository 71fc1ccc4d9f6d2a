// Loopback octet: 127.0.27.x. The shared failure policy and step reporter (src/sidecar/core/), as
// the Redis manager runs them, against a real kube-apiserver: a step that keeps failing is told
// once (one log line, one StepFailed Warning), backs off instead of being retried every round,
// and its recovery is logged when it clears.
// Counts, not timings, decide these tests: the permanent back-off is far longer than the test.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { addr, startRedis } from '../../support/redis-server.ts';
import { Cluster, sleep, until } from '../redis/manager/harness.ts';

const N = 27;
Cluster.shareApiServer();

async function freshSet(t: TestContext, first: number, fault: { code: number; times?: number }) {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, first + i) })));
  await cluster.addPods('cache', servers);
  // Every pod label patch of this instance is refused from the start: the bootstrap gets as far as
  // Redis (promotion, re-pointing) and then cannot publish the master label.
  const rule = cluster.api.faults.add({
    client: 'sidecar-a',
    method: 'PATCH',
    path: /\/pods\//,
    action: { kind: 'status', code: fault.code },
    ...(fault.times ? { times: fault.times } : {}),
  });
  const a = await cluster.startInstance({
    id: 'sidecar-a',
    sourceIp: addr(N, 250),
    failurePolicy: { initialBackoffMs: 50, maxTemporaryBackoffMs: 200, permanentBackoffMs: 600_000 },
  });
  return { cluster, a, rule };
}

const logLines = (logs: string[], msg: string) =>
  logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === msg);

/** Waits until `count()` has not changed for `quietMs`. */
async function quiet(count: () => number, quietMs: number): Promise<number> {
  let last = count();
  let since = Date.now();
  await until(
    `no change for ${quietMs} ms`,
    () => {
      if (count() !== last) {
        last = count();
        since = Date.now();
      }
      return Date.now() - since >= quietMs;
    },
    30_000,
  );
  return last;
}

/**
 * Every failure episode is told once: one 'step failed' line per distinct step, one StepFailed
 * Event per line (an Event lands a moment after its line: the sidecar does not wait for it).
 */
async function assertToldOnce(cluster: Cluster, logs: string[]): Promise<string[]> {
  const keys = logLines(logs, 'step failed').map((l) => String(l['key']));
  assert.deepEqual(keys, [...new Set(keys)], 'no step told twice');
  const told = await cluster.eventsWhen(
    'cache',
    `${keys.length} StepFailed Events`,
    (e) => e.filter((x) => x.reason === 'StepFailed').length >= keys.length,
  );
  const events = told.filter((e) => e.reason === 'StepFailed');
  assert.equal(events.length, keys.length, events.map((e) => e.message).join(' | '));
  for (const e of events) assert.equal(e.type, 'Warning');
  return keys;
}

test('permanent refusals (403) of pod label patches: each step tried once, told once, then it waits out its back-off', async (t) => {
  const { cluster, a, rule } = await freshSet(t, 1, { code: 403 });
  await until('a label patch refused', () => rule.hits > 0);
  const hits = await quiet(() => rule.hits, 1500);
  const keys = await assertToldOnce(cluster, a.logs);
  assert.equal(hits, keys.length, 'each failing step was attempted once (no retry within its back-off)');
  assert.ok(
    keys.some((k) => k.includes('"redis.example.com/role":"master"')),
    `the master label among them: ${keys.join(', ')}`,
  );
  const told403 = await cluster.eventsWhen('cache', 'the StepFailed Event', (events) =>
    events.some((e) => e.reason === 'StepFailed'),
  );
  assert.match(told403.find((e) => e.reason === 'StepFailed')!.message, /failed \(permanent\): 403/);
  // Without the policy every round (every 100 ms) would try again: ~20 more refusals here.
  await sleep(2000);
  assert.equal(rule.hits, (await assertToldOnce(cluster, a.logs)).length, 'still no retry');
  assert.deepEqual(cluster.masters('cache'), [], 'the label never landed');
});

test('temporary refusals (500) of pod label patches: told once per step, retried with back-off, recovery logged when the label lands', async (t) => {
  const { cluster, a, rule } = await freshSet(t, 11, { code: 500, times: 4 });
  await until('the master label landed', () => cluster.masters('cache').length === 1 && cluster.masters('cache'));
  assert.equal(rule.hits, 4, 'the fault refused exactly four patches');
  const keys = await assertToldOnce(cluster, a.logs);
  const told500 = await cluster.eventsWhen('cache', 'the StepFailed Event', (events) =>
    events.some((e) => e.reason === 'StepFailed'),
  );
  assert.match(told500.find((e) => e.reason === 'StepFailed')!.message, /failed \(temporary\): 500/);
  const master = keys.find((k) => k.includes('"redis.example.com/role":"master"'));
  assert.ok(master, `the master label failed at least once: ${keys.join(', ')}`);
  await until('the recovery line', () =>
    logLines(a.logs, 'a failing step succeeded again').find((l) => l['key'] === master),
  );
  const recovered = logLines(a.logs, 'a failing step succeeded again').find((l) => l['key'] === master)!;
  assert.equal(recovered['pod'], 'cache-master-0');
  assert.equal(recovered['name'], 'cache', 'the line names the Redis');
  assert.ok(Number(recovered['failures']) >= 1);
  await until('the Bootstrap event', () => cluster.events('cache').some((e) => e.reason === 'Bootstrap'));
});
