// The hook's side of backups: the CronJob child and its pod (what it reads, with which secrets,
// where it writes), status.backup and BackupHealthy from Jobs and pods, and spec.restore (no
// StatefulSet until the backup is known, the init container on every pod, the ConfigMap key
// dropped once the master started from it, a template that never changes afterwards).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BACKUP_TRIGGER_LABEL, RESTORE_LOCATION_KEY, backupSelectorLabels } from '../../../src/api/backup.ts';
import { customize, sync, type KubeObject } from '../../../src/hook/index.ts';
import { formatSecretReport, SECRETS_ANNOTATION, type ReportedSecret } from '../../../src/api/secret-report.ts';
import {
  designSpec,
  emptyLists,
  find,
  get,
  condition,
  healthyPods,
  NS,
  redis,
  request,
  type Json,
} from '../common/helpers.ts';

const S3 = {
  bucket: 'redis-backups',
  region: 'us-east-1',
  endpoint: 'http://s3.storage:9000',
  credentialsSecret: { name: 's3-creds' },
};
const withBackup = (extra: Json = {}): Json => ({
  ...designSpec(),
  backup: { schedule: '0 */6 * * *', retention: 7, storage: { s3: S3 }, ...extra },
});

type Env = Array<{ name: string; value?: string; valueFrom?: Json }>;
const envOf = (container: unknown): Record<string, unknown> =>
  Object.fromEntries(((get(container, 'env') ?? []) as Env).map((e) => [e.name, e.value ?? e.valueFrom]));

test('no child carries an empty list: the API server drops it, and Metacontroller would then rewrite the child on every resync', () => {
  const specs: Array<[string, Json]> = [
    ['the design', designSpec()],
    ['with S3 backups', withBackup()],
    ['with backups and TLS', { ...withBackup(), tls: { secretName: 'my-redis-tls' } }],
  ];
  for (const [what, spec] of specs) {
    const found = sync(request({ parent: redis(spec) })).children.flatMap((c) =>
      emptyLists(c, `${c.kind}/${c.metadata.name}`),
    );
    assert.deepEqual(found, [], what);
  }
});

test('spec.backup: a CronJob <name>-backup that never runs two backups at once and reads a replica first', () => {
  const children = sync(request({ parent: redis(withBackup()) })).children;
  const cron = find(children, 'CronJob', 'my-redis-backup');
  assert.equal(get(cron, 'spec', 'schedule'), '0 */6 * * *');
  assert.equal(get(cron, 'spec', 'concurrencyPolicy'), 'Forbid');
  assert.equal(get(cron, 'spec', 'suspend'), false);
  const podSpec = get(cron, 'spec', 'jobTemplate', 'spec', 'template', 'spec') as Json;
  assert.equal(get(podSpec, 'restartPolicy'), 'Never');
  const container = get(podSpec, 'containers', 0);
  assert.equal(get(container, 'image'), 'redis-operator:0.1.0');
  assert.deepEqual(get(container, 'command'), ['node', 'src/backup/main.ts']);
  assert.equal(get(container, 'terminationMessagePolicy'), 'FallbackToLogsOnError');
  const env = envOf(container);
  assert.equal(env['REDIS_HOSTS'], `my-redis-replicas.${NS}.svc:6379,my-redis-master.${NS}.svc:6379`);
  assert.equal(env['REDIS_USERNAME'], 'redis-operator');
  assert.deepEqual(env['REDIS_PASSWORD'], { secretKeyRef: { name: 'my-redis-operator', key: 'password' } });
  assert.deepEqual(env['AWS_ACCESS_KEY_ID'], { secretKeyRef: { name: 's3-creds', key: 'AWS_ACCESS_KEY_ID' } });
  assert.equal(env['S3_BUCKET'], 'redis-backups');
  assert.equal(env['S3_ENDPOINT'], 'http://s3.storage:9000');
  assert.equal(env['RETENTION_DAYS'], '7');
  assert.equal(env['RETENTION_COUNT'], undefined);
  // Permanent failures (exit 2) end the Job at once; the pod is never one of the Redis pods.
  assert.deepEqual(
    get(cron, 'spec', 'jobTemplate', 'spec', 'podFailurePolicy', 'rules', 0, 'onExitCodes', 'values'),
    [2],
  );
  const labels = get(cron, 'spec', 'jobTemplate', 'spec', 'template', 'metadata', 'labels') as Record<string, string>;
  assert.equal(labels['app.kubernetes.io/name'], 'redis-backup');
  assert.deepEqual(labels, { ...backupSelectorLabels('my-redis'), [BACKUP_TRIGGER_LABEL]: 'schedule' });
});

