// Pure: where backups live in a bucket or on a volume and which objects are ours (src/backup/naming.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupFolder, backupKey, isPartialKey, parseBackupKey, partialKey, pathProblem } from '../../src/backup/naming.ts';

test('a backup key round-trips; other objects are not ours', async (t) => {
  const at = new Date('2026-12-01T04:05:06.789Z');
  const key = backupKey('backups/redis', 'shop', 'cache', at, 123456);
  assert.equal(key, 'backups/redis/shop/cache/20261201T040506Z-123456.rdb');
  assert.deepEqual(parseBackupKey('backups/redis', 'shop', 'cache', key), { takenAt: Date.parse('2026-12-01T04:05:06Z'), offset: 123456 });
  assert.equal(backupFolder('', 'shop', 'cache'), 'shop/cache/', 'no prefix');
  assert.equal(backupFolder('p/', 'shop', 'cache'), 'p/shop/cache/', 'a trailing slash is not doubled');
  const notOurs: Array<[string, string]> = [
    ['another Redis', 'backups/redis/shop/cache2/20261201T040506Z-1.rdb'],
    ['another namespace', 'backups/redis/prod/cache/20261201T040506Z-1.rdb'],
    ['a file of the user', 'backups/redis/shop/cache/notes.txt'],
    ['a nested object', 'backups/redis/shop/cache/old/20261201T040506Z-1.rdb'],
    ['a bad date', 'backups/redis/shop/cache/2026120XT040506Z-1.rdb'],
  ];
  for (const [name, k] of notOurs) await t.test(name, () => assert.equal(parseBackupKey('backups/redis', 'shop', 'cache', k), undefined));
});

test("a volume's temporary file is never taken for a backup", () => {
  const partial = partialKey('p/', 'shop', 'cache', new Date('2026-12-01T04:05:06Z'), '0a1b2c3d');
  assert.equal(partial, 'p/shop/cache/.20261201T040506Z-0a1b2c3d.rdb.partial');
  assert.equal(parseBackupKey('p/', 'shop', 'cache', partial), undefined);
  assert.ok(isPartialKey('p/', 'shop', 'cache', partial));
  for (const k of ['p/shop/cache/20261201T040506Z-1.rdb', 'p/shop/cache/.notes.partial', 'p/shop/other/.20261201T040506Z-0a1b2c3d.rdb.partial'])
    assert.ok(!isPartialKey('p/', 'shop', 'cache', k), k);
});

test('paths on a volume stay inside the claim', async (t) => {
  const table: Array<[string, 'allowed' | 'refused', boolean]> = [
    ['nightly/', 'allowed', true],
    ['a/b.c_d-e', 'allowed', true],
    ['nightly/', 'refused', false],
    ['../x', 'allowed', false],
    ['a/./b', 'allowed', false],
    ['/etc', 'allowed', false],
    ['a//b', 'allowed', false],
    ['a b', 'allowed', false],
    ['', 'refused', false],
  ];
  for (const [p, trailing, ok] of table)
    await t.test(`${JSON.stringify(p)} (trailing slash ${trailing})`, () => assert.equal(pathProblem(p, trailing) === undefined, ok, pathProblem(p, trailing)));
});
