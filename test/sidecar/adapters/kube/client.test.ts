// The sidecar's Kubernetes adapter against a REAL kube-apiserver (test/k8s/api-server.ts) through
// client-node, each client a ServiceAccount of the operator's namespace (the operator's RBAC
// applies) reaching it through the fault proxy, which logs and faults its requests.
// Not modelled: no garbage collector runs, so a generated Secret's owner reference is checked but
// the Secret does not go with its Redis here.
// Network: etcd, kube-apiserver and the fault proxy on 127.0.0.1; no Redis.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { V1Pod } from '@kubernetes/client-node';
import { startApiServer, type ApiServer, type StoredObject } from '../../../k8s/api-server.ts';
import {
  isReplaced,
  KubeClient,
  kubeFailure,
  loadKubeConfig,
  POD_SELECTOR,
} from '../../../../src/sidecar/adapters/kube/client.ts';
import { LINK_ANNOTATION, podSelectorLabels, ROLE_LABEL } from '../../../../src/api/labels.ts';
import { until as untilPolled, type Polled } from '../../../support/until.ts';

/** Polls often: these tests watch elections and informers that change within milliseconds. */
const until = <T>(what: string, check: () => Polled<T>, timeoutMs = 10_000) =>
  untilPolled(what, check, timeoutMs, { everyMs: 5 });

/** Every namespace a test writes to: the real API server refuses objects in a namespace that does not exist. */
const NAMESPACES = [
  'cfg-ns',
  'list-a',
  'list-b',
  'list-c',
  'inf-a',
  'inf-b',
  'elsewhere',
  'rinf-a',
  'patch',
  'replaced',
  'events',
  'auth',
];

function redis(namespace: string, name: string) {
  return { apiVersion: 'redis.example.com/v1', kind: 'Redis', metadata: { name, namespace }, spec: { replicas: 2 } };
}

