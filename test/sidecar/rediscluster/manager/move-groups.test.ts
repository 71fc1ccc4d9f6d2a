// Which moves go together (src/sidecar/rediscluster/manager/move-groups.ts): runs of moves grouped
// by their two ends (and coldness), at most a group's worth each, the sources taking turns; any
// other step keeps its place, alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ClusterStep } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import type { ClusterAdapter } from '../../../../src/sidecar/adapters/redis/rediscluster.ts';
import { MoveGroups, stepBatches } from '../../../../src/sidecar/rediscluster/manager/move-groups.ts';
import type { MoveSpec } from '../../../../src/sidecar/rediscluster/manager/mover.ts';

const move = (slot: number, from: string, to: string, cold = false): ClusterStep => ({
  kind: 'move',
  slot,
  from,
  to,
  cold,
  reason: `move ${slot}`,
});
const meet: ClusterStep = { kind: 'meet', pod: 'c-0', ip: '10.0.0.9', target: 'c-9', reason: 'meet' };

const shape = (batches: ClusterStep[][]) =>
  batches.map((b) => b.map((s) => (s.kind === 'move' ? `${s.from}>${s.to}:${s.slot}${s.cold ? 'c' : ''}` : s.kind)));

test('moves grouped by their ends, a group at most groupSlots, the sources taking turns; other steps alone, in place', async (t) => {
  const cases: Array<{ name: string; steps: ClusterStep[]; want: string[][] }> = [
    {
      name: 'three sources to one target (a scale-up)',
      steps: [1, 2, 3, 4, 5]
        .map((s) => move(s, 'a', 'd'))
        .concat(
          [6, 7].map((s) => move(s, 'b', 'd')),
          [move(8, 'c', 'd')],
        ),
      want: [['a>d:1', 'a>d:2'], ['b>d:6', 'b>d:7'], ['c>d:8'], ['a>d:3', 'a>d:4'], ['a>d:5']],
    },
    {
      name: 'one source to three targets (a scale-down)',
      steps: [move(1, 'd', 'a'), move(2, 'd', 'b'), move(3, 'd', 'a'), move(4, 'd', 'c')],
      want: [['d>a:1', 'd>a:3'], ['d>b:2'], ['d>c:4']],
    },
    {
      name: "a source's targets one after another (fewer epoch bumps), sources taking turns",
      steps: [move(1, 'd', 'a'), move(2, 'd', 'b'), move(3, 'd', 'a'), move(4, 'd', 'a'), move(5, 'e', 'a')],
      want: [['d>a:1', 'd>a:3'], ['e>a:5'], ['d>a:4'], ['d>b:2']],
    },
    {
      name: 'a cold move never shares a group with a warm one',
      steps: [move(1, 'a', 'b'), move(2, 'a', 'b', true)],
      want: [['a>b:1'], ['a>b:2c']],
    },
    {
      name: 'another step keeps its place between runs of moves',
      steps: [move(1, 'a', 'b'), meet, move(2, 'a', 'b'), move(3, 'a', 'b')],
      want: [['a>b:1'], ['meet'], ['a>b:2', 'a>b:3']],
    },
    { name: 'nothing', steps: [], want: [] },
  ];
  for (const c of cases)
    await t.test(c.name, () => {
      assert.deepEqual(shape(stepBatches(c.steps, 2)), c.want);
    });
});

test('every step is in exactly one batch', () => {
  const steps = Array.from({ length: 300 }, (_, i) => move(i, `s${i % 3}`, `t${i % 2}`, i % 7 === 0));
  const batches = stepBatches(steps);
  assert.deepEqual(
    batches.flat().sort((a, b) => (a as { slot: number }).slot - (b as { slot: number }).slot),
    steps,
  );
  assert.ok(batches.every((b) => b.length <= 64));
});

test("a batch's moves attempted in one turn of the event loop run as one group; a late one runs alone", async () => {
  const calls: string[] = [];
  const fake = {
    setSlots: async (ip: string, e: Array<{ slot: number; state: string }>) => {
      // As the adapter: nothing to send, no round trip.
      if (e.length === 0) return [];
      calls.push(`${ip} ${e.map((x) => `${x.state}:${x.slot}`).join(',')}`);
      return e.map(() => ({ ok: true, value: 'OK' }));
    },
    getKeysInSlots: async (_ip: string, slots: number[]) => slots.map(() => ({ ok: true, value: [] })),
  } as unknown as ClusterAdapter;
  const steps = [move(1, 'a', 'b'), move(2, 'a', 'b'), move(3, 'a', 'b')];
  const spec = (slot: number): MoveSpec => ({
    slot,
    from: { ip: 'A', id: 'a' },
    to: { ip: 'B', id: 'b' },
    cold: false,
    toImportingFrom: null,
    fromMigratingTo: null,
    toServes: false,
    others: [],
    targetReplicas: [],
    keyBytes: 0,
  });
  const groups = new MoveGroups(fake, stepBatches(steps), { stopped: () => false });
  const together = await Promise.all([groups.move(steps[0]!, spec(1)), groups.move(steps[1]!, spec(2))]);
  const late = await groups.move(steps[2]!, spec(3));
  assert.deepEqual(together, [
    { ok: true, keys: 0 },
    { ok: true, keys: 0 },
  ]);
  assert.deepEqual(late, { ok: true, keys: 0 });
  assert.deepEqual(calls, [
    'B IMPORTING:1,IMPORTING:2',
    'A MIGRATING:1,MIGRATING:2',
    'B NODE:1,NODE:2',
    'A NODE:1,NODE:2',
    'B IMPORTING:3',
    'A MIGRATING:3',
    'B NODE:3',
    'A NODE:3',
  ]);
});
