// Pure: where backups live in a bucket or on a volume and which objects are ours (src/backup/naming.ts).
// The folder property is checked over open-ended names and prefixes (fast-check): no two owners
// share a folder nor does one's folder start another's, since retention lists by folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { prefixProblem } from '../../src/api/backup-validate.ts';
import {
  backupFolder,
  backupKey,
  isPartialKey,
  parseBackupKey,
  partialKey,
  type BackupOwner,
} from '../../src/backup/naming.ts';

const cache: BackupOwner = { kind: 'Redis', namespace: 'shop', name: 'cache' };

test('a backup key round-trips; other objects are not ours', async (t) => {
  const at = new Date('2026-12-01T04:05:06.789Z');
  const key = backupKey('backups/redis', cache, at, 123456);
  assert.equal(key, 'backups/redis/redis~shop~cache/20261201T040506Z-123456.rdb');
  assert.deepEqual(parseBackupKey('backups/redis', cache, key), {
    takenAt: Date.parse('2026-12-01T04:05:06Z'),
    offset: 123456,
  });
  assert.equal(backupFolder('', cache), 'redis~shop~cache/', 'no prefix');
  assert.equal(backupFolder('p/', cache), 'p/redis~shop~cache/', 'a trailing slash is not doubled');
  assert.equal(
    backupFolder('p', { kind: 'RedisCluster', namespace: 'shop', name: 'cache', shard: 2 }),
    'p/rediscluster~shop~cache~shard-2/',
  );
  const notOurs: Array<[string, string]> = [
    ['another Redis', 'backups/redis/redis~shop~cache2/20261201T040506Z-1.rdb'],
    ['another namespace', 'backups/redis/redis~prod~cache/20261201T040506Z-1.rdb'],
    ["a RedisCluster's shard of the same name", 'backups/redis/rediscluster~shop~cache~shard-0/20261201T040506Z-1.rdb'],
    ['the old layout', 'backups/redis/shop/cache/20261201T040506Z-1.rdb'],
    ['a file of the user', 'backups/redis/redis~shop~cache/notes.txt'],
    ['a nested object', 'backups/redis/redis~shop~cache/old/20261201T040506Z-1.rdb'],
    ['a bad date', 'backups/redis/redis~shop~cache/2026120XT040506Z-1.rdb'],
  ];
  for (const [name, k] of notOurs)
    await t.test(name, () => assert.equal(parseBackupKey('backups/redis', cache, k), undefined));
});

test("a volume's temporary file is never taken for a backup", () => {
  const partial = partialKey('p/', cache, new Date('2026-12-01T04:05:06Z'), '0a1b2c3d');
  assert.equal(partial, 'p/redis~shop~cache/.20261201T040506Z-0a1b2c3d.rdb.partial');
  assert.equal(parseBackupKey('p/', cache, partial), undefined);
  assert.ok(isPartialKey('p/', cache, partial));
  for (const k of [
    'p/redis~shop~cache/20261201T040506Z-1.rdb',
    'p/redis~shop~cache/.notes.partial',
    'p/redis~shop~other/.20261201T040506Z-0a1b2c3d.rdb.partial',
  ])
    assert.ok(!isPartialKey('p/', cache, k), k);
});

test('the collision the old layout had: a Redis named like a shard folder, in a namespace named like the cluster', () => {
  const shard: BackupOwner = { kind: 'RedisCluster', namespace: 'prod', name: 'cache', shard: 0 };
  const lookalike: BackupOwner = { kind: 'Redis', namespace: 'cache', name: 'shard-0' };
  // Old: team/ + prod/cache/shard-0/ and team/prod/ + cache/shard-0/ were one folder.
  assert.notEqual(backupFolder('team/', shard), backupFolder('team/prod/', lookalike));
  const key = backupKey('team/', shard, new Date('2026-12-01T00:00:00Z'), 1);
  assert.equal(parseBackupKey('team/prod/', lookalike, key), undefined);
});

// Kubernetes names: a namespace is a DNS label, a Redis's name a DNS subdomain. Half the time from
// a few names that also appear in folders and prefixes, so that look-alikes meet often.
const alike = fc.constantFrom('a', 'b', 'cache', 'prod', 'shard-0', 'shard-1', 'redis', 'rediscluster', 'a.b');
const label = fc.oneof(
  alike.filter((s) => !s.includes('.')),
  fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?$/),
);
const subdomain = fc.oneof(alike, fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,14}[a-z0-9])?$/));
const owner: fc.Arbitrary<BackupOwner> = fc.oneof(
  fc.record({ kind: fc.constant('Redis' as const), namespace: label, name: subdomain }),
  fc.record({
    kind: fc.constant('RedisCluster' as const),
    namespace: label,
    name: subdomain,
    shard: fc.integer({ min: 0, max: 2 }),
  }),
);
/**
 * Every prefix admission accepts: segments over [A-Za-z0-9._-], with or without a trailing "/", names of ours included.
 */
const segment = fc.oneof(alike, fc.stringMatching(/^[A-Za-z0-9._-]{1,8}$/));
const prefix = fc
  .tuple(fc.array(segment, { maxLength: 4 }), fc.boolean())
  .map(([segments, slash]) => (segments.length === 0 ? '' : `${segments.join('/')}${slash ? '/' : ''}`))
  .filter((p) => prefixProblem(p) === undefined);
const normal = (p: string) => (p === '' || p.endsWith('/') ? p : `${p}/`);
const same = (a: BackupOwner, b: BackupOwner) =>
  a.kind === b.kind && a.namespace === b.namespace && a.name === b.name && (a.shard ?? 0) === (b.shard ?? 0);

/**
 * Two (prefix, owner) pairs, the second prefix often the first one plus the first owner's names: where look-alikes come
 * from.
 */
const pairs = fc.tuple(prefix, owner, owner).chain(([p1, o1, o2]) => {
  const derived = fc
    .array(fc.constantFrom(o1.namespace, o1.name, `shard-${o1.shard ?? 0}`, 'redis', 'rediscluster'), {
      minLength: 1,
      maxLength: 3,
    })
    .map((segments) => `${normal(p1)}${segments.join('/')}/`)
    .filter((p) => prefixProblem(p) === undefined);
  return fc.tuple(fc.constant(p1), fc.constant(o1), fc.oneof(prefix, derived, fc.constant(p1)), fc.constant(o2));
});

test('no two owners share a folder, nor does one folder start another, whatever the names and prefixes (fast-check)', () => {
  fc.assert(
    fc.property(pairs, ([p1, o1, p2, o2]) => {
      fc.pre(!(same(o1, o2) && normal(p1) === normal(p2)));
      const f1 = backupFolder(p1, o1);
      const f2 = backupFolder(p2, o2);
      assert.notEqual(f1, f2);
      assert.ok(!f2.startsWith(f1) && !f1.startsWith(f2), `${f1} and ${f2}: one lists the other's objects`);
      // And retention, which takes only what parseBackupKey accepts, never takes the other's backups.
      const k2 = backupKey(p2, o2, new Date('2026-12-01T00:00:00Z'), 7);
      assert.equal(parseBackupKey(p1, o1, k2), undefined);
    }),
    { numRuns: 2000 },
  );
});

test('the same owner under prefixes that are one another with a segment more stays apart', () => {
  // Owner-blind listing would be the danger: prefix "a/" against "a/redis~shop~cache/" (refused: "~").
  assert.notEqual(prefixProblem('a/redis~shop~cache/'), undefined, 'a prefix may not imitate a folder');
  assert.ok(!backupFolder('a/b/', cache).startsWith(backupFolder('a/', cache)));
});
