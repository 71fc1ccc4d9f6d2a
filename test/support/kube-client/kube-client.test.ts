// The kube-client against the kube-api stand-in: the same table of reads, writes and failures
// through storeClient (in-process) and httpClient (over HTTP, with the stand-in's kubeconfig),
// then what only the HTTP informer has to get right: the cache following writes through the
// watch, re-watching at once after a closed stream, relisting after 410 Gone, and close().
// Network: the stand-in on 127.0.0.1, random port.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startKubeApi, type KubeApiServer } from '../kube-api/index.ts';
import { httpClient, KubeApiError, storeClient, type CacheEvent, type HttpKubeClient, type KubeClient, type ResourceRef } from './index.ts';
import { until } from '../until.ts';

const NS = 'kc';

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

for (const flavour of ['store', 'http'] as const) {
  describe(`${flavour}Client`, () => {
    let api: KubeApiServer;
    let client: KubeClient;
    let configmaps: ResourceRef;
    /** The cache has caught up with the API (immediate for the store). */
    const cached = (name: string, rv: string | undefined) =>
      until(`${name}@${rv} in the cache`, () =>
        rv === undefined ? client.get(configmaps, NS, name) === undefined : client.get(configmaps, NS, name)?.metadata.resourceVersion === rv,
      );

    before(async () => {
      api = await startKubeApi();
      client = flavour === 'store' ? storeClient(api.store) : httpClient(api.kubeConfig('kube-client'), { backoff: { initialMs: 10, maxMs: 50 } });
      configmaps = await client.resource('v1', 'configmaps');
      await client.inform(configmaps);
    });
    after(async () => {
      await client.close();
      await api.close();
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
      const other = await client.create(configmaps, { ...cm('sel-a', { tier: 'x' }), metadata: { name: 'sel-a', namespace: 'other', labels: { tier: 'x' } } });
      await cached('sel-b', (await client.read(configmaps, NS, 'sel-b'))!.metadata.resourceVersion);
      await until('the other namespace', () => client.get(configmaps, 'other', 'sel-a')?.metadata.uid === other.metadata.uid);
      const names = (o: Parameters<KubeClient['list']>[1]) =>
        client
          .list(configmaps, o)
          .filter((c) => c.metadata.name.startsWith('sel-'))
          .map((c) => `${c.metadata.namespace}/${c.metadata.name}`);
      const cases: Array<[string, Parameters<KubeClient['list']>[1], string[]]> = [
        ['every namespace', {}, ['kc/sel-a', 'kc/sel-b', 'other/sel-a']],
        ['one namespace', { namespace: NS }, ['kc/sel-a', 'kc/sel-b']],
        ['a label selector', { labelSelector: 'tier=x' }, ['kc/sel-a', 'other/sel-a']],
        ['a set-based selector', { labelSelector: 'tier notin (x)' }, ['kc/sel-b']],
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
      const strategic = await client.patch(configmaps, NS, 'w', { metadata: { labels: { l: 'v' } } }, { type: 'strategic' });
      assert.deepEqual(strategic.metadata.labels, { l: 'v' });
      const json = await client.patch(configmaps, NS, 'w', [{ op: 'remove', path: '/data/a' }], { type: 'json' });
      assert.deepEqual(json['data'], { b: '3' });
      await cached('w', json.metadata.resourceVersion);

      // Kinds with a status subresource: status is dropped on create and written through /status only.
      const services = await client.resource('v1', 'services');
      const svc = await client.create(services, {
        metadata: { name: 'svc', namespace: NS },
        spec: { ports: [{ port: 1 }] },
        status: { loadBalancer: { ingress: [{ ip: '127.0.0.9' }] } },
      });
      assert.equal(svc['status'], undefined);
      const withStatus = await client.update(services, { ...svc, status: { loadBalancer: { ingress: [{ ip: '127.0.0.9' }] } } }, { subresource: 'status' });
      assert.deepEqual(withStatus['status'], { loadBalancer: { ingress: [{ ip: '127.0.0.9' }] } });
      const specOnly = await client.update(services, { ...withStatus, spec: { ports: [{ port: 2 }] }, status: {} });
      assert.deepEqual(specOnly['status'], withStatus['status'], 'a main-resource PUT keeps the stored status');
      const patchedStatus = await client.patch(services, NS, 'svc', { status: { loadBalancer: { ingress: null } } }, { type: 'merge', subresource: 'status' });
      assert.deepEqual(patchedStatus['status'], { loadBalancer: {} });

      await client.delete(configmaps, NS, 'w', { propagationPolicy: 'Background', preconditions: { uid: created.metadata.uid }, gracePeriodSeconds: 0 });
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
        ['update from a stale resourceVersion', () => client.update(configmaps, { ...base, data: { a: 'lost' } }), 409, 'Conflict'],
        ['delete with a uid precondition that does not hold', () => client.delete(configmaps, NS, 'f', { preconditions: { uid: 'not-it' } }), 409, 'Conflict'],
        [
          'delete with a stale resourceVersion precondition',
          () => client.delete(configmaps, NS, 'f', { preconditions: { resourceVersion: base.metadata.resourceVersion } }),
          409,
          'Conflict',
        ],
        ['update of a missing object', () => client.update(configmaps, cm('missing')), 404, 'NotFound'],
        ['patch of a missing object', () => client.patch(configmaps, NS, 'missing', { data: {} }, { type: 'merge' }), 404, 'NotFound'],
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
      assert.deepEqual((await client.read(configmaps, NS, 'f'))!['data'], { a: 'newer' }, 'nothing failed changed anything');
    });

    test('watch: the cached objects first as ADDED, then ADDED/MODIFIED/DELETED of every write', async () => {
      await client.create(configmaps, cm('pre'));
      await until('pre in the cache', () => client.get(configmaps, NS, 'pre'));
      const seen: string[] = [];
      const handle = client.watch(configmaps, (ev: CacheEvent) => {
        if (ev.object.metadata.name.startsWith('pre') || ev.object.metadata.name.startsWith('ev')) seen.push(`${ev.type} ${ev.object.metadata.name}`);
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
}

describe('httpClient informer: reconnects and relists', () => {
  let api: KubeApiServer;
  let client: HttpKubeClient;
  let configmaps: ResourceRef;
  const setUp = async () => {
    api = await startKubeApi({ bookmarkIntervalMs: 60_000 });
    client = httpClient(api.kubeConfig('informer'), { backoff: { initialMs: 10, maxMs: 50 } });
    configmaps = await client.resource('v1', 'configmaps');
  };
  /** Proves the watch is open: a write after it shows up in the cache. */
  let sentinels = 0;
  const watching = async () => {
    const name = `sentinel-${++sentinels}`;
    api.store.create('configmaps', cm(name));
    await until('the watch to deliver', () => client.get(configmaps, NS, name));
  };
  const tearDown = async () => {
    await client.close();
    await api.close();
  };

  test('inform() resolves with the initial list (paginated) in the cache; a failed list rejects, the next inform() retries', async () => {
    await setUp();
    try {
      for (let i = 0; i < 7; i++) api.store.create('configmaps', cm(`p${i}`));
      const paged = httpClient(api.kubeConfig('informer'), { pageSize: 3 });
      try {
        await paged.inform(configmaps);
        assert.equal(paged.list(configmaps).length, 7);
        const lists = api.requests.filter((r) => r.client === 'informer' && !r.watch && r.path === '/api/v1/configmaps');
        assert.equal(lists.length, 3, 'three pages of at most 3');
      } finally {
        await paged.close();
      }
      const fault = api.faults.add({ path: '/api/v1/configmaps', watch: false, times: 1, action: { kind: 'status', code: 403, reason: 'Forbidden' } });
      await rejects(client.inform(configmaps), 403, 'Forbidden');
      assert.equal(fault.hits, 1);
      assert.equal(client.informed(configmaps), false);
      await client.inform(configmaps);
      assert.equal(client.list(configmaps).length, 7);
    } finally {
      await tearDown();
    }
  });

  test('a closed watch is re-opened at once from the last resourceVersion (no relist, no 30 s wait)', async () => {
    await setUp();
    try {
      await client.inform(configmaps);
      for (let round = 1; round <= 3; round++) {
        await watching();
        const before = client.informerCounts(configmaps)!;
        api.closeWatches();
        const started = Date.now();
        api.store.create('configmaps', cm(`after-close-${round}`));
        await until('the object written while the watch was closed', () => client.get(configmaps, NS, `after-close-${round}`), 2000);
        assert.ok(Date.now() - started < 2000);
        const now = client.informerCounts(configmaps)!;
        assert.equal(now.lists, before.lists, 'resumed from its resourceVersion, no relist');
        assert.equal(now.watches, before.watches + 1);
      }
    } finally {
      await tearDown();
    }
  });

  test('410 Gone after a broken watch: relist, and listeners see exactly what they missed', async () => {
    await setUp();
    try {
      api.store.create('configmaps', cm('stays'));
      api.store.create('configmaps', cm('goes'));
      api.store.create('configmaps', cm('changes'));
      await client.inform(configmaps);
      const seen: string[] = [];
      await watching();
      client.watch(configmaps, (ev) => seen.push(`${ev.type} ${ev.object.metadata.name}`));
      seen.length = 0;
      // Break the watch and keep it broken while history moves on and is compacted away.
      const fault = api.faults.add({ path: '/api/v1/configmaps', watch: true, action: { kind: 'status', code: 500 } });
      api.closeWatches();
      await until('a failed re-watch', () => fault.hits >= 2);
      api.store.delete('configmaps', NS, 'goes');
      api.store.create('configmaps', cm('new'));
      api.store.mutate('configmaps', NS, 'changes', (c) => {
        c['data'] = { a: 'changed' };
      });
      api.store.compact();
      const lists = client.informerCounts(configmaps)!.lists;
      fault.remove();
      await until('the relist', () => client.informerCounts(configmaps)!.lists === lists + 1);
      await until(
        'the cache to converge',
        () =>
          client
            .list(configmaps)
            .map((c) => c.metadata.name)
            .filter((n) => !n.startsWith('sentinel'))
            .join() === 'changes,new,stays',
      );
      assert.deepEqual(client.get(configmaps, NS, 'changes')!['data'], { a: 'changed' });
      assert.deepEqual(seen.sort(), ['ADDED new', 'DELETED goes', 'MODIFIED changes']);
      // And it watches again afterwards.
      api.store.create('configmaps', cm('later'));
      await until('a write after the relist', () => client.get(configmaps, NS, 'later'));
      // A 410 as the watch's HTTP status (not an ERROR event) relists too.
      const gone = api.faults.add({ path: '/api/v1/configmaps', watch: true, times: 1, action: { kind: 'status', code: 410, reason: 'Expired' } });
      api.closeWatches();
      await until('a relist after HTTP 410', () => gone.hits === 1 && client.informerCounts(configmaps)!.lists === lists + 2);
      api.store.create('configmaps', cm('last'));
      await until('a write after the second relist', () => client.get(configmaps, NS, 'last'));
    } finally {
      await tearDown();
    }
  });

  test('close() ends every watch and stops reconnecting', async () => {
    await setUp();
    try {
      await client.inform(configmaps);
      await client.inform(await client.resource('v1', 'secrets'));
      await client.close();
      const count = api.requests.length;
      api.closeWatches();
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(api.requests.length, count, 'no request after close()');
      await assert.rejects(client.inform(configmaps), /closed/);
    } finally {
      await api.close();
    }
  });
});
