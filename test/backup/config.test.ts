// Pure: the backup Job's configuration from its environment (src/backup/config.ts): every problem
// names the variable, all at once; sources keep their order (replicas first); BACKUP_STORAGE=pvc
// needs its claim and never the S3 variables. The restore's configuration (src/backup/restore.ts)
// likewise, and the result line's bound (src/backup/failure.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupConfig, backupOwner } from '../../src/backup/config.ts';
import { RESULT_LINE_MAX, resultLine } from '../../src/backup/failure.ts';
import { restore, restoreConfig } from '../../src/backup/restore.ts';

const GOOD = {
  REDIS_NAMESPACE: 'shop',
  REDIS_NAME: 'cache',
  REDIS_HOSTS: 'cache-replicas.shop.svc:6379, cache-master.shop.svc:6379',
  REDIS_USERNAME: 'redis-operator',
  REDIS_PASSWORD: 'p',
  S3_BUCKET: 'backups',
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
  assert.equal(r.config.prefix, '');
  assert.equal(r.config.storage.kind, 's3', 'S3 is the default storage');
  assert.equal(r.config.terminationLog, '/dev/termination-log');
});

test("a RedisCluster shard's backup (BACKUP_SHARD) goes to its shard's own folder; a Redis's to the Redis's", () => {
  const redis = backupConfig(GOOD);
  assert.ok(redis.ok);
  assert.equal(redis.config.shard, undefined);
  assert.deepEqual(backupOwner(redis.config), { kind: 'Redis', namespace: 'shop', name: 'cache' });
  const shard = backupConfig({ ...GOOD, BACKUP_SHARD: '2' });
  assert.ok(shard.ok);
  assert.equal(shard.config.shard, 2);
  assert.deepEqual(backupOwner(shard.config), { kind: 'RedisCluster', namespace: 'shop', name: 'cache', shard: 2 });
  for (const bad of ['two', '64', '-1']) {
    const r = backupConfig({ ...GOOD, BACKUP_SHARD: bad });
    assert.ok(!r.ok, bad);
    assert.match(r.errors.join('; '), /BACKUP_SHARD/);
  }
});

test('S3 keys: both from the credentials Secret, or neither (the SDK default chain: IRSA, an instance role); one alone is refused naming the other', () => {
  const { AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, ...noKeys } = GOOD;
  const both = backupConfig(GOOD);
  assert.ok(both.ok);
  assert.deepEqual(both.config.storage.kind === 's3' && both.config.storage.credentials, {
    accessKeyId: AWS_ACCESS_KEY_ID,
    secretAccessKey: AWS_SECRET_ACCESS_KEY,
  });
  const chain = backupConfig(noKeys);
  assert.ok(chain.ok);
  assert.equal(chain.config.storage.kind === 's3' && chain.config.storage.credentials, undefined);
  const half = backupConfig({ ...noKeys, AWS_SECRET_ACCESS_KEY });
  assert.ok(!half.ok);
  assert.match(half.errors.join('; '), /^AWS_ACCESS_KEY_ID is required with AWS_SECRET_ACCESS_KEY/);
});

test('each refusal names the variable', async (t) => {
  const table: Array<[string, Record<string, string>, RegExp]> = [
    [
      'a source without a port',
      { REDIS_HOSTS: 'cache-replicas' },
      /REDIS_HOSTS="cache-replicas" is invalid: "cache-replicas" is not host:port/,
    ],
    ['a port out of range', { REDIS_HOSTS: 'a:70000' }, /REDIS_HOSTS/],
    [
      'an endpoint that is not a URL',
      { S3_ENDPOINT: 'minio:9000' },
      /S3_ENDPOINT="minio:9000" is invalid: must be an http\(s\) URL/,
    ],
    ['a retention that is not a number', { RETENTION_DAYS: 'seven' }, /RETENTION_DAYS="seven" is invalid/],
    ['no password', { REDIS_PASSWORD: ' ' }, /REDIS_PASSWORD is required/],
    ['a bucket too long', { S3_BUCKET: 'b'.repeat(64) }, /S3_BUCKET="b{64}" is invalid: must be 3 to 63 characters/],
    [
      'a bucket with "..", as admission refuses it',
      { S3_BUCKET: 'a..b' },
      /S3_BUCKET="a\.\.b" is invalid: must start and end with a letter or digit, with no "\.\."/,
    ],
    [
      'a bucket that is an IP address',
      { S3_BUCKET: '192.168.0.1' },
      /S3_BUCKET="192\.168\.0\.1" is invalid: must not be an IP address/,
    ],
    [
      'an S3 prefix that climbs',
      { S3_PREFIX: 'a/../b/' },
      /S3_PREFIX="a\/\.\.\/b\/" is invalid: must not have an empty, "\." or "\.\." segment/,
    ],
    [
      'an S3 prefix imitating a folder of ours',
      { S3_PREFIX: 'redis~shop~cache/' },
      /S3_PREFIX=.* is invalid: may only use letters, digits/,
    ],
    [
      'a name that is not an object name',
      { REDIS_NAME: 'a~b' },
      /REDIS_NAME="a~b" is invalid: must be a Kubernetes object name/,
    ],
  ];
  for (const [name, change, message] of table) {
    await t.test(name, () => {
      const r = backupConfig({ ...GOOD, ...change });
      assert.ok(!r.ok);
      assert.match(r.errors.join('; '), message);
    });
  }
});

