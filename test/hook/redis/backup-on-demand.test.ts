// spec.backup with storage and no schedule: on-demand backups (RedisBackup, kubectl redis backup)
// work with storage alone. The spec is valid, no CronJob is made (and one made for an earlier
// schedule goes), a RedisBackup's Job runs with the retention the spec asks for, BackupHealthy
// follows successes and failures and is never stale (nothing is due), and no BackupTooOld alert
// is rendered. A RedisCluster has no on-demand backups, so its spec.backup still needs a schedule.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKUP_TRIGGER_LABEL, backupSelectorLabels } from '../../../src/api/backup.ts';
import { validateRedisClusterSpec } from '../../../src/api/rediscluster-validate.ts';
import { validateSpec } from '../../../src/api/validate.ts';
import { parseHookRequest, sync, syncRedisBackup, type KubeObject } from '../../../src/hook/index.ts';
import { redisRuleGroups } from '../../../src/hook/redis/monitoring/rules.ts';
import {
  condition,
  designSpec,
  get,
  healthyPods,
  NS,
  objectMap,
  redis,
  request,
  type Json,
} from '../common/helpers.ts';

const STORAGE = { s3: { bucket: 'redis-backups', region: 'us-east-1', prefix: '' } };
const onDemand = (extra: Json = {}): Json => ({
  ...designSpec(),
  backup: { storage: STORAGE, retentionCount: 5, ...extra },
});

test('storage alone is a valid spec.backup: no CronJob, the rest of the Redis as usual', () => {
  const verdict = validateSpec('my-redis', onDemand());
  assert.ok(verdict.ok, JSON.stringify(verdict));
  const r = sync(request({ parent: redis(onDemand()) }));
  assert.equal(condition(r.status, 'SpecValid')?.['status'], 'True');
  assert.deepEqual(
    r.children.filter((c) => c.kind === 'CronJob'),
    [],
  );
  assert.ok(r.children.some((c) => c.kind === 'StatefulSet'));
});

test('a schedule removed: its CronJob goes (it is not returned)', () => {
  const scheduled = sync(request({ parent: redis(onDemand({ schedule: '@daily' })) })).children;
  assert.ok(scheduled.some((c) => c.kind === 'CronJob'));
  const r = sync(request({ parent: redis(onDemand()), children: scheduled, related: healthyPods() }));
  assert.deepEqual(
    r.children.filter((c) => c.kind === 'CronJob'),
    [],
  );
});

test("a RedisBackup of it runs, with the spec's retention", () => {
  const parsed = parseHookRequest({
    controller: { kind: 'CompositeController' },
    parent: {
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisBackup',
      metadata: { name: 'b1', namespace: NS, uid: 'u' },
      spec: { redis: 'my-redis' },
    },
    children: {},
    related: objectMap([redis(onDemand(), { status: { phase: 'Running' } }) as unknown as KubeObject]),
  });
  assert.ok(parsed.ok);
  const r = syncRedisBackup(parsed.request);
  assert.equal(r.status.reason, 'JobCreated', r.status.message);
  const env = (
    get(r.children[0], 'spec', 'template', 'spec', 'containers', 0, 'env') as Array<{ name: string; value?: string }>
  ).map((e) => [e.name, e.value]);
  assert.deepEqual(
    env.filter(([n]) => n === 'RETENTION_COUNT'),
    [['RETENTION_COUNT', '5']],
  );
});

test('BackupHealthy without a schedule: from successes and failures only, never stale', async (t) => {
  const job = (name: string, type: 'Complete' | 'Failed', time: string): KubeObject => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: NS, labels: { ...backupSelectorLabels('my-redis'), [BACKUP_TRIGGER_LABEL]: name } },
    status: {
      startTime: time,
      ...(type === 'Complete' ? { completionTime: time } : {}),
      conditions: [{ type, status: 'True', lastTransitionTime: time }],
    },
  });
  const pod = (jobName: string, result: Json): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${jobName}-x`,
      namespace: NS,
      labels: { ...backupSelectorLabels('my-redis'), 'batch.kubernetes.io/job-name': jobName },
    },
    status: {
      containerStatuses: [
        { name: 'backup', state: { terminated: { exitCode: result['ok'] ? 0 : 2, message: JSON.stringify(result) } } },
      ],
    },
  });
  const health = (spec: Json, related: KubeObject[], previous?: Json) =>
    condition(
      sync(
        request({ parent: redis(spec, previous ? { status: previous } : {}), related: [...healthyPods(), ...related] }),
      ).status,
      'BackupHealthy',
    );
  await t.test('none yet: Unknown, saying there is no schedule', () => {
    const c = health(onDemand(), []);
    assert.equal(c?.['status'], 'Unknown');
    assert.match(String(c?.['message']), /no schedule: on-demand RedisBackups only/);
  });
  const location = 's3://redis-backups/redis~default~my-redis/20250101T000000Z-42.rdb';
  await t.test(
    'a success long ago, then a newer failed run elsewhere in time: True until a failure, never BackupStale',
    () => {
      const old = { backup: { lastSuccessful: { location, time: '2024-01-01T00:00:00Z' } } };
      const later = [
        job('b2', 'Complete', '2025-06-01T00:00:00Z'),
        pod('b2', { ok: true, location, finishedAt: '2025-06-01T00:00:00Z' }),
      ];
      assert.equal(health(onDemand(), later, old)?.['reason'], 'BackupSucceeded');
      const failed = [job('b3', 'Failed', '2025-07-01T00:00:00Z'), pod('b3', { ok: false, error: 'no such bucket' })];
      assert.equal(health(onDemand(), [...later, ...failed], old)?.['reason'], 'BackupFailed');
    },
  );
  await t.test('suspend means nothing without a schedule: not reported as Suspended', () => {
    assert.equal(health(onDemand({ suspend: true }), [])?.['reason'], 'NoBackupYet');
  });
});

test('no BackupTooOld alert without a schedule (BackupFailed still)', () => {
  const spec = validateSpec('my-redis', onDemand());
  assert.ok(spec.ok);
  const alerts = redisRuleGroups(NS, 'my-redis', spec.spec, 'https://runbooks.example.com')
    .flatMap((g) => g.rules)
    .map((r) => r.alert);
  assert.ok(alerts.includes('RedisBackupFailed'), alerts.join(', '));
  assert.ok(!alerts.includes('RedisBackupTooOld'), alerts.join(', '));
});

test('a RedisCluster, which has no on-demand backups, still needs a schedule, naming the field', () => {
  const spec = { backup: { storage: STORAGE } };
  const verdict = validateRedisClusterSpec('orders', spec);
  assert.ok(!verdict.ok);
  assert.ok(
    verdict.problems.some((p) => p.field.startsWith('spec.backup') && /schedule/.test(`${p.field} ${p.message}`)),
    JSON.stringify(verdict.problems),
  );
});
