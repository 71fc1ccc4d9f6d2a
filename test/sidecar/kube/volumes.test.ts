// The volume-expansion calls of the sidecar's Kubernetes adapter against the API stand-in over
// HTTP through client-node: claims by the Redis' labels, StorageClasses, a claim merge patch with
// a uid precondition, and a StatefulSet read and deleted with its pods orphaned.
// Network: the stand-in's HTTP server on 127.0.0.1 (random port); no Redis.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startKubeApi, type KubeApiServer } from '../../support/kube-api/index.ts';
import { isConflict, isReplaced, KubeClient } from '../../../src/sidecar/kube/client.ts';
import { podSelectorLabels, RESIZE_REFUSED_ANNOTATION } from '../../../src/api/labels.ts';

function claim(namespace: string, redis: string, name: string, storage = '1Gi') {
  return {
    metadata: { name, namespace, labels: { ...podSelectorLabels(redis), 'app.kubernetes.io/component': 'replica-set' } },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, storageClassName: 'grow' },
    status: { phase: 'Bound', capacity: { storage } },
  };
}

function statefulSet(namespace: string, name: string, size = '1Gi') {
  return {
    metadata: { name, namespace },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      serviceName: 'h',
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] } },
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: size } } } }],
    },
  };
}

describe('KubeClient volume calls', () => {
  let api: KubeApiServer;
  let client: KubeClient;

  before(async () => {
    api = await startKubeApi();
    client = new KubeClient(api.kubeConfig('sidecar-a'), { identity: 'sidecar-a', requestTimeoutMs: 500 });
  });
  after(async () => {
    await api.close();
  });

  test("listRedisClaims: the Redis' claims in its namespace only, by its pod selector labels", async () => {
    api.store.create('persistentvolumeclaims', claim('vol-a', 'r', 'data-r-master-0'));
    api.store.create('persistentvolumeclaims', claim('vol-a', 'r', 'data-r-replica-0'));
    api.store.create('persistentvolumeclaims', claim('vol-a', 'other', 'data-other-master-0'));
    api.store.create('persistentvolumeclaims', claim('vol-b', 'r', 'data-r-master-0'));
    api.store.create('persistentvolumeclaims', { metadata: { name: 'unlabelled', namespace: 'vol-a' }, spec: {} });
    const claims = await client.listRedisClaims('vol-a', 'r');
    assert.deepEqual(claims.map((c) => c.metadata?.name).sort(), ['data-r-master-0', 'data-r-replica-0']);
    assert.equal(claims[0]!.spec?.resources?.requests?.['storage'], '1Gi');
    assert.equal(claims[0]!.status?.capacity?.['storage'], '1Gi');
  });

  test('listStorageClasses: every class with allowVolumeExpansion', async () => {
    api.store.create('storageclasses', { metadata: { name: 'grow' }, provisioner: 'p', allowVolumeExpansion: true });
    api.store.create('storageclasses', { metadata: { name: 'fixed' }, provisioner: 'p' });
    const classes = await client.listStorageClasses();
    assert.deepEqual(classes.map((c) => [c.metadata?.name, c.allowVolumeExpansion ?? false]).sort(), [
      ['fixed', false],
      ['grow', true],
    ]);
  });

  test('patchClaim: one merge patch of the storage request and annotations; null removes; a stale uid is refused', async () => {
    const created = api.store.create('persistentvolumeclaims', {
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
    const stored = api.store.read('persistentvolumeclaims', 'vol-p', 'data-r-master-0');
    assert.equal(stored.metadata.annotations?.[RESIZE_REFUSED_ANNOTATION], undefined);
    assert.equal((stored['spec'] as any).resources.requests.storage, '2Gi');

    api.store.delete('persistentvolumeclaims', 'vol-p', 'data-r-master-0');
    api.store.create('persistentvolumeclaims', claim('vol-p', 'r', 'data-r-master-0'));
    const err = await client.patchClaim('vol-p', 'data-r-master-0', { storage: '3Gi', uid: created.metadata.uid }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.equal(isReplaced(err), true, 'a successor under the same name is not patched');
    assert.equal((api.store.read('persistentvolumeclaims', 'vol-p', 'data-r-master-0')['spec'] as any).resources.requests.storage, '1Gi');
  });

  test('getStatefulSet: the object, or null when it does not exist', async () => {
    api.store.create('statefulsets', statefulSet('vol-s', 'r-master'));
    const set = await client.getStatefulSet('vol-s', 'r-master');
    assert.equal(set?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.['storage'], '1Gi');
    assert.equal(await client.getStatefulSet('vol-s', 'missing'), null);
  });

  test('deleteStatefulSetOrphan: the set goes, its pods stay (owner reference dropped); a wrong uid deletes nothing', async () => {
    const set = api.store.create('statefulsets', statefulSet('vol-d', 'r-replica'));
    const owner = { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'r-replica', uid: set.metadata.uid, controller: true };
    api.store.create('pods', { metadata: { name: 'r-replica-0', namespace: 'vol-d', ownerReferences: [owner] }, spec: { containers: [{ name: 'redis' }] } });

    const err = await client.deleteStatefulSetOrphan('vol-d', 'r-replica', 'some-other-uid').then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.equal(isConflict(err), true, 'the uid precondition failed: 409');
    assert.ok(api.store.get('statefulsets', 'vol-d', 'r-replica'), 'still there');

    await client.deleteStatefulSetOrphan('vol-d', 'r-replica', set.metadata.uid);
    assert.equal(api.store.get('statefulsets', 'vol-d', 'r-replica'), undefined);
    const pod = api.store.get('pods', 'vol-d', 'r-replica-0');
    assert.ok(pod, 'the pod was orphaned, not deleted');
    assert.deepEqual(pod.metadata.ownerReferences ?? [], []);
  });
});
