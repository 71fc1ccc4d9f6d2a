// Where backups go and where a restore reads, checked at admission by allow-list
// (src/api/backup-validate.ts, called from the Redis and RedisCluster validators): S3 bucket names
// by S3's rules, key prefixes and restore locations as relative paths of allowed characters. Each
// refusal names the field; path tricks ("..", a leading "/", "//", ".", a backslash, control
// characters, %-encoded forms) never pass, whatever they are mixed with (fast-check). The CRD's own
// rules are judged by the real API server in crd-server.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import fc from 'fast-check';
import { bucketProblem, parseLocation, prefixProblem } from '../../src/api/backup-validate.ts';
import { validateRedisClusterSpec } from '../../src/api/rediscluster-validate.ts';
import { validateSpec } from '../../src/api/validate.ts';

const S3 = { bucket: 'redis-backups', region: 'us-east-1' };
const backup = (s3: Record<string, unknown>) => ({ schedule: '@daily', storage: { s3: { ...S3, ...s3 } } });

test('bucket names: S3 rules, dots only between labels, never an IP address', async (t) => {
  const table: Array<[string, boolean]> = [
    ['redis-backups', true],
    ['abc', true],
    ['backups.example.com', true],
    ['a'.repeat(63), true],
    ['ab', false],
    ['a'.repeat(64), false],
    ['Backups', false],
    ['my_bucket', false],
    ['-backups', false],
    ['backups-', false],
    ['back..ups', false],
    ['back.-ups', false],
    ['back-.ups', false],
    ['192.168.0.1', false],
    ['1.2.3.4', false],
    ['1.2.3', true],
    ['bucket/x', false],
    ['bucket\u0000', false],
  ];
  for (const [bucket, ok] of table)
    await t.test(JSON.stringify(bucket), () =>
      assert.equal(bucketProblem(bucket) === undefined, ok, bucketProblem(bucket)),
    );
});

test('key prefixes: relative segments of letters, digits, ".", "_", "-"; never "~" (the operator\'s folders use it)', async (t) => {
  const table: Array<[string, boolean]> = [
    ['', true],
    ['nightly', true],
    ['nightly/', true],
    ['team/prod.eu/a_b-c/', true],
    ['..x/.y/', true],
    ['../x', false],
    ['a/../b', false],
    ['a/./b', false],
    ['.', false],
    ['/etc', false],
    ['a//b', false],
    ['//', false],
    ['a\\b', false],
    ['%2e%2e/', false],
    ['a b', false],
    ['a\u0000b', false],
    ['a\nb', false],
    ['redis~ns~name/', false],
    ['é/', false],
    ['p'.repeat(257), false],
  ];
  for (const [prefix, ok] of table)
    await t.test(JSON.stringify(prefix), () =>
      assert.equal(prefixProblem(prefix) === undefined, ok, prefixProblem(prefix)),
    );
});

test('restore locations: s3://<bucket>/<key>.rdb or pvc://<claim>/<path>.rdb, nothing that leads elsewhere', async (t) => {
  const table: Array<[string, string | undefined]> = [
    ['s3://redis-backups/team/redis~shop~cache/20261201T000000Z-1.rdb', undefined],
    ['s3://redis-backups/team/shop/cache/20261201T000000Z-1.rdb', undefined],
    ['pvc://redis-backups/rediscluster~shop~cache~shard-0/20261201T000000Z-1.rdb', undefined],
    ['s3://backups.example.com/x.rdb', undefined],
    ['s3://redis-backups/../x.rdb', 'the key must not have an empty, "." or ".." segment'],
    ['s3://redis-backups/a/./x.rdb', 'the key must not have an empty, "." or ".." segment'],
    ['s3://redis-backups//x.rdb', 'the key must be relative (no leading "/")'],
    ['s3://redis-backups/a//x.rdb', 'the key must not have an empty, "." or ".." segment'],
    ['pvc://claim/../../etc/x.rdb', 'the path must not have an empty, "." or ".." segment'],
    ['s3://redis-backups/a\\..\\x.rdb', 'the key may only use letters, digits'],
    ['s3://redis-backups/%2e%2e/x.rdb', 'the key may only use letters, digits'],
    ['s3://redis-backups/a%2Fb.rdb', 'the key may only use letters, digits'],
    ['s3://redis-backups/a\u0000.rdb', 'the key may only use letters, digits'],
    ['s3://redis-backups/a\r\nb.rdb', 'the key may only use letters, digits'],
    ['s3://redis-backups/x.txt', 'the key must end in .rdb'],
    ['s3://redis-backups/.rdb', 'the key must name a file before .rdb'],
    ['pvc://claim/a/.rdb', 'the path must name a file before .rdb'],
    ['s3://redis-backups/a/..rdb', undefined],
    ['s3://Bad_Bucket/x.rdb', 'the bucket "Bad_Bucket" may only use'],
    ['s3://my..bucket/x.rdb', 'the bucket "my..bucket" must start and end with a letter or digit, with no ".."'],
    ['s3://10.0.0.1/x.rdb', 'the bucket "10.0.0.1" must not be an IP address'],
    [`s3://${'b'.repeat(64)}/x.rdb`, `the bucket "${'b'.repeat(64)}" must be 3 to 63 characters`],
    ['pvc://Bad_Claim/x.rdb', 'the claim "Bad_Claim" must be a PersistentVolumeClaim name'],
    ['file:///etc/passwd.rdb', 'must be s3://<bucket>/<key>.rdb or pvc://<claim>/<path>.rdb'],
    ['s3:/redis-backups/x.rdb', 'must be s3://<bucket>/<key>.rdb or pvc://<claim>/<path>.rdb'],
    [`s3://b1/${'k'.repeat(1020)}.rdb`, 'is longer than 1024 characters'],
  ];
  for (const [location, problem] of table) {
    await t.test(JSON.stringify(location), () => {
      const r = parseLocation(location);
      assert.equal(r.ok ? undefined : r.message.slice(0, problem?.length ?? 0), problem, r.ok ? '' : r.message);
    });
  }
});

