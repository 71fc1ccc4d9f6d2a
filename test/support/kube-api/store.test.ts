// The stand-in's in-process API (no HTTP): what tests use to set pod status, delete pods, and
// to check garbage collection, finalizers and watch semantics directly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeApiError, ObjectStore, type StoredObject, type WatchEvent } from './index.ts';

const NS = 'ns';

function codeOf(fn: () => unknown): { code: number; reason: string | undefined } {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof KubeApiError);
    return { code: e.code, reason: e.reason };
  }
  return assert.fail('expected a KubeApiError');
}

function ownerRef(o: StoredObject) {
  return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, uid: o.metadata.uid, controller: true };
}

test('resourceVersion is global and increases on every change, not on a no-op', () => {
  const store = new ObjectStore();
  const a = store.create('configmaps', { metadata: { name: 'a', namespace: NS } });
  const b = store.create('secrets', { metadata: { name: 'b', namespace: NS } });
  assert.ok(Number(b.metadata.resourceVersion) > Number(a.metadata.resourceVersion));
  const same = store.update('configmaps', a);
  assert.equal(same.metadata.resourceVersion, a.metadata.resourceVersion, 'a no-op update keeps the version');
  const changed = store.patch('configmaps', NS, 'a', { data: { k: 'v' } });
  assert.ok(Number(changed.metadata.resourceVersion) > Number(b.metadata.resourceVersion));
  assert.equal(store.resourceVersion, changed.metadata.resourceVersion);
});

test('in-process writes keep status (tests set pod status); mutate is read-modify-write', () => {
  const store = new ObjectStore();
  store.create('pods', { metadata: { name: 'p', namespace: NS }, status: { phase: 'Running', podIP: '127.0.20.1' } });
  assert.equal((store.read('pods', NS, 'p')['status'] as { podIP: string }).podIP, '127.0.20.1');
  store.mutate('pods', NS, 'p', (p) => {
    p['status'] = { phase: 'Running', podIP: '127.0.20.2', conditions: [{ type: 'Ready', status: 'True' }] };
  });
  assert.equal((store.read('pods', NS, 'p')['status'] as { podIP: string }).podIP, '127.0.20.2');
  assert.deepEqual(
    store.list('pods', { fieldSelector: 'status.podIP=127.0.20.2' }).map((p) => p.metadata.name),
    ['p'],
  );
});

test('the garbage collector follows ownerReferences transitively, and keeps objects with a living owner', () => {
  const store = new ObjectStore();
  const redis = store.create('redises', { metadata: { name: 'r', namespace: NS }, spec: {} });
  const sts = store.create('statefulsets', { metadata: { name: 'r-master', namespace: NS, ownerReferences: [ownerRef(redis)] }, spec: {} });
  store.create('pods', { metadata: { name: 'r-master-0', namespace: NS, ownerReferences: [ownerRef(sts)] } });
  const other = store.create('configmaps', { metadata: { name: 'other-owner', namespace: NS } });
  store.create('secrets', { metadata: { name: 'shared', namespace: NS, ownerReferences: [ownerRef(redis), { ...ownerRef(other), controller: false }] } });
  const deleted: string[] = [];
  store.watch('pods', {}, (ev) => ev.type === 'DELETED' && deleted.push((ev.object as StoredObject).metadata.name));
  store.delete('redises', NS, 'r');
  assert.equal(store.get('statefulsets', NS, 'r-master'), undefined);
  assert.equal(store.get('pods', NS, 'r-master-0'), undefined);
  assert.deepEqual(deleted, ['r-master-0']);
  assert.ok(store.get('secrets', NS, 'shared'), 'a dependent with another living owner stays');
});

test('delete propagation: Orphan strips the reference, Foreground deletes dependents first', () => {
  const store = new ObjectStore();
  const owner = store.create('configmaps', { metadata: { name: 'o', namespace: NS } });
  store.create('secrets', { metadata: { name: 'd', namespace: NS, ownerReferences: [ownerRef(owner)] } });
  store.delete('configmaps', NS, 'o', { propagationPolicy: 'Orphan' });
  assert.equal(store.read('secrets', NS, 'd').metadata.ownerReferences, undefined);

  const owner2 = store.create('configmaps', { metadata: { name: 'o2', namespace: NS } });
  store.create('secrets', { metadata: { name: 'd2', namespace: NS, ownerReferences: [ownerRef(owner2)] } });
  const order: string[] = [];
  store.watch('secrets', {}, (ev) => ev.type === 'DELETED' && order.push('secret'));
  store.watch('configmaps', {}, (ev) => ev.type === 'DELETED' && order.push('configmap'));
  store.delete('configmaps', NS, 'o2', { propagationPolicy: 'Foreground' });
  assert.deepEqual(order, ['secret', 'configmap']);
});

