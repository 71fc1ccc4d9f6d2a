// The Metacontroller stand-in over HTTP, as it will run against a real kube-apiserver: its own
// kubeconfig (a file), informer caches fed by list + watch, every read and write visible in the
// kube-api stand-in's request log under its own token. A scripted hook makes one ConfigMap per
// `spec.replicas` of a Redis, so children are created, updated (InPlace) and deleted on demand.
// Network: the API stand-in and the scripted hook on 127.0.0.1, random ports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startKubeApi, type KubeApiServer, type StoredObject } from '../../support/kube-api/index.ts';
import { httpClient } from '../../support/kube-client/index.ts';
import { validateK8sObject } from '../../support/k8s-validate.ts';
import { startMetacontroller, type CompositeController, type Metacontroller } from './index.ts';
import { until } from '../../support/until.ts';

const NS = 'default';
const KEY = `${NS}/r`;
const TOKEN = 'metacontroller';
type Json = Record<string, unknown>;

const controller: CompositeController = {
  apiVersion: 'metacontroller.k8s.io/v1alpha1',
  kind: 'CompositeController',
  metadata: { name: 'scripted' },
  spec: {
    generateSelector: true,
    parentResource: { apiVersion: 'redis.example.com/v1', resource: 'redises' },
    childResources: [{ apiVersion: 'v1', resource: 'configmaps', updateStrategy: { method: 'InPlace' } }],
    hooks: { sync: { version: 'v2', webhook: { path: '/sync', timeout: '5s' } } },
  },
};

/** One ConfigMap per spec.replicas; status says how many; `fail` answers 500. */
function desired(request: Json): Json {
  const parent = request['parent'] as StoredObject;
  const n = Number((parent['spec'] as Json)['replicas'] ?? 0);
  const children = Array.from({ length: n }, (_, i) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: `r-${i}`, namespace: NS },
    data: { replicas: String(n) },
  }));
  return { status: { children: n }, children };
}

interface Rig {
  api: KubeApiServer;
  mc: Metacontroller;
  hook: { fail: boolean; calls: number };
  /** The Metacontroller's requests so far, `METHOD path`. */
  requests(): string[];
  settle(): Promise<void>;
  close(): Promise<void>;
}

