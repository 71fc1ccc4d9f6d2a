// Forced failover (decide/failover.ts) and a master lost with no replica (decide/forget.ts): when,
// on which replica, and never an empty node over one with data. Time is the `now` given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideForcedFailovers } from '../../../../src/sidecar/rediscluster/decide/failover.ts';
import { planRound } from '../../../../src/sidecar/rediscluster/decide/plan.ts';
import { buildTopology } from '../../../../src/sidecar/rediscluster/decide/topology.ts';
import { healthy, id, SPEC3, THREE, world, type NodeSpec } from './fixtures.ts';
import type { PodObservation } from '../../../../src/sidecar/rediscluster/decide/types.ts';

const TIMEOUT = 10_000;
// Shard 0's master m0 failed (the cluster agreed); its replicas are given per case.
const failed: NodeSpec = { id: id('m0'), ip: '10.0.0.1', fail: true, slots: THREE[0], epoch: 1 };
const others = healthy(3, THREE).filter((n) => n.id !== id('m0') && n.id !== id('r0'));
const replica = (name: string, ordinal: number, over: Partial<NodeSpec>): NodeSpec => ({
  id: id(name),
  pod: [0, ordinal],
  ip: `10.0.0.${ordinal + 1}`,
  role: 'replica',
  master: failed.id,
  linkUp: false,
  ...over,
});

test('forced failover: when and on which replica', async (t) => {
  const cases: Array<{
    name: string;
    replicas: NodeSpec[];
    since: number;
    forced?: number;
    lastKeys?: number;
    pod: string | null;
    hold?: RegExp;
  }> = [
    {
      name: 'failed 3 s ago: the cluster has until failoverTimeout',
      replicas: [replica('q1', 1, { offset: 500, keys: 5 })],
      since: 97_000,
      pod: null,
      hold: /waiting for the cluster's own failover of shard 0/,
    },
    {
      name: 'failed 10 s ago, one replica: forced on it',
      replicas: [replica('q1', 1, { offset: 500, keys: 5 })],
      since: 90_000,
      pod: 'c-shard-0-1',
    },
    {
      name: 'two replicas: the highest offset wins, not the lowest ordinal',
      replicas: [replica('q1', 1, { offset: 400, keys: 5 }), replica('q2', 2, { offset: 900, keys: 5 })],
      since: 80_000,
      pod: 'c-shard-0-2',
    },
    {
      name: 'the most advanced one is in a full sync: the other',
      replicas: [replica('q1', 1, { offset: 400, keys: 5 }), replica('q2', 2, { offset: 900, keys: 5, syncing: true })],
      since: 80_000,
      pod: 'c-shard-0-1',
    },
    {
      name: 'an empty replica is never chosen over one with data',
      replicas: [replica('q1', 1, { offset: 0, keys: 0 }), replica('q2', 2, { offset: 0, keys: 7 })],
      since: 80_000,
      pod: 'c-shard-0-2',
    },
    {
      name: 'every replica empty and the master held keys: nobody (its volume may bring the data back)',
      replicas: [replica('q1', 1, { offset: 0, keys: 0 })],
      since: 80_000,
      lastKeys: 1200,
      pod: null,
      hold: /never promoted over the data/,
    },
    {
      name: 'a forced election sent 4 s ago: wait for it',
      replicas: [replica('q1', 1, { offset: 500, keys: 5 })],
      since: 70_000,
      forced: 96_000,
      pod: null,
      hold: /forced election for shard 0 was sent/,
    },
    {
      name: 'no replica answers: nothing to force, a human is told',
      replicas: [replica('q1', 1, { offset: 500, silent: true })],
      since: 80_000,
      pod: null,
      hold: /cannot be failed over: no replica/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const t0 = buildTopology(world([failed, ...others, ...c.replicas]));
      const decide = (now: number) =>
        decideForcedFailovers(
          t0,
          TIMEOUT,
          {
            failingSince: new Map([[failed.id, c.since]]),
            forcedAt: new Map(c.forced === undefined ? [] : [[failed.id, c.forced]]),
            lastKeys: new Map(c.lastKeys === undefined ? [] : [[failed.id, c.lastKeys]]),
          },
          now,
        );
      const d = decide(100_000);
      // A hold is told (logged, a Warning Event) whenever its reason changes: the next round's is the same.
      assert.deepEqual(
        decide(100_200).holds.map((h) => h.reason),
        d.holds.map((h) => h.reason),
      );
      assert.deepEqual(
        d.steps.map((s) => (s.kind === 'failover' ? s.pod : s.kind)),
        c.pod === null ? [] : [c.pod],
      );
      if (c.hold) assert.match(d.holds.map((h) => h.reason).join('\n'), c.hold);
      assert.equal(d.failingSince.get(failed.id), c.since, 'the first sighting is kept');
    });
  }
  await t.test(
    "the failed master's own pod is LOADING (a full restart, its pod up last): no forced election while it loads",
    () => {
      const record = {
        id: failed.id,
        role: 'master' as const,
        slots: THREE[0]!,
        masterId: null,
        linkUp: true,
        usedMemory: 0,
        maxMemory: 0,
        keys: 900,
        at: '2026-01-01T00:00:00Z',
      };
      const own = (probe: PodObservation['probe']): PodObservation => ({
        name: 'c-shard-0-0',
        uid: 'uid-m0',
        shard: 0,
        ordinal: 0,
        ip: '10.0.0.1',
        deleting: false,
        record,
        roleLabel: null,
        probe,
      });
      const decide = (probe: PodObservation['probe']) =>
        decideForcedFailovers(
          buildTopology(world([failed, ...others, replica('q1', 1, { offset: 500, keys: 5 })], 'c', [own(probe)])),
          TIMEOUT,
          { failingSince: new Map([[failed.id, 0]]), forcedAt: new Map(), lastKeys: new Map() },
          100_000,
        );
      const loading = decide({ ok: false, kind: 'loading', message: 'LOADING Redis is loading the dataset in memory' });
      assert.deepEqual(loading.steps, []);
      assert.match(loading.holds.map((h) => h.reason).join('\n'), /its pod c-shard-0-0 is loading its data set/);
      // Gone (refused) rather than loading: the forced election goes ahead as before.
      const gone = decide({ ok: false, kind: 'refused', message: 'ECONNREFUSED' });
      assert.deepEqual(
        gone.steps.map((s) => (s.kind === 'failover' ? s.pod : s.kind)),
        ['c-shard-0-1'],
      );
    },
  );
  await t.test('a master only we cannot reach (not flagged by the cluster) is never forced', () => {
    const silent: NodeSpec = { ...failed, fail: false, pod: [0, 0], silent: true };
    const d = decideForcedFailovers(
      buildTopology(world([silent, ...others, replica('q1', 1, { offset: 500 })])),
      TIMEOUT,
      { failingSince: new Map([[failed.id, 0]]), forcedAt: new Map(), lastKeys: new Map() },
      100_000,
    );
    assert.deepEqual(d.steps, []);
  });
});

