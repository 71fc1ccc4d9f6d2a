// The hook's view of the engines: status.nodes from the sidecar's engine annotation on each pod
// (both kinds), and the Updated condition telling a move between engines (reason EngineMove) while
// the rollout runs, a stuck rollout keeping its RolloutWaiting reason.
import assert from 'node:assert/strict';
import test from 'node:test';
import { ENGINE_ANNOTATION, readEngine } from '../../../src/api/node-engine.ts';
import { sync } from '../../../src/hook/index.ts';
import { nodesStatus, withEngineMove } from '../../../src/hook/common/engines.ts';
import type { RolloutVerdict } from '../../../src/hook/common/rollout.ts';
import { condition, fixtureRequest, type Json } from './helpers.ts';
import * as rc from '../rediscluster/helpers.ts';

const R = 'redis 7.2.6';
const V = 'valkey 8.0.1';

test('nodesStatus: pods whose annotation reads, sorted by pod', () => {
  assert.deepEqual(
    nodesStatus([
      { name: 'b', engine: V },
      { name: 'a', engine: R },
      { name: 'c', engine: undefined },
      { name: 'd', engine: 'garbage' },
    ]),
    [
      { pod: 'a', engine: 'redis', version: '7.2.6' },
      { pod: 'b', engine: 'valkey', version: '8.0.1' },
    ],
  );
});

test('withEngineMove: the rollout told as a move when one is under way', async (t) => {
  const rolling: RolloutVerdict = { ok: false, reason: 'RollingOut', message: '1 of 3 pods updated' };
  const waiting: RolloutVerdict = { ok: false, reason: 'RolloutWaiting', message: 'waiting for b to become Ready' };
  const done: RolloutVerdict = { ok: true, reason: 'UpToDate', message: '3 of 3 pods run the current template' };
  const pods = (...engines: Array<[string | null, boolean]>) =>
    engines.map(([e, updated], i) => ({ pod: `p${i}`, engine: readEngine(e ?? ''), updated }));
  const cases: Array<{
    name: string;
    verdict: RolloutVerdict;
    spec: unknown;
    pods: ReturnType<typeof pods>;
    reason: string;
    message: string;
  }> = [
    {
      name: 'spec.engine changed, no pod replaced yet',
      verdict: rolling,
      spec: 'valkey',
      pods: pods([R, false], [R, false], [R, false]),
      reason: 'EngineMove',
      message: 'moving from redis 7.2.6 to valkey: 0 of 3 pods run it; 1 of 3 pods updated',
    },
    {
      name: 'half way, target from the updated pods (spec.image)',
      verdict: rolling,
      spec: undefined,
      pods: pods([R, false], [V, true], [null, true]),
      reason: 'EngineMove',
      message: 'moving from redis 7.2.6 to valkey 8.0.1: 1 of 3 pods run it; 1 of 3 pods updated',
    },
    {
      name: 'stuck on a pod: RolloutWaiting stays, the move said too',
      verdict: waiting,
      spec: 'valkey',
      pods: pods([R, false], [V, true]),
      reason: 'RolloutWaiting',
      message: 'moving from redis 7.2.6 to valkey 8.0.1: 1 of 2 pods run it; waiting for b to become Ready',
    },
    {
      name: 'a rollout that is no move (a version change) is left as it is',
      verdict: rolling,
      spec: 'redis',
      pods: pods([R, false], [R, true]),
      reason: 'RollingOut',
      message: '1 of 3 pods updated',
    },
    {
      name: 'done is done',
      verdict: done,
      spec: 'valkey',
      pods: pods([V, true], [V, true]),
      reason: 'UpToDate',
      message: '3 of 3 pods run the current template',
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const v = withEngineMove(c.verdict, c.spec, c.pods);
      assert.equal(v.reason, c.reason);
      assert.equal(v.message, c.message);
      assert.equal(v.ok, c.verdict.ok);
    });
  }
});

const pod = (body: Json, name: string) =>
  (body['related'] as Record<string, Record<string, Json>>)['Pod.v1']![`default/${name}`]!;
const meta = (o: Json) => o['metadata'] as { annotations: Record<string, string>; labels: Record<string, string> };

test('a Redis: status.nodes as the pods say, and a move told in Updated', async (t) => {
  await t.test('no annotation yet: no status.nodes', () => {
    const status = sync(fixtureRequest()).status as Json;
    assert.equal(status['nodes'], undefined);
  });
  await t.test('half way from redis to valkey (both sets have a new template)', () => {
    const status = sync(
      fixtureRequest((b) => {
        // The spec asks for valkey (from redis 7.2, an allowed move); the pods tell how far it got.
        Object.assign((b['parent'] as Json)['spec'] as Json, { engine: 'valkey', version: '8.0' });
        const sets = (b['children'] as Record<string, Record<string, Json>>)['StatefulSet.apps/v1']!;
        (sets['default/my-redis-replica']!['status'] as Json)['updateRevision'] = 'my-redis-replica-new';
        (sets['default/my-redis-master']!['status'] as Json)['updateRevision'] = 'my-redis-master-new';
        meta(pod(b, 'my-redis-master-0')).annotations[ENGINE_ANNOTATION] = R;
        meta(pod(b, 'my-redis-replica-0')).annotations[ENGINE_ANNOTATION] = R;
        const moved = meta(pod(b, 'my-redis-replica-1'));
        moved.annotations[ENGINE_ANNOTATION] = V;
        moved.labels['controller-revision-hash'] = 'my-redis-replica-new';
      }),
    ).status as Json;
    assert.deepEqual(status['nodes'], [
      { pod: 'my-redis-master-0', engine: 'redis', version: '7.2.6' },
      { pod: 'my-redis-replica-0', engine: 'redis', version: '7.2.6' },
      { pod: 'my-redis-replica-1', engine: 'valkey', version: '8.0.1' },
    ]);
    const updated = condition(status, 'Updated');
    assert.equal(updated?.['status'], 'False');
    assert.equal(updated?.['reason'], 'EngineMove');
    assert.match(String(updated?.['message']), /^moving from redis 7\.2\.6 to valkey 8\.0\.1: 1 of 3 pods run it; /);
    assert.equal(status['phase'], 'Running', 'a move is not an outage');
  });
});

test('a RedisCluster: status.nodes as the pods say, and a move told in Updated', () => {
  const pods = rc.healthyRedisClusterPods().map((p) => {
    const stale = p.metadata.name === rc.podName(0, 0);
    const annotations = p.metadata.annotations as Record<string, string>;
    annotations[ENGINE_ANNOTATION] = stale ? R : V;
    if (stale) (p.metadata.labels as Record<string, string>)['controller-revision-hash'] = 'old';
    return p;
  });
  // Running redis 7.2 (a move to valkey is allowed only from there), asked for valkey 8.0.
  const spec = { ...rc.limitedSpec(), version: '7.2' };
  const moving = { ...spec, engine: 'valkey', version: '8.0' };
  const status = rc.sync({ parent: rc.redisCluster(moving), children: rc.observedFor(spec), related: pods }).status;
  assert.equal(status.nodes?.length, 9);
  assert.deepEqual(status.nodes?.[0], { pod: rc.podName(0, 0), engine: 'redis', version: '7.2.6' });
  assert.deepEqual(status.nodes?.[1], { pod: rc.podName(0, 1), engine: 'valkey', version: '8.0.1' });
  const updated = condition(status, 'Updated');
  assert.equal(updated?.['reason'], 'EngineMove');
  assert.match(String(updated?.['message']), /^moving from redis 7\.2\.6 to valkey 8\.0\.1: 8 of 9 pods run it; /);
});
