// The Metacontroller stand-in's DecoratorController (decorator.ts) against the kube-api
// stand-in's store (in-process: the cache never lags, so waitForIdle() is exact) with
// prometheus-operator's two kinds served as custom resources, and a scripted hook over HTTP:
// selection, the request, attachments created/updated/deleted, the target's labels, annotations
// and status, failures, resyncs, finalize, and living beside a CompositeController on Redis.
// Network: one scripted hook server on 127.0.0.1, random port (and the API stand-in for the HTTP test).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_RESOURCES, defineResource, ObjectStore, startKubeApi, type StoredObject } from '../../support/kube-api/index.ts';
import { until } from '../../support/until.ts';
import {
  DECORATOR_ANNOTATION,
  LAST_APPLIED_ANNOTATION,
  loadDecoratorController,
  startDecoratorController,
  startMetacontroller,
  type CompositeController,
  type DecoratorController,
  type DecoratorControllerHandle,
} from './index.ts';

type Json = Record<string, any>;
const NS = 'default';
const KEY = `${NS}/r`;
const SYNC_PATH = '/monitoring/sync';
const PM = 'PodMonitor.monitoring.coreos.com/v1';
const PR = 'PrometheusRule.monitoring.coreos.com/v1';
const MONITORING = ['podmonitors:PodMonitor', 'prometheusrules:PrometheusRule'].map((r) => {
  const [resource, kind] = r.split(':') as [string, string];
  return defineResource({ group: 'monitoring.coreos.com', version: 'v1', resource, kind, namespaced: true, custom: true, generation: true });
});
const RESOURCES = [...DEFAULT_RESOURCES, ...MONITORING];

// ------------------------------------------------------------------ the scripted hook

interface Reply {
  code?: number;
  body?: unknown;
  /** Sent as is instead of JSON(body). */
  raw?: string;
  headers?: Record<string, string>;
}
type Answer = (request: Json) => Reply;

interface Hook {
  url: string;
  /** Requests by path, in arrival order. */
  received: Array<{ path: string; body: Json }>;
  answers: Map<string, Answer>;
  calls(path?: string): Json[];
  close(): Promise<void>;
}

