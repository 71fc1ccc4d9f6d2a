// A RedisBackup naming a RedisCluster: waits for a Running cluster with storage, makes one Job per
// shard (the shard's backup pod, replicas first), and records per shard the location, the slots
// and the offset; Completed only when the shards' slots are one whole layout. Also the routes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { BACKUP_TRIGGER_LABEL } from '../../../src/api/backup.ts';
import { SHARD_LABEL } from '../../../src/api/rediscluster-names.ts';
import {
  customizeRedisBackup,
  DEFAULT_HOOK_OPTIONS,
  parseHookRequest,
  syncRedisBackup,
  type KubeObject,
} from '../../../src/hook/index.ts';
import { slotLayoutProblem } from '../../../src/api/slot-layout.ts';
import { buildApp } from '../../../src/server/app.ts';
import { dryRunMissing, startDryRunServer, type DryRunServer } from '../../k8s/dry-run.ts';
import { get, NS, objectMap, type Json } from '../common/helpers.ts';
import { articleSpec, NAME, redisCluster } from '../rediscluster/helpers.ts';

const BACKUP_UID = '1c8e3b2d-6f5a-4b4c-8d9e-8f7a6b5c4d3e';
const STORAGE = { s3: { bucket: 'redis-backups', region: 'us-east-1', prefix: '' } };
const cluster = (spec: Json = articleSpec(), phase = 'Running') =>
  redisCluster(spec, { status: { phase } }) as unknown as KubeObject;

function request(opts: { name?: string; spec?: Json; status?: Json; children?: KubeObject[]; related?: KubeObject[] }) {
  const parsed = parseHookRequest({
    controller: { kind: 'CompositeController' },
    parent: {
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisBackup',
      metadata: { name: opts.name ?? 'before-upgrade', namespace: NS, uid: BACKUP_UID },
      spec: opts.spec ?? { redisCluster: NAME },
      ...(opts.status ? { status: opts.status } : {}),
    },
    children: objectMap(opts.children ?? []),
    related: objectMap(opts.related ?? []),
  });
  assert.ok(parsed.ok);
  return parsed.request;
}

test('it waits, with the reason, until the RedisCluster exists, has storage and is Running', async (t) => {
  const { backup: _b, ...noBackup } = articleSpec();
  const cases: Array<[string, Json, KubeObject[], string, string]> = [
    ['no such RedisCluster', {}, [], 'Pending', 'RedisClusterNotFound'],
    ['resharding', {}, [cluster(articleSpec(), 'Resharding')], 'Pending', 'RedisClusterNotRunning'],
    ['no spec.backup', {}, [cluster(noBackup)], 'Failed', 'NoBackupStorage'],
    ['an invalid spec', {}, [cluster({ ...articleSpec(), replicas: -1 })], 'Pending', 'RedisClusterSpecInvalid'],
    ['both redis and redisCluster', { redis: 'x' }, [cluster()], 'Failed', 'InvalidSpec'],
  ];
  for (const [name, extra, related, phase, reason] of cases) {
    await t.test(name, () => {
      const r = syncRedisBackup(request({ spec: { redisCluster: NAME, ...extra }, related }));
      assert.equal(r.status.phase, phase);
      assert.equal(r.status.reason, reason);
      assert.deepEqual(r.children, []);
    });
  }
  await t.test('a name too long for its shard Jobs', () => {
    const r = syncRedisBackup(request({ name: 'x'.repeat(54), related: [cluster()] }));
    assert.equal(r.status.reason, 'InvalidSpec');
    assert.match(r.status.message ?? '', /at most 53 characters/);
  });
});