test('an object whose owners do not exist is collected; collection can be switched off', () => {
  const ghost = { apiVersion: 'v1', kind: 'ConfigMap', name: 'ghost', uid: 'no-such-uid' };
  const store = new ObjectStore();
  store.create('secrets', { metadata: { name: 'orphan', namespace: NS, ownerReferences: [ghost] } });
  assert.equal(store.get('secrets', NS, 'orphan'), undefined);
  const lenient = new ObjectStore({ collectDanglingDependents: false });
  lenient.create('secrets', { metadata: { name: 'orphan', namespace: NS, ownerReferences: [ghost] } });
  assert.ok(lenient.get('secrets', NS, 'orphan'));
});

test('finalizers hold a deleted object until removed; a dependent waits for its owner to be really gone', () => {
  const store = new ObjectStore();
  const redis = store.create('redises', { metadata: { name: 'r', namespace: NS, finalizers: ['metacontroller.io/x'] }, spec: {} });
  store.create('secrets', { metadata: { name: 'r-auth', namespace: NS, ownerReferences: [ownerRef(redis)] } });
  const first = store.delete('redises', NS, 'r');
  assert.equal(first.deleted, false);
  assert.ok(first.object.metadata.deletionTimestamp);
  const again = store.delete('redises', NS, 'r');
  assert.equal(again.object.metadata.resourceVersion, first.object.metadata.resourceVersion, 'a second delete changes nothing');
  assert.ok(store.get('secrets', NS, 'r-auth'), 'background GC waits for the owner to be removed');
  assert.equal(codeOf(() => store.patch('redises', NS, 'r', { metadata: { finalizers: ['metacontroller.io/x', 'new.io/y'] } })).code, 422);
  store.patch('redises', NS, 'r', { metadata: { finalizers: [] } });
  assert.equal(store.get('redises', NS, 'r'), undefined);
  assert.equal(store.get('secrets', NS, 'r-auth'), undefined);
});

test('preconditions and conflicts', () => {
  const store = new ObjectStore();
  const cm = store.create('configmaps', { metadata: { name: 'c', namespace: NS } });
  assert.deepEqual(
    codeOf(() => store.create('configmaps', { metadata: { name: 'c', namespace: NS } })),
    { code: 409, reason: 'AlreadyExists' },
  );
  store.patch('configmaps', NS, 'c', { data: { a: 'b' } });
  assert.deepEqual(
    codeOf(() => store.update('configmaps', cm)),
    { code: 409, reason: 'Conflict' },
  );
  assert.deepEqual(
    codeOf(() => store.patch('configmaps', NS, 'c', { metadata: { resourceVersion: cm.metadata.resourceVersion }, data: {} })),
    { code: 409, reason: 'Conflict' },
  );
  assert.deepEqual(
    codeOf(() => store.delete('configmaps', NS, 'c', { preconditions: { uid: 'other' } })),
    { code: 409, reason: 'Conflict' },
  );
  assert.deepEqual(
    codeOf(() => store.create('configmaps', cm)),
    { code: 500, reason: 'InternalError' },
    'resourceVersion set on create',
  );
  assert.deepEqual(
    codeOf(() => store.read('configmaps', NS, 'nope')),
    { code: 404, reason: 'NotFound' },
  );
});