async function scriptedHook(): Promise<Hook> {
  const received: Hook['received'] = [];
  const answers = new Map<string, Answer>();
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(text) as Json;
      received.push({ path: req.url ?? '', body });
      const notFound: Answer = () => ({ code: 404 });
      const reply = (answers.get(req.url ?? '') ?? notFound)(body);
      res.writeHead(reply.code ?? 200, { 'content-type': 'application/json', ...reply.headers }).end(reply.raw ?? JSON.stringify(reply.body ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answers,
    calls: (path = SYNC_PATH) => received.filter((r) => r.path === path).map((r) => r.body),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const podMonitor = (name: string, port = 'metrics'): Json => ({
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PodMonitor',
  metadata: { name, namespace: NS },
  spec: { podMetricsEndpoints: [{ port }], selector: { matchLabels: { 'app.kubernetes.io/instance': name } } },
});
const prometheusRule = (name: string): Json => ({
  apiVersion: 'monitoring.coreos.com/v1',
  kind: 'PrometheusRule',
  metadata: { name, namespace: NS },
  spec: { groups: [{ name: 'redis', rules: [{ alert: 'RedisDown', expr: 'redis_up == 0' }] }] },
});
/** The design's answer: a PodMonitor and a PrometheusRule named after the Redis. */
const monitoringFor = (request: Json): Reply => {
  const name = String(request['object']['metadata']['name']);
  return { body: { attachments: [podMonitor(name), prometheusRule(name)] } };
};

// ------------------------------------------------------------------ the rig

interface Rig {
  store: ObjectStore;
  hook: Hook;
  dc: DecoratorControllerHandle;
  close(): Promise<void>;
}

async function startRig(
  controller: DecoratorController = loadDecoratorController(),
  answer: Answer = monitoringFor,
  store = new ObjectStore({ resources: RESOURCES }),
): Promise<Rig> {
  const hook = await scriptedHook();
  hook.answers.set(SYNC_PATH, answer);
  const dc = startDecoratorController({ store, controller, hookBaseUrl: hook.url, backoff: { initialMs: 10, maxMs: 100 }, resyncPeriodMs: 0 });
  await dc.ready;
  return {
    store,
    hook,
    dc,
    close: async () => {
      await dc.stop();
      await hook.close();
    },
  };
}

function createRedis(store: ObjectStore, name = 'r', meta: Json = {}, status?: Json): StoredObject {
  return store.create('redises', {
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name, namespace: NS, ...meta },
    spec: {},
    ...(status ? { status } : {}),
  });
}

const uidAndVersion = (o: StoredObject | undefined) => `${o?.metadata.uid}@${o?.metadata.resourceVersion}`;
/** The latest sync request for one Redis. */
const lastCall = (hook: Hook, name = 'r') =>
  hook
    .calls()
    .filter((c) => c['object']['metadata']['name'] === name)
    .at(-1)!;

/** Resync and wait until that sync has run (and whatever it caused). */
async function resync(rig: Rig, key = KEY): Promise<void> {
  const calls = rig.dc.syncCount(key);
  rig.dc.resync(key);
  await until('the resync', () => rig.dc.syncCount(key) > calls);
  await rig.dc.waitForIdle();
}

// ------------------------------------------------------------------ selection and the request

describe('which objects a DecoratorController decorates (spec.resources selectors)', () => {
  const redises: Array<[string, Json]> = [
    ['plain', {}],
    ['labelled', { labels: { monitoring: 'on' } }],
    ['annotated', { annotations: { 'example.com/monitor': 'true' } }],
    ['both', { labels: { monitoring: 'on' }, annotations: { 'example.com/monitor': 'true' } }],
  ];
  const cases: Array<{ name: string; rule: Json; synced: string[] }> = [
    { name: 'no selector: every Redis', rule: {}, synced: ['annotated', 'both', 'labelled', 'plain'] },
    { name: 'labelSelector', rule: { labelSelector: { matchLabels: { monitoring: 'on' } } }, synced: ['both', 'labelled'] },
    {
      name: 'annotationSelector matchAnnotations',
      rule: { annotationSelector: { matchAnnotations: { 'example.com/monitor': 'true' } } },
      synced: ['annotated', 'both'],
    },
    {
      name: 'annotationSelector matchExpressions',
      rule: { annotationSelector: { matchExpressions: [{ key: 'example.com/monitor', operator: 'Exists' }] } },
      synced: ['annotated', 'both'],
    },
    {
      name: 'both selectors: both must match',
      rule: { labelSelector: { matchLabels: { monitoring: 'on' } }, annotationSelector: { matchAnnotations: { 'example.com/monitor': 'true' } } },
      synced: ['both'],
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const controller = loadDecoratorController();
      Object.assign(controller.spec.resources[0]!, c.rule);
      const rig = await startRig(controller);
      try {
        for (const [name, meta] of redises) createRedis(rig.store, name, meta);
        await rig.dc.waitForIdle();
        const synced = redises.map(([name]) => name).filter((name) => rig.dc.syncCount(`${NS}/${name}`) > 0);
        assert.deepEqual(synced.sort(), c.synced);
        assert.deepEqual(
          rig.store.list('podmonitors').map((p) => p.metadata.name),
          c.synced,
          'attachments only for the selected',
        );
        // An object that comes to match is decorated on its update event.
        if (!c.synced.includes('plain')) {
          rig.store.mutate('redises', NS, 'plain', (r) => {
            r.metadata.labels = { monitoring: 'on' };
            r.metadata.annotations = { 'example.com/monitor': 'true' };
          });
          await until('the plain Redis to be decorated', () => rig.store.get('podmonitors', NS, 'plain'));
        }
      } finally {
        await rig.close();
      }
    });
  }
});

test('the request: exactly controller, object, attachments, related, finalizing; one attachments entry per rule, keyed namespace/name', async () => {
  const rig = await startRig(loadDecoratorController(), (r) => ({ body: { attachments: [podMonitor(String(r['object']['metadata']['name']))] } }));
  try {
    const redis = createRedis(rig.store);
    await rig.dc.waitForIdle();
    const [first, ...rest] = rig.hook.calls();
    assert.deepEqual(Object.keys(first!).sort(), ['attachments', 'controller', 'finalizing', 'object', 'related']);
    assert.deepEqual(first!['controller'], loadDecoratorController());
    assert.equal(first!['object']['metadata']['uid'], redis.metadata.uid);
    assert.equal(first!['finalizing'], false);
    assert.deepEqual(first!['related'], {});
    assert.deepEqual(first!['attachments'], { [PM]: {}, [PR]: {} }, 'every rule has its entry, empty before anything is attached');
    const later = rest.at(-1)!;
    assert.deepEqual(Object.keys(later['attachments'][PM]), [KEY]);
    assert.deepEqual(later['attachments'][PR], {}, 'an attachment kind with nothing attached is still there, empty');
    assert.equal(later['attachments'][PM][KEY]['metadata']['annotations'][DECORATOR_ANNOTATION], 'redis-operator-monitoring');
  } finally {
    await rig.close();
  }
});

// ------------------------------------------------------------------ attachments

test('attachments are created with a controllerRef, the decorator annotation and last-applied; updated in place; deleted when not returned', async () => {
  let answer = (r: Json): Reply => monitoringFor(r);
  const rig = await startRig(loadDecoratorController(), (r) => answer(r));
  try {
    const redis = createRedis(rig.store);
    await rig.dc.waitForIdle();
    for (const resource of ['podmonitors', 'prometheusrules']) {
      const obj = rig.store.read(resource, NS, 'r');
      assert.deepEqual(obj.metadata.ownerReferences, [
        { apiVersion: 'redis.example.com/v1', kind: 'Redis', name: 'r', uid: redis.metadata.uid, controller: true, blockOwnerDeletion: true },
      ]);
      assert.equal(obj.metadata.annotations?.[DECORATOR_ANNOTATION], 'redis-operator-monitoring');
      assert.equal(
        JSON.parse(obj.metadata.annotations?.[LAST_APPLIED_ANNOTATION] ?? '{}')['metadata']['annotations'][DECORATOR_ANNOTATION],
        'redis-operator-monitoring',
      );
    }
    assert.equal(rig.dc.stats(KEY).childWrites, 2);

    // InPlace: a changed desired object is merged into the observed one (fields nobody applied are kept).
    rig.store.mutate('podmonitors', NS, 'r', (p) => {
      p.metadata.annotations = { ...p.metadata.annotations, 'example.com/someone-else': 'kept' };
    });
    const before = rig.store.read('podmonitors', NS, 'r');
    answer = () => ({ body: { attachments: [podMonitor('r', 'exporter'), prometheusRule('r')] } });
    await resync(rig);
    const after = rig.store.read('podmonitors', NS, 'r');
    assert.equal(after.metadata.uid, before.metadata.uid, 'updated, not recreated');
    assert.deepEqual((after as Json)['spec']['podMetricsEndpoints'], [{ port: 'exporter' }]);
    assert.equal(after.metadata.annotations?.['example.com/someone-else'], 'kept');

    // Quiet when nothing changed.
    const writes = rig.dc.stats(KEY).childWrites;
    await resync(rig);
    assert.equal(rig.dc.stats(KEY).childWrites, writes);

    // Not returned any more: deleted.
    answer = () => ({ body: { attachments: [podMonitor('r', 'exporter')] } });
    await resync(rig);
    assert.equal(rig.store.get('prometheusrules', NS, 'r'), undefined);
    assert.ok(rig.store.get('podmonitors', NS, 'r'));
    answer = () => ({ body: {} });
    await resync(rig);
    assert.deepEqual(rig.store.list('podmonitors'), [], 'no attachments in the answer deletes them all');
    assert.equal(rig.dc.lastError(KEY), undefined);
  } finally {
    await rig.close();
  }
});

describe('attachment updateStrategy (default OnDelete)', () => {
  const cases: Array<{ method: string | undefined; want: 'unchanged' | 'updated' | 'recreated' }> = [
    { method: undefined, want: 'unchanged' },
    { method: 'OnDelete', want: 'unchanged' },
    { method: 'InPlace', want: 'updated' },
    { method: 'Recreate', want: 'recreated' },
  ];
  for (const c of cases) {
    test(`${c.method ?? 'no updateStrategy'}: a changed PodMonitor is ${c.want}`, async () => {
      const controller = loadDecoratorController();
      const rule = controller.spec.attachments![0]!;
      if (c.method === undefined) delete rule.updateStrategy;
      else rule.updateStrategy = { method: c.method };
      let port = 'metrics';
      const rig = await startRig(controller, () => ({ body: { attachments: [podMonitor('r', port)] } }));
      try {
        createRedis(rig.store);
        await rig.dc.waitForIdle();
        const before = rig.store.read('podmonitors', NS, 'r');
        port = 'exporter';
        await resync(rig);
        // Recreate deletes; the delete's watch event brings the sync that creates it again.
        const after = await until('the PodMonitor', () => rig.store.get('podmonitors', NS, 'r'));
        const got = after.metadata.uid !== before.metadata.uid ? 'recreated' : uidAndVersion(after) === uidAndVersion(before) ? 'unchanged' : 'updated';
        assert.equal(got, c.want);
        assert.deepEqual((after as Json)['spec']['podMetricsEndpoints'], [{ port: c.want === 'unchanged' ? 'metrics' : 'exporter' }]);
      } finally {
        await rig.close();
      }
    });
  }
});

test("attachments are only the Redis's own objects carrying this decorator's annotation: others are neither sent, deleted nor adopted", async () => {
  // The other Redis keeps its own attachment; ours wants none.
  const answer = (r: Json): Reply => ({ body: { attachments: r['object']['metadata']['name'] === 'other' ? [podMonitor('annotated-other-redis')] : [] } });
  const rig = await startRig(loadDecoratorController(), answer);
  try {
    const redis = createRedis(rig.store);
    const other = createRedis(rig.store, 'other');
    const ref = (o: StoredObject) => [{ apiVersion: 'redis.example.com/v1', kind: 'Redis', name: o.metadata.name, uid: o.metadata.uid, controller: true }];
    const ours = { [DECORATOR_ANNOTATION]: 'redis-operator-monitoring' };
    const foreign: Array<[string, Json]> = [
      ['owned-no-annotation', { ownerReferences: ref(redis) }],
      ['owned-by-another-decorator', { ownerReferences: ref(redis), annotations: { [DECORATOR_ANNOTATION]: 'someone-else' } }],
      ['annotated-orphan', { annotations: ours }],
      ['annotated-other-redis', { ownerReferences: ref(other), annotations: ours }],
    ];
    for (const [name, meta] of foreign) rig.store.create('podmonitors', { ...podMonitor(name), metadata: { name, namespace: NS, ...meta } });
    await resync(rig);
    assert.deepEqual(lastCall(rig.hook)['attachments'][PM], {});
    assert.deepEqual(
      Object.keys(lastCall(rig.hook, 'other')['attachments'][PM]),
      [`${NS}/annotated-other-redis`],
      "the other Redis's own attachment is its own",
    );
    assert.deepEqual(
      rig.store.list('podmonitors').map((p) => `${p.metadata.name}:${p.metadata.ownerReferences?.[0]?.name ?? 'orphan'}`),
      ['annotated-orphan:orphan', 'annotated-other-redis:other', 'owned-by-another-decorator:r', 'owned-no-annotation:r'],
    );
  } finally {
    await rig.close();
  }
});

// ------------------------------------------------------------------ the target: labels, annotations, status

describe("the target's status", () => {
  const cases: Array<{ name: string; status: unknown; want: 'kept' | 'replaced' }> = [
    { name: 'absent from the response: left as it is', status: undefined, want: 'kept' },
    { name: 'null: left as it is', status: null, want: 'kept' },
    { name: 'an object: replaces the whole status, once', status: { monitored: true }, want: 'replaced' },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const rig = await startRig(loadDecoratorController(), (r) => ({
        body: { ...(monitoringFor(r).body as Json), ...(c.status !== undefined ? { status: c.status } : {}) },
      }));
      try {
        const statusBefore = { phase: 'Running', observedGeneration: 1 };
        createRedis(rig.store, 'r', {}, statusBefore);
        await rig.dc.waitForIdle();
        await resync(rig);
        const redis = rig.store.read('redises', NS, 'r');
        assert.deepEqual(redis['status'], c.want === 'kept' ? statusBefore : c.status);
        assert.equal(rig.dc.stats(KEY).statusWrites, c.want === 'kept' ? 0 : 1, 'written once, not on the resync');
        assert.equal(rig.dc.stats(KEY).lastError, undefined);
      } finally {
        await rig.close();
      }
    });
  }
});

