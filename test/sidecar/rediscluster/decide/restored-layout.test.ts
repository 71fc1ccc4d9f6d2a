// A restored RedisCluster's bring-up: each shard's pod 0 (holding its shard's keys) gets back the
// slots recorded with its snapshot, not the even ranges; without the layout bring-up waits; a
// layout that is not whole, or not of the shards wanted, is never used.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRound } from '../../../../src/sidecar/rediscluster/decide/plan.ts';
import { restoredLayout } from '../../../../src/sidecar/rediscluster/decide/restored-layout.ts';
import type { ClusterSpecView } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import { id, SPEC3, world, type NodeSpec } from './fixtures.ts';

const NO_MEMORY = { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() };
const RESHARDED = ['0-100,5000-5460', '101-4999,5461-10922', '10923-16383'];
const restore = (slots: string[]) => ({
  source: 'RedisBackup/b',
  phase: 'Restoring' as const,
  message: '',
  shards: slots.map((s, shard) => ({ shard, location: `s3://b/k${shard}.rdb`, slots: s })),
});

test('restoredLayout', async (t) => {
  const cases: Array<[string, ReturnType<typeof restore> | undefined, number, unknown]> = [
    [
      'whole, three shards',
      restore(RESHARDED),
      3,
      [
        [
          [0, 100],
          [5000, 5460],
        ],
        [
          [101, 4999],
          [5461, 10922],
        ],
        [[10923, 16383]],
      ],
    ],
    ['not known yet', undefined, 3, null],
    ['another shard count', restore(RESHARDED), 4, null],
    ['a hole', restore(['0-100', '101-10922', '10923-16383'].map((s, i) => (i === 0 ? '0-99' : s))), 3, null],
    ['an overlap', restore(['0-5461', '5461-10922', '10923-16383']), 3, null],
  ];
  for (const [name, status, shards, expected] of cases) {
    await t.test(name, () => assert.deepEqual(restoredLayout(status, shards), expected));
  }
});

/**
 * Six fresh nodes, each knowing only itself; pod 0 of each shard holds the restored keys, and
 * serves the slots `claimed` says (Redis takes, at start, the unassigned slots it holds keys of).
 */
function restored(claimed: Array<Array<[number, number]>> = []): NodeSpec[] {
  const nodes: NodeSpec[] = [];
  for (let s = 0; s < 3; s++)
    for (let o = 0; o < 2; o++)
      nodes.push({
        id: id(`x${s}${o}`),
        pod: [s, o],
        ip: `10.1.${s}.${o + 1}`,
        keys: o === 0 ? 1000 : 0,
        ...(o === 0 && claimed[s] ? { slots: claimed[s] } : {}),
      });
  return nodes.map((n) => ({ ...n, unknown: nodes.filter((x) => x.id !== n.id).map((x) => x.id) }));
}

test('bring-up of a restored cluster', async (t) => {
  const layout = restoredLayout(restore(RESHARDED), 3);
  const cases: Array<[string, ClusterSpecView, string[], RegExp | undefined, NodeSpec[]?]> = [
    [
      'pod 0s took the slots they hold keys of at start: the rest go to the shard that held them',
      { ...SPEC3, layout },
      ['c-shard-0-0 1-100,5000-5460', 'c-shard-1-0 101-4999,5461-10922', 'c-shard-2-0 10923-16382'],
      undefined,
      restored([[[0, 0]], [], [[16383, 16383]]]),
    ],
    [
      'each pod 0 gets the slots its shard held',
      { ...SPEC3, layout },
      ['c-shard-0-0 0-100,5000-5460', 'c-shard-1-0 101-4999,5461-10922', 'c-shard-2-0 10923-16383'],
      undefined,
    ],
    ['restored, layout not known yet: no slot given', { ...SPEC3, layout: null }, [], /waits for the slots/],
    [
      'no restore: even ranges',
      SPEC3,
      ['c-shard-0-0 0-5461', 'c-shard-1-0 5462-10922', 'c-shard-2-0 10923-16383'],
      undefined,
    ],
  ];
  for (const [name, spec, addslots, hold, nodes] of cases) {
    await t.test(name, () => {
      const plan = planRound({
        pods: world(nodes ?? restored()),
        spec,
        remembered: new Map(),
        failover: NO_MEMORY,
        now: 1,
      });
      const steps = plan.steps.flatMap((s) =>
        s.kind === 'addslots'
          ? [`${s.pod} ${s.ranges.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(',')}`]
          : [],
      );
      assert.deepEqual(steps, addslots);
      if (hold)
        assert.ok(
          plan.holds.some((h) => hold.test(h.reason)),
          JSON.stringify(plan.holds),
        );
    });
  }
});
