// The Metacontroller stand-in's DecoratorController (decorator.ts), part 2: failed hook calls,
// resyncs, finalize, start-up failures, living beside a CompositeController on Redis, and over
// HTTP with lagging informer caches (decorator-rig.ts). Network: the hook server on 127.0.0.1,
// random port, and the API stand-in for the HTTP test.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadDecoratorController, startDecoratorController, startMetacontroller, type CompositeController, type DecoratorController } from './index.ts';
import { ObjectStore, startKubeApi, type StoredObject } from '../../support/kube-api/index.ts';
import { until } from '../../support/until.ts';
import {
  type Json,
  NS,
  KEY,
  SYNC_PATH,
  PM,
  PR,
  RESOURCES,
  type Reply,
  scriptedHook,
  podMonitor,
  monitoringFor,
  startRig,
  createRedis,
  uidAndVersion,
  lastCall,
} from './decorator-rig.ts';

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
