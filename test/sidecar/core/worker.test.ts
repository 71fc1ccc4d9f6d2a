// The core worker loop (src/sidecar/core/worker.ts) on fake timers: when rounds run is the logic
// here (at once after a write, a few in a row at most, a rest otherwise, cut by a wake), with both
// kinds' settings. The round is a fake the test scripts; the loop, its sleep and stop are real.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Worker, type WorkerOptions } from '../../../src/sidecar/core/worker.ts';
import { FakeSleep } from '../../support/fake-sleep.ts';

const settle = async () => {
  for (let i = 0; i < 50; i++) await Promise.resolve();
};

type Outcome = 'wrote' | 'quiet';

/** A worker whose rounds answer from `script` (then 'quiet'), recording when each ran. */
type Options = Partial<WorkerOptions<Outcome>>;

function loop(t: { after(fn: () => unknown): void }, over: Options = {}, script: Outcome[] = []) {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
  t.after(() => mock.timers.reset());
  const at: number[] = [];
  let during: (() => void) | null = null;
  const worker: Worker<Outcome> = new Worker<Outcome>({
    ref: { namespace: 'ns', name: 'r' },
    log: pino({ level: 'silent' }),
    leader: { isLeader: () => true },
    events: { emitEvent: async () => true },
    now: () => Date.now(),
    round: async () => {
      at.push(Date.now());
      during?.();
      return script.shift() ?? 'quiet';
    },
    failed: 'quiet',
    failedMessage: 'round failed',
    again: (o) => o === 'wrote',
    restMs: () => 1000,
    maxAgain: 3,
    burstRestIgnoresWake: true,
    ...over,
  });
  return { worker, at, duringRound: (fn: (() => void) | null) => (during = fn) };
}

test('a quiet round is followed by a rest of restMs, then the next round', async (t) => {
  const { worker, at } = loop(t, { restMs: () => 700 });
  worker.start();
  await settle();
  assert.deepEqual(at, [0]);
  mock.timers.tick(699);
  await settle();
  assert.deepEqual(at, [0]);
  mock.timers.tick(1);
  await settle();
  assert.deepEqual(at, [0, 700]);
  const stopped = worker.stop();
  await settle();
  await stopped;
});

for (const maxAgain of [3, 5]) {
  test(`rounds that wrote run at once, ${maxAgain} in a row at most, then a rest`, async (t) => {
    const { worker, at } = loop(t, { maxAgain }, Array<Outcome>(20).fill('wrote'));
    worker.start();
    await settle();
    assert.deepEqual(at, Array(maxAgain + 1).fill(0), 'the first round and maxAgain more at once');
    mock.timers.tick(1000);
    await settle();
    assert.deepEqual(at.slice(maxAgain + 1), Array(maxAgain + 1).fill(1000), 'after the rest, a new burst');
    const stopped = worker.stop();
    await settle();
    await stopped;
  });
}

test('a wake during a round cuts the rest after it; a wake during a rest ends it', async (t) => {
  const { worker, at, duringRound } = loop(t);
  duringRound(() => worker.wake());
  worker.start();
  await settle();
  assert.deepEqual(at.slice(0, 2), [0, 0], 'woken during the round: no rest');
  duringRound(null);
  await settle();
  const n = at.length;
  mock.timers.tick(300);
  worker.wake();
  await settle();
  assert.equal(at.length, n + 1);
  assert.equal(at.at(-1), 300, 'the rest ended at the wake');
  const stopped = worker.stop();
  await settle();
  await stopped;
});

for (const burstRestIgnoresWake of [true, false]) {
  const rest = burstRestIgnoresWake ? 'kept (Redis)' : 'cut (RedisCluster)';
  test(`a wake during the last round of a burst: the rest is ${rest}`, async (t) => {
    const script: Outcome[] = ['wrote', 'wrote', 'wrote', 'wrote', 'quiet'];
    const { worker, at, duringRound } = loop(t, { burstRestIgnoresWake }, script);
    let rounds = 0;
    duringRound(() => {
      if (++rounds === 4) worker.wake();
    });
    worker.start();
    await settle();
    if (burstRestIgnoresWake) {
      assert.deepEqual(at, [0, 0, 0, 0]);
      mock.timers.tick(1000);
      await settle();
      assert.deepEqual(at, [0, 0, 0, 0, 1000]);
    } else assert.deepEqual(at, [0, 0, 0, 0, 0]);
    const stopped = worker.stop();
    await settle();
    await stopped;
  });
}

