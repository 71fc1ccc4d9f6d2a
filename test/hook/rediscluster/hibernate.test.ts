// Hibernation of a RedisCluster in the sync hook: every shard StatefulSet at 0 pods with
// everything else kept, the reshard that is moving slots finishing first, a leaving shard never
// dropped while its pods are stopped, the phase, Ready and the Hibernated condition (Hibernating,
// Hibernated, Waking, Awake), and the backup CronJobs suspended.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESHARD_ANNOTATION, reshardRecord, type ReshardRecord } from '../../../src/api/rediscluster-names.ts';
import type { KubeObject } from '../../../src/hook/index.ts';
import { condition } from '../common/helpers.ts';
import {
  articleSpec,
  AT,
  healthyRedisClusterPods,
  limitedSpec,
  NAME,
  named,
  observedFor,
  redisCluster,
  sync,
  type Json,
} from './helpers.ts';

const HIBERNATING = limitedSpec({ hibernate: true });
const reshard = (state: ReshardRecord['state'], from = 3, to = 4) => ({
  [RESHARD_ANNOTATION]: reshardRecord({ from, to, state, moved: 100, total: 4096, at: AT, why: '' }),
});
const sets = (children: readonly KubeObject[]) => children.filter((c) => c.kind === 'StatefulSet');
const replicasOf = (children: readonly KubeObject[]) =>
  sets(children).map((s) => [s.metadata.name, (s['spec'] as Json)['replicas']]);

test('hibernating: every shard StatefulSet at 0 pods; ConfigMap, Services, PDBs and claims templates kept', () => {
  const awake = sync({
    parent: redisCluster(limitedSpec()),
    children: observedFor(limitedSpec()),
    related: healthyRedisClusterPods(),
  });
  const asleep = sync({
    parent: redisCluster(HIBERNATING),
    children: observedFor(limitedSpec()),
    related: healthyRedisClusterPods(),
  });
  assert.deepEqual(named(asleep.children), named(awake.children), 'the same children, none dropped');
  assert.deepEqual(
    replicasOf(asleep.children),
    [0, 1, 2].map((i) => [`${NAME}-shard-${i}`, 0]),
  );
  assert.deepEqual(
    replicasOf(awake.children),
    [0, 1, 2].map((i) => [`${NAME}-shard-${i}`, 3]),
  );
  for (const [a, b] of sets(asleep.children).map((s, i) => [s, sets(awake.children)[i]!] as const)) {
    const spec = (o: KubeObject) => o['spec'] as Json;
    assert.deepEqual(spec(a)['volumeClaimTemplates'], spec(b)['volumeClaimTemplates'], 'the claims are the same');
    assert.deepEqual(spec(a)['template'], spec(b)['template'], 'no new template: waking replaces no pod revision');
    assert.deepEqual(spec(a)['persistentVolumeClaimRetentionPolicy'], spec(b)['persistentVolumeClaimRetentionPolicy']);
  }
});

