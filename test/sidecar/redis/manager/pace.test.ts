// A Redis's pace (src/sidecar/redis/manager/pace.ts) on a clock the test sets: the fast rates while
// stirred, the idle rate at rest, and a stir of a Redis at rest hurrying its probe loops once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RedisTrack } from '../../../../src/sidecar/redis/decide/index.ts';
import { RedisPace } from '../../../../src/sidecar/redis/manager/pace.ts';
import { IDLE_AFTER_MS } from '../../../../src/sidecar/redis/manager/schedule.ts';

const answering: RedisTrack = {
  ip: '10.0.0.1',
  firstSeenAt: 0,
  lastAt: 0,
  lastError: null,
  facts: null,
  okAt: 0,
  firstOkAt: 0,
  failingSince: null,
  refusedSince: null,
  lastMasterFacts: null,
  witnessDownSince: null,
  witnessOf: null,
};
const timing = { idleProbeIntervalMs: 2000, probeIntervalMs: 100, tickIntervalMs: 250 };

function pace(tracks: RedisTrack[] = [answering]) {
  let now = 100_000;
  let hurried = 0;
  const p = new RedisPace({ now: () => now, timing, tracks: () => tracks, hurry: () => hurried++ });
  return { p, at: (ms: number) => (now = ms), hurried: () => hurried };
}

test('never stirred and every probe answering: idle rates; a stir: fast rates, the probe loops hurried once', () => {
  const { p, hurried } = pace();
  assert.equal(p.idle(), true);
  assert.equal(p.probeIntervalMs(), 2000);
  assert.equal(p.restMs(null, []), 2000);
  p.stir();
  assert.equal(p.idle(), false);
  assert.equal(p.probeIntervalMs(), 100);
  assert.equal(p.restMs(null, []), 250);
  p.stir();
  assert.equal(hurried(), 1, 'a stir of a Redis already stirred hurries nothing');
});

test('at rest again IDLE_AFTER_MS after the last stir', () => {
  const { p, at } = pace();
  at(100_000);
  p.stir();
  at(100_000 + IDLE_AFTER_MS - 1);
  assert.equal(p.idle(), false);
  at(100_000 + IDLE_AFTER_MS);
  assert.equal(p.idle(), true);
});

test('a failing probe keeps the fast rates; a back-off running out brings the next round forward', () => {
  const { p } = pace([{ ...answering, failingSince: 99_000, lastError: { kind: 'timeout', message: 't' } }]);
  assert.equal(p.idle(), false);
  assert.equal(p.restMs(null, [100_050]), 51);
});
