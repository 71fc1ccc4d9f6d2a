// The pod template pieces both kinds take from src/hook/common (pod-template.ts, statefulset.ts):
// a Redis's pods and a RedisCluster's run as the same user with the same restricted contexts, the
// same start-up and liveness probes, the same Redis env and mounts, and the same scheduling
// fields from their specs; what differs is each kind's own (readiness, ports, the restart hold).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../../src/hook/index.ts';
import { designSpec, desiredFor, find, get } from './helpers.ts';
import { articleSpec, redisCluster, sync as redisClusterSync } from '../rediscluster/helpers.ts';

const NAME = 'shared';
const scheduling = {
  nodeSelector: { zone: 'a' },
  tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }],
  priorityClassName: 'high',
  imagePullSecrets: [{ name: 'pull' }],
  podAnnotations: { team: 'x' },
  resources: designSpec()['resources'],
  persistence: designSpec()['persistence'],
  monitoring: articleSpec()['monitoring'],
};

function pods(): { redis: KubeObject; shard: KubeObject } {
  const redis = find(desiredFor({ ...designSpec(), ...scheduling }, NAME), 'StatefulSet', `${NAME}-master`);
  const children = redisClusterSync({
    parent: redisCluster({ ...articleSpec(), ...scheduling }, { name: NAME }),
  }).children;
  return { redis, shard: find(children, 'StatefulSet', `${NAME}-shard-0`) };
}

const pod = (set: KubeObject, ...path: string[]) => get(set, 'spec', 'template', 'spec', ...path);
const redisContainer = (set: KubeObject, ...path: string[]) => get(pod(set, 'containers'), 0, ...path);

test('both kinds run their pods with the same security contexts and scheduling fields', () => {
  const { redis, shard } = pods();
  for (const field of [
    'securityContext',
    'nodeSelector',
    'tolerations',
    'priorityClassName',
    'imagePullSecrets',
    'automountServiceAccountToken',
  ]) {
    assert.deepEqual(pod(shard, field), pod(redis, field), field);
  }
  assert.deepEqual(redisContainer(shard, 'securityContext'), redisContainer(redis, 'securityContext'));
  assert.equal(get(shard, 'spec', 'updateStrategy', 'type'), 'OnDelete');
  assert.deepEqual(get(shard, 'spec', 'updateStrategy'), get(redis, 'spec', 'updateStrategy'));
});

test('both kinds probe start-up and liveness alike, and mount and feed Redis alike', () => {
  const { redis, shard } = pods();
  for (const field of ['startupProbe', 'livenessProbe', 'volumeMounts', 'resources']) {
    assert.deepEqual(redisContainer(shard, field), redisContainer(redis, field), field);
  }
  // The shard's env is the Redis env plus its own restart hold.
  const redisEnv = redisContainer(redis, 'env') as unknown[];
  const shardEnv = redisContainer(shard, 'env') as unknown[];
  assert.deepEqual(shardEnv.slice(0, redisEnv.length), redisEnv);
  assert.deepEqual(
    shardEnv.slice(redisEnv.length).map((e) => get(e, 'name')),
    ['RESTART_HOLD_SECONDS'],
  );
  // Readiness is each kind's own: replication for a Redis, the cluster state for a shard.
  assert.notDeepEqual(redisContainer(shard, 'readinessProbe'), redisContainer(redis, 'readinessProbe'));
});