test('the backup pod: no replicas means the master; a claim target is mounted; TLS mounts only the CA; hibernation suspends', async (t) => {
  await t.test('no replicas', () => {
    const cron = find(
      sync(request({ parent: redis({ ...withBackup(), replicas: 0 }) })).children,
      'CronJob',
      'my-redis-backup',
    );
    assert.equal(
      envOf(get(cron, 'spec', 'jobTemplate', 'spec', 'template', 'spec', 'containers', 0))['REDIS_HOSTS'],
      `my-redis-master.${NS}.svc:6379`,
    );
  });
  await t.test('a claim', () => {
    const spec = withBackup({ storage: { pvc: { claimName: 'backups' } }, retention: undefined, retentionCount: 5 });
    const pod = get(
      find(sync(request({ parent: redis(spec) })).children, 'CronJob', 'my-redis-backup'),
      'spec',
      'jobTemplate',
      'spec',
      'template',
      'spec',
    );
    const env = envOf(get(pod, 'containers', 0));
    assert.equal(env['BACKUP_STORAGE'], 'pvc');
    assert.equal(env['BACKUP_CLAIM'], 'backups');
    assert.equal(env['RETENTION_COUNT'], '5');
    assert.equal(env['S3_BUCKET'], undefined);
    assert.deepEqual(get(pod, 'volumes', 0, 'persistentVolumeClaim'), { claimName: 'backups', readOnly: false });
  });
  await t.test('TLS', () => {
    const pod = get(
      find(
        sync(request({ parent: redis({ ...withBackup(), tls: { secretName: 'corp-tls' } }) })).children,
        'CronJob',
        'my-redis-backup',
      ),
      'spec',
      'jobTemplate',
      'spec',
      'template',
      'spec',
    );
    assert.deepEqual(get(pod, 'volumes', 0, 'secret'), {
      secretName: 'corp-tls',
      items: [{ key: 'ca.crt', path: 'ca.crt' }],
    });
    assert.equal(envOf(get(pod, 'containers', 0))['REDIS_TLS_CA_FILE'], '/tls/ca.crt');
  });
  await t.test('hibernating', () => {
    assert.equal(
      get(
        find(
          sync(request({ parent: redis({ ...withBackup(), hibernate: true }) })).children,
          'CronJob',
          'my-redis-backup',
        ),
        'spec',
        'suspend',
      ),
      true,
    );
  });
  await t.test('no spec.backup, no CronJob', () => {
    assert.equal(sync(request({})).children.filter((c) => c.kind === 'CronJob').length, 0);
  });
});

test('a malformed schedule is refused naming the field, and nothing is deleted', () => {
  const observed = sync(request({ parent: redis(withBackup()) })).children;
  const response = sync(request({ parent: redis(withBackup({ schedule: '0 25 * * *' })), children: observed }));
  const valid = condition(response.status, 'SpecValid');
  assert.equal(valid?.['status'], 'False');
  assert.match(
    String(valid?.['message']),
    /spec\.backup\.schedule: is not a CronJob schedule: hour: "25" is outside 0-23/,
  );
  assert.equal(response.children.length, observed.length);
});

