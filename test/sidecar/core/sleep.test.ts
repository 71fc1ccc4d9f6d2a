// The cancellable sleep (src/sidecar/core/sleep.ts): it ends at its time or at once on abort, and
// an aborted sleep leaves no timer that keeps the process alive. Time is faked where it is the
// logic; the "no timer left" checks count the process's live timers (not a timing).
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { cuttableRest, sleep } from '../../../src/sidecar/core/sleep.ts';
import { FakeSleep } from '../../support/fake-sleep.ts';

const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};
const liveTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

test('sleep resolves at its time, not before', async (t) => {
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  let done = false;
  void sleep(500).then(() => (done = true));
  mock.timers.tick(499);
  await settle();
  assert.equal(done, false);
  mock.timers.tick(1);
  await settle();
  assert.equal(done, true);
});

test('an aborted sleep resolves at once and its timer is gone', async () => {
  const before = liveTimers();
  const controller = new AbortController();
  let done = false;
  const slept = sleep(3_600_000, controller.signal).then(() => (done = true));
  assert.equal(liveTimers(), before + 1, 'the sleep holds one timer');
  controller.abort();
  await slept;
  assert.equal(done, true);
  assert.equal(liveTimers(), before, 'no timer left once aborted');
});

test('a sleep given an already aborted signal resolves at once and starts no timer', async () => {
  const before = liveTimers();
  const slept = sleep(3_600_000, AbortSignal.abort());
  assert.equal(liveTimers(), before);
  await slept;
});

test('cuttableRest: cut() ends the rest early (true) and aborts the sleep it gave the signal to', async () => {
  const clock = new FakeSleep();
  const rest = cuttableRest(clock.sleep, 1000);
  assert.equal(clock.pending, 1);
  rest.cut();
  assert.equal(await rest.promise, true);
  assert.equal(clock.pending, 0, 'the sleep was cancelled');
  assert.equal(clock.asked[0]!.signal?.aborted, true);
});

test('cuttableRest: a rest that runs out resolves false; a sleep that ignores its signal is still cut', async () => {
  const clock = new FakeSleep();
  const full = cuttableRest(clock.sleep, 1000);
  clock.tick(1000);
  assert.equal(await full.promise, false);
  const deaf = cuttableRest(() => new Promise<void>(() => {}), 1000);
  deaf.cut();
  assert.equal(await deaf.promise, true);
});