test('labels and annotations are applied to the target with one update, and only when something changed (null deletes a key)', async () => {
  let value = '1';
  const rig = await startRig(loadDecoratorController(), (r) => ({
    body: {
      ...(monitoringFor(r).body as Json),
      labels: { 'example.com/monitored': value },
      annotations: { 'example.com/dashboard': 'redis', 'example.com/old': null },
    },
  }));
  try {
    createRedis(rig.store, 'r', { labels: { app: 'shop' }, annotations: { 'example.com/old': 'x', keep: 'me' } });
    await rig.dc.waitForIdle();
    let redis = rig.store.read('redises', NS, 'r');
    assert.deepEqual(redis.metadata.labels, { app: 'shop', 'example.com/monitored': '1' });
    assert.deepEqual(redis.metadata.annotations, { 'example.com/dashboard': 'redis', keep: 'me' });
    assert.equal(rig.dc.stats(KEY).objectWrites, 1);
    const version = redis.metadata.resourceVersion;
    for (let i = 0; i < 3; i++) await resync(rig);
    assert.equal(rig.dc.stats(KEY).objectWrites, 1, 'an unchanged answer writes nothing');
    assert.equal(rig.store.read('redises', NS, 'r').metadata.resourceVersion, version);
    value = '2';
    await resync(rig);
    redis = rig.store.read('redises', NS, 'r');
    assert.equal(redis.metadata.labels?.['example.com/monitored'], '2');
    assert.equal(rig.dc.stats(KEY).objectWrites, 2);
    assert.equal(rig.dc.stats(KEY).statusWrites, 0);
  } finally {
    await rig.close();
  }
});

