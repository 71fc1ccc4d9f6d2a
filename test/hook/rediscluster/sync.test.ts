// RedisCluster sync, finalize and customize as a whole: an invalid spec returns every observed
// child as last applied (nothing deleted or changed) with Failed and the field named; both hook
// versions' key shapes; finalize's volume policy steps; finalized only while finalizing;
// customize's related rules; backup status joined over the shards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SHARD_LABEL } from '../../../src/api/rediscluster-names.ts';
import { rivalNames } from '../../../src/api/name-conflict.ts';
import {
  customizeRedisCluster,
  finalizeRedisCluster,
  parseCustomizeRequest,
  syncRedisCluster,
  type KubeObject,
} from '../../../src/hook/index.ts';
import { lastAppliedOf } from '../../../src/hook/common/observed.ts';
import { formatSecretReport, SECRETS_ANNOTATION, type ReportedSecret } from '../../../src/api/secret-report.ts';
import { condition, get } from '../common/helpers.ts';
import {
  articleSpec,
  redisCluster,
  redisClusterPod,
  healthyRedisClusterPods,
  limitedSpec,
  named,
  NAME,
  NS,
  observedFor,
  request,
  sync,
  type Json,
} from './helpers.ts';

test('an invalid spec: every observed child comes back exactly as last applied, status Failed naming the field', async (t) => {
  const observed = observedFor(articleSpec(), healthyRedisClusterPods());
  const cases: Array<[string, unknown, RegExp]> = [
    ['two shards', { ...articleSpec(), master: { replicas: 2 } }, /^spec\.master\.replicas: must be >= 3$/],
    [
      'a directive the operator owns',
      { ...articleSpec(), config: { 'cluster-node-timeout': '1' } },
      /^spec\.config\.cluster-node-timeout: not an allowed directive \(the cluster's wiring and failover are the operator's\)/,
    ],
    ['no spec', null, /^spec: must be an object$/],
    ['Redis 6', { ...articleSpec(), version: '6.2' }, /^spec\.version: redis 6\.2 is not tested here: /],
    // The article runs Redis 7.0: a move to Valkey goes by Redis 7.2 first.
    [
      'Valkey from Redis 7.0',
      { ...articleSpec(), engine: 'valkey', version: '8.0' },
      /^spec\.engine: cannot move from redis 7\.0 to valkey 8\.0: .* move to redis 7\.2 first/,
    ],
  ];
  for (const [name, spec, message] of cases) {
    await t.test(name, () => {
      const answer = sync({ parent: redisCluster(spec), children: observed, related: healthyRedisClusterPods() });
      const byName = (list: KubeObject[]) =>
        [...list].sort((a, b) => `${a.kind}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.name}`));
      assert.deepEqual(byName(answer.children), byName(observed.map(lastAppliedOf)));
      assert.equal(answer.status.phase, 'Failed');
      for (const type of ['Ready', 'SpecValid']) {
        assert.equal(condition(answer.status, type)?.['status'], 'False');
        assert.equal(condition(answer.status, type)?.['reason'], 'InvalidSpec');
        assert.match(String(condition(answer.status, type)?.['message']), message);
      }
      assert.equal(answer.status.slotsCovered, 16384, 'what the pods say is still reported');
      assert.equal(condition(answer.status, 'Resharded')?.['status'], 'Unknown');
    });
  }
});

test('both hook versions’ key shapes give the same answer', () => {
  const children = observedFor(articleSpec());
  const v1 = syncRedisCluster(request({ children, related: healthyRedisClusterPods(), shape: 'v1' }));
  const v2 = syncRedisCluster(request({ children, related: healthyRedisClusterPods(), shape: 'v2' }));
  assert.equal(JSON.stringify(v1), JSON.stringify(v2));
});

test('a plain sync never sets finalized, through sync or finalize', () => {
  for (const hook of [syncRedisCluster, finalizeRedisCluster]) {
    const answer = hook(request({ children: observedFor(), related: healthyRedisClusterPods() }));
    assert.equal(answer.finalized, undefined);
    assert.equal(answer.resyncAfterSeconds, undefined);
  }
});

/** Observed children with each StatefulSet's volume policy and its controller's view of it. */
function withPolicy(children: KubeObject[], policy: 'Retain' | 'Delete', seen: boolean): KubeObject[] {
  return children.map((c) => {
    if (c.kind !== 'StatefulSet') return c;
    const copy = structuredClone(c) as Json;
    (get(copy, 'spec', 'persistentVolumeClaimRetentionPolicy') as Json)['whenDeleted'] = policy;
    copy['metadata'] = { ...(copy['metadata'] as Json), generation: 2 };
    (copy['status'] as Json)['observedGeneration'] = seen ? 2 : 1;
    return copy as KubeObject;
  });
}