test('a Running RedisCluster: one Job per shard, reading the shard replicas first, labelled, storage recorded', () => {
  const r = syncRedisBackup(request({ related: [cluster()] }), {
    ...DEFAULT_HOOK_OPTIONS,
    operatorImage: 'registry.example.com/redis-operator:9',
  });
  assert.deepEqual(
    r.children.map((j) => j.metadata.name),
    ['before-upgrade-backup-0', 'before-upgrade-backup-1', 'before-upgrade-backup-2'],
  );
  r.children.forEach((job, shard) => {
    assert.equal(job.metadata.labels?.['controller-uid'], BACKUP_UID);
    assert.equal(job.metadata.labels?.[BACKUP_TRIGGER_LABEL], 'before-upgrade');
    assert.equal(job.metadata.labels?.[SHARD_LABEL], String(shard));
    assert.equal(get(job, 'spec', 'template', 'metadata', 'labels', SHARD_LABEL), String(shard));
    // The Job controller puts its own controller-uid on the pods: the RedisBackup's would make the Job invalid.
    assert.equal(get(job, 'spec', 'template', 'metadata', 'labels', 'controller-uid'), undefined);
    const env = get(job, 'spec', 'template', 'spec', 'containers', 0, 'env') as Array<{ name: string; value?: string }>;
    const value = (n: string) => env.find((e) => e.name === n)?.value;
    assert.equal(value('BACKUP_SHARD'), String(shard));
    assert.equal(value('REDIS_NAME'), NAME);
    const hosts = value('REDIS_HOSTS')!.split(',');
    // Two replicas per shard: ordinals 1 and 2 before the master at creation (0).
    assert.deepEqual(
      hosts.map((h) => h.split('.')[0]),
      [1, 2, 0].map((k) => `${NAME}-shard-${shard}-${k}`),
    );
  });
  assert.equal(r.status.phase, 'Running');
  assert.deepEqual(r.status.storage, { s3: { ...STORAGE.s3, prefix: '' } });
  assert.deepEqual(
    r.status.shards?.map((s) => [s.shard, s.job, s.phase]),
    [0, 1, 2].map((i) => [i, `before-upgrade-backup-${i}`, 'Running']),
  );
});

function shardJob(shard: number, state: 'Complete' | 'Failed' | 'Running', result?: Json): KubeObject[] {
  const name = `before-upgrade-backup-${shard}`;
  const job: KubeObject = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: NS, labels: { 'controller-uid': BACKUP_UID } },
    status: state === 'Running' ? {} : { conditions: [{ type: state, status: 'True' }] },
  };
  if (result === undefined) return [job];
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${name}-x`, namespace: NS, labels: { 'batch.kubernetes.io/job-name': name } },
    status: {
      containerStatuses: [{ name: 'backup', state: { terminated: { exitCode: 0, message: JSON.stringify(result) } } }],
    },
  };
  return [job, pod];
}

const stored = (shard: number, slots: string | undefined, role = 'replica'): Json => ({
  ok: true,
  location: `s3://redis-backups/rediscluster~${NS}~${NAME}~shard-${shard}/20261201T100000Z-${100 + shard}.rdb`,
  bytes: 10,
  offset: 100 + shard,
  replicationId: 'r'.repeat(40),
  source: `10.0.0.${shard}:6379`,
  role,
  ...(slots !== undefined ? { slots } : {}),
});

const EVEN = ['0-5460', '5461-10922', '10923-16383'];
const RUNNING_STATUS = {
  phase: 'Running',
  shards: [0, 1, 2].map((i) => ({ shard: i, job: `before-upgrade-backup-${i}`, phase: 'Running' })),
  storage: STORAGE,
};

test('the outcome from the shard Jobs: per shard location, slots and offset; one whole layout or Failed', async (t) => {
  const cases: Array<[string, Array<[number, 'Complete' | 'Failed' | 'Running', Json | undefined]>, string, RegExp]> = [
    ['every shard stored', [0, 1, 2].map((i) => [i, 'Complete', stored(i, EVEN[i])]), 'Completed', /3 shard snapshots/],
    [
      'a shard without replica read its master, and says so',
      [0, 1, 2].map((i) => [i, 'Complete', stored(i, EVEN[i], i === 1 ? 'master' : 'replica')]),
      'Completed',
      /shard 1 read from its master/,
    ],
    [
      'one still running',
      [
        [0, 'Complete', stored(0, EVEN[0])],
        [1, 'Running', undefined],
        [2, 'Complete', stored(2, EVEN[2])],
      ],
      'Running',
      /1 of 3/,
    ],
    [
      'one failed',
      [
        [0, 'Complete', stored(0, EVEN[0])],
        [1, 'Failed', { ok: false, error: 'no node can be read' }],
        [2, 'Complete', stored(2, EVEN[2])],
      ],
      'Failed',
      /shard 1: no node can be read/,
    ],
    [
      'a shard recorded no slots',
      [0, 1, 2].map((i) => [i, 'Complete', stored(i, i === 2 ? undefined : EVEN[i])]),
      'Failed',
      /shard 2: .*no readable slots/,
    ],
    [
      'slots missing from the layout',
      [0, 1, 2].map((i) => [i, 'Complete', stored(i, i === 2 ? '10923-16000' : EVEN[i])]),
      'Failed',
      /cover 16001 of 16384/,
    ],
  ];
  for (const [name, jobs, phase, message] of cases) {
    await t.test(name, () => {
      const objects = jobs.flatMap(([i, state, result]) => shardJob(i, state, result));
      const r = syncRedisBackup(
        request({
          status: RUNNING_STATUS,
          children: objects.filter((o) => o.kind === 'Job'),
          related: [cluster(), ...objects.filter((o) => o.kind === 'Pod')],
        }),
      );
      assert.equal(r.status.phase, phase);
      assert.match(r.status.message ?? '', message);
      // Observed Jobs come back as they are (a Job's template is immutable), none added.
      assert.deepEqual(
        r.children.map((c) => c.metadata.name),
        jobs.map(([i]) => `before-upgrade-backup-${i}`),
      );
      if (phase === 'Completed') {
        assert.deepEqual(
          r.status.shards?.map((s) => [s.slots, s.replicationOffset]),
          EVEN.map((slots, i) => [slots, 100 + i]),
        );
        assert.equal(r.status.sizeBytes, 30);
      }
    });
  }
});