test('watch: replay after a version, selector transitions, and 410 once history is gone', () => {
  const store = new ObjectStore({ historyLimit: 5 });
  const start = store.resourceVersion;
  store.create('pods', { metadata: { name: 'a', namespace: NS, labels: { role: 'replica' } } });
  store.create('pods', { metadata: { name: 'b', namespace: 'other', labels: { role: 'replica' } } });
  const events: Array<[string, string]> = [];
  const h = store.watch('pods', { namespace: NS, labelSelector: 'role=master', resourceVersion: start }, (ev: WatchEvent) =>
    events.push([ev.type, (ev.object as StoredObject).metadata.name]),
  );
  store.patch('pods', NS, 'a', { metadata: { labels: { role: 'master' } } });
  store.patch('pods', NS, 'a', { metadata: { annotations: { x: 'y' } } });
  store.patch('pods', 'other', 'b', { metadata: { labels: { role: 'master' } } });
  store.patch('pods', NS, 'a', { metadata: { labels: { role: 'replica' } } });
  h.stop();
  store.patch('pods', NS, 'a', { metadata: { labels: { role: 'master' } } });
  assert.deepEqual(events, [
    ['ADDED', 'a'],
    ['MODIFIED', 'a'],
    ['DELETED', 'a'],
  ]);
  assert.deepEqual(
    codeOf(() => store.watch('pods', { resourceVersion: start }, () => {})),
    { code: 410, reason: 'Expired' },
  );
  const initial: string[] = [];
  store.watch('pods', {}, (ev) => initial.push(`${ev.type} ${(ev.object as StoredObject).metadata.name}`));
  assert.deepEqual(initial, ['ADDED a', 'ADDED b'], 'no resourceVersion: the current state first');
});

test('list pagination with limit and continue', () => {
  const store = new ObjectStore();
  for (const n of ['c', 'a', 'b', 'd']) store.create('configmaps', { metadata: { name: n, namespace: NS } });
  const first = store.listPage('configmaps', { limit: 3 });
  assert.deepEqual(
    first.items.map((i) => i.metadata.name),
    ['a', 'b', 'c'],
  );
  assert.equal(first.remainingItemCount, 1);
  const rest = store.listPage('configmaps', { limit: 3, continue: first.continue! });
  assert.deepEqual(
    rest.items.map((i) => i.metadata.name),
    ['d'],
  );
  assert.equal(rest.continue, undefined);
});

test('secrets: stringData is folded into base64 data; bad base64 is refused', () => {
  const store = new ObjectStore();
  const s = store.create('secrets', { metadata: { name: 's', namespace: NS }, stringData: { password: 'hunter2' } });
  assert.deepEqual(s['data'], { password: Buffer.from('hunter2').toString('base64') });
  assert.equal(s['stringData'], undefined);
  assert.equal(s['type'], 'Opaque');
  assert.equal(codeOf(() => store.create('secrets', { metadata: { name: 't', namespace: NS }, data: { k: 'not base64!' } })).code, 400);
});

test('mutators run before validation (defaulting hook)', () => {
  const store = new ObjectStore();
  store.addMutator('redises', ({ object }) => {
    const spec = (object['spec'] ??= {}) as Record<string, unknown>;
    spec['replicas'] ??= 2;
  });
  const r = store.create('redises', { metadata: { name: 'r', namespace: NS } });
  assert.deepEqual(r['spec'], { replicas: 2 });
});

test('extra kinds are one table entry', async () => {
  const { DEFAULT_RESOURCES, defineResource } = await import('./index.ts');
  const store = new ObjectStore({
    resources: [
      ...DEFAULT_RESOURCES,
      defineResource({
        group: 'apps',
        version: 'v1',
        resource: 'deployments',
        kind: 'Deployment',
        namespaced: true,
        statusSubresource: true,
        generation: true,
      }),
    ],
  });
  const d = store.create('deployments', { metadata: { name: 'd', namespace: NS }, spec: { replicas: 1 } });
  assert.equal(d.apiVersion, 'apps/v1');
  assert.equal(d.metadata.generation, 1);
});

test('a write naming another metadata.uid is refused as invalid (422), as kube-apiserver refuses a replaced object', () => {
  const store = new ObjectStore();
  store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ns' } });
  const pod = store.create('pods', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'ns' },
    spec: { containers: [{ name: 'c', image: 'i' }] },
  });
  assert.throws(
    () => store.patch('pods', 'ns', 'p', { metadata: { uid: 'someone-else', labels: { role: 'master' } } }, { type: 'merge' }),
    (err: unknown) => err instanceof KubeApiError && err.code === 422 && /metadata\.uid/.test(err.message),
  );
  const patched = store.patch('pods', 'ns', 'p', { metadata: { uid: pod.metadata.uid, labels: { role: 'master' } } }, { type: 'merge' });
  assert.equal(patched.metadata.labels?.['role'], 'master', 'the right uid is a precondition that holds');
});
