// The volume-expansion calls of the sidecar's Kubernetes adapter against a REAL kube-apiserver
// (test/k8s/api-server.ts) through client-node, as the operator's ServiceAccount (its RBAC
// applies): claims by the Redis' labels, StorageClasses, a claim merge patch with a uid
// precondition, and a StatefulSet read and deleted with its pods orphaned.
// Not modelled: no controller runs, so the garbage collector never orphans the pods of a deleted
// StatefulSet nor removes the `orphan` finalizer the API server puts on it (the test checks what
// the API server itself does with propagationPolicy Orphan), and the test drops a deleted claim's
// pvc-protection finalizer itself, as that controller would.
// Network: etcd, kube-apiserver and the fault proxy on 127.0.0.1; no Redis.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApiServer, type ApiServer } from '../../../k8s/api-server.ts';
import { isConflict, isReplaced, KubeClient } from '../../../../src/sidecar/adapters/kube/client.ts';
import { podSelectorLabels, RESIZE_REFUSED_ANNOTATION } from '../../../../src/api/labels.ts';
import { until as untilPolled, type Polled } from '../../../support/until.ts';

const NAMESPACES = ['vol-a', 'vol-b', 'vol-p', 'vol-s', 'vol-d'];
/** The sidecar's writes reach the test's watch caches a moment after its call returns. */
const until = <T>(what: string, check: () => Polled<T>) => untilPolled(what, check, 5000, { everyMs: 5 });

function claim(namespace: string, redis: string, name: string, storage = '1Gi') {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace,
      labels: { ...podSelectorLabels(redis), 'app.kubernetes.io/component': 'replica-set' },
    },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, storageClassName: 'grow' },
    // Bound, as the volume controller would leave it: the API server only lets a bound claim grow.
    status: { phase: 'Bound', capacity: { storage } },
  };
}

function statefulSet(namespace: string, name: string, size = '1Gi') {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      serviceName: 'h',
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] } },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } } },
        },
      ],
    },
  };
}

const storageClass = (name: string, allowVolumeExpansion?: boolean) => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name },
  provisioner: 'example.com/p',
  ...(allowVolumeExpansion === undefined ? {} : { allowVolumeExpansion }),
});