function job(name: string, state: 'Complete' | 'Failed' | 'Running', time: string, trigger = 'schedule'): KubeObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: NS, labels: { ...backupSelectorLabels('my-redis'), [BACKUP_TRIGGER_LABEL]: trigger } },
    status: {
      startTime: time,
      ...(state === 'Complete' ? { completionTime: time } : {}),
      conditions:
        state === 'Running'
          ? []
          : [
              {
                type: state,
                status: 'True',
                lastTransitionTime: time,
                reason: state === 'Failed' ? 'PodFailurePolicy' : 'Completed',
              },
            ],
    },
  };
}

function jobPod(jobName: string, exitCode: number, message: string, created: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${jobName}-x`,
      namespace: NS,
      creationTimestamp: created,
      labels: { ...backupSelectorLabels('my-redis'), 'batch.kubernetes.io/job-name': jobName },
    },
    status: {
      phase: exitCode === 0 ? 'Succeeded' : 'Failed',
      containerStatuses: [{ name: 'backup', state: { terminated: { exitCode, message } } }],
    },
  };
}

const RESULT = (at: string) =>
  JSON.stringify({
    ok: true,
    location: `s3://redis-backups/default/my-redis/${at}-42.rdb`,
    bytes: 1234,
    offset: 42,
    redisVersion: '7.0.15',
    finishedAt: at,
  });

test('status.backup and BackupHealthy follow the Jobs and their results', async (t) => {
  const cron = (lastScheduleTime: string): KubeObject => ({
    ...find(sync(request({ parent: redis(withBackup()) })).children, 'CronJob', 'my-redis-backup'),
    status: { lastScheduleTime },
  });
  const statusWith = (jobs: KubeObject[], pods: KubeObject[], schedule = '2025-01-15T12:00:00Z', previous?: unknown) =>
    sync(
      request({
        parent: redis(withBackup(), previous !== undefined ? { status: previous } : {}),
        children: [cron(schedule)],
        related: [...healthyPods(), ...jobs, ...pods],
      }),
    ).status;

  await t.test('no run yet: Unknown', () => {
    const s = statusWith([], [], '2025-01-15T12:00:00Z');
    assert.equal(condition(s, 'BackupHealthy')?.['status'], 'Unknown');
    assert.equal(condition(s, 'BackupHealthy')?.['reason'], 'NoBackupYet');
  });
  await t.test('a success: the location, size, offset and version, True', () => {
    const s = statusWith(
      [job('my-redis-backup-1', 'Complete', '2025-01-15T12:00:40Z')],
      [jobPod('my-redis-backup-1', 0, RESULT('2025-01-15T12:00:40Z'), '2025-01-15T12:00:01Z')],
    );
    assert.deepEqual(get(s, 'backup', 'lastSuccessful'), {
      location: 's3://redis-backups/default/my-redis/2025-01-15T12:00:40Z-42.rdb',
      sizeBytes: 1234,
      replicationOffset: 42,
      redisVersion: '7.0.15',
      time: '2025-01-15T12:00:40Z',
    });
    assert.equal(condition(s, 'BackupHealthy')?.['status'], 'True');
  });
  await t.test('a later failure: False naming the Job and the reason the backup gave', () => {
    const s = statusWith(
      [
        job('my-redis-backup-1', 'Complete', '2025-01-15T06:00:40Z'),
        job('my-redis-backup-2', 'Failed', '2025-01-15T12:00:09Z'),
      ],
      [
        jobPod('my-redis-backup-1', 0, RESULT('2025-01-15T06:00:40Z'), '2025-01-15T06:00:01Z'),
        jobPod(
          'my-redis-backup-2',
          2,
          JSON.stringify({
            ok: false,
            permanent: true,
            error: 'storing the backup: s3://redis-backups refused the credentials (InvalidAccessKeyId)',
          }),
          '2025-01-15T12:00:01Z',
        ),
      ],
    );
    const c = condition(s, 'BackupHealthy');
    assert.equal(c?.['status'], 'False');
    assert.equal(c?.['reason'], 'BackupFailed');
    assert.match(String(c?.['message']), /my-redis-backup-2.*refused the credentials/);
    assert.equal(get(s, 'backup', 'lastSuccessful', 'time'), '2025-01-15T06:00:40Z');
  });
  await t.test(
    'the last success is kept from the previous status when its Job is gone, and goes stale after twice the interval',
    () => {
      const previous = {
        backup: { lastSuccessful: { location: 's3://redis-backups/x.rdb', time: '2025-01-14T00:00:40Z' } },
      };
      const fresh = statusWith([], [], '2025-01-14T06:00:00Z', previous);
      assert.equal(condition(fresh, 'BackupHealthy')?.['status'], 'True');
      const stale = statusWith([], [], '2025-01-14T12:00:41Z', previous);
      assert.equal(condition(stale, 'BackupHealthy')?.['reason'], 'BackupStale');
      assert.equal(get(stale, 'backup', 'lastSuccessful', 'location'), 's3://redis-backups/x.rdb');
    },
  );
  await t.test('a Job without its result is not a success', () => {
    const s = statusWith([job('my-redis-backup-1', 'Complete', '2025-01-15T12:00:40Z')], []);
    assert.equal(get(s, 'backup', 'lastSuccessful'), undefined);
  });
});