// ------------------------------------------------------------------ failures and resyncs

describe('a failed hook call changes nothing, records a SyncError event and is retried', () => {
  const bad: Array<{ name: string; reply: Reply; error: RegExp }> = [
    { name: 'HTTP 500', reply: { code: 500, raw: 'injected' }, error: /^sync hook failed: unsupported status code: 500 body: injected/ },
    { name: 'a body that is not JSON', reply: { raw: '{"attachments":' }, error: /can't unmarshal webhookResponse/ },
    { name: 'an unknown top-level field (v2 is strict)', reply: { body: { attachments: [], Labels: {} } }, error: /unknown field "Labels"/ },
    { name: 'labels of the wrong type', reply: { body: { attachments: [], labels: { a: 1 } } }, error: /labels: cannot unmarshal number/ },
    { name: 'an attachment without a kind', reply: { body: { attachments: [{ apiVersion: 'v1', metadata: { name: 'x' } }] } }, error: /'Kind' is missing/ },
  ];
  for (const b of bad) {
    test(b.name, async () => {
      let failing = false;
      const good = (r: Json): Reply => ({ body: { ...(monitoringFor(r).body as Json), labels: { monitored: 'yes' } } });
      const rig = await startRig(loadDecoratorController(), (r) => (failing ? b.reply : good(r)));
      try {
        createRedis(rig.store);
        await rig.dc.waitForIdle();
        const state = () => ['redises', 'podmonitors', 'prometheusrules'].map((res) => uidAndVersion(rig.store.get(res, NS, 'r')));
        const before = state();
        failing = true;
        rig.dc.resync(KEY);
        // Retried by backoff alone: no event of any object triggers these syncs.
        await until('two failed syncs', () => rig.dc.stats(KEY).failures >= 2);
        assert.match(rig.dc.lastError(KEY) ?? '', b.error);
        assert.deepEqual(state(), before, 'nothing changed');
        const events = rig.store.list('events', { namespace: NS }).filter((e) => e['reason'] === 'SyncError');
        assert.equal(events.length, 1, 'identical errors aggregate into one Event');
        assert.equal(events[0]!['type'], 'Warning');
        assert.equal((events[0] as Json)['involvedObject']['name'], 'r');
        assert.match(String(events[0]!['message']), /^Sync error: /);
        failing = false;
        await until('recovery', () => rig.dc.lastError(KEY) === undefined);
      } finally {
        await rig.close();
      }
    });
  }
});

test('resyncAfterSeconds requeues the target once per answer; 429 + Retry-After is no error; resyncPeriod resyncs every target', async () => {
  let calls = 0;
  const rig = await startRig(loadDecoratorController(), (r) => {
    calls += 1;
    if (calls === 1) return { code: 429, headers: { 'retry-after': '0' } };
    return { body: { ...(monitoringFor(r).body as Json), ...(calls < 6 ? { resyncAfterSeconds: 0.02 } : {}) } };
  });
  try {
    createRedis(rig.store);
    // Without the requeues this settles after the create and the echo of its own writes.
    await until('the requeues and the quiet answer', () => calls >= 6);
    await rig.dc.waitForIdle();
    assert.equal(rig.dc.stats(KEY).failures, 0);
    assert.deepEqual(rig.store.list('events'), []);
  } finally {
    await rig.close();
  }
  // A second runner over the same store: the periodic resync alone brings syncs, and they write nothing.
  const hook = await scriptedHook();
  hook.answers.set(SYNC_PATH, monitoringFor);
  const periodic = startDecoratorController({ store: rig.store, controller: loadDecoratorController(), hookBaseUrl: hook.url, resyncPeriodMs: 20 });
  try {
    await until('periodic resyncs', () => periodic.syncCount(KEY) >= 4);
    assert.equal(periodic.stats(KEY).childWrites, 0, 'a resync with an unchanged answer writes nothing');
  } finally {
    await periodic.stop();
    await hook.close();
  }
});

// ------------------------------------------------------------------ finalize

/** A finalize answer that tears down first and says `finalized` once nothing is left. */
const finalizeAnswer = (r: Json): Reply => {
  if (!r['finalizing']) return monitoringFor(r);
  const left = Object.values(r['attachments'] as Record<string, Json>).reduce((n, g) => n + Object.keys(g).length, 0);
  return { body: { attachments: [], finalized: left === 0 } };
};

function withFinalize(controller = loadDecoratorController()): DecoratorController {
  controller.spec.hooks!.finalize = { version: 'v2', webhook: { path: SYNC_PATH, timeout: '5s' } };
  return controller;
}

test('no finalize hook: no finalizer; with one: the finalizer holds a deleted target until finalize says finalized', async () => {
  const plain = await startRig();
  try {
    createRedis(plain.store);
    await plain.dc.waitForIdle();
    assert.deepEqual(plain.store.read('redises', NS, 'r').metadata.finalizers ?? [], []);
  } finally {
    await plain.close();
  }
  const rig = await startRig(withFinalize(), finalizeAnswer);
  try {
    createRedis(rig.store);
    await rig.dc.waitForIdle();
    assert.deepEqual(rig.store.read('redises', NS, 'r').metadata.finalizers, ['metacontroller.io/decoratorcontroller-redis-operator-monitoring']);
    assert.equal(rig.dc.finalizer, 'metacontroller.io/decoratorcontroller-redis-operator-monitoring');
    assert.ok(rig.store.get('podmonitors', NS, 'r'));
    assert.equal(rig.store.delete('redises', NS, 'r').deleted, false, 'the finalizer holds it');
    await until('the Redis to be gone', () => rig.store.get('redises', NS, 'r') === undefined);
    const finalizing = rig.hook.calls().filter((c) => c['finalizing'] === true);
    assert.ok(finalizing.length >= 2, 'teardown first, finalized once nothing was left');
    assert.deepEqual(Object.keys(finalizing[0]!['attachments'][PM]), [KEY]);
    assert.ok(rig.dc.stats(KEY).finalizeCalls >= 2);
    assert.deepEqual(rig.store.list('podmonitors'), []);
  } finally {
    await rig.close();
  }
});

test('a target that stops matching the selector is finalized (not deleted): attachments torn down, finalizer removed, then left alone', async () => {
  const controller = withFinalize();
  controller.spec.resources[0]!.labelSelector = { matchLabels: { monitoring: 'on' } };
  const rig = await startRig(controller, finalizeAnswer);
  try {
    createRedis(rig.store, 'r', { labels: { monitoring: 'on' } });
    await rig.dc.waitForIdle();
    assert.ok(rig.store.get('prometheusrules', NS, 'r'));
    rig.store.mutate('redises', NS, 'r', (r) => {
      r.metadata.labels = {};
    });
    await until('the finalizer to go', () => (rig.store.get('redises', NS, 'r')?.metadata.finalizers ?? []).length === 0);
    await rig.dc.waitForIdle();
    assert.deepEqual(rig.store.list('prometheusrules'), []);
    assert.ok(rig.store.get('redises', NS, 'r'), 'opting out deletes nothing but the attachments');
    const calls = rig.dc.syncCount(KEY);
    rig.dc.resync(KEY);
    await rig.dc.waitForIdle();
    assert.equal(rig.dc.syncCount(KEY), calls, 'no longer ours: a resync calls no hook');
  } finally {
    await rig.close();
  }
});

// ------------------------------------------------------------------ beside a CompositeController on the same parent kind

const composite: CompositeController = {
  apiVersion: 'metacontroller.k8s.io/v1alpha1',
  kind: 'CompositeController',
  metadata: { name: 'main' },
  spec: {
    generateSelector: true,
    parentResource: { apiVersion: 'redis.example.com/v1', resource: 'redises' },
    childResources: [{ apiVersion: 'v1', resource: 'configmaps', updateStrategy: { method: 'InPlace' } }],
    hooks: { sync: { version: 'v2', webhook: { path: '/sync', timeout: '5s' } } },
  },
};
const configMap = (name: string): Json => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS }, data: { a: '1' } });

