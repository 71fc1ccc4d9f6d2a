// The probe scheduler (src/sidecar/redis/manager/probes.ts) on fake timers: the timing is the logic here
// (one loop per pod at its own pace, a hung pod delaying only itself, late answers discarded).
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { ProbeScheduler } from '../../../../src/sidecar/redis/manager/probes.ts';
import type { PodView } from '../../../../src/sidecar/redis/manager/pods.ts';
import type { ProbeResult } from '../../../../src/sidecar/adapters/redis/index.ts';
import { sleep, type Sleep } from '../../../../src/sidecar/core/sleep.ts';
import { FakeSleep } from '../../../support/fake-sleep.ts';

const view = (name: string, uid: string, ip: string): PodView => ({
  uid,
  name,
  namespace: 'ns',
  resourceVersion: '1',
  component: 'replica-set',
  ip,
  phase: 'Running',
  ready: true,
  deleting: false,
  redisContainerGone: false,
  labels: {},
  annotations: {},
});
const refused: ProbeResult = { ok: false, error: { kind: 'refused', message: 'ECONNREFUSED' }, latencyMs: 1 };
const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

function scheduler(answer: (ip: string) => Promise<ProbeResult>, intervalMs = 100, active: () => boolean = () => true) {
  const probed: Array<[string, number]> = [];
  let changes = 0;
  const s = new ProbeScheduler({
    probe: (_uid, ip) => {
      probed.push([ip, Date.now()]);
      return answer(ip);
    },
    active,
    config: () => ({ silentAfterSeconds: 2, offsetStallMs: 1000 }),
    changed: () => changes++,
    intervalMs,
    now: () => Date.now(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  });
  return { s, probed, changes: () => changes };
}

test('each pod is probed every intervalMs in its own loop; a hung pod delays only its own', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  t.after(() => mock.timers.reset());
  const { s, probed } = scheduler((ip) =>
    ip === '10.0.0.9' ? new Promise((r) => setTimeout(() => r(refused), 450)) : Promise.resolve(refused),
  );
  s.sync([view('a', 'u1', '10.0.0.1'), view('hung', 'u9', '10.0.0.9')]);
  for (let ms = 0; ms < 500; ms += 10) {
    await settle();
    mock.timers.tick(10);
  }
  await settle();
  const at = (ip: string) => probed.filter(([p]) => p === ip).map(([, when]) => when);
  assert.deepEqual(at('10.0.0.1'), [0, 100, 200, 300, 400, 500]);
  assert.deepEqual(at('10.0.0.9'), [0, 450], 'the hung pod is probed again only after its answer');
  const stopped = s.stop();
  mock.timers.tick(1000);
  await stopped;
});

test('a pod gone stops its loop and drops its track; a pod back under a new UID starts afresh', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  t.after(() => mock.timers.reset());
  const { s, probed, changes } = scheduler(() => Promise.resolve(refused));
  s.sync([view('a', 'u1', '10.0.0.1')]);
  await settle();
  assert.ok(s.track('u1'), 'the first answer is folded');
  assert.equal(changes(), 1, 'a first answer is a change');
  assert.deepEqual(s.sync([view('a', 'u2', '10.0.0.1')]), ['u1']);
  assert.equal(s.track('u1'), undefined);
  await settle();
  assert.ok(s.track('u2'));
  mock.timers.tick(300);
  await settle();
  assert.ok(probed.length >= 2);
  const stopped = s.stop();
  mock.timers.tick(1000);
  await stopped;
});

test('an answer to a probe that started before the one already folded is discarded', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  t.after(() => mock.timers.reset());
  // The loop's probe at t=0 answers late (at 300); a probeNow at 100 answers at once.
  const answer = (message: string): ProbeResult => ({ ok: false, error: { kind: 'refused', message }, latencyMs: 1 });
  let calls = 0;
  // The loop's next probe answers only much later, so only the two above can be folded meanwhile.
  const { s } = scheduler(() => {
    calls++;
    if (calls === 1) return new Promise((r) => setTimeout(() => r(answer('late')), 300));
    return calls === 2
      ? Promise.resolve(answer('fresh'))
      : new Promise<ProbeResult>((r) => setTimeout(() => r(answer('much later')), 10_000));
  });
  s.sync([view('a', 'u1', '10.0.0.1')]);
  mock.timers.tick(100);
  await s.probeNow(['u1']);
  assert.equal(s.track('u1')?.lastError?.message, 'fresh');
  mock.timers.tick(200);
  await settle();
  assert.equal(calls, 3, 'the loop probed again only after its own late answer');
  assert.equal(s.track('u1')?.lastError?.message, 'fresh', 'the late answer of the earlier probe was not folded');
  const stopped = s.stop();
  mock.timers.tick(20_000);
  await stopped;
});

