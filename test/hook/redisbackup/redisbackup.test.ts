// The RedisBackup controller's hooks: waits for a Running Redis with storage, makes one Job from
// the scheduled backups' pod template, reports the result from the pod's termination message,
// and never runs twice. Also its routes on the service (/redisbackup/*, through app.inject).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { BACKUP_TRIGGER_LABEL } from '../../../src/api/backup.ts';
import {
  customizeRedisBackup,
  DEFAULT_HOOK_OPTIONS,
  parseHookRequest,
  syncRedisBackup,
  type KubeObject,
} from '../../../src/hook/index.ts';
import { buildApp } from '../../../src/server/app.ts';
import { designSpec, get, NS, objectMap, redis, type Json } from '../common/helpers.ts';

const BACKUP_UID = '0b7d2a1c-5e4f-4a3b-9c8d-7e6f5a4b3c2d';
const STORAGE = { s3: { bucket: 'redis-backups', region: 'us-east-1', prefix: '' } };
const runningRedis = (
  spec: Json = { ...designSpec(), backup: { schedule: '@daily', storage: STORAGE } },
  phase = 'Running',
) => redis(spec, { status: { phase } }) as unknown as KubeObject;

function backupRequest(
  opts: { name?: string; spec?: Json; status?: Json; children?: KubeObject[]; related?: KubeObject[] } = {},
) {
  const parsed = parseHookRequest({
    controller: { kind: 'CompositeController' },
    parent: {
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisBackup',
      metadata: { name: opts.name ?? 'nightly', namespace: NS, uid: BACKUP_UID },
      spec: opts.spec ?? { redis: 'my-redis' },
      ...(opts.status ? { status: opts.status } : {}),
    },
    children: objectMap(opts.children ?? []),
    related: objectMap(opts.related ?? []),
  });
  assert.ok(parsed.ok);
  return parsed.request;
}

test('it waits, with the reason, until the Redis exists, has storage and is Running', async (t) => {
  const cases: Array<[string, KubeObject[], string, string]> = [
    ['no such Redis', [], 'Pending', 'RedisNotFound'],
    ['not Running', [runningRedis(undefined, 'Pending')], 'Pending', 'RedisNotRunning'],
    ['no spec.backup', [runningRedis(designSpec())], 'Failed', 'NoBackupStorage'],
  ];
  for (const [name, related, phase, reason] of cases) {
    await t.test(name, () => {
      const r = syncRedisBackup(backupRequest({ related }));
      assert.equal(r.status.phase, phase);
      assert.equal(r.status.reason, reason);
      assert.deepEqual(r.children, []);
    });
  }
  await t.test('a name too long for its Job', () => {
    assert.equal(
      syncRedisBackup(backupRequest({ name: 'x'.repeat(57), related: [runningRedis()] })).status.reason,
      'InvalidSpec',
    );
  });
});

test('a Running Redis: one Job <name>-backup, labelled for the Redis and owned through controller-uid, storage recorded', () => {
  const r = syncRedisBackup(backupRequest({ related: [runningRedis()] }), {
    ...DEFAULT_HOOK_OPTIONS,
    operatorImage: 'registry.example.com/redis-operator:9',
  });
  assert.equal(r.children.length, 1);
  const job = r.children[0]!;
  assert.equal(job.metadata.name, 'nightly-backup');
  assert.equal(job.metadata.labels?.['controller-uid'], BACKUP_UID);
  assert.equal(job.metadata.labels?.[BACKUP_TRIGGER_LABEL], 'nightly');
  assert.equal(get(job, 'spec', 'template', 'spec', 'containers', 0, 'image'), 'registry.example.com/redis-operator:9');
  assert.equal(r.status.phase, 'Running');
  assert.deepEqual(r.status.storage, STORAGE);
});

function finished(state: 'Complete' | 'Failed', message: string): { job: KubeObject; pod: KubeObject } {
  const job: KubeObject = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'nightly-backup', namespace: NS, labels: { 'controller-uid': BACKUP_UID } },
    status: {
      startTime: '2025-01-15T12:00:00Z',
      ...(state === 'Complete' ? { completionTime: '2025-01-15T12:00:41Z' } : {}),
      conditions: [{ type: state, status: 'True', lastTransitionTime: '2025-01-15T12:00:41Z' }],
    },
  };
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'nightly-backup-abcde',
      namespace: NS,
      labels: { 'batch.kubernetes.io/job-name': 'nightly-backup' },
    },
    status: {
      containerStatuses: [
        { name: 'backup', state: { terminated: { exitCode: state === 'Complete' ? 0 : 2, message } } },
      ],
    },
  };
  return { job, pod };
}

