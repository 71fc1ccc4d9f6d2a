// The sidecar's status series: every phase and condition status present as 0 or 1 while the
// Redis is known, backup times only while they exist, all of it gone with the Redis.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSidecarMetrics } from '../../src/sidecar/metrics.ts';
import { statusSeries } from '../../src/sidecar/core/decide/status-series.ts';

const lines = async (m: ReturnType<typeof createSidecarMetrics>, name: string) =>
  (await m.registry.metrics()).split('\n').filter((l) => l.startsWith(`${name}{`));

test('observeStatus: one series per phase and per condition status, the current one 1', async () => {
  const m = createSidecarMetrics();
  m.observeStatus(
    'shop',
    'cache',
    statusSeries({
      phase: 'Pending',
      conditions: [{ type: 'MasterAvailable', status: 'False', reason: 'NoMaster', message: '' }],
    }),
  );
  assert.deepEqual(await lines(m, 'redis_operator_redis_phase'), [
    'redis_operator_redis_phase{namespace="shop",redis="cache",phase="Pending"} 1',
    'redis_operator_redis_phase{namespace="shop",redis="cache",phase="Running"} 0',
    'redis_operator_redis_phase{namespace="shop",redis="cache",phase="Failed"} 0',
    'redis_operator_redis_phase{namespace="shop",redis="cache",phase="Hibernated"} 0',
    'redis_operator_redis_phase{namespace="shop",redis="cache",phase="Resharding"} 0',
  ]);
  assert.deepEqual(await lines(m, 'redis_operator_redis_condition'), [
    'redis_operator_redis_condition{namespace="shop",redis="cache",type="MasterAvailable",status="True"} 0',
    'redis_operator_redis_condition{namespace="shop",redis="cache",type="MasterAvailable",status="False"} 1',
    'redis_operator_redis_condition{namespace="shop",redis="cache",type="MasterAvailable",status="Unknown"} 0',
  ]);
  assert.deepEqual(await lines(m, 'redis_operator_failovers_total'), [
    'redis_operator_failovers_total{namespace="shop",redis="cache"} 0',
  ]);
  assert.deepEqual(await lines(m, 'redis_operator_backup_last_success_timestamp_seconds'), []);

  m.observeStatus(
    'shop',
    'cache',
    statusSeries({
      phase: 'Running',
      conditions: [{ type: 'MasterAvailable', status: 'True', reason: 'MasterReady', message: '' }],
      backup: { lastSuccessful: { location: 's3://b/k.rdb', time: '2026-12-01T10:00:00Z' } },
    }),
  );
  assert.ok(
    (await lines(m, 'redis_operator_redis_phase')).includes(
      'redis_operator_redis_phase{namespace="shop",redis="cache",phase="Running"} 1',
    ),
  );
  assert.ok(
    (await lines(m, 'redis_operator_redis_condition')).includes(
      'redis_operator_redis_condition{namespace="shop",redis="cache",type="MasterAvailable",status="True"} 1',
    ),
  );
  assert.deepEqual(await lines(m, 'redis_operator_backup_last_success_timestamp_seconds'), [
    `redis_operator_backup_last_success_timestamp_seconds{namespace="shop",redis="cache"} ${Date.parse('2026-12-01T10:00:00Z') / 1000}`,
  ]);

  m.observeStatus('shop', 'cache', statusSeries({}));
  assert.deepEqual(await lines(m, 'redis_operator_redis_phase'), [], 'no phase written: no phase series');
  assert.deepEqual(await lines(m, 'redis_operator_backup_last_success_timestamp_seconds'), []);
});

test('forgetStatus removes every status series of that Redis and no other', async () => {
  const m = createSidecarMetrics();
  const status = statusSeries({
    phase: 'Running',
    conditions: [{ type: 'Ready', status: 'True', reason: 'r', message: '' }],
    backup: {
      lastSuccessful: { location: 'x', time: '2026-12-01T10:00:00Z' },
      lastFailure: { time: '2026-12-01T11:00:00Z', job: 'j', message: 'm' },
    },
  });
  m.observeStatus('shop', 'a', status);
  m.observeStatus('shop', 'b', status);
  m.forgetStatus('shop', 'a');
  const text = await m.registry.metrics();
  assert.doesNotMatch(text, /redis_operator_(redis_phase|redis_condition|backup_last_\w+)\{namespace="shop",redis="a"/);
  assert.match(text, /redis_operator_redis_phase\{namespace="shop",redis="b",phase="Running"\} 1/);
  assert.match(text, /redis_operator_backup_last_failure_timestamp_seconds\{namespace="shop",redis="b"\}/);
});
