// Pure: the backup Job's configuration from its environment (src/backup/config.ts): every problem
// names the variable, all at once; sources keep their order (replicas first).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupConfig } from '../../src/backup/config.ts';

const GOOD = {
  REDIS_NAMESPACE: 'shop',
  REDIS_NAME: 'cache',
  REDIS_HOSTS: 'cache-replicas.shop.svc:6379, cache-master.shop.svc:6379',
  REDIS_USERNAME: 'redis-operator',
  REDIS_PASSWORD: 'p',
  S3_BUCKET: 'b',
  S3_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'a',
  AWS_SECRET_ACCESS_KEY: 's',
};

test('a good environment: sources in order, defaults filled', () => {
  const r = backupConfig(GOOD);
  assert.ok(r.ok);
  assert.deepEqual(r.config.sources, [
    { host: 'cache-replicas.shop.svc', port: 6379 },
    { host: 'cache-master.shop.svc', port: 6379 },
  ]);
  assert.deepEqual(r.config.retention, { days: undefined, count: undefined });
  assert.equal(r.config.s3.prefix, '');
  assert.equal(r.config.terminationLog, '/dev/termination-log');
});

test('each refusal names the variable', async (t) => {
  const table: Array<[string, Record<string, string>, RegExp]> = [
    ['a source without a port', { REDIS_HOSTS: 'cache-replicas' }, /REDIS_HOSTS="cache-replicas" is invalid: "cache-replicas" is not host:port/],
    ['a port out of range', { REDIS_HOSTS: 'a:70000' }, /REDIS_HOSTS/],
    ['an endpoint that is not a URL', { S3_ENDPOINT: 'minio:9000' }, /S3_ENDPOINT="minio:9000" is invalid: must be an http\(s\) URL/],
    ['a retention that is not a number', { RETENTION_DAYS: 'seven' }, /RETENTION_DAYS="seven" is invalid/],
    ['no password', { REDIS_PASSWORD: ' ' }, /REDIS_PASSWORD is required/],
  ];
  for (const [name, change, message] of table) {
    await t.test(name, () => {
      const r = backupConfig({ ...GOOD, ...change });
      assert.ok(!r.ok);
      assert.match(r.errors.join('; '), message);
    });
  }
});