test('the result: location, size, offset, id and version from the pod; a failure says why; never a second Job', async (t) => {
  const ok = finished(
    'Complete',
    JSON.stringify({
      ok: true,
      location: 's3://redis-backups/default/my-redis/20250115T120000Z-42.rdb',
      bytes: 9,
      offset: 42,
      replicationId: 'abc',
      redisVersion: '7.0.15',
      source: '10.0.0.2:6379',
      role: 'replica',
    }),
  );
  await t.test('completed', () => {
    const r = syncRedisBackup(backupRequest({ children: [ok.job], related: [ok.pod], status: { storage: STORAGE } }));
    assert.equal(r.status.phase, 'Completed');
    assert.equal(r.status.location, 's3://redis-backups/default/my-redis/20250115T120000Z-42.rdb');
    assert.equal(r.status.sizeBytes, 9);
    assert.equal(r.status.replicationOffset, 42);
    assert.equal(r.status.replicationId, 'abc');
    assert.equal(r.status.redisVersion, '7.0.15');
    assert.equal(r.status.completionTime, '2025-01-15T12:00:41Z');
    assert.equal(r.status.source, '10.0.0.2:6379 (replica)');
    assert.deepEqual(r.status.storage, STORAGE);
    assert.equal(r.children.length, 1);
  });
  await t.test('failed', () => {
    const bad = finished(
      'Failed',
      JSON.stringify({
        ok: false,
        permanent: true,
        error: 'bucket redis-backups does not exist (spec.backup.storage.s3.bucket)',
      }),
    );
    const r = syncRedisBackup(backupRequest({ children: [bad.job], related: [bad.pod] }));
    assert.equal(r.status.phase, 'Failed');
    assert.match(String(r.status.message), /does not exist/);
  });
  await t.test('final status and the Job deleted: nothing is made again', () => {
    const r = syncRedisBackup(
      backupRequest({ status: { phase: 'Completed', location: 's3://x/y.rdb' }, related: [runningRedis()] }),
    );
    assert.deepEqual(r.children, []);
    assert.equal(r.status.location, 's3://x/y.rdb');
  });
});

test('customize asks for the Redis by name and the Job pods by the job-name label', () => {
  const rules = customizeRedisBackup({
    controller: {},
    parent: {
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisBackup',
      metadata: { name: 'nightly', namespace: NS },
      spec: { redis: 'my-redis' },
    },
  } as never);
  assert.deepEqual(rules.relatedResources, [
    { apiVersion: 'redis.example.com/v1', resource: 'redises', namespace: NS, names: ['my-redis'] },
    {
      apiVersion: 'v1',
      resource: 'pods',
      namespace: NS,
      labelSelector: { matchLabels: { 'batch.kubernetes.io/job-name': 'nightly-backup' } },
    },
  ]);
});

test('the service routes /redisbackup/sync and /redisbackup/customize to these hooks, and counts them apart', async (t) => {
  const app = buildApp({
    logger: pino({ level: 'silent' }),
    defaultMetrics: false,
    hookOptions: { ...DEFAULT_HOOK_OPTIONS, operatorImage: 'redis-operator:7' },
  });
  t.after(() => app.close());
  const body = {
    controller: {},
    parent: {
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisBackup',
      metadata: { name: 'nightly', namespace: NS, uid: BACKUP_UID },
      spec: { redis: 'my-redis' },
    },
    children: {},
    related: objectMap([runningRedis()]),
  };
  const res = await app.inject({ method: 'POST', url: '/redisbackup/sync', payload: body });
  assert.equal(res.statusCode, 200);
  const json = res.json() as { status: Json; children: KubeObject[] };
  assert.equal(json.status['phase'], 'Running');
  assert.equal(get(json.children[0], 'spec', 'template', 'spec', 'containers', 0, 'image'), 'redis-operator:7');
  const custom = await app.inject({
    method: 'POST',
    url: '/redisbackup/customize',
    payload: { controller: {}, parent: body.parent },
  });
  assert.equal(custom.statusCode, 200);
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  assert.match(metrics.body, /route="redisbackup\/sync",outcome="ok"} 1/);
});