const RESTORE_STORAGE = { s3: { ...S3, prefix: '' } };
function completedBackup(status: Json = {}): KubeObject {
  return {
    apiVersion: 'redis.example.com/v1',
    kind: 'RedisBackup',
    metadata: { name: 'nightly', namespace: NS },
    spec: { redis: 'old-redis' },
    status: {
      phase: 'Completed',
      location: 's3://redis-backups/default/old-redis/20250115T120000Z-42.rdb',
      storage: RESTORE_STORAGE,
      ...status,
    },
  };
}

test('spec.restore: nothing starts until the backup is known; then every pod restores it, once', async (t) => {
  const spec = { ...withBackup(), restore: { backup: 'nightly' } };
  await t.test('the RedisBackup is missing: no StatefulSet, no CronJob, Pending with the reason', () => {
    const r = sync(request({ parent: redis(spec) }));
    assert.equal(r.children.filter((c) => c.kind === 'StatefulSet' || c.kind === 'CronJob').length, 0);
    assert.equal(get(r.status, 'restore', 'phase'), 'Pending');
    assert.equal(condition(r.status, 'Ready')?.['reason'], 'RestorePending');
    assert.match(String(get(r.status, 'restore', 'message')), /RedisBackup nightly not found/);
  });
  await t.test('a failed RedisBackup: Failed, nothing created', () => {
    const r = sync(
      request({ parent: redis(spec), related: [completedBackup({ phase: 'Failed', message: 'no bucket' })] }),
    );
    assert.equal(get(r.status, 'restore', 'phase'), 'Failed');
    assert.equal(r.children.filter((c) => c.kind === 'StatefulSet').length, 0);
  });
  const LOCATION = 's3://redis-backups/default/old-redis/20250115T120000Z-42.rdb';
  // First sync once the backup is known: the ConfigMap that carries the location, no pod yet.
  const publishing = sync(request({ parent: redis(spec), related: [completedBackup()] }));
  await t.test(
    'known: the ConfigMap carries the location first, and no StatefulSet exists until it is observed',
    () => {
      assert.equal(
        get(find(publishing.children, 'ConfigMap', 'my-redis-config'), 'data', RESTORE_LOCATION_KEY),
        LOCATION,
      );
      assert.equal(publishing.children.filter((c) => c.kind === 'StatefulSet' || c.kind === 'CronJob').length, 0);
      assert.equal(get(publishing.status, 'restore', 'phase'), 'Restoring');
      assert.match(
        String(get(publishing.status, 'restore', 'message')),
        /waiting for ConfigMap my-redis-config to carry/,
      );
      // An observed ConfigMap without the key (not yet updated) holds the pods back the same way.
      const config = find(publishing.children, 'ConfigMap', 'my-redis-config');
      const stale = { ...config, data: { ...(config.data as Json) } } as KubeObject;
      delete (stale.data as Record<string, unknown>)[RESTORE_LOCATION_KEY];
      const held = sync(
        request({
          parent: redis(spec, { status: publishing.status }),
          children: [stale],
          related: [completedBackup()],
        }),
      );
      assert.equal(held.children.filter((c) => c.kind === 'StatefulSet').length, 0);
    },
  );
  const restoring = sync(
    request({ parent: redis(spec, { status: publishing.status }), children: publishing.children }),
  );
  await t.test('the ConfigMap observed: both StatefulSets restore first, no backup runs yet', () => {
    for (const set of ['my-redis-master', 'my-redis-replica']) {
      const init = get(find(restoring.children, 'StatefulSet', set), 'spec', 'template', 'spec', 'initContainers', 0);
      assert.deepEqual(get(init, 'command'), ['node', 'src/backup/restore-main.ts']);
      const env = envOf(init);
      assert.deepEqual(env['RESTORE_LOCATION'], {
        configMapKeyRef: { name: 'my-redis-config', key: RESTORE_LOCATION_KEY, optional: true },
      });
      assert.equal(env['APPENDONLY'], 'yes');
      assert.deepEqual(env['AWS_SECRET_ACCESS_KEY'], {
        secretKeyRef: { name: 's3-creds', key: 'AWS_SECRET_ACCESS_KEY' },
      });
      assert.equal(get(init, 'securityContext', 'runAsUser'), 999);
    }
    assert.equal(get(find(restoring.children, 'ConfigMap', 'my-redis-config'), 'data', RESTORE_LOCATION_KEY), LOCATION);
    assert.equal(restoring.children.filter((c) => c.kind === 'CronJob').length, 0);
    assert.equal(get(restoring.status, 'restore', 'phase'), 'Restoring');
  });
  /** The pods, each with its restore container's result (the termination message restore-main writes). */
  const podsWithResult = (result: Json): KubeObject[] =>
    healthyPods().map((p) => ({
      ...p,
      status: {
        ...(p.status as Json),
        initContainerStatuses: [
          {
            name: 'restore',
            state: { terminated: { exitCode: 0, reason: 'Completed', message: JSON.stringify(result) } },
          },
        ],
      },
    }));
  await t.test(
    'the master is Ready from the backup: Completed, the key goes, the backups start, the template stays the same even without the RedisBackup',
    () => {
      const pods = podsWithResult({ ok: true, restored: true, restoredFrom: LOCATION, reason: `restored ${LOCATION}` });
      const done = sync(
        request({ parent: redis(spec, { status: restoring.status }), children: restoring.children, related: pods }),
      );
      assert.equal(get(done.status, 'restore', 'phase'), 'Completed');
      assert.equal(get(done.status, 'restore', 'decidedBy'), 'my-redis-master-0');
      assert.equal(get(find(done.children, 'ConfigMap', 'my-redis-config'), 'data', RESTORE_LOCATION_KEY), undefined);
      assert.equal(done.children.filter((c) => c.kind === 'CronJob').length, 1);
      for (const set of ['my-redis-master', 'my-redis-replica'])
        assert.deepEqual(
          get(find(done.children, 'StatefulSet', set), 'spec', 'template'),
          get(find(restoring.children, 'StatefulSet', set), 'spec', 'template'),
        );
      const later = sync(
        request({ parent: redis(spec, { status: done.status }), children: done.children, related: [] }),
      );
      assert.equal(get(later.status, 'restore', 'phase'), 'Completed');
    },
  );
  // The race CI found: the pods read an older ConfigMap without the key and started empty; a Ready
  // master alone once made that Completed.
  for (const [what, result, why] of [
    [
      'no location reached it',
      { ok: true, restored: false, reason: 'RESTORE_LOCATION is not set: nothing to restore' },
      /RESTORE_LOCATION is not set/,
    ],
    [
      'it holds another backup',
      { ok: true, restored: false, restoredFrom: 's3://redis-backups/other.rdb', reason: 'restored before' },
      /it holds s3:\/\/redis-backups\/other\.rdb/,
    ],
    ['no result at all', 'plain log line', /left no result/],
  ] as const) {
    await t.test(`the master is Ready without the backup (${what}): Failed for good, never Completed`, () => {
      const pods =
        typeof result === 'string'
          ? healthyPods().map((p) => ({
              ...p,
              status: {
                ...(p.status as Json),
                initContainerStatuses: [{ name: 'restore', state: { terminated: { exitCode: 0, message: result } } }],
              },
            }))
          : podsWithResult(result);
      const r = sync(
        request({ parent: redis(spec, { status: restoring.status }), children: restoring.children, related: pods }),
      );
      assert.equal(get(r.status, 'restore', 'phase'), 'Failed');
      assert.match(String(get(r.status, 'restore', 'message')), /the master my-redis-master-0 started without s3:/);
      assert.match(String(get(r.status, 'restore', 'message')), why);
      assert.equal(condition(r.status, 'Ready')?.['reason'], 'RestoreFailed');
      assert.equal(
        get(find(r.children, 'ConfigMap', 'my-redis-config'), 'data', RESTORE_LOCATION_KEY),
        undefined,
        'no later pod loads it',
      );
      const later = sync(
        request({
          parent: redis(spec, { status: r.status }),
          children: r.children,
          related: podsWithResult({ ok: true, restoredFrom: LOCATION }),
        }),
      );
      assert.equal(get(later.status, 'restore', 'phase'), 'Failed', 'final: a later pod cannot make it Completed');
    });
  }
  await t.test('a restore that fails for good says which pod and why', () => {
    const failing: KubeObject = {
      ...healthyPods()[1]!,
      status: {
        phase: 'Pending',
        initContainerStatuses: [
          {
            name: 'restore',
            state: {
              terminated: { exitCode: 2, message: '{"ok":false,"error":"s3://redis-backups/x.rdb does not exist"}' },
            },
          },
        ],
      },
    };
    const r = sync(
      request({ parent: redis(spec, { status: restoring.status }), children: restoring.children, related: [failing] }),
    );
    assert.equal(get(r.status, 'restore', 'phase'), 'Failed');
    assert.match(String(get(r.status, 'restore', 'message')), /my-redis-replica-0: .*does not exist/);
  });
});

