// VolumeExpander, the runner of volume expansion, against the API stand-in through the real
// KubeClient: a grown size raises the claims, then replaces the StatefulSets one at a time with
// their pods orphaned (the test plays Metacontroller and recreates each one); a class without
// expansion is refused once, with the annotation; only the leader writes.
// Network: the stand-in's HTTP server on 127.0.0.1 (random port); no Redis.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { startKubeApi, type KubeApiServer } from '../../support/kube-api/index.ts';
import { KubeClient } from '../../../src/sidecar/kube/client.ts';
import { podSelectorLabels, RESIZE_REFUSED_ANNOTATION } from '../../../src/api/labels.ts';
import { validateSpec } from '../../../src/api/validate.ts';
import type { RedisSpec } from '../../../src/api/schema.ts';
import { hasVolumeCalls, VolumeExpander, type VolumeEvent } from '../../../src/sidecar/manager/volumes.ts';

type Json = Record<string, any>;

function spec(size: string, extra: Json = {}): RedisSpec {
  const verdict = validateSpec('r', { persistence: { size, ...extra } });
  assert.ok(verdict.ok);
  return verdict.spec;
}

function claim(ns: string, name: string, storage: string, storageClassName = 'grow') {
  return {
    metadata: { name, namespace: ns, labels: podSelectorLabels('r') },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, storageClassName },
    status: { phase: 'Bound', capacity: { storage } },
  };
}

function statefulSet(ns: string, name: string, size: string) {
  return {
    metadata: { name, namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { set: name } },
      serviceName: 'r-headless',
      template: { metadata: { labels: { set: name } }, spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] } },
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: size } } } }],
    },
  };
}