/** GOOD without any S3 or AWS variable. */
const NO_S3 = Object.fromEntries(Object.entries(GOOD).filter(([k]) => !/^(S3_|AWS_)/.test(k)));

test('a volume target: needs its claim, never the S3 variables', async (t) => {
  const ok: Array<[string, Record<string, string>, object, string]> = [
    [
      'the defaults',
      { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'redis-backups' },
      { kind: 'pvc', dir: '/backup', claim: 'redis-backups' },
      '',
    ],
    [
      'a mount point and a prefix',
      { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'b', BACKUP_DIR: '/mnt/b', BACKUP_PREFIX: 'nightly/' },
      { kind: 'pvc', dir: '/mnt/b', claim: 'b' },
      'nightly/',
    ],
    [
      'S3_PREFIX when BACKUP_PREFIX is unset',
      { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'b', S3_PREFIX: 'a/b' },
      { kind: 'pvc', dir: '/backup', claim: 'b' },
      'a/b',
    ],
  ];
  for (const [name, env, storage, prefix] of ok) {
    await t.test(name, () => {
      const r = backupConfig({ ...NO_S3, ...env });
      assert.ok(r.ok, r.ok ? '' : r.errors.join('; '));
      assert.deepEqual(r.config.storage, storage);
      assert.equal(r.config.prefix, prefix);
    });
  }
  await t.test('s3 as before: BACKUP_PREFIX wins over S3_PREFIX', () => {
    const r = backupConfig({ ...GOOD, S3_PREFIX: 'old/', BACKUP_PREFIX: 'new/' });
    assert.ok(r.ok);
    assert.equal(r.config.prefix, 'new/');
    assert.equal(r.config.storage.kind, 's3');
  });
  const refused: Array<[string, Record<string, string>, RegExp]> = [
    ['no claim', { BACKUP_STORAGE: 'pvc' }, /^BACKUP_CLAIM is required/],
    [
      'a claim that is not a name',
      { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'My_Claim' },
      /^BACKUP_CLAIM="My_Claim" is invalid/,
    ],
    [
      'a relative mount point',
      { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'b', BACKUP_DIR: 'backup' },
      /^BACKUP_DIR="backup" is invalid: must be an absolute path/,
    ],
    [
      'a prefix leading out of the claim',
      { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'b', BACKUP_PREFIX: '../x/' },
      /^BACKUP_PREFIX="\.\.\/x\/" is invalid/,
    ],
    [
      'an absolute prefix',
      { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'b', S3_PREFIX: '/etc' },
      /^S3_PREFIX="\/etc" is invalid: must be relative/,
    ],
    ['an unknown storage', { BACKUP_STORAGE: 'nfs' }, /^BACKUP_STORAGE="nfs" is invalid: must be s3 or pvc/],
  ];
  for (const [name, env, message] of refused) {
    await t.test(name, () => {
      const r = backupConfig({ ...NO_S3, ...env });
      assert.ok(!r.ok);
      assert.ok(
        r.errors.some((e) => message.test(e)),
        r.errors.join('; '),
      );
      if (env['BACKUP_STORAGE'] === 'pvc')
        assert.ok(
          !r.errors.some((e) => /S3_(BUCKET|REGION)|AWS_/.test(e)),
          `no S3 variable demanded: ${r.errors.join('; ')}`,
        );
    });
  }
});

