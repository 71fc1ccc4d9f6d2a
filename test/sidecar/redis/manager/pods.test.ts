// From Kubernetes objects to decision inputs (pure): pod membership, the API's view of a pod,
// label overlays after our own patches, the spec view and the password source. No network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { desiredRuntimeConfig } from '../../../../src/api/config-directives.ts';
import { LINK_ANNOTATION, podSelectorLabels, ROLE_LABEL } from '../../../../src/api/labels.ts';
import { validateSpec } from '../../../../src/api/validate.ts';
import { DEFAULT_TIMING } from '../../../../src/sidecar/config.ts';
import type { RedisTrack } from '../../../../src/sidecar/redis/decide/index.ts';
import {
  belongsTo,
  decideConfig,
  newerVersion,
  observation,
  overlayApplies,
  podView,
  specView,
} from '../../../../src/sidecar/redis/manager/index.ts';
import { podChangeKey } from '../../../../src/sidecar/redis/manager/pods.ts';
import { authSecretRef } from '../../../../src/api/auth.ts';

function pod(
  over: {
    name?: string;
    ns?: string;
    labels?: Record<string, string>;
    ip?: string;
    ready?: boolean;
    deleting?: boolean;
    rv?: string;
    phase?: string;
  } = {},
): V1Pod {
  return {
    metadata: {
      name: over.name ?? 'cache-replica-1',
      namespace: over.ns ?? 'apps',
      uid: 'u-1',
      resourceVersion: over.rv ?? '10',
      labels: over.labels ?? {
        ...podSelectorLabels('cache'),
        'app.kubernetes.io/component': 'replica-set',
        [ROLE_LABEL]: 'replica',
      },
      annotations: { [LINK_ANNOTATION]: 'up' },
      ...(over.deleting ? { deletionTimestamp: new Date(0) } : {}),
    },
    status: {
      phase: over.phase ?? 'Running',
      ...(over.ip === undefined ? { podIP: '10.1.2.3' } : over.ip ? { podIP: over.ip } : {}),
      conditions: [{ type: 'Ready', status: over.ready === false ? 'False' : 'True' }],
    },
  };
}

