// statusSeries: the Redis's status as metric values, from fixed label sets only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statusSeries } from '../../../../src/sidecar/core/decide/status-series.ts';
import type { RedisStatus } from '../../../../src/api/schema.ts';

test('phase, conditions and backup times come from the status as written', () => {
  const status: RedisStatus = {
    phase: 'Running',
    conditions: [
      { type: 'Ready', status: 'True', reason: 'MasterReady', message: '' },
      { type: 'BackupHealthy', status: 'False', reason: 'BackupFailed', message: '' },
    ],
    backup: {
      lastSuccessful: { location: 's3://b/k.rdb', time: '2026-12-01T10:00:00Z' },
      lastFailure: { time: '2026-12-01T16:00:00Z', job: 'r-backup-1', message: 'AccessDenied' },
    },
  };
  assert.deepEqual(statusSeries(status), {
    phase: 'Running',
    conditions: [
      { type: 'Ready', status: 'True' },
      { type: 'BackupHealthy', status: 'False' },
    ],
    lastBackupSuccess: Date.parse('2026-12-01T10:00:00Z') / 1000,
    lastBackupFailure: Date.parse('2026-12-01T16:00:00Z') / 1000,
  });
});

test('nothing known yet, or written by hand: unknown values are left out, never invented', async (t) => {
  const cases: Array<[string, unknown]> = [
    ['no status', undefined],
    ['an empty status', {}],
    ['a phase nobody writes', { phase: 'Exploding' }],
    [
      'a condition type nobody writes, a status that is no status',
      {
        conditions: [
          { type: 'Happy', status: 'True' },
          { type: 'Ready', status: 'Yes' },
        ],
      },
    ],
    [
      'times that do not parse',
      { backup: { lastSuccessful: { location: 'x', time: 'yesterday' }, lastFailure: { job: 'j', message: 'm' } } },
    ],
  ];
  for (const [name, status] of cases) {
    await t.test(name, () =>
      assert.deepEqual(statusSeries(status as RedisStatus), {
        phase: undefined,
        conditions: [],
        lastBackupSuccess: undefined,
        lastBackupFailure: undefined,
      }),
    );
  }
});

test('a condition type listed twice counts once (the first, as the API server keeps a map list)', () => {
  const s = statusSeries({
    conditions: [
      { type: 'Ready', status: 'False', reason: 'a', message: '' },
      { type: 'Ready', status: 'True', reason: 'b', message: '' },
    ],
  });
  assert.deepEqual(s.conditions, [{ type: 'Ready', status: 'False' }]);
});
