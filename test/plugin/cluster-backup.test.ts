// The plugin's backup and restore of a RedisCluster: refused without storage, progress per shard,
// and the restored RedisCluster's spec: the backup's shard count whatever --like says (and said).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as clusterOps from '../../src/plugin/cluster-ops.ts';
import type { RedisBackupStatus } from '../../src/api/redisbackup-schema.ts';

const S3 = { s3: { bucket: 'redis-backups', region: 'us-east-1', prefix: '' } };
const shard = (i: number, phase: 'Running' | 'Completed' | 'Failed') => ({
  shard: i,
  job: `b-backup-${i}`,
  phase,
  ...(phase === 'Completed' ? { location: `s3://redis-backups/k${i}.rdb`, slots: `${i}`, replicationOffset: 10 } : {}),
});

test('backup: refused without spec.backup.storage, naming it', async (t) => {
  const cases: Array<[string, Record<string, unknown> | undefined, boolean]> = [
    ['no spec', undefined, true],
    ['no spec.backup', { master: { replicas: 3 } }, true],
    ['spec.backup with storage', { backup: { schedule: '@daily', storage: S3 } }, false],
  ];
  for (const [what, spec, refused] of cases)
    await t.test(what, () => {
      const why = clusterOps.clusterBackupRefusal({ metadata: { name: 'orders' }, ...(spec ? { spec } : {}) });
      if (!refused) return assert.equal(why, undefined);
      assert.match(String(why), /^RedisCluster orders has no spec\.backup\.storage/);
    });
  assert.deepEqual(clusterOps.clusterBackupObject('orders', 'apps', 'b').spec, { redisCluster: 'orders' });
});

test('backup progress: shards counted, each shown once stored, a failure refused', async (t) => {
  const cases: Array<[string, RedisBackupStatus | undefined, string, RegExp]> = [
    ['nothing yet', undefined, 'waiting', /^phase Pending$/],
    [
      'two of three',
      { phase: 'Running', shards: [shard(0, 'Completed'), shard(1, 'Running'), shard(2, 'Completed')] },
      'waiting',
      /2\/3 shards stored/,
    ],
    [
      'done',
      { phase: 'Completed', shards: [0, 1, 2].map((i) => shard(i, 'Completed')) },
      'done',
      /3\/3 shards stored\n {2}shard 0: s3:\/\/redis-backups\/k0\.rdb slots 0 offset 10/,
    ],
    ['failed', { phase: 'Failed', reason: 'BackupFailed', message: 'shard 1: no node' }, 'refused', /shard 1: no node/],
  ];
  for (const [what, status, state, line] of cases)
    await t.test(what, () => {
      const p = clusterOps.clusterBackupProgress(status);
      assert.equal(p.state, state);
      assert.match(p.line, line);
    });
});

test('restore: the shard count is the backup’s; a backup of a Redis or not completed is refused', async (t) => {
  const done: RedisBackupStatus = { phase: 'Completed', shards: [0, 1, 2, 3].map((i) => shard(i, 'Completed')) };
  const like = { version: '7.0', master: { replicas: 3 }, replicas: 1, restore: { backup: 'old' } };
  await t.test('shaped like another, its restore and shard count replaced and said', () => {
    const r = clusterOps.clusterRestoreSpec({ name: 'b', redisCluster: 'orders', status: done }, 'orders', like);
    assert.ok(r.ok);
    assert.deepEqual(r.spec, { version: '7.0', master: { replicas: 4 }, replicas: 1, restore: { backup: 'b' } });
    assert.equal(r.leftOut.length, 2);
    assert.match(r.leftOut.join('; '), /master\.replicas 3 of orders .*4 shards, as backed up/);
  });
  await t.test('shaped like a hibernated RedisCluster: spec.hibernate left out and said', () => {
    const r = clusterOps.clusterRestoreSpec({ name: 'b', redisCluster: 'orders', status: done }, 'orders', {
      master: { replicas: 4 },
      hibernate: true,
    });
    assert.ok(r.ok);
    assert.deepEqual(r.spec, { master: { replicas: 4 }, restore: { backup: 'b' } });
    assert.deepEqual(r.leftOut, [
      'spec.hibernate: true of orders (a hibernated RedisCluster would never start, so never restore)',
    ]);
  });
  await t.test('no --like: the least spec', () => {
    const r = clusterOps.clusterRestoreSpec({ name: 'b', redisCluster: 'orders', status: done }, '', {});
    assert.deepEqual(r, { ok: true, spec: { master: { replicas: 4 }, restore: { backup: 'b' } }, leftOut: [] });
  });
  const refused: Array<[string, string | undefined, RedisBackupStatus, RegExp]> = [
    ['a backup of a Redis', undefined, done, /a backup of a Redis/],
    ['still running', 'orders', { phase: 'Running' }, /is Running: only a Completed backup/],
  ];
  for (const [what, cluster, status, why] of refused)
    await t.test(what, () => {
      const r = clusterOps.clusterRestoreSpec({ name: 'b', redisCluster: cluster, status }, '', {});
      assert.ok(!r.ok);
      assert.match(r.reason, why);
    });
  assert.equal(
    clusterOps.clusterRestoreProgress({ phase: 'Running', restore: { source: 's', phase: 'Completed', message: '' } })
      .state,
    'done',
  );
  assert.equal(
    clusterOps.clusterRestoreProgress({ phase: 'Pending', restore: { source: 's', phase: 'Restoring', message: '' } })
      .state,
    'waiting',
  );
  assert.equal(
    clusterOps.clusterRestoreProgress({ restore: { source: 's', phase: 'Failed', message: 'x' } }).state,
    'refused',
  );
});
