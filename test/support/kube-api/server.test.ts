// The stand-in driven by @kubernetes/client-node 2.x itself, so the client's real code paths
// (serialisation, content types, error handling, Watch, informers) run against it.
// Network: an HTTP server on 127.0.0.1, random port (no Redis here).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  Watch,
  type KubeConfig,
  type V1Pod,
} from '@kubernetes/client-node';
import { startKubeApi, type KubeApiServer } from './index.ts';
import { until } from '../until.ts';

const NS = 'team-a';

function statusOf(err: unknown): { code: number; reason?: string; kind?: string; message?: string } {
  assert.ok(err instanceof ApiException, `expected an ApiException, got ${String(err)}`);
  const body = typeof err.body === 'string' ? (JSON.parse(err.body) as Record<string, unknown>) : (err.body as Record<string, unknown>);
  return { code: err.code, reason: body['reason'] as string, kind: body['kind'] as string, message: body['message'] as string };
}

async function rejectsWith(p: Promise<unknown>, code: number, reason?: string): Promise<void> {
  try {
    await p;
  } catch (e) {
    const s = statusOf(e);
    assert.equal(s.kind, 'Status');
    assert.equal(s.code, code, s.message);
    if (reason) assert.equal(s.reason, reason, s.message);
    return;
  }
  assert.fail(`expected HTTP ${code}${reason ? ` ${reason}` : ''}`);
}

function pod(name: string, labels: Record<string, string> = {}): V1Pod {
  return { metadata: { name, namespace: NS, labels }, spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] } };
}

function redis(name: string, extra: Record<string, unknown> = {}) {
  return { apiVersion: 'redis.example.com/v1', kind: 'Redis', metadata: { name, namespace: NS, ...extra }, spec: { replicas: 2 } };
}

