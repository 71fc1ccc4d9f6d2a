// The informers' reconnect pacing after a clean watch close (src/sidecar/adapters/kube/reconnect.ts), as a
// table and with a fake clock: at once after a long watch, never more than one per interval.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reconnectPacer, reconnectWaitMs } from '../../../../src/sidecar/adapters/kube/reconnect.ts';

test('reconnectWaitMs: table', async (t) => {
  const cases = [
    { name: 'a watch that lived 5 minutes: at once', last: 0, now: 300_000, want: 0 },
    { name: 'exactly the interval: at once', last: 0, now: 1000, want: 0 },
    { name: 'closed after 200 ms: the rest of the interval', last: 0, now: 200, want: 800 },
    { name: 'closed at once: a whole interval', last: 500, now: 500, want: 1000 },
    { name: 'a clock that went back: never more than the interval', last: 5000, now: 1000, want: 1000 },
  ];
  for (const c of cases) await t.test(c.name, () => assert.equal(reconnectWaitMs(c.last, c.now, 1000), c.want));
});

test('reconnectPacer: what ListWatch asks (up to 30 s) is not what it waits', async () => {
  let clock = 0;
  const slept: number[] = [];
  const pacer = reconnectPacer({
    minIntervalMs: 1000,
    now: () => clock,
    sleep: async (ms) => {
      slept.push(ms);
      clock += ms;
    },
  });
  clock = 600_000; // the first watch lived ten minutes, then the server closed it
  await pacer.delay(30_000);
  assert.deepEqual(slept, [], 'renewed at once');
  clock += 50; // the next one closed after 50 ms
  await pacer.delay(30_000);
  assert.deepEqual(slept, [950], 'paced to one watch per second');
  assert.equal(pacer.nextWaitMs(), 1000);
});