test("belongsTo: all of the pod selector labels, in the Redis' namespace", async (t) => {
  const table: Array<[string, V1Pod, boolean]> = [
    ['its pod', pod(), true],
    ['another namespace', pod({ ns: 'other' }), false],
    ['another Redis', pod({ labels: podSelectorLabels('cache2') }), false],
    [
      'missing managed-by',
      pod({ labels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': 'cache' } }),
      false,
    ],
  ];
  for (const [name, p, want] of table)
    await t.test(name, () => assert.equal(belongsTo(p, 'apps', 'cache'), want, name));
});

test('podView: phase, Ready, deleting, IP, component', () => {
  const v = podView(pod())!;
  assert.deepEqual(
    [v.uid, v.name, v.ip, v.phase, v.ready, v.deleting, v.component],
    ['u-1', 'cache-replica-1', '10.1.2.3', 'Running', true, false, 'replica-set'],
  );
  const w = podView(
    pod({ ip: '', ready: false, deleting: true, phase: 'Pending', labels: podSelectorLabels('cache') }),
  )!;
  assert.deepEqual([w.ip, w.ready, w.deleting, w.phase, w.component], [null, false, true, 'Pending', null]);
  assert.equal(podView({ metadata: { name: 'x' } }), null, 'no uid: not a stored pod');
});

test('label overlays: ours wins only while the informer copy is older', () => {
  const v = podView(pod({ rv: '10' }))!;
  const overlay = {
    resourceVersion: '12',
    labels: { [ROLE_LABEL]: 'master' },
    annotations: { [LINK_ANNOTATION]: 'up' },
  };
  assert.equal(overlayApplies(v, overlay), true);
  assert.equal(observation(v, null, overlay).roleLabel, 'master');
  const caught = podView(pod({ rv: '12' }))!;
  assert.equal(overlayApplies(caught, overlay), false);
  const later = podView(pod({ rv: '13' }))!;
  assert.equal(observation(later, null, overlay).roleLabel, 'replica', 'a later change by anyone wins');
  assert.equal(newerVersion('9', '10'), false);
  assert.equal(newerVersion('100', '99'), true);
  assert.equal(newerVersion('abc', '1'), false, 'opaque versions: the informer wins');
});

test("observation: a probe track only counts for the pod's current IP", () => {
  const v = podView(pod())!;
  const t = { ip: '10.1.2.3' } as RedisTrack;
  assert.equal(observation(v, t).redis, t);
  assert.equal(observation(v, { ...t, ip: '10.9.9.9' }).redis, null, "an old incarnation's facts are not this one's");
  const noIp = podView(pod({ ip: '' }))!;
  assert.equal(observation(noIp, t).redis, t, 'a pod that lost its IP keeps its last track (its master address)');
});

test('specView, decideConfig and authSecretRef from a validated spec', () => {
  const verdict = validateSpec('cache', {
    replicas: 3,
    failover: { downAfterMilliseconds: 1500, minReplicasToWrite: 2 },
    persistence: { enableRdb: false, enableAof: false },
    config: { 'maxmemory-policy': 'allkeys-lru' },
  });
  assert.ok(verdict.ok);
  if (!verdict.ok) return;
  assert.deepEqual(specView(verdict.spec), {
    replicas: 3,
    minReplicasToWrite: 2,
    minReplicasMaxLagSeconds: 5,
    persistence: false,
    hibernate: false,
    engine: 'redis', // the validator's default: the move's target
    runtimeConfig: desiredRuntimeConfig({ 'maxmemory-policy': 'allkeys-lru' }),
  });
  assert.equal(specView(verdict.spec).runtimeConfig['maxmemory-policy'], 'allkeys-lru');
  const c = decideConfig(verdict.spec, DEFAULT_TIMING);
  assert.equal(c.downAfterMs, 1500);
  assert.equal(c.witnessConfirmMs, DEFAULT_TIMING.witnessConfirmMs);
  assert.deepEqual(authSecretRef('cache', verdict.spec), {
    secretName: 'cache-auth',
    key: 'password',
    generated: true,
  });
  const withAuth = validateSpec('cache', { auth: { secretName: 'mine' } });
  assert.ok(withAuth.ok);
  if (withAuth.ok)
    assert.deepEqual(authSecretRef('cache', withAuth.spec), { secretName: 'mine', key: 'password', generated: false });
});

test('podChangeKey: the sidecar replication report and bookkeeping change nothing a decision reads; anything else does', async (t) => {
  const base = (): V1Pod => ({
    metadata: {
      uid: 'u1',
      name: 'p',
      namespace: 'ns',
      resourceVersion: '1',
      labels: { a: '1' },
      annotations: { 'redis.example.com/link': 'up' },
    },
    status: { phase: 'Running', podIP: '10.0.0.1' },
  });
  const cases: Array<[string, (p: V1Pod) => void, boolean]> = [
    [
      'a new resourceVersion and managedFields',
      (p) => Object.assign(p.metadata!, { resourceVersion: '2', managedFields: [{ manager: 'x' }] }),
      true,
    ],
    [
      'the replication annotation written or rewritten',
      (p) => (p.metadata!.annotations!['redis.example.com/replication'] = 'offset=1 lag=0 at=2026-12-03T00:00:00Z'),
      true,
    ],
    ['a label', (p) => (p.metadata!.labels!['redis.example.com/role'] = 'master'), false],
    ['the link annotation', (p) => (p.metadata!.annotations!['redis.example.com/link'] = 'down'), false],
    ['the status', (p) => (p.status!.phase = 'Failed'), false],
    ['a deletion', (p) => (p.metadata!.deletionTimestamp = new Date(0)), false],
  ];
  for (const [name, change, same] of cases) {
    await t.test(name, () => {
      const p = base();
      change(p);
      assert.equal(podChangeKey(p) === podChangeKey(base()), same);
    });
  }
});
