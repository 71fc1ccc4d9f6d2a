// Scale-down safety, the hook's half of "nothing lost": a shard beyond spec.master.replicas keeps
// its StatefulSet (and PDB and CronJob) while any of its pods holds slots or keys, reports no
// readable record, or is missing; it goes only when every pod of it reports empty and its
// StatefulSet has applied the volume policy. A scale-down the remaining shards cannot hold is
// refused: nothing removed, and the condition names spec.master.replicas, the reason and the
// needed count. A shard keeps the pod its master runs on when spec.replicas drops below it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESHARD_ANNOTATION, reshardRecord, type ReshardRecord } from '../../../src/api/rediscluster-names.ts';
import type { KubeObject } from '../../../src/hook/index.ts';
import { condition, get } from '../common/helpers.ts';
import {
  applied,
  AT,
  redisCluster,
  redisClusterPod,
  evenSlots,
  limitedSpec,
  MAXMEMORY,
  named,
  NAME,
  observedFor,
  sync,
  type Json,
} from './helpers.ts';

/** Four shards at rest: shard 3 already emptied by the sidecar unless `shard3` says otherwise. */
function fourShards(
  shard3: (ordinal: number) => Parameters<typeof redisClusterPod>[0]['record'],
  usedPerMaster = 1024 ** 2,
): { observed: KubeObject[]; pods: KubeObject[] } {
  const pods: KubeObject[] = [];
  for (let s = 0; s < 3; s++)
    for (let o = 0; o < 3; o++)
      pods.push(
        redisClusterPod({
          shard: s,
          ordinal: o,
          record: o === 0 ? { slots: evenSlots(s, 3), usedMemory: usedPerMaster, keys: 10 } : {},
        }),
      );
  for (let o = 0; o < 3; o++) {
    const r = shard3(o);
    if (r !== undefined) pods.push(redisClusterPod({ shard: 3, ordinal: o, record: r }));
  }
  return { observed: observedFor(limitedSpec({ master: { replicas: 4 } })), pods };
}

const shardNames = (children: readonly KubeObject[], kind = 'StatefulSet') =>
  named(children).filter((n) => n.startsWith(`${kind}/`));
const THREE = limitedSpec({ master: { replicas: 3 } });
const FOUR_SETS = [0, 1, 2, 3].map((i) => `StatefulSet/${NAME}-shard-${i}`);
const reshardAnnotation = (r: Partial<ReshardRecord>) => ({
  [RESHARD_ANNOTATION]: reshardRecord({
    from: 4,
    to: 3,
    state: 'Done',
    moved: 4096,
    total: 4096,
    at: AT,
    why: '',
    ...r,
  }),
});
/** The sidecar's record once it has moved every slot off shard 3. */
const DONE_TO_THREE = reshardAnnotation({});
const THREE_SETS = FOUR_SETS.slice(0, 3);

test('a leaving shard is kept while any pod may hold data, and dropped once every pod reports empty', async (t) => {
  const empty = {};
  const cases: Array<
    [string, (o: number) => Parameters<typeof redisClusterPod>[0]['record'], string[], RegExp | undefined]
  > = [
    [
      'its master still serves slots',
      (o) => (o === 0 ? { slots: [[0, 99]] } : empty),
      FOUR_SETS,
      /pod order-cache-shard-3-0 still holds slots/,
    ],
    ['a node holds keys but no slots', (o) => (o === 0 ? { keys: 12 } : empty), FOUR_SETS, /still holds 12 keys/],
    [
      'a pod has no record',
      (o) => (o === 2 ? null : empty),
      FOUR_SETS,
      /order-cache-shard-3-2 has no readable cluster-node record/,
    ],
    [
      'a pod has an unreadable record',
      (o) => (o === 1 ? 'id=zzz role=master' : empty),
      FOUR_SETS,
      /order-cache-shard-3-1 has no readable/,
    ],
    [
      'a pod is missing (its volume may hold data)',
      (o) => (o === 1 ? undefined : empty),
      FOUR_SETS,
      /pod order-cache-shard-3-1 is missing/,
    ],
    ['every pod reports no slots and no keys', () => empty, THREE_SETS, undefined],
  ];
  for (const [name, shard3, sets, why] of cases) {
    await t.test(name, () => {
      const { observed, pods } = fourShards(shard3);
      const answer = sync({
        parent: redisCluster(THREE, { annotations: DONE_TO_THREE }),
        children: observed,
        related: pods,
      });
      assert.deepEqual(shardNames(answer.children), sets);
      const kept = sets.length === 4;
      assert.equal(
        shardNames(answer.children, 'PodDisruptionBudget').length,
        kept ? 4 : 3,
        'the PDB goes with its StatefulSet',
      );
      const resharded = condition(answer.status, 'Resharded');
      if (why) {
        assert.equal(resharded?.['status'], 'False');
        assert.equal(resharded?.['reason'], 'ShardsLeaving');
        assert.match(String(resharded?.['message']), why);
        assert.equal((answer.status.shardStatus ?? []).find((s) => s.index === 3)?.health === 'Leaving' || !kept, true);
      } else assert.equal(resharded?.['status'], 'True', JSON.stringify(resharded));
      assert.equal(condition(answer.status, 'SpecValid')?.['status'], 'True');
    });
  }
});

