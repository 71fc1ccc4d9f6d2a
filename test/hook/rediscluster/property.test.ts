// Properties of the RedisCluster hook over generated requests (fast-check): for any spec (valid or
// not), any observed shard StatefulSets and any pods with any node records (garbage included),
// sync and finalize never throw and are deterministic; finalized only while finalizing; an invalid
// spec returns every observed child; and, whatever the records say, a shard StatefulSet whose pods
// may hold data (slots, keys, an unreadable or missing record, a missing pod) is never dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { clusterNodeRecord } from '../../../src/api/rediscluster-names.ts';
import { readRedisClusterState } from '../../../src/hook/rediscluster/state.ts';
import { finalizeRedisCluster, syncRedisCluster, type KubeObject } from '../../../src/hook/index.ts';
import {
  applied,
  articleSpec,
  redisCluster,
  redisClusterPod,
  limitedSpec,
  NAME,
  nodeId,
  request,
  type Json,
} from './helpers.ts';

const specArb: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .record({
        shards: fc.integer({ min: 1, max: 6 }),
        replicas: fc.integer({ min: -1, max: 3 }),
        limit: fc.constantFrom('1Gi', '256Mi', undefined),
        persistence: fc.constantFrom({}, { enableRdb: false }, { whenDeleted: 'Delete' }),
        backup: fc.boolean(),
      })
      .map(({ shards, replicas, limit, persistence, backup }) => ({
        ...limitedSpec({ master: { replicas: shards }, replicas, persistence }),
        resources: limit === undefined ? {} : { limits: { memory: limit } },
        ...(backup ? { backup: articleSpec()['backup'] } : {}),
      })),
  },
  { weight: 1, arbitrary: fc.anything() },
);

/** A pod of shard 0..5 with a record that may be anything the sidecar (or a stranger) could have written. */
const podArb = fc
  .record({
    shard: fc.integer({ min: 0, max: 5 }),
    ordinal: fc.integer({ min: 0, max: 3 }),
    ready: fc.boolean(),
    terminating: fc.boolean(),
    record: fc.oneof(
      fc.constant(null),
      fc.constantFrom('garbage', 'id=x role=master slots=- master=- link=up mem=1/1 keys=0 at=now'),
      fc.record({
        role: fc.constantFrom('master', 'replica') as fc.Arbitrary<'master' | 'replica'>,
        slots: fc.constantFrom([], [[0, 5460]], [[5461, 16383]], [[0, 16383]]) as fc.Arbitrary<Array<[number, number]>>,
        keys: fc.constantFrom(0, 0, 7),
        usedMemory: fc.constantFrom(1, 600 * 1024 ** 2),
        maxMemory: fc.constantFrom(0, 800 * 1024 ** 2),
        linkUp: fc.boolean(),
      }),
    ),
  })
  .map((p) => {
    const record =
      p.record === null || typeof p.record === 'string'
        ? p.record
        : clusterNodeRecord({
            id: nodeId(`n${p.shard}-${p.ordinal}`),
            masterId: p.record.role === 'master' ? null : nodeId(`n${p.shard}-0`),
            at: '2026-12-01T10:00:00Z',
            ...p.record,
          });
    return { ...p, record };
  });

/** Shard StatefulSets 0..n-1 as a sync of `shards` shards would have left them. */
function observedSets(shards: number): KubeObject[] {
  return applied(
    syncRedisCluster(request({ parent: redisCluster(limitedSpec({ master: { replicas: Math.max(3, shards) } })) }))
      .children,
  );
}

function podsFrom(
  list: Array<{ shard: number; ordinal: number; ready: boolean; terminating: boolean; record: string | null }>,
): KubeObject[] {
  const byName = new Map<string, KubeObject>();
  for (const p of list) {
    const pod = redisClusterPod({
      shard: p.shard,
      ordinal: p.ordinal,
      ready: p.ready,
      terminating: p.terminating,
      record: null,
    });
    if (p.record !== null)
      (pod.metadata.annotations as Record<string, string>)['redis.example.com/cluster-node'] = p.record;
    byName.set(pod.metadata.name, pod);
  }
  return [...byName.values()];
}

/**
 * May shard `i` hold data, by the same reading the hook must make (a record with slots or keys, no readable record, a
 * pod missing)?
 */
function mayHoldData(i: number, set: KubeObject, pods: readonly KubeObject[]): boolean {
  const want = Number((set['spec'] as Json)['replicas']);
  for (let o = 0; o < want; o++) {
    const pod = pods.find((p) => p.metadata.name === `${NAME}-shard-${i}-${o}`);
    const text = pod?.metadata.annotations?.['redis.example.com/cluster-node'];
    if (text === undefined || !/^id=[0-9a-f]{40} /.test(text)) return true;
    if (!/ slots=- /.test(text) || !/ keys=0 /.test(text)) return true;
  }
  return pods.some((p) => {
    const m = new RegExp(`^${NAME}-shard-${i}-(\\d+)$`).exec(p.metadata.name);
    const text = p.metadata.annotations?.['redis.example.com/cluster-node'] ?? '';
    return (
      m !== null &&
      Number(m[1]) >= want &&
      !(/^id=[0-9a-f]{40} /.test(text) && / slots=- /.test(text) && / keys=0 /.test(text))
    );
  });
}

test('any request: no throw, same bytes twice, finalized only while finalizing, an invalid spec keeps every child, a shard that may hold data is never dropped', () => {
  fc.assert(
    fc.property(
      specArb,
      fc.integer({ min: 3, max: 6 }),
      fc.array(podArb, { maxLength: 14 }),
      fc.boolean(),
      (spec, observedShards, podList, finalizing) => {
        const children = observedSets(observedShards);
        const pods = podsFrom(podList);
        const req = () => request({ parent: { ...redisCluster(), spec }, children, related: pods, finalizing });
        const hook = finalizing ? finalizeRedisCluster : syncRedisCluster;
        const a = hook(req());
        assert.equal(JSON.stringify(hook(req())), JSON.stringify(a));
        if (!finalizing) assert.equal(a.finalized, undefined);
        // The hook's own verdict: the spec's, and whether its engine and version may replace what runs.
        const verdict = readRedisClusterState(req()).verdict;
        const returned = new Set(a.children.map((c) => `${c.kind}/${c.metadata.name}`));
        if (!verdict.ok) {
          assert.equal(a.children.length, children.length);
          assert.equal(a.status.phase, 'Failed');
          return;
        }
        if (finalizing) return;
        for (const set of children.filter((c) => c.kind === 'StatefulSet')) {
          const i = Number(/-shard-(\d+)$/.exec(set.metadata.name)![1]);
          if (mayHoldData(i, set, pods))
            assert.ok(
              returned.has(`StatefulSet/${set.metadata.name}`),
              `${set.metadata.name} may hold data and was dropped`,
            );
        }
      },
    ),
    { numRuns: 150 },
  );
});
