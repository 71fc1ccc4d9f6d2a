// The RedisCluster fault run's schedule (replayable by its seed, bounded, every kind in it, the
// scale pair in order) and its slot check over real-format CLUSTER NODES answers. Pure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  BASE_KINDS,
  describeFault,
  falseFailovers,
  faultSchedule,
  mulberry32,
  slotProblems,
} from './fault-schedule.ts';

test('mulberry32 is a function of its seed, in [0, 1)', () => {
  const a = mulberry32(7);
  const b = mulberry32(7);
  const xs = Array.from({ length: 1000 }, () => a());
  assert.deepEqual(
    Array.from({ length: 1000 }, () => b()),
    xs,
  );
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  assert.notDeepEqual(Array.from({ length: 10 }, mulberry32(8)), xs.slice(0, 10), 'another seed, other numbers');
  assert.ok(new Set(xs.map((x) => Math.floor(x * 10))).size === 10, 'every tenth of [0, 1) is reached');
});

test('a schedule is the same for the same seed, and bounded, complete and ordered for any seed', () => {
  assert.deepEqual(faultSchedule(31, { rollout: false }), faultSchedule(31, { rollout: false }));
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.boolean(), (seed, rollout) => {
      const s = faultSchedule(seed, { rollout });
      assert.ok(s.length >= 8 && s.length <= 10, `${s.length} faults`);
      for (const kind of BASE_KINDS)
        assert.ok(
          s.some((f) => f.kind === kind),
          `${kind} in the schedule`,
        );
      const up = s.findIndex((f) => f.kind === 'scale-up');
      const down = s.findIndex((f) => f.kind === 'scale-down');
      assert.equal(s.filter((f) => f.kind === 'scale-up').length, 1);
      assert.equal(s.filter((f) => f.kind === 'scale-down').length, 1);
      assert.ok(up >= 1 && down >= up + 2, `scale-up at ${up}, scale-down at ${down}`);
      assert.equal(s.filter((f) => f.kind === 'rollout').length, rollout ? 1 : 0);
      s.forEach((f, i) => {
        assert.equal(f.shards, i > up && i < down ? 4 : 3);
        assert.ok(f.shard >= 0 && f.shard < f.shards, `shard ${f.shard} of ${f.shards}`);
        assert.ok(f.holdMs >= 6000 && f.holdMs <= 10_000);
        if (f.midReshard) assert.ok(i === up + 1 || i === down + 1, 'only right after a scale');
        assert.ok(describeFault(f).length > 0);
      });
    }),
  );
});

test('seeds give different schedules', () => {
  const lines = new Set(
    [1, 2, 3, 4, 5].map((seed) => JSON.stringify(faultSchedule(seed, { rollout: false }).map((f) => f.kind))),
  );
  assert.ok(lines.size >= 4, `${lines.size} distinct orders of five seeds`);
});

test('falseFailovers: a changed master is named unless the fault allowed it; a shard gone or new is none', () => {
  const before = new Map([
    [0, 'p-0-0 a'],
    [1, 'p-1-0 b'],
    [3, 'p-3-0 d'],
  ]);
  assert.deepEqual(falseFailovers(before, before, new Set()), []);
  const after = new Map([
    [0, 'p-0-1 e'],
    [1, 'p-1-0 b'],
    [2, 'p-2-0 c'],
  ]);
  assert.deepEqual(falseFailovers(before, after, new Set()), ['shard 0: master was p-0-0 a, is now p-0-1 e']);
  assert.deepEqual(falseFailovers(before, after, new Set([0])), []);
  assert.deepEqual(falseFailovers(before, after, new Set([1])), ['shard 0: master was p-0-0 a, is now p-0-1 e']);
  assert.deepEqual(falseFailovers(before, after, 'any'), []);
});

const ID = (c: string) => c.repeat(40);
const line = (id: string, ip: string, flags: string, master: string, rest: string) =>
  `${ID(id)} 198.18.1.${ip}:6379@16379 ${flags} ${master === '-' ? '-' : ID(master)} 0 0 1 connected ${rest}`.trim();

/** Three masters a, b, c with the even split, d a replica of a; as node `me` sees it. */
function view(me: string, overrides: Partial<Record<string, string>> = {}): string {
  const rows: Record<string, [string, string, string]> = {
    a: ['1', 'master', '-'],
    b: ['2', 'master', '-'],
    c: ['3', 'master', '-'],
    d: ['4', 'slave', 'a'],
  };
  const slots: Record<string, string> = { a: '0-5460', b: '5461-10922', c: '10923-16383', d: '' };
  return Object.entries(rows)
    .map(([id, [ip, flags, master]]) => {
      const f = id === me ? `myself,${flags}` : flags;
      return overrides[id] ?? line(id, ip, f, master, slots[id]!);
    })
    .join('\n');
}

test('slotProblems: a whole, agreed cluster has none; each way of breaking it is named', async (t) => {
  const whole = new Map(['a', 'b', 'c', 'd'].map((n) => [`pod-${n}`, view(n)]));
  assert.deepEqual(slotProblems(whole), []);

  const cases: Array<{ name: string; views: Map<string, string>; expect: RegExp }> = [
    {
      name: 'a slot nobody serves',
      views: new Map([...whole, ['pod-c', view('c', { c: line('c', '3', 'myself,master', '-', '10923-16382') })]]),
      expect: /slot 16383 served by no master/,
    },
    {
      name: 'a slot two masters claim',
      views: new Map([...whole, ['pod-d', view('d', { d: line('d', '4', 'myself,master', '-', '0') })]]),
      expect: /slot 0 served by pod-a\(a+\) and pod-d\(d+\)/,
    },
    {
      name: 'two views that disagree',
      views: new Map([
        ...whole,
        [
          'pod-d',
          view('d', { a: line('a', '1', 'master', '-', '0-5459'), b: line('b', '2', 'master', '-', '5460-10922') }),
        ],
      ]),
      expect: /pod-d and pod-a disagree on slot 5460/,
    },
    {
      name: 'an owner flagged failed',
      views: new Map([...whole, ['pod-d', view('d', { b: line('b', '2', 'master,fail', '-', '5461-10922') })]]),
      expect: /pod-d sees slot 5461 on b{8}, which it flags failed/,
    },
    {
      name: 'a slot left open',
      views: new Map([
        ...whole,
        ['pod-a', view('a', { a: line('a', '1', 'myself,master', '-', `0-5460 [5460->-${ID('b')}]`) })],
      ]),
      expect: /pod-a: slot 5460 migrating to b{8}/,
    },
    {
      name: 'a node that does not say which it is',
      views: new Map([...whole, ['pod-x', line('a', '1', 'master', '-', '0-5460')]]),
      expect: /pod-x: no myself line/,
    },
  ];
  for (const c of cases)
    await t.test(c.name, () => {
      const problems = slotProblems(c.views);
      assert.ok(
        problems.some((p) => c.expect.test(p)),
        problems.join('\n'),
      );
      assert.ok(problems.length <= 21, 'at most twenty lines and a count');
    });
});