test('an empty leaving shard stays until the reshard record says Done for this count (a record lags a move into its shard)', async (t) => {
  const cases: Array<[string, Record<string, string> | undefined, RegExp]> = [
    ['no reshard record yet', undefined, /record: none yet/],
    [
      '3 -> 4 still Running (turned back to 3 mid-way: slots may have reached shard 3)',
      reshardAnnotation({ from: 3, to: 4, state: 'Running' }),
      /resharding 3 -> 4/,
    ],
    ['3 -> 4 Done (the records may predate the moves)', reshardAnnotation({ from: 3, to: 4 }), /3 -> 4 Done/],
    ['4 -> 3 Running', reshardAnnotation({ state: 'Running' }), /resharding 4 -> 3/],
    ['4 -> 3 Refused', reshardAnnotation({ state: 'Refused' }), /4 -> 3 Refused/],
  ];
  for (const [name, annotations, why] of cases)
    await t.test(name, () => {
      const { observed, pods } = fourShards(() => ({}));
      const answer = sync({
        parent: redisCluster(THREE, annotations ? { annotations } : {}),
        children: observed,
        related: pods,
      });
      assert.deepEqual(shardNames(answer.children), FOUR_SETS);
      assert.match(String(condition(answer.status, 'Resharded')?.['message']), why);
    });
});

test("an empty leaving shard stays until its StatefulSet's controller has seen its volume policy", () => {
  const { observed, pods } = fourShards(() => ({}));
  const set3 = observed.find((c) => c.metadata.name === `${NAME}-shard-3`)!;
  (set3['status'] as Json)['observedGeneration'] = 0;
  const answer = sync({
    parent: redisCluster(THREE, { annotations: DONE_TO_THREE }),
    children: observed,
    related: pods,
  });
  assert.deepEqual(shardNames(answer.children), FOUR_SETS);
  assert.match(
    String(condition(answer.status, 'Resharded')?.['message']),
    /empty; kept until its StatefulSet has applied whenDeleted: Retain/,
  );
});

test('a scale-down the remaining shards cannot hold is refused: every shard kept, the condition names spec.master.replicas and the count needed', () => {
  // Four masters of 700 MiB each: 2800 MiB; three shards of maxmemory 819 MiB hold 2211 MiB at 90%.
  const used = 700 * 1024 ** 2;
  const { observed, pods } = fourShards(
    (o) => (o === 0 ? { slots: [[12288, 16383]], usedMemory: used, keys: 10 } : {}),
    used,
  );
  const answer = sync({ parent: redisCluster(THREE), children: observed, related: pods });
  assert.deepEqual(shardNames(answer.children), FOUR_SETS, 'nothing removed');
  assert.equal(shardNames(answer.children, 'PodDisruptionBudget').length, 4);
  const specValid = condition(answer.status, 'SpecValid');
  assert.equal(specValid?.['status'], 'False');
  assert.equal(specValid?.['reason'], 'InsufficientCapacity');
  assert.match(
    String(specValid?.['message']),
    /^spec\.master\.replicas 3 cannot hold the data: the masters use 2800 MiB .* at least 4 are needed$/,
  );
  assert.equal(condition(answer.status, 'Resharded')?.['reason'], 'InsufficientCapacity');
  assert.equal(MAXMEMORY, Math.floor(1024 ** 3 * 0.8));
});

test('capacity is judged on the smallest maxmemory a master runs with, not only the spec’s', () => {
  const used = 500 * 1024 ** 2;
  const small = 400 * 1024 ** 2;
  const { observed, pods } = fourShards(
    (o) => (o === 0 ? { slots: [[12288, 16383]], usedMemory: used, maxMemory: small } : {}),
    used,
  );
  // 2000 MiB used; the spec's maxmemory (819 MiB) would hold it on three shards, the running 400 MiB cannot.
  const answer = sync({ parent: redisCluster(THREE), children: observed, related: pods });
  assert.deepEqual(shardNames(answer.children), FOUR_SETS);
  assert.match(String(condition(answer.status, 'SpecValid')?.['message']), /maxmemory 400 MiB/);
});

test('without a memory limit capacity is unknown: nothing is refused, and data-holding shards are still kept', () => {
  const { backup: _b, ...noLimit } = { ...limitedSpec(), resources: {} } as Json;
  const observed = applied(sync({ parent: redisCluster({ ...noLimit, master: { replicas: 4 } }) }).children);
  const pods = [redisClusterPod({ shard: 3, ordinal: 0, record: { slots: [[0, 10]], maxMemory: 0 } })];
  const answer = sync({
    parent: redisCluster({ ...noLimit, master: { replicas: 3 } }),
    children: observed,
    related: pods,
  });
  assert.equal(condition(answer.status, 'SpecValid')?.['status'], 'True');
  assert.ok(shardNames(answer.children).includes(`StatefulSet/${NAME}-shard-3`));
});

test("lowering spec.replicas keeps the pod a shard's master runs on", async (t) => {
  const cases: Array<[string, number, number]> = [
    ['master on pod 2, replicas 2 -> 0: three pods kept', 2, 3],
    ['master on pod 0, replicas 2 -> 0: one pod', 0, 1],
    ['master on pod 1, replicas 2 -> 0: two pods', 1, 2],
  ];
  for (const [name, masterOrdinal, pods] of cases) {
    await t.test(name, () => {
      const related = [0, 1, 2].map((o) =>
        redisClusterPod({ shard: 0, ordinal: o, record: { role: o === masterOrdinal ? 'master' : 'replica' } }),
      );
      const answer = sync({
        parent: redisCluster(limitedSpec({ replicas: 0 })),
        children: observedFor(limitedSpec()),
        related,
      });
      const set = answer.children.find((c) => c.metadata.name === `${NAME}-shard-0`);
      assert.equal(get(set, 'spec', 'replicas'), pods);
    });
  }
});