describe('a CompositeController and a DecoratorController on Redis', () => {
  async function both(controller: DecoratorController, attachments: (r: Json) => Json[]) {
    const rig = await startRig(controller, (r) => ({ body: { attachments: attachments(r) } }));
    rig.hook.answers.set('/sync', () => ({ body: { status: { phase: 'Running' }, children: [configMap('r-config')] } }));
    const mc = startMetacontroller({ store: rig.store, controller: composite, hookBaseUrl: rig.hook.url, resyncPeriodMs: 0 });
    await mc.ready;
    /** Until neither has anything left to do (a write of one may wake the other). */
    const settle = async () => {
      for (let seen = -1; seen !== mc.syncCount(KEY) + rig.dc.syncCount(KEY);) {
        seen = mc.syncCount(KEY) + rig.dc.syncCount(KEY);
        await mc.waitForIdle();
        await rig.dc.waitForIdle();
      }
    };
    return { rig, mc, settle, close: async () => (await mc.stop(), await rig.close()) };
  }
  const owner = (o: StoredObject | undefined) => o?.metadata.ownerReferences?.map((r) => `${r.kind}/${r.name}`).join() ?? 'none';

  test("disjoint kinds (the shipped design): each sees only its own objects, neither deletes the other's, status stays the CompositeController's", async () => {
    const { rig, mc, settle, close } = await both(loadDecoratorController(), (r) => [podMonitor(String(r['object']['metadata']['name']))]);
    try {
      createRedis(rig.store);
      await settle();
      const writes = { mc: mc.stats(KEY).childWrites, dc: rig.dc.stats(KEY).childWrites };
      for (let i = 0; i < 2; i++) {
        mc.resync(KEY);
        rig.dc.resync(KEY);
        await settle();
      }
      assert.deepEqual({ mc: mc.stats(KEY).childWrites, dc: rig.dc.stats(KEY).childWrites }, writes, 'no fight: resyncs write nothing');
      assert.deepEqual(Object.keys(lastCall(rig.hook)['attachments']), [PM, PR]);
      const compositeRequest = rig.hook.calls('/sync').at(-1)!;
      assert.deepEqual(Object.keys(compositeRequest['children']), ['ConfigMap.v1']);
      assert.deepEqual(Object.keys(compositeRequest['children']['ConfigMap.v1']), [`${NS}/r-config`]);
      assert.equal(owner(rig.store.get('configmaps', NS, 'r-config')), 'Redis/r');
      assert.equal(owner(rig.store.get('podmonitors', NS, 'r')), 'Redis/r');
      assert.deepEqual(rig.store.read('redises', NS, 'r')['status'], { phase: 'Running', observedGeneration: 1 });
      assert.equal(rig.dc.stats(KEY).statusWrites + rig.dc.stats(KEY).objectWrites, 0, 'the decorator never wrote the Redis');
    } finally {
      await close();
    }
  });

  test("a kind both declare: the decorator neither sends nor deletes the CompositeController's children (no annotation)", async () => {
    const controller = loadDecoratorController();
    controller.spec.attachments!.push({ apiVersion: 'v1', resource: 'configmaps', updateStrategy: { method: 'InPlace' } });
    const { rig, settle, close } = await both(controller, () => []);
    try {
      createRedis(rig.store);
      await settle();
      rig.dc.resync(KEY);
      await settle();
      assert.deepEqual(lastCall(rig.hook)['attachments']['ConfigMap.v1'], {});
      assert.equal(owner(rig.store.get('configmaps', NS, 'r-config')), 'Redis/r');
    } finally {
      await close();
    }
  });

  // Upstream's ControllerRefManager releases an owned child that does not match the selector, so
  // a decorator attachment of a kind the CompositeController also declares loses its owner: the
  // reason the kinds must stay disjoint.
  test('the trap, modelled: an attachment of a kind the CompositeController declares is released by it', async () => {
    const controller = loadDecoratorController();
    controller.spec.attachments!.push({ apiVersion: 'v1', resource: 'configmaps', updateStrategy: { method: 'InPlace' } });
    const { rig, settle, close } = await both(controller, () => [configMap('r-monitoring')]);
    try {
      createRedis(rig.store);
      await until('the attachment to lose its owner', () => {
        const cm = rig.store.get('configmaps', NS, 'r-monitoring');
        return cm !== undefined && owner(cm) === 'none';
      });
      await settle();
      assert.equal(owner(rig.store.get('configmaps', NS, 'r-monitoring')), 'none');
      assert.equal(rig.dc.lastError(KEY), undefined, 'the decorator then only meets AlreadyExists, which it skips');
    } finally {
      await close();
    }
  });
});