async function startRig(): Promise<Rig> {
  const api = await startKubeApi();
  const hook = { fail: false, calls: 0 };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      hook.calls += 1;
      if (hook.fail) return void res.writeHead(500).end('injected');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(desired(JSON.parse(body) as Json)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mc-http-'));
  const kubeconfig = path.join(dir, 'metacontroller.kubeconfig');
  writeFileSync(kubeconfig, api.kubeConfig(TOKEN).exportConfig(), { mode: 0o600 });
  const mc = startMetacontroller({
    kubeconfig,
    controller,
    hookBaseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    backoff: { initialMs: 20, maxMs: 200 },
    resyncPeriodMs: 0,
  });
  await mc.ready;
  return {
    api,
    mc,
    hook,
    requests: () => api.requests.filter((r) => r.client === TOKEN && !r.watch).map((r) => `${r.method} ${r.path}`),
    // Idle, and still idle once the watch events of its own last writes have come back.
    settle: async () => {
      for (;;) {
        await mc.waitForIdle();
        const calls = hook.calls;
        await new Promise((r) => setTimeout(r, 150));
        await mc.waitForIdle();
        if (hook.calls === calls) return;
      }
    },
    close: async () => {
      await mc.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const configMaps = (api: KubeApiServer) =>
  api.store
    .list('configmaps', { namespace: NS })
    .map((c) => `${c.metadata.name}=${(c['data'] as Json)['replicas']}`)
    .sort();
const statusOf = (api: KubeApiServer) => api.store.get('redises', NS, 'r')?.['status'] as Json | undefined;
const count = (list: string[], re: RegExp) => list.filter((r) => re.test(r)).length;

test('over HTTP: children are created, updated in place and deleted; status is written only when it changes', async () => {
  const rig = await startRig();
  try {
    const { api, mc } = rig;
    api.store.create('redises', { metadata: { name: 'r', namespace: NS }, spec: { replicas: 2 } }, { keepStatus: false });
    await until('two children and a status', () => configMaps(api).join() === 'r-0=2,r-1=2' && statusOf(api)?.['children'] === 2);
    await rig.settle();
    const parent = api.store.read('redises', NS, 'r');
    for (const cm of api.store.list('configmaps', { namespace: NS })) {
      assert.deepEqual(cm.metadata.ownerReferences, [
        { apiVersion: 'redis.example.com/v1', kind: 'Redis', name: 'r', uid: parent.metadata.uid, controller: true, blockOwnerDeletion: true },
      ]);
      assert.equal(cm.metadata.labels?.['controller-uid'], parent.metadata.uid);
    }
    assert.deepEqual(statusOf(api), { children: 2, observedGeneration: 1 });

    // Resyncs with nothing new: a live GET of the parent each, no write of any kind.
    const before = rig.requests();
    for (let i = 0; i < 3; i++) {
      const calls = rig.hook.calls;
      mc.resync(KEY);
      await until('the resync', () => rig.hook.calls > calls);
      await rig.settle();
    }
    const quiet = rig.requests().slice(before.length);
    assert.deepEqual(
      quiet.filter((r) => !r.startsWith('GET ')),
      [],
      'no writes',
    );
    assert.equal(count(quiet, /^GET \/apis\/redis\.example\.com\/v1\/namespaces\/default\/redises\/r$/), 3, 'the status check reads the live parent');
    assert.equal(mc.stats(KEY).lastError, undefined);

    // Scale up: one new child, the others updated in place, one status write.
    let mark = rig.requests().length;
    api.store.patch('redises', NS, 'r', { spec: { replicas: 3 } });
    await until('three children', () => configMaps(api).join() === 'r-0=3,r-1=3,r-2=3' && statusOf(api)?.['children'] === 3);
    await rig.settle();
    let writes = rig.requests().slice(mark);
    assert.equal(count(writes, /^POST \/api\/v1\/namespaces\/default\/configmaps$/), 1);
    assert.equal(count(writes, /^PUT \/api\/v1\/namespaces\/default\/configmaps\/r-[01]$/), 2);
    assert.equal(count(writes, /^PUT .*\/redises\/r\/status$/), 1);
    assert.deepEqual(statusOf(api), { children: 3, observedGeneration: 2 });

    // Scale down: two children deleted (uid precondition), one updated, one status write.
    mark = rig.requests().length;
    api.store.patch('redises', NS, 'r', { spec: { replicas: 1 } });
    await until('one child', () => configMaps(api).join() === 'r-0=1' && statusOf(api)?.['children'] === 1);
    await rig.settle();
    writes = rig.requests().slice(mark);
    assert.equal(count(writes, /^DELETE \/api\/v1\/namespaces\/default\/configmaps\/r-[12]$/), 2);
    assert.equal(count(writes, /^PUT .*\/redises\/r\/status$/), 1);
    assert.equal(mc.stats(KEY).lastError, undefined);
    assert.ok(
      api.requests.filter((r) => r.watch).every((r) => r.client === TOKEN),
      'it watches with its own credentials',
    );
  } finally {
    await rig.close();
  }
});

test('over HTTP: a failing hook records one core/v1 SyncError Event, aggregated by a strategic-merge PATCH of count', async () => {
  const rig = await startRig();
  try {
    const { api, mc } = rig;
    rig.hook.fail = true;
    api.store.create('redises', { metadata: { name: 'r', namespace: NS }, spec: { replicas: 1 } }, { keepStatus: false });
    await until('three failed syncs', () => mc.stats(KEY).failures >= 3);
    const events = await until('the count to reach 3', () => {
      const list = api.store.list('events', { namespace: NS });
      return list.length === 1 && Number(list[0]!['count']) >= 3 ? list : undefined;
    });
    const event = events[0]!;
    validateK8sObject(event);
    assert.deepEqual(
      [event['type'], event['reason'], event['reportingComponent'], (event['source'] as Json)['component']],
      ['Warning', 'SyncError', 'metacontroller', 'metacontroller'],
    );
    assert.equal((event['involvedObject'] as Json)['uid'], api.store.read('redises', NS, 'r').metadata.uid);
    assert.match(String(event['message']), /^Sync error: sync hook failed: unsupported status code: 500/);
    assert.ok(event['firstTimestamp'] && event['lastTimestamp']);
    const eventWrites = api.requests.filter((r) => r.client === TOKEN && r.path.includes('/events'));
    assert.equal(eventWrites.filter((r) => r.method === 'POST').length, 1);
    assert.ok(eventWrites.filter((r) => r.method === 'PATCH').every((r) => r.contentType === 'application/strategic-merge-patch+json' && r.status === 200));
    assert.deepEqual(configMaps(api), [], 'a failed hook call changes nothing');

    rig.hook.fail = false;
    await until('recovery', () => configMaps(api).join() === 'r-0=1' && mc.stats(KEY).lastError === undefined);
  } finally {
    await rig.close();
  }
});

test('over HTTP: after a broken watch and a compacted history it relists and repairs what it missed', async () => {
  const rig = await startRig();
  try {
    const { api, mc } = rig;
    api.store.create('redises', { metadata: { name: 'r', namespace: NS }, spec: { replicas: 2 } }, { keepStatus: false });
    await until('two children', () => configMaps(api).join() === 'r-0=2,r-1=2');
    await rig.settle();
    const fault = api.faults.add({ client: TOKEN, watch: true, action: { kind: 'status', code: 500 } });
    api.closeWatches();
    await until('failed re-watches', () => fault.hits >= 2);
    const gone = api.store.read('configmaps', NS, 'r-1').metadata.uid;
    api.store.delete('configmaps', NS, 'r-1');
    api.store.compact();
    fault.remove();
    const back = await until('r-1 to be recreated', () => api.store.get('configmaps', NS, 'r-1'));
    assert.notEqual(back.metadata.uid, gone);
    assert.equal(mc.stats(KEY).lastError, undefined);
  } finally {
    await rig.close();
  }
});

test('a parent resource the API does not serve: ready rejects, nothing runs, stop() still works; a given client is left open', async () => {
  const api = await startKubeApi();
  const client = httpClient(api.kubeConfig(TOKEN));
  try {
    const broken = structuredClone(controller);
    broken.spec.parentResource = { apiVersion: 'redis.example.com/v1', resource: 'nothings' };
    const mc = startMetacontroller({ client, controller: broken, hookBaseUrl: 'http://127.0.0.1:9' });
    await assert.rejects(mc.ready, /can't find resource "nothings" in apiVersion "redis.example.com\/v1"/);
    await assert.rejects(mc.waitForIdle(), /can't find resource/);
    await mc.stop();

    const ok = startMetacontroller({ client, controller, hookBaseUrl: 'http://127.0.0.1:9' });
    await ok.ready;
    await ok.stop();
    const configmaps = await client.resource('v1', 'configmaps');
    assert.deepEqual(client.list(configmaps), [], "the caller's client still serves its cache");
    assert.throws(() => startMetacontroller({ client, store: api.store, controller, hookBaseUrl: 'http://127.0.0.1:9' }), /exactly one of/);
  } finally {
    await client.close();
    await api.close();
  }
});
