// The kube-client against a REAL kube-apiserver (test/k8s/api-server.ts: etcd and the API server,
// no controllers), one for the whole file. First a table of discovery, reads, writes and failures
// as cluster-admin (the control plane's admin kubeconfig: a client certificate, straight to the
// API server); then what the informer has to get right, each client a ServiceAccount of the
// operator's namespace reaching the API through the fault proxy, which ends its watch streams
// and fails or rewinds its requests on demand: the initial list paginated, re-watching at once
// after a closed stream, relisting after 410 Expired, and close(). Those informers watch Redis
// resources and pods, which the sidecar's RBAC lets every such ServiceAccount list and watch.
// Network: etcd, kube-apiserver and the fault proxy on 127.0.0.1.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startApiServer, type ApiServer } from '../../k8s/api-server.ts';
import {
  httpClient,
  KubeApiError,
  type CacheEvent,
  type HttpClientOptions,
  type HttpKubeClient,
  type KubeClient,
  type ResourceRef,
  type StoredObject,
} from './index.ts';
import { until } from '../until.ts';

/** The table's namespace, and the informer tests'. */
const NS = 'kc';
const INF = 'inf';
const REDISES = '/apis/redis.example.com/v1/redises';

async function rejects(p: Promise<unknown>, code: number, reason: string): Promise<KubeApiError> {
  try {
    await p;
  } catch (error) {
    assert.ok(error instanceof KubeApiError, `a KubeApiError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    assert.equal(error.reason, reason, error.message);
    return error;
  }
  return assert.fail(`expected ${code} ${reason}`);
}

const cm = (name: string, labels: Record<string, string> = {}, data: Record<string, string> = { a: '1' }) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: NS, labels },
  data,
});

const redis = (name: string, replicas = 2) => ({
  apiVersion: 'redis.example.com/v1',
  kind: 'Redis',
  metadata: { name, namespace: INF },
  spec: { replicas },
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('kube-client on a real kube-apiserver', () => {
  let api: ApiServer;
  before(async () => {
    api = await startApiServer({ namespaces: [NS, 'other', INF] });
  });
  after(async () => {
    await api.close();
  });

  describe('httpClient as cluster-admin', () => {
    let client: HttpKubeClient;
    let configmaps: ResourceRef;
    /** The cache has caught up with the API. */
    const cached = (name: string, rv: string | undefined) =>
      until(`${name}@${rv} in the cache`, () =>
        rv === undefined
          ? client.get(configmaps, NS, name) === undefined
          : client.get(configmaps, NS, name)?.metadata.resourceVersion === rv,
      );

    before(async () => {
      client = httpClient(api.controlPlane.adminKubeconfig, { backoff: { initialMs: 10, maxMs: 50 } });
      configmaps = await client.resource('v1', 'configmaps');
      await client.inform(configmaps);
    });
    after(async () => {
      await client.close();
    });

    test('discovery: plural, kind, scope and the status subresource, CRDs included; unknown is 404', async () => {
      assert.equal((await client.resource('apps/v1', 'statefulsets')).kind, 'StatefulSet');
      const sts = await client.resourceForKind('apps/v1', 'StatefulSet');
      assert.deepEqual([sts.resource, sts.namespaced, sts.statusSubresource], ['statefulsets', true, true]);
      const redis = await client.resourceForKind('redis.example.com/v1', 'Redis');
      assert.deepEqual([redis.group, redis.resource, redis.statusSubresource], ['redis.example.com', 'redises', true]);
      assert.equal((await client.resource('v1', 'namespaces')).namespaced, false);
      assert.equal(Boolean(configmaps.statusSubresource), false);
      await rejects(client.resource('v1', 'nothings'), 404, 'NotFound');
      await rejects(client.resourceForKind('nowhere.example.com/v1', 'Thing'), 404, 'NotFound');
    });

    test('reads need inform(); the cache filters by namespace, labels and fields', async (t) => {
      const secrets = await client.resource('v1', 'secrets');
      assert.throws(() => client.list(secrets), /not informed/);
      await client.create(configmaps, cm('sel-a', { tier: 'x' }));
      await client.create(configmaps, cm('sel-b', { tier: 'y' }));
      const other = await client.create(configmaps, {
        ...cm('sel-a', { tier: 'x' }),
        metadata: { name: 'sel-a', namespace: 'other', labels: { tier: 'x' } },
      });
      await cached('sel-b', (await client.read(configmaps, NS, 'sel-b'))!.metadata.resourceVersion);
      await until(
        'the other namespace',
        () => client.get(configmaps, 'other', 'sel-a')?.metadata.uid === other.metadata.uid,
      );
      const names = (o: Parameters<KubeClient['list']>[1]) =>
        client
          .list(configmaps, o)
          .filter((c) => c.metadata.name.startsWith('sel-'))
          .map((c) => `${c.metadata.namespace}/${c.metadata.name}`);
      const cases: Array<[string, Parameters<KubeClient['list']>[1], string[]]> = [
        ['every namespace', {}, ['kc/sel-a', 'kc/sel-b', 'other/sel-a']],
        ['one namespace', { namespace: NS }, ['kc/sel-a', 'kc/sel-b']],
        ['a label selector', { labelSelector: 'tier=x' }, ['kc/sel-a', 'other/sel-a']],
        ['a label that is not x', { labelSelector: 'tier!=x' }, ['kc/sel-b']],
        ['a field selector', { fieldSelector: 'metadata.namespace=other' }, ['other/sel-a']],
        ['both', { namespace: NS, labelSelector: 'tier', fieldSelector: 'metadata.name!=sel-a' }, ['kc/sel-b']],
      ];
      for (const [what, options, want] of cases) await t.test(what, () => assert.deepEqual(names(options), want, what));
      const got = client.get(configmaps, NS, 'sel-a')!;
      assert.equal(got.kind, 'ConfigMap', 'cached objects carry kind/apiVersion even from a list');
      assert.equal(got.apiVersion, 'v1');
      got.data = { changed: 'locally' };
      assert.deepEqual(client.get(configmaps, NS, 'sel-a')!['data'], { a: '1' }, 'reads are copies');
    });

    test('create, update, patch (merge, strategic, json), status subresource and delete', async () => {
      const created = await client.create(configmaps, cm('w'));
      assert.equal(created.metadata.namespace, NS);
      assert.ok(created.metadata.uid);
      const updated = await client.update(configmaps, { ...created, data: { a: '2' } });
      assert.deepEqual(updated['data'], { a: '2' });
      const merged = await client.patch(configmaps, NS, 'w', { data: { b: '3' } }, { type: 'merge' });
      assert.deepEqual(merged['data'], { a: '2', b: '3' });
      const strategic = await client.patch(
        configmaps,
        NS,
        'w',
        { metadata: { labels: { l: 'v' } } },
        { type: 'strategic' },
      );
      assert.deepEqual(strategic.metadata.labels, { l: 'v' });
      const json = await client.patch(configmaps, NS, 'w', [{ op: 'remove', path: '/data/a' }], { type: 'json' });
      assert.deepEqual(json['data'], { b: '3' });
      await cached('w', json.metadata.resourceVersion);

      // Kinds with a status subresource: status is reset on create and written through /status only.
      // A LoadBalancer Service: the API server refuses load-balancer ingress on any other type.
      const services = await client.resource('v1', 'services');
      const ingress = { loadBalancer: { ingress: [{ ip: '127.0.0.9' }] } };
      const svc = await client.create(services, {
        metadata: { name: 'svc', namespace: NS },
        spec: { type: 'LoadBalancer', ports: [{ port: 1 }] },
        status: ingress,
      });
      assert.deepEqual(svc['status'], { loadBalancer: {} }, 'the status sent with a create is dropped');
      const withStatus = await client.update(services, { ...svc, status: ingress }, { subresource: 'status' });
      const ips = (o: StoredObject) =>
        (o['status'] as { loadBalancer: { ingress?: Array<{ ip: string }> } }).loadBalancer.ingress?.map((i) => i.ip);
      assert.deepEqual(ips(withStatus), ['127.0.0.9']);
      const specOnly = await client.update(services, {
        ...withStatus,
        spec: { ...(withStatus['spec'] as object), ports: [{ port: 2 }] },
        status: {},
      });
      assert.deepEqual(specOnly['status'], withStatus['status'], 'a main-resource PUT keeps the stored status');
      const patchedStatus = await client.patch(
        services,
        NS,
        'svc',
        { status: { loadBalancer: { ingress: null } } },
        { type: 'merge', subresource: 'status' },
      );
      assert.deepEqual(patchedStatus['status'], { loadBalancer: {} });

      await client.delete(configmaps, NS, 'w', {
        propagationPolicy: 'Background',
        preconditions: { uid: created.metadata.uid },
        gracePeriodSeconds: 0,
      });
      await cached('w', undefined);
      assert.equal(await client.read(configmaps, NS, 'w'), undefined);
      const deletedSvc = await client.delete(services, NS, 'svc');
      assert.equal(deletedSvc?.metadata.name, 'svc', 'Services answer DELETE with the object');
    });

    test('failures carry the HTTP code and the Status reason', async (t) => {
      const base = await client.create(configmaps, cm('f'));
      const stale = await client.update(configmaps, { ...base, data: { a: 'newer' } });
      await cached('f', stale.metadata.resourceVersion);
      const redises = await client.resource('redis.example.com/v1', 'redises');
      const cases: Array<[string, () => Promise<unknown>, number, string]> = [
        ['create of an existing name', () => client.create(configmaps, cm('f')), 409, 'AlreadyExists'],
        [
          'update from a stale resourceVersion',
          () => client.update(configmaps, { ...base, data: { a: 'lost' } }),
          409,
          'Conflict',
        ],
        [
          'delete with a uid precondition that does not hold',
          () => client.delete(configmaps, NS, 'f', { preconditions: { uid: 'not-it' } }),
          409,
          'Conflict',
        ],
        [
          'delete with a stale resourceVersion precondition',
          () =>
            client.delete(configmaps, NS, 'f', { preconditions: { resourceVersion: base.metadata.resourceVersion } }),
          409,
          'Conflict',
        ],
        ['update of a missing object', () => client.update(configmaps, cm('missing')), 404, 'NotFound'],
        [
          'patch of a missing object',
          () => client.patch(configmaps, NS, 'missing', { data: {} }, { type: 'merge' }),
          404,
          'NotFound',
        ],
        ['delete of a missing object', () => client.delete(configmaps, NS, 'missing'), 404, 'NotFound'],
        ['an invalid name', () => client.create(configmaps, cm('Not_Valid')), 422, 'Invalid'],
        [
          'a strategic merge patch of a custom resource',
          () => client.patch(redises, NS, 'x', { spec: {} }, { type: 'strategic' }),
          415,
          'UnsupportedMediaType',
        ],
      ];
      for (const [what, call, code, reason] of cases) {
        await t.test(`${what}: ${code} ${reason}`, async () => {
          const error = await rejects(call(), code, reason);
          assert.equal(error.status.kind, 'Status', what);
        });
      }
      const invalid = await rejects(client.create(configmaps, cm('Not_Valid')), 422, 'Invalid');
      assert.equal(invalid.status.details?.causes?.[0]?.field, 'metadata.name', 'causes survive the trip');
      assert.deepEqual(
        (await client.read(configmaps, NS, 'f'))!['data'],
        { a: 'newer' },
        'nothing failed changed anything',
      );
    });

    test('watch: the cached objects first as ADDED, then ADDED/MODIFIED/DELETED of every write', async () => {
      await client.create(configmaps, cm('pre'));
      await until('pre in the cache', () => client.get(configmaps, NS, 'pre'));
      const seen: string[] = [];
      const handle = client.watch(configmaps, (ev: CacheEvent) => {
        if (ev.object.metadata.name.startsWith('pre') || ev.object.metadata.name.startsWith('ev'))
          seen.push(`${ev.type} ${ev.object.metadata.name}`);
      });
      assert.deepEqual(seen, ['ADDED pre'], 'the replay is synchronous');
      const ev = await client.create(configmaps, cm('ev'));
      await client.patch(configmaps, NS, 'ev', { data: { z: '1' } }, { type: 'merge' });
      await client.delete(configmaps, NS, 'ev', { preconditions: { uid: ev.metadata.uid } });
      await until('three events', () => seen.length === 4);
      handle.stop();
      await client.create(configmaps, cm('ev-after-stop'));
      await until('the cache', () => client.get(configmaps, NS, 'ev-after-stop'));
      assert.deepEqual(seen, ['ADDED pre', 'ADDED ev', 'MODIFIED ev', 'DELETED ev']);
    });
  });

  describe('httpClient informer through the fault proxy: reconnects and relists', () => {
    const backoff = { initialMs: 10, maxMs: 50 };
    /** A client named `name` (its requests are logged and faulted under that name) and the Redis resource. */
    const informerClient = async (name: string, options: HttpClientOptions = {}) => {
      const client = httpClient(await api.kubeConfig(name), { backoff, ...options });
      return { client, redises: await client.resource('redis.example.com/v1', 'redises') };
    };
    /** Proves the watch is open: a write after it shows up in the cache. */
    let sentinels = 0;
    const watching = async (client: KubeClient, redises: ResourceRef) => {
      const name = `sentinel-${++sentinels}`;
      await api.store.create('redises', redis(name));
      await until('the watch to deliver', () => client.get(redises, INF, name));
    };
    /** Which of `among` the cache holds: the tests share the namespace, each looks at its own objects. */
    const names = (client: KubeClient, redises: ResourceRef, among: string[]) =>
      client
        .list(redises, { namespace: INF })
        .map((r) => r.metadata.name)
        .filter((n) => among.includes(n));

    test('inform() resolves with the initial list (paginated) in the cache; a failed list rejects, the next inform() retries', async () => {
      for (let i = 0; i < 7; i++) await api.store.create('redises', redis(`p${i}`));
      const { client: paged, redises } = await informerClient('paged', { pageSize: 3 });
      try {
        await paged.inform(redises);
        const total = paged.list(redises).length;
        assert.ok(total >= 7, `${total} Redis resources cached`);
        const lists = api.requests.filter((r) => r.client === 'paged' && !r.watch && r.path === REDISES);
        assert.equal(lists.length, Math.ceil(total / 3), `${total} objects in pages of at most 3`);
        assert.ok(
          lists.every(
            (r, i) =>
              new URLSearchParams(r.query).get('limit') === '3' &&
              new URLSearchParams(r.query).has('continue') === i > 0,
          ),
          'every page asked for 3, each after the first with the continue token',
        );
      } finally {
        await paged.close();
      }
      const { client } = await informerClient('informer');
      try {
        const fault = api.faults.add({
          client: 'informer',
          path: REDISES,
          watch: false,
          times: 1,
          action: { kind: 'status', code: 403, reason: 'Forbidden' },
        });
        await rejects(client.inform(redises), 403, 'Forbidden');
        assert.equal(fault.hits, 1);
        assert.equal(client.informed(redises), false);
        await client.inform(redises);
        const pages = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
        assert.deepEqual(names(client, redises, pages), pages);
      } finally {
        await client.close();
      }
    });

    test('a closed watch is re-opened at once from the last resourceVersion (no relist, no backoff, no 30 s wait)', async () => {
      const errors: unknown[] = [];
      const { client, redises } = await informerClient('rewatch', { onError: (e) => errors.push(e) });
      try {
        await client.inform(redises);
        for (let round = 1; round <= 3; round++) {
          await watching(client, redises);
          const before = client.informerCounts(redises)!;
          assert.ok(api.closeWatches() >= 1, 'a watch stream was open');
          const started = Date.now();
          await api.store.create('redises', redis(`after-close-${round}`));
          await until(
            'the object written while the watch was closed',
            () => client.get(redises, INF, `after-close-${round}`),
            5000,
          );
          assert.ok(Date.now() - started < 5000);
          const now = client.informerCounts(redises)!;
          assert.equal(now.lists, before.lists, 'resumed from its resourceVersion, no relist');
          assert.equal(now.watches, before.watches + 1);
        }
        assert.deepEqual(errors, [], 'a cleanly ended watch is not a failure (no backoff)');
      } finally {
        await client.close();
      }
    });

    test('410 Expired after a broken watch: relist, and listeners see exactly what they missed', async () => {
      for (const name of ['stays', 'goes', 'changes']) await api.store.create('redises', redis(name));
      const { client, redises } = await informerClient('relist');
      try {
        await client.inform(redises);
        const seen: string[] = [];
        await watching(client, redises);
        client.watch(redises, (ev: CacheEvent) => {
          if (ev.object.metadata.namespace === INF && !ev.object.metadata.name.startsWith('sentinel'))
            seen.push(`${ev.type} ${ev.object.metadata.name}`);
        });
        seen.length = 0;
        // Break the watch and keep it broken while history moves on.
        const broken = api.faults.add({
          client: 'relist',
          path: REDISES,
          watch: true,
          action: { kind: 'status', code: 500 },
        });
        api.closeWatches();
        await until('a failed re-watch', () => broken.hits >= 2);
        await api.store.delete('redises', INF, 'goes');
        await api.store.create('redises', redis('new'));
        await api.store.mutate('redises', INF, 'changes', (r) => {
          (r['spec'] as { replicas: number }).replicas = 3;
        });
        // The informer's version is then gone, as after a compaction: the next watch asks the real
        // server for one older than its Redis watch cache, which answers as it does for a compacted
        // version (a 200 stream, one ERROR event carrying 410 Expired), not with an HTTP 410.
        const lists = client.informerCounts(redises)!.lists;
        const rewind = api.faults.add({
          client: 'relist',
          path: REDISES,
          watch: true,
          times: 1,
          action: { kind: 'rewind' },
        });
        broken.remove();
        await until('the relist', () => client.informerCounts(redises)!.lists === lists + 1);
        assert.equal(rewind.hits, 1);
        assert.equal(
          api.requests.find((r) => r.client === 'relist' && r.fault === 'rewind')?.status,
          200,
          'the 410 came inside the watch stream',
        );
        await until(
          'the cache to converge',
          () => names(client, redises, ['stays', 'goes', 'changes', 'new']).join() === 'changes,new,stays',
        );
        assert.equal((client.get(redises, INF, 'changes')!['spec'] as { replicas: number }).replicas, 3);
        assert.deepEqual(seen.sort(), ['ADDED new', 'DELETED goes', 'MODIFIED changes']);
        // And it watches again afterwards.
        await api.store.create('redises', redis('later'));
        await until('a write after the relist', () => client.get(redises, INF, 'later'));
        // A 410 as the watch's HTTP status (a proxy's or an older server's answer) relists too.
        const gone = api.faults.add({
          client: 'relist',
          path: REDISES,
          watch: true,
          times: 1,
          action: { kind: 'status', code: 410, reason: 'Expired' },
        });
        api.closeWatches();
        await until(
          'a relist after HTTP 410',
          () => gone.hits === 1 && client.informerCounts(redises)!.lists === lists + 2,
        );
        await api.store.create('redises', redis('last'));
        await until('a write after the second relist', () => client.get(redises, INF, 'last'));
      } finally {
        await client.close();
      }
    });

    test('close() ends every watch and stops reconnecting', async () => {
      const { client, redises } = await informerClient('closer');
      await client.inform(redises);
      await client.inform(await client.resource('v1', 'pods'));
      await client.close();
      const asked = () => api.requests.filter((r) => r.client === 'closer').length;
      const count = asked();
      api.closeWatches();
      await sleep(200);
      assert.equal(asked(), count, 'no request after close()');
      await assert.rejects(client.inform(redises), /closed/);
    });
  });
});