describe('VolumeExpander', () => {
  let api: KubeApiServer;
  let kube: KubeClient;
  before(async () => {
    api = await startKubeApi();
    kube = new KubeClient(api.kubeConfig('sidecar-a'), { identity: 'sidecar-a', requestTimeoutMs: 1000 });
    api.store.create('storageclasses', { metadata: { name: 'grow' }, provisioner: 'p', allowVolumeExpansion: true });
    api.store.create('storageclasses', { metadata: { name: 'fixed' }, provisioner: 'p', allowVolumeExpansion: false });
    api.store.create('storageclasses', { metadata: { name: 'frozen' }, provisioner: 'p' });
  });
  after(() => api.close());

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

  function setUp(ns: string, storageClass = 'grow') {
    for (const n of ['data-r-master-0', 'data-r-replica-0', 'data-r-replica-1']) api.store.create('persistentvolumeclaims', claim(ns, n, '1Gi', storageClass));
    const sets = ['r-master', 'r-replica'].map((n) => api.store.create('statefulsets', statefulSet(ns, n, '1Gi')));
    for (const [i, set] of sets.entries()) {
      const owner = { apiVersion: 'apps/v1', kind: 'StatefulSet', name: set.metadata.name, uid: set.metadata.uid, controller: true };
      api.store.create('pods', {
        metadata: { name: `${set.metadata.name}-0`, namespace: ns, ownerReferences: [owner] },
        spec: { containers: [{ name: `c${i}` }] },
      });
    }
  }

  const requested = (ns: string) =>
    api.store.list('persistentvolumeclaims', { namespace: ns }).map((c) => `${c.metadata.name}=${(c['spec'] as Json).resources.requests.storage}`);
  const writes = (from: number) => api.requests.slice(from).filter((r) => r.method !== 'GET');

  test('a pass says whether it found work: nothing at the spec size (the worker then checks rarely), work when it grew', async () => {
    const ns = 'settled';
    setUp(ns);
    const { x } = expander(ns);
    assert.equal(await x.reconcile(spec('1Gi')), false, 'claims and templates at the spec size: settled');
    assert.equal(await x.reconcile(spec('2Gi')), true, 'grown: claims raised');
  });

  test('persistence on, size grown: claims raised, then each StatefulSet replaced in turn with its pods orphaned', async () => {
    const ns = 'grow';
    setUp(ns);
    const { x, events } = expander(ns);
    const pods = api.store.list('pods', { namespace: ns }).map((p) => p.metadata.uid);

    await x.reconcile(spec('2Gi'));
    assert.deepEqual(requested(ns), ['data-r-master-0=2Gi', 'data-r-replica-0=2Gi', 'data-r-replica-1=2Gi']);
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.reason} ${e.message}`),
      ['data-r-master-0', 'data-r-replica-0', 'data-r-replica-1'].map((c) => `Normal VolumeExpansion ${c} requested 1Gi -> 2Gi`),
    );
    assert.ok(api.store.get('statefulsets', ns, 'r-master'), 'no set replaced before its claims requested the size');

    // Claims requested: the master set goes first, the replica set waits for it to be back.
    await x.reconcile(spec('2Gi'));
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
    api.store.create('statefulsets', statefulSet(ns, 'r-master', '2Gi'));
    await x.reconcile(spec('2Gi'));
    assert.equal(api.store.get('statefulsets', ns, 'r-replica'), undefined);
    api.store.create('statefulsets', statefulSet(ns, 'r-replica', '2Gi'));

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
    setUp(ns, 'fixed');
    const { x, events } = expander(ns);
    await x.reconcile(spec('2Gi'));
    await x.reconcile(spec('2Gi'));
    assert.deepEqual(requested(ns), ['data-r-master-0=1Gi', 'data-r-replica-0=1Gi', 'data-r-replica-1=1Gi']);
    assert.ok(api.store.get('statefulsets', ns, 'r-master') && api.store.get('statefulsets', ns, 'r-replica'), 'no set replaced');
    assert.deepEqual(
      events.map((e) => `${e.type} ${e.reason}`),
      Array(3).fill('Warning VolumeExpansionRefused'),
      'one Warning per claim, not one per pass',
    );
    const reason = 'data-r-master-0 cannot grow from 1Gi to 2Gi: StorageClass fixed does not allow volume expansion (allowVolumeExpansion is false)';
    assert.equal(events[0]!.message, reason);
    assert.equal(api.store.read('persistentvolumeclaims', ns, 'data-r-master-0').metadata.annotations?.[RESIZE_REFUSED_ANNOTATION], reason);

    // A new sidecar (no memory) reads the annotation: nothing told twice.
    const fresh = expander(ns);
    await fresh.x.reconcile(spec('2Gi'));
    assert.deepEqual(fresh.events, []);

    // The administrator allows expansion: claims grow, annotations go once they request the size.
    api.store.patch('storageclasses', undefined, 'fixed', { allowVolumeExpansion: true }, { type: 'merge' });
    await x.reconcile(spec('2Gi'));
    assert.deepEqual(requested(ns), ['data-r-master-0=2Gi', 'data-r-replica-0=2Gi', 'data-r-replica-1=2Gi']);
    await x.reconcile(spec('2Gi'));
    assert.equal(api.store.read('persistentvolumeclaims', ns, 'data-r-master-0').metadata.annotations?.[RESIZE_REFUSED_ANNOTATION], undefined);
  });

  test('a refusal whose annotation write failed: written on the next pass, the Warning not repeated', async () => {
    const ns = 'fixed-retry';
    setUp(ns, 'frozen');
    const { x, events } = expander(ns);
    const fault = api.faults.add({ path: `/api/v1/namespaces/${ns}/persistentvolumeclaims/`, method: 'PATCH', action: { kind: 'status', code: 500 } });
    await x.reconcile(spec('2Gi'));
    fault.remove();
    assert.equal(events.length, 3);
    assert.equal(api.store.read('persistentvolumeclaims', ns, 'data-r-master-0').metadata.annotations?.[RESIZE_REFUSED_ANNOTATION], undefined);
    await x.reconcile(spec('2Gi'));
    assert.equal(events.length, 3, 'no second Warning');
    assert.match(
      api.store.read('persistentvolumeclaims', ns, 'data-r-master-0').metadata.annotations?.[RESIZE_REFUSED_ANNOTATION] ?? '',
      /StorageClass frozen does not allow/,
    );
  });

  test('not the leader, or persistence off: reads at most, writes nothing', async () => {
    const ns = 'standby';
    setUp(ns);
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
    setUp(ns);
    const { x } = expander(ns);
    const fault = api.faults.add({ path: `/api/v1/namespaces/${ns}/persistentvolumeclaims`, method: 'GET', action: { kind: 'status', code: 500 } });
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
