// The Metacontroller stand-in's DecoratorController (decorator.ts), part 1: which objects it
// decorates, the request, attachments created/updated/deleted and their update strategy, the
// target's status, labels and annotations. Against the kube-api stand-in's store with a scripted
// hook over HTTP (decorator-rig.ts). Network: the hook server on 127.0.0.1, random port.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DECORATOR_ANNOTATION, LAST_APPLIED_ANNOTATION, loadDecoratorController } from './index.ts';
import { type StoredObject } from '../../support/kube-api/index.ts';
import { until } from '../../support/until.ts';
import {
  type Json,
  NS,
  KEY,
  PM,
  PR,
  type Reply,
  podMonitor,
  prometheusRule,
  monitoringFor,
  startRig,
  createRedis,
  uidAndVersion,
  lastCall,
  resync,
} from './decorator-rig.ts';

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
