// VolumeExpander, the runner of volume expansion, against a real kube-apiserver through the real
// KubeClient (a ServiceAccount with the sidecar's role, so RBAC and the PersistentVolumeClaimResize
// admission judge its calls): a grown size raises the claims, then replaces the StatefulSets one
// at a time with their pods orphaned (the test plays Metacontroller and recreates each one, and the
// garbage collector, which does not run here); a class without expansion is refused once, with the
// annotation; only the leader writes.
// Network: the API server and its fault proxy on 127.0.0.1; no Redis.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { KubeClient } from '../../../../src/sidecar/adapters/kube/client.ts';
import { podSelectorLabels, RESIZE_REFUSED_ANNOTATION } from '../../../../src/api/labels.ts';
import { validateSpec } from '../../../../src/api/validate.ts';
import type { RedisSpec } from '../../../../src/api/schema.ts';
import { hasVolumeCalls, VolumeExpander, type VolumeEvent } from '../../../../src/sidecar/redis/manager/volumes.ts';
import { startApiServer, type ApiServer } from '../../../k8s/api-server.ts';
import { until } from '../../../support/until.ts';

type Json = Record<string, any>;

function spec(size: string, extra: Json = {}): RedisSpec {
  const verdict = validateSpec('r', { persistence: { size, ...extra } });
  assert.ok(verdict.ok);
  return verdict.spec;
}

function claim(ns: string, name: string, storage: string, storageClassName = 'grow') {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: ns, labels: podSelectorLabels('r') },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, storageClassName },
    status: { phase: 'Bound', capacity: { storage } },
  };
}

function statefulSet(ns: string, name: string, size: string) {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { set: name } },
      serviceName: 'r-headless',
      template: { metadata: { labels: { set: name } }, spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] } },
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

