// The next round's time (src/sidecar/manager/schedule.ts), as a table: a tick, or sooner when a
// decision threshold or a back-off runs out before it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RedisTrack } from '../../../src/sidecar/decide/index.ts';
import { nextRoundInMs } from '../../../src/sidecar/manager/schedule.ts';

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
    { name: 'a silent node reaching downAfterMilliseconds before the tick', now: 950, tracks: [track({ failingSince: 900, okAt: 0 })], retryAts: [], want: 51 },
    { name: 'a witness streak confirming before the tick', now: 1000, tracks: [track({ witnessDownSince: 750 })], retryAts: [], want: 51 },
    { name: 'a back-off running out', now: 1000, tracks: [], retryAts: [1030], want: 31 },
    { name: 'thresholds already past do not make it busy', now: 5000, tracks: [track({ failingSince: 100, okAt: 0 })], retryAts: [10], want: 100 },
  ];
  for (const c of cases) {
    await t.test(c.name, () => assert.equal(nextRoundInMs(c.now, 100, config, c.tracks, c.retryAts), c.want));
  }
});