test('the restore: a pvc:// location needs RESTORE_DIR (default /backup) and no S3 variable; a bad location is named', async (t) => {
  const base = { DATA_DIR: '/data', APPENDONLY: 'yes' };
  await t.test('pvc:// without S3 variables', () => {
    const r = restoreConfig({
      ...base,
      RESTORE_LOCATION: 'pvc://redis-backups/nightly/shop/cache/20261201T000000Z-1.rdb',
    });
    assert.ok(r.ok, r.ok ? '' : r.errors.join('; '));
    assert.deepEqual(r.config.source, {
      kind: 'pvc',
      claim: 'redis-backups',
      key: 'nightly/shop/cache/20261201T000000Z-1.rdb',
      dir: '/backup',
    });
    const moved = restoreConfig({ ...base, RESTORE_LOCATION: 'pvc://b/x.rdb', RESTORE_DIR: '/mnt/b' });
    assert.ok(moved.ok);
    assert.equal(moved.config.source?.kind === 'pvc' && moved.config.source.dir, '/mnt/b');
  });
  await t.test('s3:// still needs the region, and both keys or neither', () => {
    const r = restoreConfig({ ...base, RESTORE_LOCATION: 's3://bucket/k.rdb' });
    assert.ok(!r.ok);
    assert.match(r.errors.join('; '), /S3_REGION is required/);
    const chain = restoreConfig({ ...base, RESTORE_LOCATION: 's3://bucket/k.rdb', S3_REGION: 'us-east-1' });
    assert.ok(chain.ok, 'no keys: the SDK default chain (IRSA, instance role)');
    assert.equal(chain.config.source?.kind === 's3' && chain.config.source.credentials, undefined);
    const half = restoreConfig({
      ...base,
      RESTORE_LOCATION: 's3://bucket/k.rdb',
      S3_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'a',
    });
    assert.ok(!half.ok);
    assert.match(half.errors.join('; '), /AWS_SECRET_ACCESS_KEY is required with AWS_ACCESS_KEY_ID/);
  });
  await t.test('a RedisCluster shard restores into its pod 0 only; the others start empty and replicate', async () => {
    const env = { ...base, RESTORE_LOCATION: 'pvc://b/x.rdb', RESTORE_FIRST_POD_ONLY: 'yes' };
    const first = restoreConfig({ ...env, POD_NAME: 'cache-shard-2-0' });
    assert.ok(first.ok);
    assert.equal(first.config.skip, undefined);
    const other = restoreConfig({ ...env, POD_NAME: 'cache-shard-2-10' });
    assert.ok(other.ok);
    assert.match(other.config.skip ?? '', /cache-shard-2-10 is not its shard's pod 0/);
    const r = await restore(other.config);
    assert.deepEqual([r.restored, r.restoredFrom], [false, undefined]);
    const unnamed = restoreConfig(env);
    assert.ok(!unnamed.ok);
    assert.match(unnamed.errors.join('; '), /POD_NAME is required/);
  });
  await t.test('no location: nothing to restore (the hook removed it once the restore was complete)', () => {
    const r = restoreConfig(base);
    assert.ok(r.ok);
    assert.equal(r.config.source, undefined);
  });
  const refused: Array<[string, Record<string, string>, RegExp]> = [
    [
      'another scheme',
      { RESTORE_LOCATION: 'https://b/x.rdb' },
      /^RESTORE_LOCATION="https:\/\/b\/x\.rdb" is invalid: must be s3:\/\/<bucket>\/<key>\.rdb or pvc:\/\//,
    ],
    [
      'a claim that is not a name',
      { RESTORE_LOCATION: 'pvc://Bad_Claim/x.rdb' },
      /^RESTORE_LOCATION=.* is invalid: the claim "Bad_Claim" must be a PersistentVolumeClaim name/,
    ],
    [
      'a path leading out of the claim',
      { RESTORE_LOCATION: 'pvc://b/../etc/x.rdb' },
      /^RESTORE_LOCATION=.* is invalid: the path must not have .*"\.\."/,
    ],
    ['an empty segment', { RESTORE_LOCATION: 'pvc://b/a//x.rdb' }, /^RESTORE_LOCATION=.* is invalid: the path/],
    [
      'no claim',
      { RESTORE_LOCATION: 'pvc:///x.rdb' },
      /^RESTORE_LOCATION=.* is invalid: the claim "" must be a PersistentVolumeClaim name/,
    ],
    // The same checks as admission (api/backup-validate.ts), for a CRD installed without its rules.
    [
      'a key leading up in a bucket',
      { RESTORE_LOCATION: 's3://backups/a/../x.rdb' },
      /^RESTORE_LOCATION=.* is invalid: the key must not have an empty, "\." or "\.\." segment/,
    ],
    [
      'a %-encoded "..", a backslash',
      { RESTORE_LOCATION: 's3://backups/%2e%2e/a\\x.rdb' },
      /^RESTORE_LOCATION=.* is invalid: the key may only use letters, digits/,
    ],
    [
      'a control character',
      { RESTORE_LOCATION: 'pvc://b/a\u0000b.rdb' },
      /^RESTORE_LOCATION=.* is invalid: the path may only use/,
    ],
    [
      'a bucket with ".."',
      { RESTORE_LOCATION: 's3://my..bucket/x.rdb' },
      /^RESTORE_LOCATION=.* is invalid: the bucket "my\.\.bucket" must start and end with a letter or digit, with no "\.\."/,
    ],
    [
      'a bucket that is an IP address',
      { RESTORE_LOCATION: 's3://10.0.0.1/x.rdb' },
      /^RESTORE_LOCATION=.* is invalid: the bucket "10\.0\.0\.1" must not be an IP address/,
    ],
    ['not an .rdb', { RESTORE_LOCATION: 'pvc://b/x.txt' }, /^RESTORE_LOCATION="pvc:\/\/b\/x\.txt" is invalid/],
    [
      'a relative RESTORE_DIR',
      { RESTORE_LOCATION: 'pvc://b/x.rdb', RESTORE_DIR: 'backup' },
      /^RESTORE_DIR="backup" is invalid: must be an absolute path/,
    ],
  ];
  for (const [name, env, message] of refused) {
    await t.test(name, () => {
      const r = restoreConfig({ ...base, ...env });
      assert.ok(!r.ok);
      assert.ok(
        r.errors.some((e) => message.test(e)),
        r.errors.join('; '),
      );
      assert.ok(!r.errors.some((e) => /S3_|AWS_/.test(e)), `no S3 variable demanded: ${r.errors.join('; ')}`);
    });
  }
});

test('the result line stays well under the 4096-byte termination log', async (t) => {
  const key = `${'p'.repeat(255)}/shop/cache/20261201T000000Z-123456789.rdb`;
  const success = {
    ok: true,
    storage: 'pvc',
    location: `pvc://${'c'.repeat(253)}/${key}`,
    key,
    bytes: 1,
    source: 'a:6379',
  };
  const table: Array<[string, Record<string, unknown>, (b: Record<string, unknown>) => void]> = [
    [
      'a small result is as it was',
      { ...success, pruned: ['a', 'b'], prunedCount: 2 },
      (b) => assert.deepEqual(b['pruned'], ['a', 'b']),
    ],
    [
      'pruned names give way first; the count and the location stay',
      { ...success, pruned: Array.from({ length: 100 }, () => key), prunedCount: 100 },
      (b) => {
        assert.ok((b['pruned'] as string[]).length < 100);
        assert.equal(b['prunedCount'], 100);
        assert.equal(b['location'], success.location);
      },
    ],
    [
      'a long error is shortened, its start kept',
      { ok: false, permanent: true, error: `invalid configuration: ${'x'.repeat(10_000)}` },
      (b) => assert.match(String(b['error']), /^invalid configuration: x+…$/),
    ],
    [
      'anything else long is cut',
      { ok: true, a: 'y'.repeat(5000), b: 'z'.repeat(5000) },
      (b) => assert.equal(b['truncated'], true),
    ],
    [
      'multi-byte text is counted in bytes',
      { ok: false, error: 'é'.repeat(5000) },
      (b) => assert.equal(b['ok'], false),
    ],
  ];
  for (const [name, body, check] of table) {
    await t.test(name, () => {
      const line = resultLine(body);
      assert.ok(Buffer.byteLength(line) <= RESULT_LINE_MAX, `${Buffer.byteLength(line)} bytes`);
      assert.ok(RESULT_LINE_MAX <= 2048, 'well under 4096');
      check(JSON.parse(line) as Record<string, unknown>);
    });
  }
});