test('finalize: Retain releases once every shard StatefulSet says Retain and its controller saw it; Delete removes the sets, then waits for the claims', async (t) => {
  const retain = limitedSpec();
  const del = limitedSpec({ persistence: { whenDeleted: 'Delete' } });
  const claim = (owned: boolean): KubeObject => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: `data-${NAME}-shard-0-0`,
      namespace: NS,
      labels: {
        'app.kubernetes.io/name': 'redis-cluster',
        'app.kubernetes.io/instance': NAME,
        'app.kubernetes.io/managed-by': 'redis-operator',
        [SHARD_LABEL]: '0',
      },
      ...(owned
        ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: `${NAME}-shard-0`, uid: 'u-set' }] }
        : {}),
    },
  });
  const cases: Array<[string, unknown, KubeObject[], KubeObject[], boolean, RegExp]> = [
    [
      'Retain, not yet seen',
      retain,
      withPolicy(observedFor(retain), 'Retain', false),
      [],
      false,
      /switch to whenDeleted: Retain/,
    ],
    ['Retain, seen', retain, withPolicy(observedFor(retain), 'Retain', true), [], true, /volumes are retained/],
    [
      'Delete, not yet seen',
      del,
      withPolicy(observedFor(del), 'Delete', false),
      [],
      false,
      /to apply whenDeleted: Delete/,
    ],
    [
      'Delete, seen: the sets go',
      del,
      withPolicy(observedFor(del), 'Delete', true),
      [],
      false,
      /deleting StatefulSet\(s\) order-cache-shard-0/,
    ],
    [
      'Delete, sets gone, a claim still owned',
      del,
      observedFor(del).filter((c) => c.kind !== 'StatefulSet'),
      [claim(true)],
      false,
      /waiting for PersistentVolumeClaim/,
    ],
    [
      'Delete, sets and claims gone',
      del,
      observedFor(del).filter((c) => c.kind !== 'StatefulSet'),
      [],
      true,
      /volumes deleted/,
    ],
  ];
  for (const [name, spec, children, related, finalized, message] of cases) {
    await t.test(name, () => {
      const answer = finalizeRedisCluster(request({ parent: redisCluster(spec), children, related, finalizing: true }));
      assert.equal(answer.finalized, finalized);
      assert.equal(answer.resyncAfterSeconds, finalized ? undefined : 5);
      const ready = condition(answer.status, 'Ready');
      assert.match(String(ready?.['message']), message);
      if (name === 'Delete, seen: the sets go')
        assert.ok(!named(answer.children).some((n) => n.startsWith('StatefulSet/')));
    });
  }
});

test('finalize with an invalid spec never deletes volumes: StatefulSets saying Delete are switched to Retain first', () => {
  const del = limitedSpec({ persistence: { whenDeleted: 'Delete' } });
  const observed = withPolicy(observedFor(del), 'Delete', true);
  const answer = finalizeRedisCluster(
    request({ parent: redisCluster({ ...del, master: { replicas: 1 } }), children: observed, finalizing: true }),
  );
  assert.equal(answer.finalized, false);
  for (const set of answer.children.filter((c) => c.kind === 'StatefulSet'))
    assert.equal(get(set, 'spec', 'persistentVolumeClaimRetentionPolicy', 'whenDeleted'), 'Retain');
  assert.equal(answer.children.length, observed.length, 'nothing dropped');
});

test('customize: the cluster’s pods (so a record change resyncs), claims and backup Jobs, all in its namespace, and no Secret', () => {
  const parsed = parseCustomizeRequest({
    parent: redisCluster({
      ...articleSpec(),
      backup: {
        ...(articleSpec()['backup'] as Json),
        storage: { s3: { bucket: 'b-1', region: 'r', credentialsSecret: { name: 's3' } } },
      },
    }),
  });
  assert.ok(parsed.ok);
  const rules = customizeRedisCluster(parsed.request).relatedResources;
  assert.deepEqual(
    rules.map((r) => [
      r.resource,
      r.namespace,
      r.labelSelector?.matchLabels?.['app.kubernetes.io/name'] ?? r.names?.join(','),
    ]),
    [
      ['pods', NS, 'redis-cluster'],
      ['persistentvolumeclaims', NS, 'redis-cluster'],
      ['jobs', NS, 'redis-cluster-backup'],
      ['pods', NS, 'redis-cluster-backup'],
      // Redises that could take its children's names (common/name-conflict.ts).
      ['redises', NS, rivalNames('RedisCluster', NAME).join(',')],
    ],
  );
  const bad = parseCustomizeRequest({ parent: redisCluster('not a spec') });
  assert.ok(bad.ok);
  assert.equal(customizeRedisCluster(bad.request).relatedResources.length, 5, 'a bad spec still gets an answer');
});