function redisPod(namespace: string, redisName: string, ordinal: number, extraLabels: Record<string, string> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${redisName}-replica-${ordinal}`,
      namespace,
      labels: { ...podSelectorLabels(redisName), ...extraLabels },
    },
    spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] },
  };
}

describe('KubeClient', () => {
  let api: ApiServer;
  let client: KubeClient;

  before(async () => {
    api = await startApiServer({ namespaces: NAMESPACES });
    client = new KubeClient(await api.kubeConfig('sidecar-a'), {
      identity: 'sidecar-a',
      // Bounds every call (the hung-server test waits it out once); 500 ms failed a plain patch on a
      // loaded 2-core machine.
      requestTimeoutMs: 2000,
      informerRestartDelayMs: 50,
    });
  });
  after(async () => {
    const refused = api.requests.filter((r) => r.status === 403).map((r) => `${r.client} ${r.method} ${r.path}`);
    await api.close();
    assert.deepEqual(refused, [], 'manifests/rbac.yaml allows every call the sidecar made');
  });

  test('loadKubeConfig: injected options, a KUBECONFIG file, and a clear error when neither nor in-cluster', async () => {
    const injected = await api.kubeConfig('from-options');
    const fromOptions = loadKubeConfig({
      options: {
        clusters: injected.clusters,
        users: injected.users,
        contexts: injected.contexts,
        currentContext: injected.currentContext,
      },
    });
    assert.equal(fromOptions.getCurrentCluster()?.server, injected.getCurrentCluster()?.server);

    const dir = mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-'));
    try {
      const file = path.join(dir, 'config');
      const own = await api.kubeConfig('from-file');
      const cluster = own.getCurrentCluster()!;
      // A file as a cluster admin hands one out: the server's CA inline, the ServiceAccount's token.
      writeFileSync(
        file,
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [
            { name: 'test', cluster: { server: cluster.server, 'certificate-authority-data': cluster.caData } },
          ],
          users: [{ name: 'u', user: { token: own.getCurrentUser()!.token } }],
          contexts: [{ name: 'c', context: { cluster: 'test', user: 'u', namespace: 'cfg-ns' } }],
          'current-context': 'c',
        }),
      );
      const kc = loadKubeConfig({ env: { KUBECONFIG: file } });
      await api.store.create('redises', redis('cfg-ns', 'from-file'));
      const listed = await new KubeClient(kc, { identity: 'x', namespaces: ['cfg-ns'] }).listRedis();
      assert.deepEqual(
        listed.map((r) => r.metadata.name),
        ['from-file'],
      );
      assert.equal(api.requests.at(-1)?.client, 'from-file');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.throws(() => loadKubeConfig({ env: {} }), /KUBECONFIG is not set and KUBERNETES_SERVICE_HOST/);
  });

  test('listRedis: all namespaces, or only the configured ones', async () => {
    for (const [ns, name] of [
      ['list-a', 'one'],
      ['list-b', 'two'],
      ['list-c', 'three'],
    ] as const)
      await api.store.create('redises', redis(ns, name));
    const all = await client.listRedis();
    for (const name of ['one', 'two', 'three'])
      assert.ok(
        all.some((r) => r.metadata.name === name),
        name,
      );
    const some = await new KubeClient(await api.kubeConfig('lister'), {
      identity: 'x',
      namespaces: ['list-a', 'list-c'],
    }).listRedis();
    assert.deepEqual(some.map((r) => r.metadata.name).sort(), ['one', 'three']);
  });

  test('pod informer: only managed pods, only watched namespaces, and it restarts after a failure', async () => {
    const scoped = new KubeClient(await api.kubeConfig('scoped'), {
      identity: 'x',
      namespaces: ['inf-a', 'inf-b'],
      informerRestartDelayMs: 50,
    });
    const pods = scoped.podInformer();
    const seen: string[] = [];
    pods.on('add', (p: V1Pod) => seen.push(`add ${p.metadata?.namespace}/${p.metadata?.name}`));
    pods.on('update', (p: V1Pod) => seen.push(`update ${p.metadata?.name} ${p.metadata?.labels?.[ROLE_LABEL] ?? '-'}`));
    pods.on('delete', (p: V1Pod) => seen.push(`delete ${p.metadata?.name}`));
    const errors: unknown[] = [];
    pods.onError((e) => errors.push(e));
    await api.store.create('pods', redisPod('inf-a', 'r', 0));
    // A failing first list: the informer reports it and starts again by itself.
    api.faults.add({
      client: 'scoped',
      path: '/api/v1/namespaces/inf-b/pods',
      method: 'GET',
      times: 1,
      action: { kind: 'status', code: 500 },
    });
    await pods.start().catch(() => undefined);
    await until('the first pod', () => seen.includes('add inf-a/r-replica-0'));
    await api.store.create('pods', redisPod('inf-b', 'r', 1));
    await api.store.create('pods', {
      ...redisPod('inf-a', 'unmanaged', 0),
      metadata: { name: 'unmanaged', namespace: 'inf-a', labels: { app: 'x' } },
    });
    await api.store.create('pods', redisPod('elsewhere', 'r', 2));
    await until('the pod in the namespace whose list failed', () => seen.includes('add inf-b/r-replica-1'));
    assert.equal(errors.length, 1);
    await api.store.patch(
      'pods',
      'inf-a',
      'r-replica-0',
      { metadata: { labels: { [ROLE_LABEL]: 'replica' } } },
      { type: 'merge' },
    );
    await until('the update', () => seen.includes('update r-replica-0 replica'));
    await api.store.delete('pods', 'inf-b', 'r-replica-1');
    await until('the delete', () => seen.includes('delete r-replica-1'));
    assert.deepEqual(
      pods.list().map((p) => p.metadata?.name),
      ['r-replica-0'],
    );
    assert.equal(pods.get('r-replica-0', 'inf-a')?.metadata?.labels?.[ROLE_LABEL], 'replica');
    assert.ok(!seen.some((s) => s.includes('unmanaged') || s.includes('elsewhere')));
    assert.ok(
      api.requests
        .filter((r) => r.client === 'scoped' && r.watch)
        .every((r) => decodeURIComponent(r.query).includes(POD_SELECTOR)),
    );
    await pods.stop();
  });

  test('redis informer on all namespaces follows adds, spec changes and deletes', async () => {
    const redises = client.redisInformer();
    const seen: string[] = [];
    redises.on('add', (r) => seen.push(`add ${r.metadata.namespace}/${r.metadata.name}`));
    redises.on('update', (r) => seen.push(`update ${r.metadata.name} ${(r.spec as { replicas: number }).replicas}`));
    redises.on('delete', (r) => seen.push(`delete ${r.metadata.name}`));
    await redises.start();
    await api.store.create('redises', redis('rinf-a', 'watched'));
    await until('add', () => seen.includes('add rinf-a/watched'));
    await api.store.patch('redises', 'rinf-a', 'watched', { spec: { replicas: 3 } }, { type: 'merge' });
    await until('update', () => seen.includes('update watched 3'));
    await api.store.delete('redises', 'rinf-a', 'watched');
    await until('delete', () => seen.includes('delete watched'));
    await redises.stop();
  });

  test('patchPodMetadata: one merge patch (right content type) sets and removes keys, leaves others alone', async () => {
    await api.store.create('pods', redisPod('patch', 'r', 0, { keep: 'me' }));
    const before = api.requests.length;
    const patched = await client.patchPodMetadata('patch', 'r-replica-0', {
      labels: { [ROLE_LABEL]: 'master' },
      annotations: { [LINK_ANNOTATION]: 'up' },
    });
    assert.equal(patched.metadata?.labels?.[ROLE_LABEL], 'master');
    assert.equal(patched.metadata?.labels?.['keep'], 'me');
    assert.equal(patched.metadata?.annotations?.[LINK_ANNOTATION], 'up');
    const req = api.requests.slice(before);
    assert.equal(req.length, 1);
    assert.equal(req[0]!.method, 'PATCH');
    assert.equal(req[0]!.contentType, 'application/merge-patch+json');
    await client.patchPodMetadata('patch', 'r-replica-0', { labels: { [ROLE_LABEL]: null } });
    const stored = await until('the role label removed', () => {
      const p = api.store.read('pods', 'patch', 'r-replica-0');
      return p.metadata.labels?.[ROLE_LABEL] === undefined && p;
    });
    assert.equal(stored.metadata.annotations?.[LINK_ANNOTATION], 'up');
  });

  test('patchPodMetadata with the uid of an earlier incarnation is refused (422, isReplaced) and changes nothing', async () => {
    const first = await api.store.create('pods', redisPod('replaced', 'r', 0));
    // Never scheduled, so the API server deletes it at once (no grace period for a kubelet).
    await api.store.delete('pods', 'replaced', 'r-replica-0');
    await api.store.create('pods', redisPod('replaced', 'r', 0));
    const err = await client
      .patchPodMetadata('replaced', 'r-replica-0', { labels: { [ROLE_LABEL]: 'master' }, uid: first.metadata.uid })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    assert.ok(err, 'the patch was refused');
    assert.equal(kubeFailure(err).code, 422);
    assert.equal(isReplaced(err), true);
    assert.equal(
      api.store.read('pods', 'replaced', 'r-replica-0').metadata.labels?.[ROLE_LABEL],
      undefined,
      'the new incarnation did not get the label',
    );
    assert.equal(isReplaced(new Error('socket hang up')), false);
  });

  test('emitEvent records a core/v1 Event on the Redis, and never throws', async () => {
    const r = await api.store.create('redises', redis('events', 'ev'));
    assert.equal(
      await client.emitEvent(
        { namespace: 'events', name: 'ev', uid: r.metadata.uid },
        'Normal',
        'FailoverCompleted',
        'old master ev-master-0, new master ev-replica-0, 812 ms',
      ),
      true,
    );
    const event = await until(
      'the Event',
      () => (api.store.list('events', { namespace: 'events' }) as Array<StoredObject & Record<string, any>>)[0],
    );
    assert.deepEqual(event['involvedObject'], {
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      name: 'ev',
      namespace: 'events',
      uid: r.metadata.uid,
    });
    assert.equal(event['reason'], 'FailoverCompleted');
    assert.equal(event['type'], 'Normal');
    assert.equal(event['reportingComponent'], 'redis-operator');
    assert.equal(event['reportingInstance'], 'sidecar-a');
    assert.match(event['eventTime'], /\.\d{6}Z$/);
    const fault = api.faults.add({ path: '/api/v1/namespaces/events/events', action: { kind: 'status', code: 500 } });
    assert.equal(await client.emitEvent({ namespace: 'events', name: 'ev' }, 'Warning', 'X', 'y'), false);
    fault.remove();
  });

  test('the generated auth Secret: random password, owned by the Redis, idempotent and safe to race', async () => {
    const r = await api.store.create('redises', redis('auth', 'secured'));
    const ref = { namespace: 'auth', name: 'secured', uid: r.metadata.uid };
    const other = new KubeClient(await api.kubeConfig('sidecar-b'), { identity: 'sidecar-b' });
    const [x, y] = await Promise.all([client.createAuthSecret(ref), other.createAuthSecret(ref)]);
    assert.equal(x.password, y.password, 'both instances end up with the same password');
    assert.deepEqual([x.created, y.created].sort(), [false, true]);
    assert.match(x.password, /^[0-9a-f]{64}$/);
    const secret = await until('the Secret', () => api.store.get('secrets', 'auth', 'secured-auth'));
    assert.deepEqual(secret.metadata.ownerReferences, [
      { apiVersion: 'redis.example.com/v1', kind: 'Redis', name: 'secured', uid: r.metadata.uid, controller: true },
    ]);
    assert.equal(Buffer.from((secret['data'] as Record<string, string>)['password']!, 'base64').toString(), x.password);
    assert.deepEqual(await client.ensureAuthSecret(ref), { password: x.password, created: false });
    assert.equal(await client.readSecretValue('auth', 'secured-auth', 'nope'), null);
    assert.equal(await client.getSecret('auth', 'missing'), null);
    assert.deepEqual(
      await client.readSecretValues('auth', 'secured-auth', ['password', 'nope']),
      { password: x.password },
      'the keys it has, one read',
    );
    assert.equal(await client.readSecretValues('auth', 'missing', ['password']), null);
  });

  test('every call is bounded: a hung API server is a timeout, not a stall', async () => {
    const fault = api.faults.add({ client: 'sidecar-a', action: { kind: 'hang' } });
    try {
      await client.listRedis();
      assert.fail('expected a timeout');
    } catch (err) {
      assert.equal(kubeFailure(err).reason, 'Timeout');
      assert.equal(kubeFailure(err).code, undefined);
    } finally {
      fault.remove();
    }
  });
});
