// Slot plans (decide/layout.ts): bring-up ranges, and the fewest moves to even shares for 3 -> 4,
// 4 -> 3, an uneven assignment, and one already balanced the way redis-cli splits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  bringUpRange,
  bringUpShardOf,
  evenCounts,
  planMoves,
} from '../../../../src/sidecar/rediscluster/decide/layout.ts';

function owners(ranges: Array<[number, number, number]>): number[] {
  const out = new Array<number>(16384).fill(-1);
  for (const [a, b, shard] of ranges) for (let s = a; s <= b; s++) out[s] = shard;
  assert.ok(!out.includes(-1), 'every slot has an owner in the fixture');
  return out;
}

function after(ownerShard: number[], moves: ReturnType<typeof planMoves>): Map<number, number> {
  const o = [...ownerShard];
  for (const m of moves) {
    assert.equal(o[m.slot], m.from, `slot ${m.slot} moves from its owner`);
    o[m.slot] = m.to;
  }
  const counts = new Map<number, number>();
  for (const s of o) counts.set(s, (counts.get(s) ?? 0) + 1);
  return counts;
}

test('bring-up ranges are contiguous, even and cover every slot', async (t) => {
  const cases: Array<{ shards: number; ranges: Array<[number, number]> }> = [
    {
      shards: 3,
      ranges: [
        [0, 5461],
        [5462, 10922],
        [10923, 16383],
      ],
    },
    {
      shards: 4,
      ranges: [
        [0, 4095],
        [4096, 8191],
        [8192, 12287],
        [12288, 16383],
      ],
    },
    {
      shards: 5,
      ranges: [
        [0, 3276],
        [3277, 6553],
        [6554, 9830],
        [9831, 13107],
        [13108, 16383],
      ],
    },
  ];
  for (const c of cases) {
    await t.test(`${c.shards} shards`, () => {
      assert.deepEqual(
        Array.from({ length: c.shards }, (_, i) => bringUpRange(i, c.shards)),
        c.ranges,
      );
      assert.equal(
        evenCounts(c.shards).reduce((a, b) => a + b),
        16384,
      );
      for (const [i, [a, b]] of c.ranges.entries()) {
        assert.equal(bringUpShardOf(a, c.shards), i);
        assert.equal(bringUpShardOf(b, c.shards), i);
      }
    });
  }
});

test('slot plans: the fewest moves to even shares, donors giving their highest slots', async (t) => {
  const three = owners([
    [0, 5461, 0],
    [5462, 10922, 1],
    [10923, 16383, 2],
  ]);
  const four = owners([
    [0, 4095, 0],
    [4096, 8191, 1],
    [8192, 12287, 2],
    [12288, 16383, 3],
  ]);
  const cases: Array<{
    name: string;
    owner: number[];
    shards: number;
    moves: number;
    counts: Record<number, number>;
    check?: (m: ReturnType<typeof planMoves>) => void;
  }> = [
    {
      name: '3 -> 4: each old shard gives its top slots to shard 3',
      owner: three,
      shards: 4,
      moves: 4096,
      counts: { 0: 4096, 1: 4096, 2: 4096, 3: 4096 },
      check: (m) => {
        assert.ok(m.every((x) => x.to === 3));
        assert.equal(Math.min(...m.filter((x) => x.from === 0).map((x) => x.slot)), 4096, 'shard 0 keeps 0-4095');
        assert.equal(
          Math.min(...m.filter((x) => x.from === 1).map((x) => x.slot)),
          5462 + 4096,
          'shard 1 keeps the low end of its range',
        );
      },
    },
    {
      name: '4 -> 3: shard 3 gives everything, the first staying shard gets the odd slot',
      owner: four,
      shards: 3,
      moves: 4096,
      counts: { 0: 5462, 1: 5461, 2: 5461, 3: 0 },
      check: (m) => assert.ok(m.every((x) => x.from === 3)),
    },
    {
      name: 'uneven: only the surplus moves, to the shards short of their share',
      owner: owners([
        [0, 5999, 0],
        [6000, 10999, 1],
        [11000, 16383, 2],
      ]),
      shards: 3,
      moves: 6000 - 5462,
      counts: { 0: 5462, 1: 5461, 2: 5461 },
    },
    {
      name: "redis-cli's split (5461, 5462, 5461) is already even: nothing moves",
      owner: owners([
        [0, 5460, 0],
        [5461, 10922, 1],
        [10923, 16383, 2],
      ]),
      shards: 3,
      moves: 0,
      counts: { 0: 5461, 1: 5462, 2: 5461 },
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const moves = planMoves(c.owner, c.shards);
      assert.equal(moves.length, c.moves);
      assert.equal(new Set(moves.map((m) => m.slot)).size, moves.length, 'each slot moves at most once');
      const counts = after(c.owner, moves);
      for (const [shard, n] of Object.entries(c.counts))
        assert.equal(counts.get(Number(shard)) ?? 0, n, `shard ${shard}`);
      c.check?.(moves);
    });
  }
});