test('hurry: loops sleeping on the idle interval re-read it; none probes sooner than the fast interval after its last probe', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  t.after(() => mock.timers.reset());
  let interval = 1000;
  const probed: Array<[string, number]> = [];
  const s = new ProbeScheduler({
    probe: (_uid, ip) => {
      probed.push([ip, Date.now()]);
      return Promise.resolve(refused);
    },
    active: () => true,
    config: () => ({ silentAfterSeconds: 2, offsetStallMs: 1000 }),
    changed: () => undefined,
    intervalMs: () => interval,
    now: () => Date.now(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
  });
  s.sync([view('a', 'u1', '10.0.0.1')]);
  const run = async (ms: number) => {
    for (let i = 0; i < ms; i += 10) {
      await settle();
      mock.timers.tick(10);
    }
    await settle();
  };
  await run(50);
  interval = 100;
  s.hurry(); // 50 ms after the probe at 0: it waits the other 50, not 950
  await run(200);
  const stopped = s.stop();
  mock.timers.tick(1000);
  await stopped;
  assert.deepEqual(
    probed.map(([, at]) => at),
    [0, 100, 200],
  );
});

test('a loop started before probing may happen (no password yet) probes soon after it may, not a whole interval later', async (t) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  t.after(() => mock.timers.reset());
  let known = false;
  const { s, probed } = scheduler(
    () => Promise.resolve(refused),
    30_000,
    () => known,
  );
  s.sync([view('a', 'u1', '10.0.0.1')]);
  for (let ms = 0; ms < 1000; ms += 50) {
    await settle();
    mock.timers.tick(50);
  }
  assert.deepEqual(probed, [], 'nothing is probed while it may not be');
  known = true;
  for (let ms = 0; ms < 300; ms += 50) {
    await settle();
    mock.timers.tick(50);
  }
  await settle();
  assert.equal(probed.length, 1, 'one probe, within a few hundred ms of the password');
  assert.ok(probed[0]![1] <= 1200, `probed at ${probed[0]![1]} ms`);
  const stopped = s.stop();
  mock.timers.tick(30_000);
  await stopped;
});

function sleeping(wait: Sleep, intervalMs: number) {
  return new ProbeScheduler({
    probe: () => Promise.resolve(refused),
    active: () => true,
    config: () => ({ silentAfterSeconds: 2, offsetStallMs: 1000 }),
    changed: () => undefined,
    intervalMs,
    now: () => 0,
    sleep: wait,
  });
}

test("stop() cancels every loop's sleep: no timer is left pending", async () => {
  const clock = new FakeSleep();
  const s = sleeping(clock.sleep, 600_000);
  s.sync([view('a', 'u1', '10.0.0.1'), view('b', 'u2', '10.0.0.2')]);
  await settle();
  assert.equal(clock.pending, 2, 'each loop sleeps out its interval');
  await s.stop();
  assert.equal(clock.pending, 0, 'both sleeps cancelled');
  assert.ok(clock.asked.every((a) => a.signal?.aborted));
});

test("a pod gone: its loop's sleep is cancelled at once, the other loop sleeps on", async () => {
  const clock = new FakeSleep();
  const s = sleeping(clock.sleep, 600_000);
  s.sync([view('a', 'u1', '10.0.0.1'), view('b', 'u2', '10.0.0.2')]);
  await settle();
  s.sync([view('b', 'u2', '10.0.0.2')]);
  assert.equal(clock.pending, 1);
  await s.stop();
  assert.equal(clock.pending, 0);
});

test('with the default sleep, a stopped scheduler leaves no live timer in the process', async () => {
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  const s = sleeping(sleep, 600_000);
  s.sync([view('a', 'u1', '10.0.0.1')]);
  await settle();
  assert.equal(timers(), before + 1, 'the loop sleeps on a real timer');
  await s.stop();
  assert.equal(timers(), before, 'stop() cleared it');
});
