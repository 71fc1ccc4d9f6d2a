// The restore location a RedisBackup records (status.location) is another object's status, which
// whoever may write that status can set: the hook checks it as it checks spec.restore.location
// (src/api/backup-validate.ts), so a forged one is Failed with the field named, and nothing
// (ConfigMap key, restore init container, pod) ever carries it. A good one, in the operator's
// owner folders or the layout before them, is restored as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESTORE_LOCATION_KEY } from '../../../src/api/backup.ts';
import { sync, type KubeObject } from '../../../src/hook/index.ts';
import { designSpec, find, get, NS, redis, request, type Json } from '../common/helpers.ts';

const S3 = { bucket: 'redis-backups', region: 'us-east-1', prefix: '' };
const spec: Json = { ...designSpec(), restore: { backup: 'nightly' } };

const recorded = (location: string): KubeObject => ({
  apiVersion: 'redis.example.com/v1',
  kind: 'RedisBackup',
  metadata: { name: 'nightly', namespace: NS },
  spec: { redis: 'old-redis' },
  status: { phase: 'Completed', location, storage: { s3: S3 } },
});

test('a RedisBackup whose status.location leads elsewhere is Failed, naming it; nothing carries it', async (t) => {
  const forged: Array<[string, string, RegExp]> = [
    ['".." segments', 's3://redis-backups/a/../../x.rdb', /"\.\."/],
    ['a backslash', 's3://redis-backups/a\\..\\x.rdb', /may only use/],
    ['a %-encoded ".."', 's3://redis-backups/%2e%2e/x.rdb', /may only use/],
    ['a control character', 's3://redis-backups/a\nRESTORE_DIR=/.rdb', /may only use/],
    ['a bucket that is an IP address', 's3://169.254.169.254/x.rdb', /IP address/],
  ];
  for (const [what, location, why] of forged) {
    await t.test(what, () => {
      const r = sync(request({ parent: redis(spec), related: [recorded(location)] }));
      assert.equal(get(r.status, 'restore', 'phase'), 'Failed');
      const message = String(get(r.status, 'restore', 'message'));
      assert.match(message, /RedisBackup nightly status\.location/);
      assert.match(message, why);
      assert.equal(r.children.filter((c) => c.kind === 'StatefulSet').length, 0, 'no pod is made to restore it');
      for (const c of r.children)
        assert.ok(
          !JSON.stringify(c).includes(JSON.stringify(location).slice(1, -1)),
          `${c.kind} ${c.metadata.name} does not carry it`,
        );
    });
  }
  for (const location of [
    's3://redis-backups/redis~default~old-redis/20250115T120000Z-42.rdb',
    's3://redis-backups/default/old-redis/20250115T120000Z-42.rdb',
  ]) {
    await t.test(`a recorded ${location.includes('~') ? 'owner-folder' : 'old-layout'} location is restored`, () => {
      const r = sync(request({ parent: redis(spec), related: [recorded(location)] }));
      assert.equal(get(r.status, 'restore', 'phase'), 'Restoring');
      assert.equal(get(find(r.children, 'ConfigMap', 'my-redis-config'), 'data', RESTORE_LOCATION_KEY), location);
    });
  }
});
