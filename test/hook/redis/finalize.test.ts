// finalize: the PVC policy carried out in observable steps; finalized only when done, and data
// never deleted on Retain or on an invalid spec.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lastAppliedOf } from '../../../src/hook/common/observed.ts';
import { finalize, type HookResponse, type KubeObject } from '../../../src/hook/index.ts';
import { condition, designSpec, fixtureRequest, get, type Json } from '../common/helpers.ts';

interface Setup {
  whenDeleted?: 'Retain' | 'Delete';
  invalid?: boolean;
  /** Observed StatefulSets' policy; undefined keeps the fixture's (Retain). */
  observedPolicy?: 'Retain' | 'Delete';
  /** Observed StatefulSets' status.observedGeneration lags their generation. */
  lagging?: boolean;
  noStatefulSets?: boolean;
  /** Replace the related PVCs. */
  pvcs?: Json[];
}

function finalizeRequest(setup: Setup) {
  return fixtureRequest((body) => {
    body['finalizing'] = true;
    const parent = body['parent'] as Json;
    (parent['metadata'] as Json)['deletionTimestamp'] = '2025-01-16T00:00:00Z';
    const spec = parent['spec'] as Json;
    if (setup.whenDeleted) spec['persistence'] = { ...(spec['persistence'] as Json), whenDeleted: setup.whenDeleted };
    if (setup.invalid) spec['replicas'] = -1;
    const sets = get(body, 'children', 'StatefulSet.apps/v1') as Record<string, Json>;
    for (const set of Object.values(sets)) {
      if (setup.observedPolicy)
        (set['spec'] as Json)['persistentVolumeClaimRetentionPolicy'] = {
          whenDeleted: setup.observedPolicy,
          whenScaled: 'Retain',
        };
      if (setup.lagging) (set['metadata'] as Json)['generation'] = 2;
    }
    if (setup.noStatefulSets) (body['children'] as Json)['StatefulSet.apps/v1'] = {};
    if (setup.pvcs) {
      (body['related'] as Json)['PersistentVolumeClaim.v1'] = Object.fromEntries(
        setup.pvcs.map((p) => [`default/${String(get(p, 'metadata', 'name'))}`, p]),
      );
    }
  });
}

function pvc(name: string, opts: { owner?: string; deleting?: boolean; instance?: string } = {}): Json {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: 'default',
      labels: {
        'app.kubernetes.io/name': 'redis',
        'app.kubernetes.io/instance': opts.instance ?? 'my-redis',
        'app.kubernetes.io/managed-by': 'redis-operator',
      },
      ...(opts.owner
        ? {
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: 'StatefulSet', name: opts.owner, uid: 'x', controller: false },
            ],
          }
        : {}),
      ...(opts.deleting ? { deletionTimestamp: '2025-01-16T00:00:05Z' } : {}),
    },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
  };
}

const kinds = (r: HookResponse) => r.children.map((c) => `${c.kind}/${c.metadata.name}`);
const ALL = [
  'ConfigMap/my-redis-config',
  'Service/my-redis-headless',
  'Service/my-redis-master',
  'Service/my-redis-replicas',
  'Service/my-redis-metrics',
  'StatefulSet/my-redis-master',
  'StatefulSet/my-redis-replica',
  'PodDisruptionBudget/my-redis-pdb',
];
const NO_SETS = ALL.filter((k) => !k.startsWith('StatefulSet/'));
const policies = (r: HookResponse) =>
  r.children
    .filter((c) => c.kind === 'StatefulSet')
    .map((c) => get(c, 'spec', 'persistentVolumeClaimRetentionPolicy', 'whenDeleted'));

interface Case {
  name: string;
  setup: Setup;
  finalized: boolean;
  children: string[];
  policy?: string;
  message?: RegExp;
}

