// The autoscaling window (decide/autoscale.ts), driven by a clock the test moves: a scale-up once
// a tenth of the window agrees, a scale-down only when the whole window asked for fewer, a spike
// holding the count, and nothing before this worker sampled long enough.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideAutoscale, type Sample } from '../../../../src/sidecar/rediscluster/decide/autoscale.ts';

const MIB = 1024 * 1024;
const SPEC = {
  enabled: true,
  minReplicas: 3,
  maxReplicas: 6,
  targetMemoryUtilization: 70,
  stabilizationWindowSeconds: 300,
};
/** Memory of `shards` masters of 100 MiB at `percent` % used overall. */
const memory = (current: number, percent: number) => ({
  usedBytes: (current * 100 * MIB * percent) / 100,
  maxmemoryPerShard: 100 * MIB,
});

/** Feeds one sample every 10 s from `from` for `seconds`, at the utilization `at(t)` gives; returns every decision. */
function run(
  current: number,
  from: number,
  seconds: number,
  at: (t: number) => number,
  history: Sample[] = [],
  since = from,
) {
  const out: Array<{ t: number; scaleTo: number | null; reason: string }> = [];
  let h = history;
  for (let t = from; t <= from + seconds * 1000; t += 10_000) {
    const d = decideAutoscale({ current, memory: memory(current, at(t)), spec: SPEC, history: h, since, now: t });
    h = d.history;
    out.push({ t, scaleTo: d.scaleTo, reason: d.reason });
    if (d.scaleTo !== null) break;
  }
  return out;
}

test('autoscaling window', async (t) => {
  await t.test('on target (within 10%): never', () => {
    assert.ok(run(3, 0, 600, () => 72).every((d) => d.scaleTo === null));
  });
  await t.test('sustained 95% on 3 shards: up to 5 after a tenth of the window (30 s), not before', () => {
    const d = run(3, 0, 600, () => 95);
    const last = d.at(-1)!;
    assert.equal(last.scaleTo, 5);
    assert.equal(last.t, 30_000);
    assert.ok(d.slice(0, -1).every((x) => x.scaleTo === null && /scale-up waits/.test(x.reason)));
  });
  await t.test('a single spike inside the up-window does not scale', () => {
    const d = run(3, 0, 60, (t) => (t === 20_000 ? 95 : 70));
    assert.ok(d.every((x) => x.scaleTo === null));
  });
  await t.test('sustained 30% on 5 shards: down only once 300 s of samples agree, to the largest asked', () => {
    const d = run(5, 0, 600, () => 30);
    const last = d.at(-1)!;
    assert.equal(last.t, 300_000);
    assert.equal(last.scaleTo, 3);
  });
  await t.test('a spike inside the down-window holds the count up', () => {
    const d = run(5, 0, 290, (t) => (t === 150_000 ? 80 : 30));
    assert.ok(d.every((x) => x.scaleTo === null));
    // The spike leaves the window 300 s after it: then the window agrees.
    const later = run(5, 300_000, 200, () => 30, [], 0);
    assert.equal(later[0]!.scaleTo, 3);
  });
  await t.test('never above maxReplicas, never below the capacity floor', () => {
    assert.equal(run(5, 0, 60, () => 200).at(-1)!.scaleTo, 6);
    // 3 shards at 99%: 4 needed just to hold the data at 90%; nothing recommends fewer.
    assert.ok(run(4, 0, 400, () => 74).every((x) => x.scaleTo === null || x.scaleTo >= 4));
  });
  await t.test('no maxmemory: nothing measured, nothing decided', () => {
    const d = decideAutoscale({
      current: 3,
      memory: { usedBytes: 5 * MIB, maxmemoryPerShard: 0 },
      spec: SPEC,
      history: [],
      since: 0,
      now: 1000,
    });
    assert.equal(d.scaleTo, null);
    assert.equal(d.recommendation.utilization, null);
  });
});