test('the Hibernated condition, Ready and the phase through a hibernation and a wake', async (t) => {
  const pods = healthyRedisClusterPods();
  const observed = observedFor(limitedSpec());
  const prior = (reason: string, status = 'False') => ({
    conditions: [{ type: 'Hibernated', status, reason, message: '' }],
  });
  const cases: Array<{
    name: string;
    spec: Json;
    related: KubeObject[];
    previous?: Json;
    annotations?: Record<string, string>;
    want: { reason: string; status: string; phase: string; ready: string };
  }> = [
    {
      name: 'awake, never hibernated',
      spec: limitedSpec(),
      related: pods,
      want: { reason: 'Awake', status: 'False', phase: 'Running', ready: 'AllReady' },
    },
    {
      name: 'hibernate set, pods still stopping',
      spec: HIBERNATING,
      related: pods.slice(0, 2),
      want: { reason: 'Hibernating', status: 'False', phase: 'Hibernated', ready: 'Hibernating' },
    },
    {
      name: 'hibernate set, every pod gone',
      spec: HIBERNATING,
      related: [],
      want: { reason: 'Hibernated', status: 'True', phase: 'Hibernated', ready: 'Hibernated' },
    },
    {
      name: 'hibernate set while a reshard moves slots: the pods keep running',
      spec: HIBERNATING,
      related: pods,
      annotations: reshard('Running'),
      want: { reason: 'WaitingForReshard', status: 'False', phase: 'Resharding', ready: 'AllReady' },
    },
    {
      name: 'woken, no pod Ready yet',
      spec: limitedSpec(),
      related: [],
      previous: prior('Hibernated', 'True'),
      want: { reason: 'Waking', status: 'False', phase: 'Pending', ready: 'NotFormed' },
    },
    {
      name: 'woken while still stopping',
      spec: limitedSpec(),
      related: pods.slice(0, 1),
      previous: prior('Hibernating'),
      want: { reason: 'Waking', status: 'False', phase: 'Pending', ready: 'SlotsUncovered' },
    },
    {
      name: 'waking, and Ready again: awake',
      spec: limitedSpec(),
      related: pods,
      previous: prior('Waking'),
      want: { reason: 'Awake', status: 'False', phase: 'Running', ready: 'AllReady' },
    },
    {
      name: 'a hibernation that waited for a reshard and was called off never stopped a pod: awake',
      spec: limitedSpec(),
      related: pods.slice(0, 1),
      previous: prior('WaitingForReshard'),
      want: { reason: 'Awake', status: 'False', phase: 'Pending', ready: 'SlotsUncovered' },
    },
  ];
  for (const c of cases)
    await t.test(c.name, () => {
      const r = sync({
        parent: redisCluster(c.spec, {
          ...(c.annotations ? { annotations: c.annotations } : {}),
          ...(c.previous ? { status: c.previous } : {}),
        }),
        children: observed,
        related: c.related,
      });
      const h = condition(r.status, 'Hibernated');
      assert.equal(h?.['reason'], c.want.reason, JSON.stringify(h));
      assert.equal(h?.['status'], c.want.status);
      assert.equal(r.status.phase, c.want.phase);
      assert.equal(condition(r.status, 'Ready')?.['reason'], c.want.ready);
      if (c.want.reason === 'WaitingForReshard') {
        assert.match(String(h?.['message']), /3 -> 4 shards has finished \(100 of 4096 slots moved\)/);
        assert.deepEqual(
          replicasOf(r.children).map(([, n]) => n),
          [3, 3, 3],
          'no pod stops while slots move',
        );
      }
      if (c.want.reason === 'Hibernating') assert.match(String(h?.['message']), /waiting for 2 pod\(s\) to stop/);
    });
});

test('kubectl get rediscluster while hibernated: 0 masters of 3, 0 replicas, no slot, phase Hibernated', () => {
  const r = sync({ parent: redisCluster(HIBERNATING), children: observedFor(limitedSpec()), related: [] });
  assert.deepEqual(r.status.summary, { masters: '0/3', replicas: '0/6' });
  assert.equal(r.status.slotsCovered, 0);
  assert.equal(r.status.phase, 'Hibernated');
});

test('a leaving shard is kept while hibernating, whatever its record says (no pod tells it is empty)', () => {
  const four = limitedSpec({ master: { replicas: 4 } });
  const r = sync({
    parent: redisCluster(limitedSpec({ hibernate: true }), { annotations: reshard('Done', 4, 3) }),
    children: observedFor(four),
    related: [],
  });
  assert.deepEqual(
    replicasOf(r.children),
    [0, 1, 2, 3].map((i) => [`${NAME}-shard-${i}`, 0]),
  );
  assert.equal(r.status.shards, 4);
});

test('scheduled backups are suspended while hibernating, and each CronJob still names every pod of its shard', () => {
  const spec = { ...articleSpec(), hibernate: true };
  const r = sync({ parent: redisCluster(spec), children: observedFor(articleSpec()), related: [] });
  const crons = r.children.filter((c) => c.kind === 'CronJob');
  assert.equal(crons.length, 3);
  for (const c of crons) assert.equal((c['spec'] as Json)['suspend'], true, c.metadata.name);
  const awake = sync({ parent: redisCluster(articleSpec()), children: observedFor(articleSpec()), related: [] });
  const hosts = (cs: readonly KubeObject[]) =>
    JSON.stringify(cs.filter((c) => c.kind === 'CronJob').map((c) => (c['spec'] as Json)['jobTemplate']));
  assert.equal(hosts(r.children), hosts(awake.children));
});
