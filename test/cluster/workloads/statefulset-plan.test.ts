// planStatefulSet against Kubernetes' documented StatefulSet guarantees. Pure; no network.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { StoredObject } from '../../support/kube-api/index.ts';
import { computeStatus, planStatefulSet, revisionName, REVISION_LABEL, type StsAction } from './statefulset-plan.ts';

type Json = Record<string, unknown>;
const NS = 'plan';
const STS_UID = 'sts-uid';

interface StsOptions {
  replicas?: number;
  policy?: 'Parallel' | 'OrderedReady';
  partition?: number;
  retention?: { whenDeleted: string; whenScaled: string };
  template?: Json;
  status?: Json;
}

function sts(o: StsOptions = {}): StoredObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web', namespace: NS, uid: STS_UID, resourceVersion: '1', creationTimestamp: '2025-01-01T00:00:00Z', generation: 3 },
    spec: {
      replicas: o.replicas ?? 3,
      podManagementPolicy: o.policy ?? 'Parallel',
      serviceName: 'web-headless',
      selector: { matchLabels: { app: 'web' } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: o.partition ?? 0 } },
      ...(o.retention ? { persistentVolumeClaimRetentionPolicy: o.retention } : {}),
      template: o.template ?? { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] } },
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
    },
    ...(o.status ? { status: o.status } : {}),
  };
}

type PodState = 'ready' | 'running' | 'pending' | 'failed' | 'terminating';

function pod(set: StoredObject, ordinal: number, state: PodState, revision = revisionName(set)): StoredObject {
  const ready = state === 'ready' || state === 'terminating';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `web-${ordinal}`,
      namespace: NS,
      uid: `pod-${ordinal}-${revision}`,
      resourceVersion: '1',
      creationTimestamp: '2025-01-01T00:00:00Z',
      labels: { app: 'web', [REVISION_LABEL]: revision },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: STS_UID, controller: true }],
      ...(state === 'terminating' ? { deletionTimestamp: '2025-01-01T00:01:00Z' } : {}),
    },
    status: {
      phase: state === 'pending' ? 'Pending' : state === 'failed' ? 'Failed' : 'Running',
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: '2025-01-01T00:00:10Z' }],
    },
  };
}

function claim(ordinal: number, extra: Json = {}): StoredObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: `data-web-${ordinal}`,
      namespace: NS,
      uid: `claim-${ordinal}`,
      resourceVersion: '1',
      creationTimestamp: '2025-01-01T00:00:00Z',
      ...extra,
    },
    spec: {},
  };
}

function summary(actions: StsAction[]): string[] {
  return actions.map((a) => {
    switch (a.kind) {
      case 'createClaim':
        return `claim+ ${a.claim.metadata?.name}`;
      case 'createPod':
        return `pod+ ${a.pod.metadata?.name}`;
      case 'deletePod':
        return `pod- ${a.name}`;
      case 'setClaimOwners':
        return `owners ${a.name} ${a.ownerReferences.map((r) => `${r.kind}/${r.name}`).join(',')}`;
    }
  });
}

