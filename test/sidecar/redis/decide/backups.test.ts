// Backup Events from status.backup: nothing for what was already there when first seen, one
// Event per new success or failure, none for the same news again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupEvents } from '../../../../src/sidecar/redis/decide/backups.ts';

const ok = (location: string) => ({ backup: { lastSuccessful: { location, sizeBytes: 10, replicationOffset: 42 } } });
const failed = (job: string, time: string) => ({
  backup: {
    lastSuccessful: { location: 's3://b/1.rdb' },
    lastFailure: { job, time, message: 's3://b refused the credentials (InvalidAccessKeyId)' },
  },
});

test('the first status seen is remembered, not told (a new leader does not repeat old news)', () => {
  const r = backupEvents(null, failed('shop-backup-1', '2026-12-01T09:00:00Z'));
  assert.deepEqual(r.events, []);
  assert.deepEqual(r.memory, { success: 's3://b/1.rdb', failure: 'shop-backup-1@2026-12-01T09:00:00Z' });
});

test('news become one Event each, then nothing more for the same news', async (t) => {
  const cases: Array<[string, unknown, unknown, string[]]> = [
    [
      'a new success',
      ok('s3://b/1.rdb'),
      ok('s3://b/2.rdb'),
      ['Normal BackupCompleted stored s3://b/2.rdb, 10 bytes at offset 42'],
    ],
    ['the same success', ok('s3://b/1.rdb'), ok('s3://b/1.rdb'), []],
    [
      'a new failure',
      ok('s3://b/1.rdb'),
      failed('shop-backup-2', '2026-12-01T10:00:00Z'),
      ['Warning BackupFailed shop-backup-2: s3://b refused the credentials (InvalidAccessKeyId)'],
    ],
    ['the same failure', failed('shop-backup-2', 'x'), failed('shop-backup-2', 'x'), []],
    ['no backup status at all', {}, {}, []],
  ];
  for (const [name, before, after, expected] of cases) {
    await t.test(name, () => {
      const first = backupEvents(null, before);
      const second = backupEvents(first.memory, after);
      assert.deepEqual(
        second.events.map((e) => `${e.type} ${e.reason} ${e.message}`),
        expected,
      );
    });
  }
});