describe('kube-api stand-in through client-node', () => {
  let api: KubeApiServer;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let coordination: CoordinationV1Api;

  before(async () => {
    api = await startKubeApi();
    kc = api.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    coordination = kc.makeApiClient(CoordinationV1Api);
  });
  after(async () => {
    await api.close();
  });

  test('create, read, replace, list and delete a pod', async () => {
    const created = await core.createNamespacedPod({ namespace: NS, body: pod('crud-0', { app: 'crud' }) });
    assert.ok(created.metadata?.uid);
    assert.ok(created.metadata?.resourceVersion);
    assert.ok(created.metadata?.creationTimestamp instanceof Date);
    assert.equal(created.status?.phase, 'Pending', 'a new pod starts Pending; the status sent is ignored');
    assert.equal(api.requests.at(-1)?.status, 201);

    const read = await core.readNamespacedPod({ namespace: NS, name: 'crud-0' });
    assert.equal(read.metadata?.uid, created.metadata?.uid);

    read.metadata!.labels = { app: 'crud', tier: 'cache' };
    const replaced = await core.replaceNamespacedPod({ namespace: NS, name: 'crud-0', body: read });
    assert.ok(Number(replaced.metadata!.resourceVersion) > Number(created.metadata!.resourceVersion));
    assert.deepEqual(replaced.metadata?.labels, { app: 'crud', tier: 'cache' });

    const list = await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=crud' });
    assert.deepEqual(
      list.items.map((p) => p.metadata?.name),
      ['crud-0'],
    );
    assert.ok(list.metadata?.resourceVersion);

    const deleted = await core.deleteNamespacedPod({ namespace: NS, name: 'crud-0' });
    assert.equal(deleted.metadata?.name, 'crud-0');
    await rejectsWith(core.readNamespacedPod({ namespace: NS, name: 'crud-0' }), 404, 'NotFound');
  });

  test('create of an existing name is 409 AlreadyExists', async () => {
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'dup' }, stringData: { password: 'x' } } });
    await rejectsWith(core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'dup' } } }), 409, 'AlreadyExists');
  });

  test('replace with a stale resourceVersion is 409 Conflict', async () => {
    const first = await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'cfg' }, data: { a: '1' } } });
    const second = await core.replaceNamespacedConfigMap({ namespace: NS, name: 'cfg', body: { ...first, data: { a: '2' } } });
    assert.notEqual(second.metadata?.resourceVersion, first.metadata?.resourceVersion);
    await rejectsWith(core.replaceNamespacedConfigMap({ namespace: NS, name: 'cfg', body: { ...first, data: { a: '3' } } }), 409, 'Conflict');
    const now = await core.readNamespacedConfigMap({ namespace: NS, name: 'cfg' });
    assert.deepEqual(now.data, { a: '2' });
  });

  test('label and field selectors', async (t) => {
    const pods: Array<[string, Record<string, string>]> = [
      ['sel-a', { app: 'redis', role: 'master' }],
      ['sel-b', { app: 'redis', role: 'replica' }],
      ['sel-c', { app: 'redis' }],
      ['sel-d', { app: 'other', role: 'replica' }],
    ];
    for (const [name, labels] of pods) await core.createNamespacedPod({ namespace: NS, body: pod(name, { ...labels, suite: 'sel' }) });
    const cases: Array<[string, string[]]> = [
      ['app=redis', ['sel-a', 'sel-b', 'sel-c']],
      ['app==redis,role=replica', ['sel-b']],
      ['role!=replica', ['sel-a', 'sel-c']],
      ['role in (master, replica)', ['sel-a', 'sel-b', 'sel-d']],
      ['role notin (master)', ['sel-b', 'sel-c', 'sel-d']],
      ['role', ['sel-a', 'sel-b', 'sel-d']],
      ['!role', ['sel-c']],
      ['app=redis,!role', ['sel-c']],
    ];
    for (const [selector, expected] of cases) {
      await t.test(selector, async () => {
        const list = await core.listNamespacedPod({ namespace: NS, labelSelector: `suite=sel,${selector}` });
        assert.deepEqual(list.items.map((p) => p.metadata?.name).sort(), expected, selector);
      });
    }
    const byName = await core.listNamespacedPod({ namespace: NS, fieldSelector: 'metadata.name=sel-b' });
    assert.deepEqual(
      byName.items.map((p) => p.metadata?.name),
      ['sel-b'],
    );
    const notB = await core.listPodForAllNamespaces({ labelSelector: 'suite=sel', fieldSelector: `metadata.name!=sel-b,metadata.namespace=${NS}` });
    assert.deepEqual(notB.items.map((p) => p.metadata?.name).sort(), ['sel-a', 'sel-c', 'sel-d']);
    await rejectsWith(core.listNamespacedPod({ namespace: NS, labelSelector: 'role in (master' }), 400, 'BadRequest');
    await rejectsWith(core.listNamespacedPod({ namespace: NS, fieldSelector: 'spec.containers=x' }), 400, 'BadRequest');
  });

  test('all-namespaces list spans namespaces; built-in list items carry no kind', async () => {
    await core.createNamespacedConfigMap({ namespace: 'team-b', body: { metadata: { name: 'spread', labels: { spread: 'y' } } } });
    await core.createNamespacedConfigMap({ namespace: 'team-c', body: { metadata: { name: 'spread', labels: { spread: 'y' } } } });
    const all = await core.listConfigMapForAllNamespaces({ labelSelector: 'spread=y' });
    assert.deepEqual(
      all.items.map((c) => c.metadata?.namespace),
      ['team-b', 'team-c'],
    );
    const raw = (await (await fetch(`${api.url}/api/v1/configmaps?labelSelector=spread%3Dy`)).json()) as {
      kind: string;
      items: Array<Record<string, unknown>>;
    };
    assert.equal(raw.kind, 'ConfigMapList');
    assert.equal(raw.items[0]!['kind'], undefined);
  });

  test('merge patch needs the merge-patch content type (setHeaderOptions); a wrong one is refused', async () => {
    await core.createNamespacedPod({ namespace: NS, body: pod('patch-0', { app: 'p' }) });
    const body = { metadata: { labels: { 'redis.example.com/role': 'master', app: null } } };
    // client-node's default for patch is application/json-patch+json: a real server cannot decode an object as a JSON patch.
    await rejectsWith(core.patchNamespacedPod({ namespace: NS, name: 'patch-0', body }), 400, 'BadRequest');
    const patched = await core.patchNamespacedPod({ namespace: NS, name: 'patch-0', body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    assert.deepEqual(patched.metadata?.labels, { 'redis.example.com/role': 'master' });
    await rejectsWith(
      core.patchNamespacedPod({ namespace: NS, name: 'patch-0', body }, setHeaderOptions('Content-Type', 'application/json')),
      415,
      'UnsupportedMediaType',
    );
    const json = await core.patchNamespacedPod({
      namespace: NS,
      name: 'patch-0',
      body: [{ op: 'add', path: '/metadata/annotations', value: { 'redis.example.com/link': 'up' } }],
    });
    assert.deepEqual(json.metadata?.annotations, { 'redis.example.com/link': 'up' });
    const smp = await core.patchNamespacedPod(
      { namespace: NS, name: 'patch-0', body: { spec: { containers: [{ name: 'sidecar', image: 'op' }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    assert.deepEqual(
      smp.spec?.containers.map((c) => c.name),
      ['redis', 'sidecar'],
      'strategic merge merges containers by name',
    );
  });

  test('custom resources: merge and JSON patch work, strategic merge is 415, PUT needs a resourceVersion', async () => {
    await custom.createNamespacedCustomObject({ group: 'redis.example.com', version: 'v1', namespace: NS, plural: 'redises', body: redis('cr-patch') });
    const params = { group: 'redis.example.com', version: 'v1', namespace: NS, plural: 'redises', name: 'cr-patch' };
    const merged = (await custom.patchNamespacedCustomObject(
      { ...params, body: { spec: { replicas: 3 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as ReturnType<typeof redis>;
    assert.equal(merged.spec.replicas, 3);
    await rejectsWith(
      custom.patchNamespacedCustomObject({ ...params, body: { spec: { replicas: 1 } } }, setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch)),
      415,
      'UnsupportedMediaType',
    );
    const noRv = { ...redis('cr-patch'), spec: { replicas: 5 } };
    await rejectsWith(custom.replaceNamespacedCustomObject({ ...params, body: noRv }), 422, 'Invalid');
  });

  test('status subresource: status writes change status only, main writes keep status, generation follows spec', async () => {
    const params = { group: 'redis.example.com', version: 'v1', namespace: NS, plural: 'redises', name: 'cr-status' };
    const created = (await custom.createNamespacedCustomObject({ ...params, body: { ...redis('cr-status'), status: { phase: 'Running' } } })) as Record<
      string,
      any
    >;
    assert.equal(created['status'], undefined, 'status is dropped on create');
    assert.equal(created['metadata'].generation, 1);
    const withStatus = (await custom.patchNamespacedCustomObjectStatus(
      { ...params, body: { status: { phase: 'Pending' }, spec: { replicas: 9 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Record<string, any>;
    assert.equal(withStatus['status'].phase, 'Pending');
    assert.equal(withStatus['spec'].replicas, 2, 'the status subresource ignores spec');
    assert.equal(withStatus['metadata'].generation, 1, 'a status change does not bump generation');
    const relabelled = (await custom.patchNamespacedCustomObject(
      { ...params, body: { metadata: { labels: { a: 'b' } }, status: { phase: 'Failed' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Record<string, any>;
    assert.equal(relabelled['status'].phase, 'Pending', 'main resource writes ignore status');
    assert.equal(relabelled['metadata'].generation, 1, 'a metadata change does not bump generation');
    const respec = (await custom.patchNamespacedCustomObject(
      { ...params, body: { spec: { replicas: 4 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Record<string, any>;
    assert.equal(respec['metadata'].generation, 2);
    const replaced = (await custom.replaceNamespacedCustomObjectStatus({
      ...params,
      body: { ...respec, status: { phase: 'Running', replicas: 4, selector: 'app=x' } },
    })) as Record<string, any>;
    assert.equal(replaced['status'].phase, 'Running');
  });

  test('scale subresource of redises as autoscaling/v1 Scale', async () => {
    const params = { group: 'redis.example.com', version: 'v1', namespace: NS, plural: 'redises', name: 'cr-scale' };
    await custom.createNamespacedCustomObject({ ...params, body: redis('cr-scale') });
    api.store.mutate('redises', NS, 'cr-scale', (o) => {
      o['status'] = { replicas: 2, selector: 'app.kubernetes.io/instance=cr-scale' };
    });
    const scale = (await custom.getNamespacedCustomObjectScale(params)) as Record<string, any>;
    assert.equal(scale['kind'], 'Scale');
    assert.equal(scale['apiVersion'], 'autoscaling/v1');
    assert.deepEqual(scale['spec'], { replicas: 2 });
    assert.deepEqual(scale['status'], { replicas: 2, selector: 'app.kubernetes.io/instance=cr-scale' });
    const patched = (await custom.patchNamespacedCustomObjectScale(
      { ...params, body: { spec: { replicas: 3 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as Record<string, any>;
    assert.equal(patched['spec'].replicas, 3);
    assert.equal((api.store.read('redises', NS, 'cr-scale')['spec'] as { replicas: number }).replicas, 3);
    await rejectsWith(custom.replaceNamespacedCustomObjectScale({ ...params, body: { ...scale, spec: { replicas: 1 } } }), 409, 'Conflict');
    const fresh = (await custom.getNamespacedCustomObjectScale(params)) as Record<string, any>;
    const replaced = (await custom.replaceNamespacedCustomObjectScale({ ...params, body: { ...fresh, spec: { replicas: 1 } } })) as Record<string, any>;
    assert.equal(replaced['spec'].replicas, 1);
  });

  test('validation: names and labels are checked (422 Invalid); a registered validator runs', async () => {
    await rejectsWith(core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'Bad_Name' } } }), 422, 'Invalid');
    await rejectsWith(core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'ok', labels: { 'bad key!': 'x' } } } }), 422, 'Invalid');
    await rejectsWith(core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'ok', labels: { k: 'v'.repeat(64) } } } }), 422, 'Invalid');
    await rejectsWith(core.createNamespacedService({ namespace: NS, body: { metadata: { name: '1svc' } } }), 422, 'Invalid');
    const remove = api.store.addValidator('configmaps', ({ object }) =>
      (object['data'] as Record<string, string> | undefined)?.['forbidden']
        ? [{ reason: 'FieldValueForbidden', field: 'data.forbidden', message: 'Forbidden: no' }]
        : [],
    );
    await rejectsWith(core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'hooked' }, data: { forbidden: 'x' } } }), 422, 'Invalid');
    remove();
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'hooked' }, data: { forbidden: 'x' } } });
  });

  test('leases: MicroTime fields need six fractional digits, as on a real server', async () => {
    const base = { metadata: { name: 'lease-time' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 4 } };
    await rejectsWith(
      coordination.createNamespacedLease({ namespace: NS, body: { ...base, spec: { ...base.spec, renewTime: new Date() } } }),
      400,
      'BadRequest',
    );
    const lease = await coordination.createNamespacedLease({ namespace: NS, body: { ...base, spec: { ...base.spec, renewTime: new V1MicroTime() } } });
    assert.equal(lease.spec?.holderIdentity, 'a');
    // client-node 2.x does not deserialise MicroTime: it comes back as the server's string.
    assert.match(String(lease.spec?.renewTime), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  });

  test('ownerReferences: deleting the owner deletes its dependents', async () => {
    const owner = (await custom.createNamespacedCustomObject({
      group: 'redis.example.com',
      version: 'v1',
      namespace: NS,
      plural: 'redises',
      body: redis('gc-owner'),
    })) as Record<string, any>;
    const ref = { apiVersion: 'redis.example.com/v1', kind: 'Redis', name: 'gc-owner', uid: owner['metadata'].uid as string, controller: true };
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'gc-owner-auth', ownerReferences: [ref] }, stringData: { password: 'p' } } });
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'gc-owner-config', ownerReferences: [ref] } } });
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'gc-bystander' } } });
    await custom.deleteNamespacedCustomObject({ group: 'redis.example.com', version: 'v1', namespace: NS, plural: 'redises', name: 'gc-owner' });
    await rejectsWith(core.readNamespacedSecret({ namespace: NS, name: 'gc-owner-auth' }), 404, 'NotFound');
    await rejectsWith(core.readNamespacedConfigMap({ namespace: NS, name: 'gc-owner-config' }), 404, 'NotFound');
    await core.readNamespacedConfigMap({ namespace: NS, name: 'gc-bystander' });
  });

  test('finalizers: delete sets deletionTimestamp; the object goes when the last finalizer is removed', async () => {
    const params = { group: 'redis.example.com', version: 'v1', namespace: NS, plural: 'redises', name: 'fin' };
    await custom.createNamespacedCustomObject({ ...params, body: redis('fin', { finalizers: ['metacontroller.io/redis-operator'] }) });
    const pending = (await custom.deleteNamespacedCustomObject(params)) as Record<string, any>;
    assert.ok(pending['metadata'].deletionTimestamp, 'delete answers with the object, now terminating');
    const still = (await custom.getNamespacedCustomObject(params)) as Record<string, any>;
    assert.ok(still['metadata'].deletionTimestamp);
    await rejectsWith(
      custom.patchNamespacedCustomObject(
        { ...params, body: { metadata: { finalizers: ['metacontroller.io/redis-operator', 'x.io/new'] } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
      422,
      'Invalid',
    );
    await custom.patchNamespacedCustomObject(
      { ...params, body: { metadata: { finalizers: null } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await rejectsWith(custom.getNamespacedCustomObject(params), 404, 'NotFound');
  });

  test('watch from a resourceVersion replays later events; a compacted one gets an ERROR 410 Expired event', async () => {
    const start = await core.listNamespacedConfigMap({ namespace: 'watch-ns' });
    const rv = start.metadata!.resourceVersion!;
    await core.createNamespacedConfigMap({ namespace: 'watch-ns', body: { metadata: { name: 'w1' } } });
    await core.patchNamespacedConfigMap(
      { namespace: 'watch-ns', name: 'w1', body: { data: { a: 'b' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.deleteNamespacedConfigMap({ namespace: 'watch-ns', name: 'w1' });
    const seen: Array<[string, string | undefined]> = [];
    const watch = new Watch(kc);
    const ctl = await watch.watch(
      '/api/v1/namespaces/watch-ns/configmaps',
      { resourceVersion: rv },
      (type, obj) => seen.push([type, obj.metadata?.name]),
      () => {},
    );
    await until('three replayed events', () => seen.length >= 3);
    assert.deepEqual(seen, [
      ['ADDED', 'w1'],
      ['MODIFIED', 'w1'],
      ['DELETED', 'w1'],
    ]);
    await core.createNamespacedConfigMap({ namespace: 'watch-ns', body: { metadata: { name: 'w2' } } });
    await until('the live event', () => seen.length >= 4);
    assert.deepEqual(seen[3], ['ADDED', 'w2']);
    ctl.abort();

    api.store.compact();
    const errorsSeen: Array<{ type: string; code: unknown; reason: unknown }> = [];
    let done = false;
    await watch.watch(
      '/api/v1/namespaces/watch-ns/configmaps',
      { resourceVersion: rv },
      (type, obj) => errorsSeen.push({ type, code: obj.code, reason: obj.reason }),
      () => {
        done = true;
      },
    );
    await until('the stream to end', () => done);
    assert.deepEqual(errorsSeen, [{ type: 'ERROR', code: 410, reason: 'Expired' }]);
  });

  test('watch with a label selector turns label changes into ADDED/DELETED', async () => {
    const seen: Array<[string, string | undefined]> = [];
    const watch = new Watch(kc);
    const ctl = await watch.watch(
      `/api/v1/namespaces/${NS}/pods`,
      { labelSelector: 'redis.example.com/role=master', resourceVersion: api.store.resourceVersion },
      (type, obj) => seen.push([type, obj.metadata?.name]),
      () => {},
    );
    await core.createNamespacedPod({ namespace: NS, body: pod('role-0') });
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    await core.patchNamespacedPod({ namespace: NS, name: 'role-0', body: { metadata: { labels: { 'redis.example.com/role': 'master' } } } }, merge);
    await core.patchNamespacedPod({ namespace: NS, name: 'role-0', body: { metadata: { annotations: { x: 'y' } } } }, merge);
    await core.patchNamespacedPod({ namespace: NS, name: 'role-0', body: { metadata: { labels: { 'redis.example.com/role': 'replica' } } } }, merge);
    await until('three events', () => seen.length >= 3);
    assert.deepEqual(seen, [
      ['ADDED', 'role-0'],
      ['MODIFIED', 'role-0'],
      ['DELETED', 'role-0'],
    ]);
    ctl.abort();
  });

  test('an informer on all namespaces follows adds, updates and deletes, and relists after the stream closes', async () => {
    const informer = makeInformer(kc, '/api/v1/secrets', () => core.listSecretForAllNamespaces({ labelSelector: 'inf=1' }), 'inf=1');
    const events: string[] = [];
    informer.on('add', (s) => events.push(`add ${s.metadata?.namespace}/${s.metadata?.name}`));
    informer.on('update', (s) => events.push(`update ${s.metadata?.name}`));
    informer.on('delete', (s) => events.push(`delete ${s.metadata?.name}`));
    await core.createNamespacedSecret({ namespace: 'inf-a', body: { metadata: { name: 'pre', labels: { inf: '1' } } } });
    await informer.start();
    await until('the initial list', () => events.includes('add inf-a/pre'));
    await core.createNamespacedSecret({ namespace: 'inf-b', body: { metadata: { name: 'live', labels: { inf: '1' } } } });
    await until('the live add', () => events.includes('add inf-b/live'));
    api.closeWatches();
    await core.patchNamespacedSecret(
      { namespace: 'inf-b', name: 'live', body: { data: { k: 'dg==' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await until('the update after the re-watch', () => events.includes('update live'));
    await core.deleteNamespacedSecret({ namespace: 'inf-a', name: 'pre' });
    await until('the delete', () => events.includes('delete pre'));
    await informer.stop();
    assert.equal(informer.list().length, 1);
  });

  test('core v1 events are validated like a real server', async () => {
    const involvedObject = { apiVersion: 'redis.example.com/v1', kind: 'Redis', name: 'r', namespace: NS };
    const ok = await core.createNamespacedEvent({
      namespace: NS,
      body: {
        metadata: { generateName: 'r.' },
        involvedObject,
        reason: 'Bootstrap',
        message: 'm',
        type: 'Normal',
        eventTime: new V1MicroTime(),
        action: 'Bootstrap',
        reportingComponent: 'redis-operator',
        reportingInstance: 'pod-a',
      },
    });
    assert.match(ok.metadata!.name!, /^r\.[a-z0-9]{5}$/);
    await rejectsWith(
      core.createNamespacedEvent({ namespace: NS, body: { metadata: { generateName: 'r.' }, involvedObject, reason: 'X', eventTime: new V1MicroTime() } }),
      422,
      'Invalid',
    );
    await rejectsWith(
      core.createNamespacedEvent({
        namespace: NS,
        body: { metadata: { generateName: 'r.' }, involvedObject: { ...involvedObject, namespace: 'elsewhere' }, reason: 'X' },
      }),
      422,
      'Invalid',
    );
  });

  test('faults: the next N requests to a path fail with 500, then requests succeed again', async () => {
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'faulty' } } });
    const fault = api.faults.add({ path: `/api/v1/namespaces/${NS}/configmaps/faulty`, times: 2, action: { kind: 'status', code: 500 } });
    await rejectsWith(core.readNamespacedConfigMap({ namespace: NS, name: 'faulty' }), 500, 'InternalError');
    await rejectsWith(core.readNamespacedConfigMap({ namespace: NS, name: 'faulty' }), 500, 'InternalError');
    await core.readNamespacedConfigMap({ namespace: NS, name: 'faulty' });
    assert.equal(fault.hits, 2);
  });

  test('faults: a hung request never answers; other clients are unaffected', async () => {
    await core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'hung' } } });
    const fault = api.faults.add({ client: 'cut-off', action: { kind: 'hang' } });
    const cutOff = api.kubeConfig('cut-off').makeApiClient(CoreV1Api);
    const signal = AbortSignal.timeout(200);
    const abortable = {
      middleware: [
        {
          pre: (ctx: any) => {
            ctx.setSignal(signal);
            return { toPromise: () => Promise.resolve(ctx) };
          },
          post: (r: any) => ({ toPromise: () => Promise.resolve(r) }),
        },
      ],
      middlewareMergeStrategy: 'append' as const,
    };
    await assert.rejects(
      cutOff.readNamespacedConfigMap({ namespace: NS, name: 'hung' }, abortable as never),
      (e: Error) => e.name === 'AbortError' || e.name === 'TimeoutError' || /abort/i.test(e.message),
    );
    await core.readNamespacedConfigMap({ namespace: NS, name: 'hung' });
    fault.remove();
    await cutOff.readNamespacedConfigMap({ namespace: NS, name: 'hung' });
  });

  test('discovery endpoints describe the table', async () => {
    const apis = (await (await fetch(`${api.url}/apis`)).json()) as { groups: Array<{ name: string }> };
    assert.ok(apis.groups.some((g) => g.name === 'redis.example.com'));
    const gv = (await (await fetch(`${api.url}/apis/redis.example.com/v1`)).json()) as { resources: Array<{ name: string; kind: string }> };
    assert.deepEqual(
      gv.resources.map((r) => r.name),
      ['redises', 'redises/status', 'redises/scale'],
    );
    const core1 = (await (await fetch(`${api.url}/api/v1`)).json()) as { resources: Array<{ name: string }> };
    assert.ok(core1.resources.some((r) => r.name === 'pods/status'));
    const missing = await fetch(`${api.url}/apis/nope.example.com/v1/things`);
    assert.equal(missing.status, 404);
    assert.equal(((await missing.json()) as { kind: string }).kind, 'Status');
  });
});