const cases: Case[] = [
  {
    name: 'Retain, settled: released at once, volumes stay',
    setup: {},
    finalized: true,
    children: ALL,
    policy: 'Retain',
    message: /retained/,
  },
  {
    name: 'Retain, but the StatefulSets still say Delete: switch them first',
    setup: { observedPolicy: 'Delete' },
    finalized: false,
    children: ALL,
    policy: 'Retain',
    message: /switch to whenDeleted: Retain/,
  },
  {
    name: 'Retain, StatefulSet controller has not caught up',
    setup: { lagging: true },
    finalized: false,
    children: ALL,
    policy: 'Retain',
  },
  {
    name: 'Delete, StatefulSets still say Retain: apply Delete first',
    setup: { whenDeleted: 'Delete' },
    finalized: false,
    children: ALL,
    policy: 'Delete',
    message: /apply whenDeleted: Delete/,
  },
  {
    name: 'Delete, StatefulSets say Delete but not yet reconciled',
    setup: { whenDeleted: 'Delete', observedPolicy: 'Delete', lagging: true },
    finalized: false,
    children: ALL,
    policy: 'Delete',
  },
  {
    name: 'Delete, settled: StatefulSets dropped, the rest kept',
    setup: { whenDeleted: 'Delete', observedPolicy: 'Delete' },
    finalized: false,
    children: NO_SETS,
    message: /deleting StatefulSet/,
  },
  {
    name: 'Delete, StatefulSets gone, PVCs still owned by them',
    setup: {
      whenDeleted: 'Delete',
      noStatefulSets: true,
      pvcs: [pvc('data-my-redis-master-0', { owner: 'my-redis-master' })],
    },
    finalized: false,
    children: NO_SETS,
    message: /data-my-redis-master-0/,
  },
  {
    name: 'Delete, StatefulSets gone, a PVC is being deleted',
    setup: { whenDeleted: 'Delete', noStatefulSets: true, pvcs: [pvc('data-my-redis-replica-1', { deleting: true })] },
    finalized: false,
    children: NO_SETS,
  },
  {
    name: 'Delete, StatefulSets and PVCs gone: released',
    setup: { whenDeleted: 'Delete', noStatefulSets: true, pvcs: [] },
    finalized: true,
    children: NO_SETS,
    message: /volumes deleted/,
  },
  {
    name: 'Delete, only PVCs nobody will delete are left: released, and they are named',
    setup: { whenDeleted: 'Delete', noStatefulSets: true, pvcs: [pvc('data-my-redis-replica-0')] },
    finalized: true,
    children: NO_SETS,
    message: /data-my-redis-replica-0 .*left in place/,
  },
  {
    name: 'Delete, PVCs of another Redis are not ours to wait for',
    setup: {
      whenDeleted: 'Delete',
      noStatefulSets: true,
      pvcs: [pvc('data-other-master-0', { owner: 'other-master', instance: 'other' })],
    },
    finalized: true,
    children: NO_SETS,
  },
];

for (const c of cases) {
  test(`finalize: ${c.name}`, () => {
    const response = finalize(finalizeRequest(c.setup));
    assert.equal(response.finalized, c.finalized);
    assert.deepEqual(kinds(response), c.children);
    if (c.policy) assert.deepEqual(policies(response), [c.policy, c.policy]);
    if (c.finalized) assert.equal(response.resyncAfterSeconds, undefined);
    else assert.ok((response.resyncAfterSeconds ?? 0) > 0, 'polls while waiting');
    const ready = condition(response.status, 'Ready');
    assert.equal(get(ready, 'reason'), 'Deleting');
    if (c.message) assert.match(String(get(ready, 'message')), c.message);
    for (const key of Object.keys(response))
      assert.ok(['status', 'children', 'resyncAfterSeconds', 'finalized'].includes(key), key);
  });
}

test('finalize with an invalid spec falls back to Retain: observed children kept, StatefulSets switched to Retain first', () => {
  // The StatefulSets say Delete (a valid Delete spec earlier); the spec is now invalid.
  const req = finalizeRequest({ invalid: true, whenDeleted: 'Delete', observedPolicy: 'Delete' });
  const observed: KubeObject[] = Object.values(req.children).flatMap((i) => Object.values(i));
  const response = finalize(req);
  assert.equal(response.finalized, false);
  assert.equal(response.children.length, observed.length);
  for (const child of response.children) {
    const found = observed.find((o) => o.kind === child.kind && o.metadata.name === child.metadata.name) as KubeObject;
    const original = lastAppliedOf(found);
    if (child.kind === 'StatefulSet') {
      assert.equal(get(child, 'spec', 'persistentVolumeClaimRetentionPolicy', 'whenDeleted'), 'Retain');
      assert.equal(
        get(found, 'spec', 'persistentVolumeClaimRetentionPolicy', 'whenDeleted'),
        'Delete',
        'the request is not modified',
      );
      assert.deepEqual(
        { ...child, spec: { ...(child['spec'] as Json), persistentVolumeClaimRetentionPolicy: undefined } },
        { ...original, spec: { ...(original['spec'] as Json), persistentVolumeClaimRetentionPolicy: undefined } },
      );
    } else {
      assert.deepEqual(child, original);
    }
  }
  assert.equal(get(condition(response.status, 'Ready'), 'reason'), 'InvalidSpec');

  // Once the StatefulSets say Retain (and were reconciled), the parent is released with everything as observed.
  const settled = finalizeRequest({ invalid: true, whenDeleted: 'Delete', observedPolicy: 'Retain' });
  const done = finalize(settled);
  assert.equal(done.finalized, true);
  const settledObserved = Object.values(settled.children).flatMap((i) => Object.values(i));
  assert.equal(done.children.length, settledObserved.length);
  for (const object of settledObserved) {
    assert.ok(
      done.children.some((c) => c.kind === object.kind && c.metadata.name === object.metadata.name),
      `${object.kind}/${object.metadata.name} kept`,
    );
  }
});

test('finalized is never true outside finalizing', () => {
  const req = finalizeRequest({});
  const notFinalizing = { ...req, finalizing: false };
  assert.equal(finalize(req).finalized, true);
  assert.equal('finalized' in finalize(notFinalizing), false);
});

test('a design Redis with nothing observed yet is released at once (Retain)', () => {
  const req = fixtureRequest((body) => {
    body['finalizing'] = true;
    body['children'] = {};
    body['related'] = {};
    (body['parent'] as Json)['spec'] = designSpec();
  });
  assert.equal(finalize(req).finalized, true);
});