test('the storage the Jobs were made with is read back from them when the status that recorded it was lost', () => {
  const made = syncRedisBackup(request({ related: [cluster()] })).children;
  const r = syncRedisBackup(request({ status: { phase: 'Running' }, children: made, related: [cluster()] }));
  assert.equal(r.status.reason, 'JobsRunning');
  assert.deepEqual(r.status.storage, STORAGE);
  assert.deepEqual(
    r.children.map((c) => c.metadata.name),
    made.map((c) => c.metadata.name),
  );
});

test('a final status never makes Jobs again, even with its Jobs gone', () => {
  for (const phase of ['Completed', 'Failed']) {
    const r = syncRedisBackup(request({ status: { ...RUNNING_STATUS, phase }, related: [cluster()] }));
    assert.equal(r.status.phase, phase);
    assert.deepEqual(r.children, []);
  }
});

test('slotLayoutProblem: disjoint and complete, or which slot is wrong', async (t) => {
  const shard = (i: number, slots: string) => ({ shard: i, job: 'j', phase: 'Completed' as const, slots });
  const cases: Array<[string, string[], RegExp | undefined]> = [
    ['even', EVEN, undefined],
    ['after a reshard', ['0-100,5000-5460', '101-4999,5461-10922', '10923-16383'], undefined],
    ['overlap', ['0-5461', '5461-10922', '10923-16383'], /slot 5461 is recorded for shard 0 and shard 1/],
    ['a hole', ['0-5459', '5461-10922', '10923-16383'], /16383 of 16384/],
    ['not ranges', ['0-5460', 'x', '10923-16383'], /shard 1's slots "x" are not slot ranges/],
  ];
  for (const [name, slots, expected] of cases) {
    await t.test(name, () => {
      const p = slotLayoutProblem(slots.map((s, i) => shard(i, s)));
      if (expected === undefined) assert.equal(p, undefined);
      else assert.match(p ?? '', expected);
    });
  }
});

test('customize asks for the RedisCluster and the pods of this backup only; the routes serve it', async (t) => {
  const c = customizeRedisBackup({
    controller: {},
    parent: { metadata: { name: 'before-upgrade', namespace: NS }, spec: { redisCluster: NAME } },
  } as never);
  assert.deepEqual(c.relatedResources[0], {
    apiVersion: 'redis.example.com/v1',
    resource: 'redisclusters',
    namespace: NS,
    names: [NAME],
  });
  assert.equal(get(c.relatedResources[1], 'labelSelector', 'matchLabels', BACKUP_TRIGGER_LABEL), 'before-upgrade');
  const app = buildApp({
    logger: pino({ level: 'silent' }),
    defaultMetrics: false,
    hookOptions: { ...DEFAULT_HOOK_OPTIONS, operatorImage: 'redis-operator:7' },
  });
  t.after(() => app.close());
  const res = await app.inject({
    method: 'POST',
    url: '/redisbackup/sync',
    payload: {
      controller: {},
      parent: {
        apiVersion: 'redis.example.com/v1',
        kind: 'RedisBackup',
        metadata: { name: 'before-upgrade', namespace: NS, uid: BACKUP_UID },
        spec: { redisCluster: NAME },
      },
      children: {},
      related: objectMap([cluster()]),
    },
  });
  assert.equal(res.statusCode, 200);
  const json = res.json() as { status: Json; children: KubeObject[] };
  assert.equal(json.status['reason'], 'JobsCreated');
  assert.equal(json.children.length, 3);
});

describe(
  'the real kube-apiserver accepts the shard Jobs (dry-run create, strict field validation)',
  { skip: dryRunMissing() ?? false },
  () => {
    let server: DryRunServer;
    before(async () => (server = await startDryRunServer({ namespaces: [NS] })));
    after(() => server?.close());
    test('every shard Job', async () => {
      const r = syncRedisBackup(request({ related: [cluster()] }));
      assert.equal(r.children.length, 3);
      assert.deepEqual(await server.refusals(r.children), []);
    });
  },
);