// ------------------------------------------------------------------ start-up and over HTTP

describe('start-up failures reject ready', () => {
  const cases: Array<{ name: string; store: () => ObjectStore; controller: () => DecoratorController; error: RegExp }> = [
    {
      name: 'an attachment kind the API does not serve (its CRD is missing)',
      store: () => new ObjectStore(),
      controller: () => loadDecoratorController(),
      error: /can't find resource "podmonitors" in apiVersion "monitoring.coreos.com\/v1"/,
    },
    {
      name: 'a customize hook (not modelled)',
      store: () => new ObjectStore({ resources: RESOURCES }),
      controller: () => {
        const c = loadDecoratorController();
        c.spec.hooks!.customize = { version: 'v2', webhook: { path: '/customize' } };
        return c;
      },
      error: /customize hook .* not modelled/,
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const dc = startDecoratorController({ store: c.store(), controller: c.controller(), hookBaseUrl: 'http://127.0.0.1:9' });
      await assert.rejects(dc.ready, c.error);
      await assert.rejects(dc.waitForIdle(), c.error);
      await dc.stop();
    });
  }
  test('loadDecoratorController refuses a file of another kind', () => {
    assert.throws(() => loadDecoratorController(new URL('../../../metacontroller/composite-controller.yaml', import.meta.url)), /not a DecoratorController/);
  });
});