test('a round that throws is logged and taken as the `failed` outcome; the loop goes on', async (t) => {
  const lines: string[] = [];
  const log = pino({ level: 'error' }, { write: (s: string) => void lines.push(s) });
  let n = 0;
  const { worker, at } = loop(t, {
    log,
    failed: 'wrote',
    round: async () => {
      at.push(Date.now());
      if (n++ === 0) throw new Error('boom');
      return 'quiet';
    },
  });
  worker.start();
  await settle();
  assert.deepEqual(at, [0, 0], 'failed = wrote: the next round at once');
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /round failed/);
  assert.match(lines[0]!, /boom/);
  const stopped = worker.stop();
  await settle();
  await stopped;
});

test('stop: no round after it; waits for the round, for what alsoStop returns, for work in flight', async (t) => {
  let release!: () => void;
  const { worker, at } = loop(t);
  worker.start();
  await settle();
  worker.track(new Promise<void>((r) => (release = r)));
  let alsoStopped = false;
  let done = false;
  void worker
    .stop(async () => {
      alsoStopped = true;
    })
    .then(() => (done = true));
  await settle();
  assert.equal(alsoStopped, true);
  assert.equal(worker.running, false);
  assert.equal(done, false, 'waits for the work in flight');
  release();
  await settle();
  assert.equal(done, true);
  mock.timers.tick(5000);
  await settle();
  assert.deepEqual(at, [0]);
});

test('stop abandons a round stuck for 2 s and work in flight after 1 s more', async (t) => {
  const { worker } = loop(t, { round: () => new Promise<Outcome>(() => {}) });
  worker.start();
  await settle();
  worker.track(new Promise(() => {}));
  let done = false;
  void worker.stop().then(() => (done = true));
  mock.timers.tick(1999);
  await settle();
  assert.equal(done, false);
  mock.timers.tick(1);
  await settle();
  mock.timers.tick(999);
  await settle();
  assert.equal(done, false);
  mock.timers.tick(1);
  await settle();
  assert.equal(done, true);
});

test('a given sleep is used for the rest (and still cut by a wake)', async (t) => {
  const asked: number[] = [];
  const { worker, at } = loop(t, {
    restMs: () => 250,
    sleep: (ms) => {
      asked.push(ms);
      return new Promise(() => {});
    },
  });
  worker.start();
  await settle();
  assert.deepEqual(asked, [250]);
  worker.wake();
  await settle();
  assert.equal(at.length, 2);
  const stopped = worker.stop();
  await settle();
  await stopped;
});

test('a wake and stop() cancel the given sleep (its signal aborts): no timer is left pending', async (t) => {
  const clock = new FakeSleep();
  const { worker, at } = loop(t, { restMs: () => 600_000, sleep: clock.sleep });
  worker.start();
  await settle();
  assert.equal(clock.pending, 1);
  worker.wake();
  await settle();
  assert.equal(at.length, 2, 'the wake ran the next round');
  assert.equal(clock.asked[0]!.signal?.aborted, true, 'the cut rest was cancelled');
  assert.equal(clock.pending, 1, 'only the new rest is pending');
  await worker.stop();
  assert.equal(clock.pending, 0, 'stop() cancelled the rest');
});

test("default sleep: a stopped worker leaves no live timer (neither its rest nor stop's bounds)", async () => {
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  const worker = new Worker<Outcome>({
    ref: { namespace: 'ns', name: 'r' },
    log: pino({ level: 'silent' }),
    leader: { isLeader: () => true },
    events: { emitEvent: async () => true },
    now: () => 0,
    round: async () => 'quiet',
    failed: 'quiet',
    failedMessage: 'round failed',
    again: () => false,
    restMs: () => 600_000,
    maxAgain: 3,
    burstRestIgnoresWake: true,
  });
  worker.start();
  await settle();
  assert.equal(timers(), before + 1, 'the rest is a real timer');
  await worker.stop();
  assert.equal(timers(), before);
});
