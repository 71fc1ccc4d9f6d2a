// A RedisBackup names a Redis by spec.redis; a RedisCluster of the same name in the namespace
// (whichever of the two keeps the names) never stands in for it: the answer is the one without
// the RedisCluster, its Job labelled as a Redis backup (app.kubernetes.io/name=redis-backup,
// which the RedisCluster's backup selector does not match).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupSelectorLabels } from '../../../src/api/backup.ts';
import { redisClusterBackupSelectorLabels } from '../../../src/api/rediscluster-names.ts';
import { parseHookRequest, syncRedisBackup, type KubeObject } from '../../../src/hook/index.ts';
import { designSpec, NS, objectMap, redis, type Json } from '../common/helpers.ts';
import { articleSpec, redisCluster } from '../rediscluster/helpers.ts';

const STORAGE = { s3: { bucket: 'redis-backups', region: 'us-east-1', prefix: '' } };

function sync(related: Json[]) {
  const parsed = parseHookRequest({
    controller: { kind: 'CompositeController' },
    parent: {
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisBackup',
      metadata: { name: 'nightly', namespace: NS, uid: 'uid-b' },
      spec: { redis: 'my-redis' },
    },
    children: {},
    related: objectMap(related as unknown as KubeObject[]),
  });
  assert.ok(parsed.ok);
  return syncRedisBackup(parsed.request);
}

const theRedis = redis({ ...designSpec(), backup: { storage: STORAGE } }, { status: { phase: 'Running' } });
const theCluster = redisCluster(
  { ...articleSpec(), backup: { schedule: '@daily', storage: STORAGE } },
  { name: 'my-redis', status: { phase: 'Running' } },
);

test('with a RedisCluster of the same name beside it, the backup is the Redis one', async (t) => {
  for (const [label, related] of [
    ['Redis first', [theRedis, theCluster]],
    ['RedisCluster first', [theCluster, theRedis]],
  ] as const) {
    await t.test(label, () => {
      const r = sync([...related]);
      assert.equal(r.status.phase, 'Running');
      assert.match(r.status.message ?? '', /backs up Redis my-redis/);
      const job = r.children[0]!;
      const labels = job.metadata.labels ?? {};
      for (const [k, v] of Object.entries(backupSelectorLabels('my-redis'))) assert.equal(labels[k], v, k);
      const clusterSelector = redisClusterBackupSelectorLabels('my-redis');
      assert.ok(
        Object.entries(clusterSelector).some(([k, v]) => labels[k] !== v),
        "the RedisCluster's backup selector does not take the Job for its own",
      );
      assert.deepEqual(r, sync([theRedis]), 'the same answer as without the RedisCluster');
    });
  }
});