test('a master that came back empty while its replica holds the data: replaced at once by that replica', async (t) => {
  const back: NodeSpec = { id: id('m0'), pod: [0, 0], ip: '10.0.0.1', slots: THREE[0], epoch: 1, keys: 0, offset: 0 };
  const cases: Array<{ name: string; replica: Partial<NodeSpec>; pod: string | null }> = [
    {
      name: 'replica not linked, 900 keys: forced on it',
      replica: { keys: 900, offset: 5000, linkUp: false },
      pod: 'c-shard-0-1',
    },
    {
      name: 'replica already syncing (its old data still there): forced on it',
      replica: { keys: 900, offset: 5000, linkUp: false, syncing: true },
      pod: 'c-shard-0-1',
    },
    {
      name: 'replica linked and in sync (a FLUSHALL on the master on its way): nothing',
      replica: { keys: 900, offset: 5000, linkUp: true },
      pod: null,
    },
    { name: 'replica empty too: nothing to save', replica: { keys: 0, offset: 0, linkUp: false }, pod: null },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = decideForcedFailovers(
        buildTopology(world([back, ...others, replica('q1', 1, c.replica)])),
        TIMEOUT,
        { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() },
        100_000,
      );
      assert.deepEqual(
        d.steps.map((s) => (s.kind === 'failover' ? s.pod : s.kind)),
        c.pod === null ? [] : [c.pod],
      );
    });
  }
});

test('a master lost with no replica anywhere: forgotten after failoverTimeout, its slots then go to an empty master', async (t) => {
  const replacement: NodeSpec = { id: id('n0'), pod: [0, 0], ip: '10.0.0.9' };
  const spare: NodeSpec = { id: id('n1'), pod: [0, 1], ip: '10.0.0.8', role: 'replica', master: id('n0') };
  const nodes = [failed, ...others, replacement, spare];
  const round = (since: number) =>
    planRound({
      pods: world(nodes),
      spec: SPEC3,
      remembered: new Map([[failed.id, 0]]),
      failover: { failingSince: new Map([[failed.id, since]]), forcedAt: new Map(), lastKeys: new Map() },
      now: 100_000,
    });
  await t.test('before failoverTimeout: nothing', () => {
    assert.deepEqual(
      round(95_000).steps.filter((s) => s.kind === 'forget'),
      [],
    );
  });
  await t.test('after: forgotten everywhere, with a Warning', () => {
    const p = round(80_000);
    const forget = p.steps.find((s) => s.kind === 'forget');
    assert.ok(
      forget && forget.kind === 'forget' && forget.id === failed.id && forget.pods.length === 6,
      JSON.stringify(p.steps),
    );
    assert.ok(p.holds.some((h) => h.warn && /data is lost/.test(h.reason)));
  });
  await t.test('once forgotten, its slots nobody serves go to the empty master of shard 0', () => {
    const p = planRound({
      pods: world([...others, replacement, spare]),
      spec: SPEC3,
      remembered: new Map(),
      failover: { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() },
      now: 100_000,
    });
    assert.deepEqual(
      p.steps.filter((s) => s.kind === 'addslots').map((s) => s.kind === 'addslots' && [s.pod, s.ranges]),
      [['c-shard-0-0', [[0, 5461]]]],
    );
  });
});
