// The next round's time (src/sidecar/redis/manager/schedule.ts), as a table: a tick, or sooner when a
// decision threshold or a back-off runs out before it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RedisTrack } from '../../../../src/sidecar/redis/decide/index.ts';
import { atRest, IDLE_AFTER_MS, nextRoundInMs } from '../../../../src/sidecar/redis/manager/schedule.ts';

const track = (t: Partial<RedisTrack>): RedisTrack => ({
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
  ...t,
});
const config = { downAfterMs: 1000, witnessConfirmMs: 300 };

test('nextRoundInMs: table', async (t) => {
  const cases: Array<{ name: string; now: number; tracks: RedisTrack[]; retryAts: number[]; want: number }> = [
    { name: 'nothing pending: a tick', now: 5000, tracks: [track({})], retryAts: [], want: 100 },
    {
      name: 'a silent node reaching downAfterMilliseconds before the tick',
      now: 950,
      tracks: [track({ failingSince: 900, okAt: 0 })],
      retryAts: [],
      want: 51,
    },
    {
      name: 'a witness streak confirming before the tick',
      now: 1000,
      tracks: [track({ witnessDownSince: 750 })],
      retryAts: [],
      want: 51,
    },
    { name: 'a back-off running out', now: 1000, tracks: [], retryAts: [1030], want: 31 },
    {
      name: 'thresholds already past do not make it busy',
      now: 5000,
      tracks: [track({ failingSince: 100, okAt: 0 })],
      retryAts: [10],
      want: 100,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => assert.equal(nextRoundInMs(c.now, 100, config, c.tracks, c.retryAts), c.want));
  }
});

test('atRest: idle only after IDLE_AFTER_MS without a stir and while every probe answers', async (t) => {
  const cases: Array<{
    name: string;
    now: number;
    stirredAt: number;
    tracks: RedisTrack[];
    idle: boolean;
    reason: RegExp;
  }> = [
    {
      name: 'never stirred, all answering',
      now: 10_000,
      stirredAt: -Infinity,
      tracks: [track({})],
      idle: true,
      reason: /nothing changed/,
    },
    {
      name: 'stirred a moment ago',
      now: 10_000,
      stirredAt: 10_000 - IDLE_AFTER_MS + 1,
      tracks: [track({})],
      idle: false,
      reason: /stirred 4999 ms ago/,
    },
    {
      name: 'quiet long enough',
      now: 10_000,
      stirredAt: 10_000 - IDLE_AFTER_MS,
      tracks: [track({})],
      idle: true,
      reason: /nothing changed for 5000 ms/,
    },
    {
      name: 'a probe failing keeps it fast',
      now: 60_000,
      stirredAt: 0,
      tracks: [track({}), track({ ip: '10.0.0.2', lastError: { kind: 'timeout', message: 't' } })],
      idle: false,
      reason: /a probe of 10.0.0.2 fails/,
    },
    {
      name: 'a silent track keeps it fast',
      now: 60_000,
      stirredAt: 0,
      tracks: [track({ failingSince: 59_000 })],
      idle: false,
      reason: /fails/,
    },
  ];
  for (const c of cases)
    await t.test(c.name, () => {
      const r = atRest(c.now, c.stirredAt, c.tracks);
      assert.equal(r.idle, c.idle);
      assert.match(r.reason, c.reason);
    });
});
