// Pure: where backups live in a bucket and which objects are ours (src/backup/naming.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupFolder, backupKey, parseBackupKey } from '../../src/backup/naming.ts';

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