test('a missing credentials Secret, as the sidecar reports it, is reported in BackupHealthy, naming it and the field; customize asks for no Secret', () => {
  const found = (name: string, keys: string[]): ReportedSecret => ({
    name,
    resourceVersion: '1',
    keys,
    unwritable: [],
  });
  const auth = [found('my-redis-auth', ['password']), found('my-redis-operator', ['password'])];
  const reported = (s3: ReportedSecret) =>
    redis(withBackup(), { metadata: { annotations: { [SECRETS_ANNOTATION]: formatSecretReport([...auth, s3]) } } });
  const without = sync(
    request({ parent: reported({ name: 's3-creds', missing: true }), related: healthyPods() }),
  ).status;
  const c = condition(without, 'BackupHealthy');
  assert.equal(c?.['status'], 'False');
  assert.equal(c?.['reason'], 'CredentialsSecretMissing');
  assert.match(String(c?.['message']), /Secret s3-creds not found \(spec\.backup\.storage\.s3\.credentialsSecret\)/);
  const partial = sync(
    request({ parent: reported(found('s3-creds', ['AWS_ACCESS_KEY_ID'])), related: healthyPods() }),
  ).status;
  assert.match(String(condition(partial, 'BackupHealthy')?.['message']), /has no key AWS_SECRET_ACCESS_KEY/);
  const whole = found('s3-creds', ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']);
  assert.equal(
    condition(sync(request({ parent: reported(whole), related: healthyPods() })).status, 'BackupHealthy')?.['reason'],
    'NoBackupYet',
  );
  const rules = customize({ controller: {}, parent: redis(withBackup()) } as never).relatedResources;
  assert.equal(
    rules.some((r) => r.resource === 'secrets'),
    false,
  );
});