describe('KubeClient volume calls', () => {
  let api: ApiServer;
  let client: KubeClient;

  before(async () => {
    api = await startApiServer({ namespaces: NAMESPACES });
    // The claims' class: the API server's resize admission lets a claim grow only when it allows expansion.
    await api.store.create('storageclasses', storageClass('grow', true));
    client = new KubeClient(await api.kubeConfig('sidecar-a'), { identity: 'sidecar-a', requestTimeoutMs: 2000 });
  });
  after(async () => {
    const refused = api.requests.filter((r) => r.status === 403).map((r) => `${r.client} ${r.method} ${r.path}`);
    await api.close();
    assert.deepEqual(refused, [], 'manifests/rbac.yaml allows every call the sidecar made');
  });

  test("listRedisClaims: the Redis' claims in its namespace only, by its pod selector labels", async () => {
    await api.store.create('persistentvolumeclaims', claim('vol-a', 'r', 'data-r-master-0'));
    await api.store.create('persistentvolumeclaims', claim('vol-a', 'r', 'data-r-replica-0'));
    await api.store.create('persistentvolumeclaims', claim('vol-a', 'other', 'data-other-master-0'));
    await api.store.create('persistentvolumeclaims', claim('vol-b', 'r', 'data-r-master-0'));
    await api.store.create('persistentvolumeclaims', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'unlabelled', namespace: 'vol-a' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    const claims = await client.listRedisClaims('vol-a', 'r');
    assert.deepEqual(claims.map((c) => c.metadata?.name).sort(), ['data-r-master-0', 'data-r-replica-0']);
    assert.equal(claims[0]!.spec?.resources?.requests?.['storage'], '1Gi');
    assert.equal(claims[0]!.status?.capacity?.['storage'], '1Gi');
  });

  test('listStorageClasses: every class with allowVolumeExpansion', async () => {
    await api.store.create('storageclasses', storageClass('fixed'));
    const classes = await client.listStorageClasses();
    assert.deepEqual(classes.map((c) => [c.metadata?.name, c.allowVolumeExpansion ?? false]).sort(), [
      ['fixed', false],
      ['grow', true],
    ]);
  });

  test('patchClaim: one merge patch of the storage request and annotations; null removes; a stale uid is refused', async () => {
    const created = await api.store.create('persistentvolumeclaims', {
      ...claim('vol-p', 'r', 'data-r-master-0'),
      metadata: { ...claim('vol-p', 'r', 'data-r-master-0').metadata, annotations: { keep: 'me' } },
    });
    const before = api.requests.length;
    const patched = await client.patchClaim('vol-p', 'data-r-master-0', {
      storage: '2Gi',
      annotations: { [RESIZE_REFUSED_ANNOTATION]: 'why' },
      uid: created.metadata.uid,
    });
    assert.equal(patched.spec?.resources?.requests?.['storage'], '2Gi');
    assert.equal(patched.spec?.storageClassName, 'grow', 'the rest of the spec is left alone');
    assert.equal(patched.metadata?.annotations?.[RESIZE_REFUSED_ANNOTATION], 'why');
    assert.equal(patched.metadata?.annotations?.['keep'], 'me');
    const req = api.requests.slice(before);
    assert.deepEqual(
      req.map((r) => [r.method, r.contentType]),
      [['PATCH', 'application/merge-patch+json']],
    );
    await client.patchClaim('vol-p', 'data-r-master-0', { annotations: { [RESIZE_REFUSED_ANNOTATION]: null } });
    const stored = await until('the annotation removed', () => {
      const c = api.store.get('persistentvolumeclaims', 'vol-p', 'data-r-master-0');
      return c && c.metadata.annotations?.[RESIZE_REFUSED_ANNOTATION] === undefined ? c : undefined;
    });
    assert.equal((stored['spec'] as any).resources.requests.storage, '2Gi');

    await api.store.delete('persistentvolumeclaims', 'vol-p', 'data-r-master-0');
    // The API server keeps a deleted claim until the pvc-protection controller (not running here)
    // sees no pod using it and drops its finalizer: the test does that, so the name is free again.
    assert.deepEqual(api.store.read('persistentvolumeclaims', 'vol-p', 'data-r-master-0').metadata.finalizers, [
      'kubernetes.io/pvc-protection',
    ]);
    await api.store.patch(
      'persistentvolumeclaims',
      'vol-p',
      'data-r-master-0',
      { metadata: { finalizers: null } },
      { type: 'merge' },
    );
    await api.store.create('persistentvolumeclaims', claim('vol-p', 'r', 'data-r-master-0'));
    const err = await client.patchClaim('vol-p', 'data-r-master-0', { storage: '3Gi', uid: created.metadata.uid }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.equal(isReplaced(err), true, 'a successor under the same name is not patched');
    assert.equal(
      (api.store.read('persistentvolumeclaims', 'vol-p', 'data-r-master-0')['spec'] as any).resources.requests.storage,
      '1Gi',
    );
  });

  test('getStatefulSet: the object, or null when it does not exist', async () => {
    await api.store.create('statefulsets', statefulSet('vol-s', 'r-master'));
    const set = await client.getStatefulSet('vol-s', 'r-master');
    assert.equal(set?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.['storage'], '1Gi');
    assert.equal(await client.getStatefulSet('vol-s', 'missing'), null);
  });

  test('deleteStatefulSetOrphan: the set is deleted with its dependents orphaned, its pods stay; a wrong uid deletes nothing', async () => {
    const set = await api.store.create('statefulsets', statefulSet('vol-d', 'r-replica'));
    const owner = {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      name: 'r-replica',
      uid: set.metadata.uid,
      controller: true,
    };
    await api.store.create('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'r-replica-0', namespace: 'vol-d', ownerReferences: [owner] },
      spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] },
    });

    const err = await client.deleteStatefulSetOrphan('vol-d', 'r-replica', 'some-other-uid').then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.equal(isConflict(err), true, 'the uid precondition failed: 409');
    assert.equal(
      api.store.read('statefulsets', 'vol-d', 'r-replica').metadata.deletionTimestamp,
      undefined,
      'still there, not being deleted',
    );

    await client.deleteStatefulSetOrphan('vol-d', 'r-replica', set.metadata.uid);
    // The API server marks the set deleted and hands it to the garbage collector with the
    // `orphan` finalizer (propagationPolicy Orphan); the collector, which does not run here, would
    // drop the pods' owner references and then the set.
    const deleting = await until('the set marked deleted', () => {
      const s = api.store.get('statefulsets', 'vol-d', 'r-replica');
      return s?.metadata.deletionTimestamp ? s : undefined;
    });
    assert.deepEqual(deleting.metadata.finalizers, ['orphan']);
    const pod = api.store.get('pods', 'vol-d', 'r-replica-0');
    assert.ok(pod, 'the pod was not deleted');
    assert.equal(pod.metadata.deletionTimestamp, undefined);
  });
});