test('status.secrets: the versions the sidecar reports; AuthSecretMissing while no master is ready for want of one', () => {
  const found = (name: string, rv: string): ReportedSecret => ({
    name,
    resourceVersion: rv,
    keys: ['password'],
    unwritable: [],
  });
  const reported = (entries: ReportedSecret[]) =>
    redisCluster(articleSpec(), { annotations: { [SECRETS_ANNOTATION]: formatSecretReport(entries) } });
  // The article's RedisCluster runs the exporter, so its Secret is named too.
  const ok = sync({
    parent: reported([found(`${NAME}-operator`, '7'), found(`${NAME}-auth`, '5'), found(`${NAME}-exporter`, '6')]),
    children: observedFor(),
    related: healthyRedisClusterPods(),
  });
  assert.deepEqual(ok.status.secrets, [
    { name: `${NAME}-auth`, resourceVersion: '5' },
    { name: `${NAME}-exporter`, resourceVersion: '6' },
    { name: `${NAME}-operator`, resourceVersion: '7' },
  ]);
  assert.equal(condition(ok.status, 'SecretsReady')?.['status'], 'True');
  const waiting = sync({
    parent: reported([found(`${NAME}-auth`, '5'), { name: `${NAME}-operator`, missing: true }]),
    children: observedFor(),
    related: [redisClusterPod({ shard: 0, ordinal: 0, ready: false, record: null })],
  });
  assert.equal(condition(waiting.status, 'Ready')?.['reason'], 'AuthSecretMissing');
  assert.match(String(condition(waiting.status, 'Ready')?.['message']), /Secret order-cache-operator not found/);
  // Secrets sent in related anyway (an older customize answer Metacontroller still holds) are ignored.
  const secret: KubeObject = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${NAME}-auth`, namespace: NS, resourceVersion: '5' },
    data: {},
  };
  const stale = sync({
    children: observedFor(),
    related: [redisClusterPod({ shard: 0, ordinal: 0, ready: false, record: null }), secret],
  });
  assert.equal(stale.status.secrets, undefined);
  assert.equal(condition(stale.status, 'SecretsReady')?.['reason'], 'SecretsNotChecked');
});

test('backups: one verdict per shard joined: healthy only when every shard has a recent backup, the oldest shard’s as lastSuccessful', () => {
  const job = (shard: number, name: string, ok: boolean, time: string): KubeObject[] => {
    const labels = {
      'app.kubernetes.io/name': 'redis-cluster-backup',
      'app.kubernetes.io/instance': NAME,
      'app.kubernetes.io/managed-by': 'redis-operator',
      [SHARD_LABEL]: String(shard),
    };
    const location = `s3://redis-backups/${NS}/${NAME}/shard-${shard}/x.rdb`;
    return [
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name, namespace: NS, labels },
        status: {
          startTime: time,
          completionTime: time,
          conditions: [{ type: ok ? 'Complete' : 'Failed', status: 'True', lastTransitionTime: time }],
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `${name}-abcde`,
          namespace: NS,
          labels: { ...labels, 'batch.kubernetes.io/job-name': name },
          creationTimestamp: time,
        },
        status: {
          containerStatuses: [
            {
              name: 'backup',
              state: {
                terminated: {
                  exitCode: ok ? 0 : 2,
                  message: JSON.stringify(
                    ok ? { ok: true, location, finishedAt: time } : { ok: false, error: 'bucket gone' },
                  ),
                },
              },
            },
          ],
        },
      },
    ];
  };
  const all = [
    job(0, `${NAME}-shard-0-backup-1`, true, '2026-12-01T06:00:00Z'),
    job(1, `${NAME}-shard-1-backup-1`, true, '2026-12-01T06:01:00Z'),
    job(2, `${NAME}-shard-2-backup-1`, true, '2026-12-01T06:02:00Z'),
  ].flat();
  const healthy = sync({ children: observedFor(), related: [...healthyRedisClusterPods(), ...all] });
  assert.equal(condition(healthy.status, 'BackupHealthy')?.['status'], 'True');
  assert.equal(healthy.status.backup?.lastSuccessful?.location, `s3://redis-backups/${NS}/${NAME}/shard-0/x.rdb`);
  const missing = sync({ children: observedFor(), related: [...healthyRedisClusterPods(), ...all.slice(0, 4)] });
  assert.equal(condition(missing.status, 'BackupHealthy')?.['status'], 'Unknown');
  assert.match(String(condition(missing.status, 'BackupHealthy')?.['message']), /shard 2/);
  assert.equal(missing.status.backup?.lastSuccessful, undefined, 'no complete backup of the cluster');
  const failed = sync({
    children: observedFor(),
    related: [
      ...healthyRedisClusterPods(),
      ...all,
      ...job(1, `${NAME}-shard-1-backup-2`, false, '2026-12-01T12:00:00Z'),
    ],
  });
  assert.equal(condition(failed.status, 'BackupHealthy')?.['reason'], 'BackupFailed');
  assert.match(String(condition(failed.status, 'BackupHealthy')?.['message']), /^shard 1: .*bucket gone/);
  assert.equal(failed.status.backup?.lastFailure?.job, `${NAME}-shard-1-backup-2`);
});