test('over HTTP with its own kubeconfig (informer caches that lag): attachments and labels converge, the status is untouched', async () => {
  const api = await startKubeApi({ resources: RESOURCES });
  const hook = await scriptedHook();
  hook.answers.set(SYNC_PATH, (r) => ({ body: { ...(monitoringFor(r).body as Json), labels: { monitored: 'yes' } } }));
  const dc = startDecoratorController({
    kubeconfig: api.kubeConfig('metacontroller'),
    controller: loadDecoratorController(),
    hookBaseUrl: hook.url,
    resyncPeriodMs: 0,
  });
  try {
    await dc.ready;
    const status = { phase: 'Running', observedGeneration: 1 };
    const redis = createRedis(api.store, 'r', {}, status);
    await until(
      'both attachments and the label',
      () =>
        api.store.get('podmonitors', NS, 'r') &&
        api.store.get('prometheusrules', NS, 'r') &&
        api.store.get('redises', NS, 'r')?.metadata.labels?.['monitored'] === 'yes',
    );
    assert.equal(api.store.read('podmonitors', NS, 'r').metadata.ownerReferences?.[0]?.uid, redis.metadata.uid);
    assert.deepEqual(api.store.read('redises', NS, 'r')['status'], status);
    await dc.waitForIdle();
    assert.equal(dc.lastError(KEY), undefined);
    assert.ok(
      api.requests.some((r) => r.client === 'metacontroller' && r.method === 'PUT' && r.path.endsWith('/redises/r')),
      'the labels went by PUT of the Redis',
    );
  } finally {
    await dc.stop();
    await hook.close();
    await api.close();
  }
});