describe('planStatefulSet', () => {
  const cases: Array<{ name: string; set: StoredObject; pods: (s: StoredObject) => StoredObject[]; claims?: StoredObject[]; want: string[] }> = [
    {
      name: 'Parallel creates every missing pod, each after its claim',
      set: sts(),
      pods: () => [],
      want: ['claim+ data-web-0', 'pod+ web-0', 'claim+ data-web-1', 'pod+ web-1', 'claim+ data-web-2', 'pod+ web-2'],
    },
    { name: 'OrderedReady creates ordinal 0 alone', set: sts({ policy: 'OrderedReady' }), pods: () => [], want: ['claim+ data-web-0', 'pod+ web-0'] },
    {
      name: 'OrderedReady waits while ordinal 0 is Running but not Ready',
      set: sts({ policy: 'OrderedReady' }),
      pods: (s) => [pod(s, 0, 'running')],
      claims: [claim(0)],
      want: [],
    },
    {
      name: 'OrderedReady creates ordinal 1 once 0 is Ready',
      set: sts({ policy: 'OrderedReady' }),
      pods: (s) => [pod(s, 0, 'ready')],
      claims: [claim(0)],
      want: ['claim+ data-web-1', 'pod+ web-1'],
    },
    {
      name: 'a deleted pod is recreated with the same name; its claim is reused',
      set: sts(),
      pods: (s) => [pod(s, 0, 'ready'), pod(s, 2, 'ready')],
      claims: [claim(0), claim(1), claim(2)],
      want: ['pod+ web-1'],
    },
    {
      name: 'a terminating pod is not replaced until it is gone',
      set: sts(),
      pods: (s) => [pod(s, 0, 'ready'), pod(s, 1, 'terminating'), pod(s, 2, 'ready')],
      claims: [claim(0), claim(1), claim(2)],
      want: [],
    },
    {
      name: 'a Failed pod is deleted (to be recreated)',
      set: sts(),
      pods: (s) => [pod(s, 0, 'ready'), pod(s, 1, 'failed'), pod(s, 2, 'ready')],
      claims: [claim(0), claim(1), claim(2)],
      want: ['pod- web-1'],
    },
    {
      name: 'no pod while its claim is being deleted',
      set: sts({ replicas: 1 }),
      pods: () => [],
      claims: [claim(0, { deletionTimestamp: '2025-01-01T00:02:00Z' })],
      want: [],
    },
    {
      name: 'Parallel scale-down deletes every condemned pod, highest ordinal first',
      set: sts({ replicas: 1 }),
      pods: (s) => [pod(s, 0, 'ready'), pod(s, 1, 'ready'), pod(s, 2, 'ready')],
      claims: [claim(0), claim(1), claim(2)],
      want: ['pod- web-2', 'pod- web-1'],
    },
    {
      name: 'OrderedReady scale-down deletes the highest ordinal only',
      set: sts({ replicas: 1, policy: 'OrderedReady' }),
      pods: (s) => [pod(s, 0, 'ready'), pod(s, 1, 'ready'), pod(s, 2, 'ready')],
      claims: [claim(0), claim(1), claim(2)],
      want: ['pod- web-2'],
    },
    {
      name: 'OrderedReady scale-down: an unhealthy pod to remove waits while a lower ordinal is unhealthy too',
      set: sts({ replicas: 1, policy: 'OrderedReady' }),
      pods: (s) => [pod(s, 0, 'ready'), pod(s, 1, 'running'), pod(s, 2, 'running')],
      claims: [claim(0), claim(1), claim(2)],
      want: [],
    },
    {
      name: 'rolling update replaces the highest ordinal first, one pod at a time',
      set: sts(),
      pods: (s) => [0, 1, 2].map((i) => pod(s, i, 'ready', 'web-old')),
      claims: [claim(0), claim(1), claim(2)],
      want: ['pod- web-2'],
    },
    {
      name: 'rolling update waits for the replaced pod to be Ready before the next',
      set: sts(),
      pods: (s) => [pod(s, 0, 'ready', 'web-old'), pod(s, 1, 'ready', 'web-old'), pod(s, 2, 'running')],
      claims: [claim(0), claim(1), claim(2)],
      want: [],
    },
    {
      name: 'rolling update leaves ordinals below the partition alone',
      set: sts({ partition: 2 }),
      pods: (s) => [pod(s, 0, 'ready', 'web-old'), pod(s, 1, 'ready', 'web-old'), pod(s, 2, 'ready')],
      claims: [claim(0), claim(1), claim(2)],
      want: [],
    },
    {
      name: 'whenDeleted Delete: claims are owned by the set',
      set: sts({ replicas: 1, retention: { whenDeleted: 'Delete', whenScaled: 'Retain' } }),
      pods: (s) => [pod(s, 0, 'ready')],
      claims: [claim(0)],
      want: ['owners data-web-0 StatefulSet/web'],
    },
    {
      name: "whenScaled Delete: a condemned pod's claim is owned by that pod alone",
      set: sts({ replicas: 1, retention: { whenDeleted: 'Delete', whenScaled: 'Delete' } }),
      pods: (s) => [pod(s, 0, 'ready'), pod(s, 1, 'ready')],
      claims: [claim(0, { ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: STS_UID }] }), claim(1)],
      want: ['owners data-web-1 Pod/web-1', 'pod- web-1'],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const plan = planStatefulSet({ sts: c.set, pods: c.pods(c.set), claims: c.claims ?? [], nowMs: Date.parse('2025-01-01T00:05:00Z') });
      assert.deepEqual(summary(plan.actions), c.want);
    });
  }

  test("new pods carry the set's identity: labels, owner, hostname/subdomain, claim volumes", () => {
    const set = sts({ replicas: 1 });
    const [, create] = planStatefulSet({ sts: set, pods: [], claims: [], nowMs: 0 }).actions;
    assert.equal(create?.kind, 'createPod');
    const p = (create as Extract<StsAction, { kind: 'createPod' }>).pod;
    assert.deepEqual(p.metadata?.labels, {
      app: 'web',
      'statefulset.kubernetes.io/pod-name': 'web-0',
      'apps.kubernetes.io/pod-index': '0',
      [REVISION_LABEL]: revisionName(set),
    });
    assert.deepEqual(p.metadata?.ownerReferences, [
      { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: STS_UID, controller: true, blockOwnerDeletion: true },
    ]);
    const spec = p['spec'] as Json;
    assert.equal(spec['hostname'], 'web-0');
    assert.equal(spec['subdomain'], 'web-headless');
    assert.deepEqual(spec['volumes'], [{ name: 'data', persistentVolumeClaim: { claimName: 'data-web-0' } }]);
  });

  test("the revision name depends on the template's content, not its key order", () => {
    const a = sts({ template: { metadata: { labels: { app: 'web', x: '1' } }, spec: { containers: [] } } });
    const b = sts({ template: { spec: { containers: [] }, metadata: { labels: { x: '1', app: 'web' } } } });
    const c = sts({ template: { metadata: { labels: { app: 'web', x: '2' } }, spec: { containers: [] } } });
    assert.equal(revisionName(a), revisionName(b));
    assert.notEqual(revisionName(a), revisionName(c));
    assert.match(revisionName(a), /^web-[bcdfghjklmnpqrstvwxz2456789]{10}$/);
  });

  test('status counts created, ready, current and updated pods; currentRevision moves when the rollout is complete', () => {
    const set = sts({ status: { currentRevision: 'web-old' } });
    const rev = revisionName(set);
    const mid = computeStatus(
      { sts: set, pods: [pod(set, 0, 'ready', 'web-old'), pod(set, 1, 'running'), pod(set, 2, 'terminating', 'web-old')], claims: [], nowMs: 0 },
      rev,
    );
    assert.deepEqual(mid, {
      observedGeneration: 3,
      replicas: 3,
      readyReplicas: 2,
      currentReplicas: 1,
      updatedReplicas: 1,
      availableReplicas: 2,
      currentRevision: 'web-old',
      updateRevision: rev,
      collisionCount: 0,
    });
    const done = computeStatus({ sts: set, pods: [0, 1, 2].map((i) => pod(set, i, 'ready')), claims: [], nowMs: 0 }, rev);
    assert.equal(done['currentRevision'], rev);
    assert.equal(done['currentReplicas'], 3);
  });
});