describe('VolumeExpander', () => {
  let api: ApiServer;
  let kube: KubeClient;
  before(async () => {
    api = await startApiServer();
    kube = new KubeClient(await api.kubeConfig('sidecar-a'), { identity: 'sidecar-a', requestTimeoutMs: 1000 });
    await api.store.create('storageclasses', storageClass('grow', true));
    await api.store.create('storageclasses', storageClass('fixed', false));
    await api.store.create('storageclasses', storageClass('frozen'));
  });
  after(async () => {
    // Only fault rules refuse here: a 401 or 403 from the API server is a call the sidecar's role does not allow.
    const refused = api.requests.filter((r) => (r.status === 401 || r.status === 403) && r.fault === undefined);
    await api.close();
    assert.deepEqual(
      refused.map((r) => `${r.status} ${r.method} ${r.path}`),
      [],
    );
  });

  function expander(ns: string, leader = { on: true }) {
    const events: VolumeEvent[] = [];
    const x = new VolumeExpander({
      kube,
      ref: { namespace: ns, name: 'r' },
      log: pino({ level: 'silent' }),
      event: (e) => events.push(e),
      isLeader: () => leader.on,
    });
    return { x, events };
  }

  /** Bound claims (status written as the volume controller would), the two sets, a pod owned by each. */
  async function setUp(ns: string, storageClass = 'grow') {
    await api.namespace(ns);
    for (const n of ['data-r-master-0', 'data-r-replica-0', 'data-r-replica-1'])
      await api.store.create('persistentvolumeclaims', claim(ns, n, '1Gi', storageClass));
    for (const [i, name] of ['r-master', 'r-replica'].entries()) {
      const set = await api.store.create('statefulsets', statefulSet(ns, name, '1Gi'));
      const owner = {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        name: set.metadata.name,
        uid: set.metadata.uid,
        controller: true,
      };
      await api.store.create('pods', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `${set.metadata.name}-0`, namespace: ns, ownerReferences: [owner] },
        spec: { containers: [{ name: `c${i}`, image: 'redis:7.2' }] },
      });
    }
  }

  /**
   * What the garbage collector (not running here) does after an Orphan delete of the set `name`:
   * drops its owner references from the pods, then the `orphan` finalizer, and the set is gone.
   * The finalizer must be there: it is the mark of a delete with propagationPolicy Orphan (with any
   * other policy the set would have gone at once, or with its pods).
   */
  async function collectOrphans(ns: string, name: string): Promise<void> {
    // The sidecar's delete went through the proxy: the tests' watch shows it a moment later.
    const set = await until(`${name} deleting`, () => {
      const s = api.store.get('statefulsets', ns, name);
      return s?.metadata.deletionTimestamp !== undefined && s;
    });
    assert.deepEqual(set.metadata.finalizers, ['orphan'], `${name} was deleted with its pods orphaned`);
    for (const pod of api.store.list('pods', { namespace: ns })) {
      const refs = pod.metadata.ownerReferences ?? [];
      const kept = refs.filter((r) => r.uid !== set.metadata.uid);
      if (kept.length !== refs.length)
        await api.store.patch(
          'pods',
          ns,
          pod.metadata.name,
          { metadata: { ownerReferences: kept.length > 0 ? kept : null } },
          { type: 'merge' },
        );
    }
    await api.store.patch('statefulsets', ns, name, { metadata: { finalizers: null } }, { type: 'merge' });
  }

  const requested = (ns: string) =>
    api.store
      .list('persistentvolumeclaims', { namespace: ns })
      .map((c) => `${c.metadata.name}=${(c['spec'] as Json).resources.requests.storage}`);
  /** The sidecar wrote every claim through its own client: the test's watch cache shows it a moment later. */
  const grown = (ns: string) =>
    until(
      'every claim requesting 2Gi in the watch cache',
      () => requested(ns).every((r) => r.endsWith('=2Gi')) && requested(ns).length === 3,
    );
  const writes = (from: number) => api.requests.slice(from).filter((r) => r.method !== 'GET');

  test('a pass says whether it found work: nothing at the spec size (the worker then checks rarely), work when it grew', async () => {
    const ns = 'settled';
    await setUp(ns);
    const { x } = expander(ns);
    assert.equal(await x.reconcile(spec('1Gi')), false, 'claims and templates at the spec size: settled');
    assert.equal(await x.reconcile(spec('2Gi')), true, 'grown: claims raised');
  });

  test('persistence on, size grown: claims raised, then each StatefulSet replaced in turn with its pods orphaned', async () => {
    const ns = 'grow';
    await setUp(ns);
    const { x, events } = expander(ns);
    const pods = api.store.list('pods', { namespace: ns }).map((p) => p.metadata.uid);

    await x.reconcile(spec('2Gi'));
    await grown(ns);
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.reason} ${e.message}`),
      ['data-r-master-0', 'data-r-replica-0', 'data-r-replica-1'].map(
        (c) => `Normal VolumeExpansion ${c} requested 1Gi -> 2Gi`,
      ),
    );
    assert.ok(api.store.get('statefulsets', ns, 'r-master'), 'no set replaced before its claims requested the size');

    // Claims requested: the master set goes first, the replica set waits for it to be back.
    await x.reconcile(spec('2Gi'));
    await collectOrphans(ns, 'r-master');
    assert.equal(api.store.get('statefulsets', ns, 'r-master'), undefined);
    assert.ok(api.store.get('statefulsets', ns, 'r-replica'));
    assert.deepEqual(
      api.store.list('pods', { namespace: ns }).map((p) => p.metadata.uid),
      pods,
      'every pod still there',
    );
    assert.deepEqual(api.store.get('pods', ns, 'r-master-0')?.metadata.ownerReferences ?? [], [], 'orphaned');
    assert.equal(events.at(-1)?.reason, 'StatefulSetRecreated');
    assert.match(events.at(-1)!.message, /StatefulSet r-master deleted with its pods orphaned, pods keep running/);
    await x.reconcile(spec('2Gi'));
    assert.ok(api.store.get('statefulsets', ns, 'r-replica'), 'the replica set waits while the master set is missing');

    // Metacontroller recreates it from the hook's fresh templates.
    await api.store.create('statefulsets', statefulSet(ns, 'r-master', '2Gi'));
    await x.reconcile(spec('2Gi'));
    await collectOrphans(ns, 'r-replica');
    assert.equal(api.store.get('statefulsets', ns, 'r-replica'), undefined);
    await api.store.create('statefulsets', statefulSet(ns, 'r-replica', '2Gi'));

    // Done: nothing more is written, however often it runs.
    const from = api.requests.length;
    const told = events.length;
    await x.reconcile(spec('2Gi'));
    await x.reconcile(spec('2Gi'));
    assert.deepEqual(writes(from), []);
    assert.equal(events.length, told);
    assert.deepEqual(
      events.filter((e) => e.reason === 'StatefulSetRecreated').map((e) => e.message.split(' ')[1]),
      ['r-master', 'r-replica'],
    );
    assert.deepEqual(
      api.store.list('pods', { namespace: ns }).map((p) => p.metadata.uid),
      pods,
    );
  });

  test('a class without expansion: refused with a Warning once and the annotation; claims and sets left alone; cleared once it grew', async () => {
    const ns = 'fixed';
    await setUp(ns, 'fixed');
    const { x, events } = expander(ns);
    await x.reconcile(spec('2Gi'));
    await x.reconcile(spec('2Gi'));
    assert.deepEqual(requested(ns), ['data-r-master-0=1Gi', 'data-r-replica-0=1Gi', 'data-r-replica-1=1Gi']);
    assert.ok(
      api.store.get('statefulsets', ns, 'r-master') && api.store.get('statefulsets', ns, 'r-replica'),
      'no set replaced',
    );
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.reason}`),
      Array(3).fill('Warning VolumeExpansionRefused'),
      'one Warning per claim, not one per pass',
    );
    const reason =
      'data-r-master-0 cannot grow from 1Gi to 2Gi: StorageClass fixed does not allow volume expansion (allowVolumeExpansion is false)';
    assert.equal(events[0]!.message, reason);
    assert.equal(
      api.store.read('persistentvolumeclaims', ns, 'data-r-master-0').metadata.annotations?.[RESIZE_REFUSED_ANNOTATION],
      reason,
    );

    // A new sidecar (no memory) reads the annotation: nothing told twice.
    const fresh = expander(ns);
    await fresh.x.reconcile(spec('2Gi'));
    assert.deepEqual(fresh.events, []);

    // The administrator allows expansion: claims grow, annotations go once they request the size.
    await api.store.patch('storageclasses', undefined, 'fixed', { allowVolumeExpansion: true }, { type: 'merge' });
    await x.reconcile(spec('2Gi'));
    await grown(ns);
    await x.reconcile(spec('2Gi'));
    assert.equal(
      api.store.read('persistentvolumeclaims', ns, 'data-r-master-0').metadata.annotations?.[RESIZE_REFUSED_ANNOTATION],
      undefined,
    );
  });

  test('a refusal whose annotation write failed: written on the next pass, the Warning not repeated', async () => {
    const ns = 'fixed-retry';
    await setUp(ns, 'frozen');
    const { x, events } = expander(ns);
    const fault = api.faults.add({
      path: `/api/v1/namespaces/${ns}/persistentvolumeclaims/`,
      method: 'PATCH',
      action: { kind: 'status', code: 500 },
    });
    await x.reconcile(spec('2Gi'));
    fault.remove();
    assert.equal(events.length, 3);
    assert.equal(
      api.store.read('persistentvolumeclaims', ns, 'data-r-master-0').metadata.annotations?.[RESIZE_REFUSED_ANNOTATION],
      undefined,
    );
    await x.reconcile(spec('2Gi'));
    assert.equal(events.length, 3, 'no second Warning');
    assert.match(
      api.store.read('persistentvolumeclaims', ns, 'data-r-master-0').metadata.annotations?.[
        RESIZE_REFUSED_ANNOTATION
      ] ?? '',
      /StorageClass frozen does not allow/,
    );
  });

  test('not the leader, or persistence off: reads at most, writes nothing', async () => {
    const ns = 'standby';
    await setUp(ns);
    const leader = { on: false };
    const { x, events } = expander(ns, leader);
    const from = api.requests.length;
    await x.reconcile(spec('2Gi'));
    await x.reconcile(spec('2Gi', { enableRdb: false, enableAof: false }));
    assert.deepEqual(writes(from), []);
    assert.deepEqual(events, []);
    assert.deepEqual(requested(ns), ['data-r-master-0=1Gi', 'data-r-replica-0=1Gi', 'data-r-replica-1=1Gi']);
  });

  test('a failing API: reconcile never throws; concurrent calls share one pass', async () => {
    const ns = 'faulty';
    await setUp(ns);
    const { x } = expander(ns);
    const fault = api.faults.add({
      path: `/api/v1/namespaces/${ns}/persistentvolumeclaims`,
      method: 'GET',
      action: { kind: 'status', code: 500 },
    });
    const [a, b] = [x.reconcile(spec('2Gi')), x.reconcile(spec('2Gi'))];
    assert.equal(a, b);
    await a;
    fault.remove();
    assert.deepEqual(requested(ns), ['data-r-master-0=1Gi', 'data-r-replica-0=1Gi', 'data-r-replica-1=1Gi']);
  });

  test('hasVolumeCalls: the KubeClient has them, a KubeWriter test double may not', () => {
    assert.equal(hasVolumeCalls(kube), true);
    assert.equal(hasVolumeCalls({ emitEvent: () => undefined }), false);
  });
});