test('whatever a location is made of, one that passes is a plain relative path of allowed characters under its claim (fast-check)', () => {
  const piece = fc.constantFrom(
    's3://',
    'pvc://',
    'redis-backups',
    'b',
    '/',
    '.',
    '..',
    '%2e',
    '%2f',
    '\\',
    '\u0000',
    '\n',
    'a',
    '~',
    '.rdb',
    '//',
    ' ',
    'é',
  );
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
      const location = pieces.join('');
      const r = parseLocation(location);
      if (!r.ok) return;
      const key = r.location.key;
      assert.match(key, /^([A-Za-z0-9._~/-]*\/)?[A-Za-z0-9._~-]+\.rdb$/);
      assert.ok(
        key.split('/').every((s) => s !== '' && s !== '.' && s !== '..'),
        key,
      );
      const mount = '/backup';
      assert.ok(path.join(mount, ...key.split('/')).startsWith(`${mount}/`), `${key} stays under the mount`);
      assert.equal(path.posix.normalize(key), key, 'nothing for a server or a file system to resolve');
    }),
    { numRuns: 5000 },
  );
});

test('the Redis and RedisCluster validators refuse them, naming the field', async (t) => {
  const table: Array<[string, 'Redis' | 'RedisCluster', Record<string, unknown>, string, RegExp]> = [
    [
      'a location climbing out',
      'Redis',
      { restore: { location: 's3://redis-backups/a/../x.rdb', storage: { s3: S3 } } },
      'spec.restore.location',
      /"\.\."/,
    ],
    [
      'a location with a backslash',
      'Redis',
      { restore: { location: 's3://redis-backups/a\\x.rdb', storage: { s3: S3 } } },
      'spec.restore.location',
      /may only use/,
    ],
    [
      'a location with a %-encoded ".."',
      'Redis',
      { restore: { location: 'pvc://c/%2e%2e/x.rdb', storage: { pvc: { claimName: 'c' } } } },
      'spec.restore.location',
      /may only use/,
    ],
    [
      'a location in an IP-address bucket',
      'Redis',
      { restore: { location: 's3://10.1.2.3/x.rdb', storage: { s3: S3 } } },
      'spec.restore.location',
      /IP address/,
    ],
    [
      'a backup bucket with ".."',
      'Redis',
      { backup: backup({ bucket: 'a..b' }) },
      'spec.backup.storage.s3.bucket',
      /no "\.\."/,
    ],
    [
      'a backup bucket that is an IP address',
      'Redis',
      { backup: backup({ bucket: '10.0.0.1' }) },
      'spec.backup.storage.s3.bucket',
      /IP address/,
    ],
    [
      'a backup prefix climbing out',
      'Redis',
      { backup: backup({ prefix: '../other/' }) },
      'spec.backup.storage.s3.prefix',
      /"\.\."/,
    ],
    [
      'a backup prefix with "~"',
      'Redis',
      { backup: backup({ prefix: 'redis~ns~x/' }) },
      'spec.backup.storage.s3.prefix',
      /may only use/,
    ],
    [
      'a restore storage bucket with ".-"',
      'Redis',
      { restore: { location: 's3://redis-backups/x.rdb', storage: { s3: { ...S3, bucket: 'a.-b' } } } },
      'spec.restore.storage.s3.bucket',
      /no "\.\.", "\.-"/,
    ],
    [
      'a cluster backup prefix that is absolute',
      'RedisCluster',
      { backup: backup({ prefix: '/etc/' }) },
      'spec.backup.storage.s3.prefix',
      /relative/,
    ],
    [
      'a cluster backup bucket with ".."',
      'RedisCluster',
      { backup: backup({ bucket: 'x..y' }) },
      'spec.backup.storage.s3.bucket',
      /no "\.\."/,
    ],
  ];
  for (const [name, kind, spec, field, message] of table) {
    await t.test(name, () => {
      const v = kind === 'Redis' ? validateSpec('r', spec) : validateRedisClusterSpec('r', spec);
      assert.ok(!v.ok, 'refused');
      const problem = v.problems.find((p) => p.field === field);
      assert.ok(problem, `names ${field}: ${JSON.stringify(v.problems)}`);
      assert.match(problem.message, message);
    });
  }
  await t.test('what the operator writes, and the layout before owner folders, pass', () => {
    for (const location of [
      's3://redis-backups/nightly/redis~default~r/20261201T000000Z-1.rdb',
      's3://redis-backups/nightly/default/r/20261201T000000Z-1.rdb',
    ]) {
      const v = validateSpec('r', {
        restore: { location, storage: { s3: S3 } },
        backup: backup({ bucket: 'backups.example.com', prefix: 'nightly/' }),
      });
      assert.ok(v.ok, v.ok ? '' : JSON.stringify(v.problems));
    }
  });
});
