// The Metacontroller stand-in (test/cluster/metacontroller) against the REAL hook service
// (buildApp from src/server, over HTTP) and the kube-api stand-in's store with API-server
// validation installed, both in-process (storeClient) and over HTTP with its own kubeconfig
// (httpClient: informer caches that lag); plus its pure parts (three-way merge, durations) and
// its hook protocol handling against a scripted hook.
// Network: HTTP servers on 127.0.0.1, random ports. No redis-server here (no 127.0.N.x used).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { parse } from 'yaml';
import * as hook from '../../src/hook/index.ts';
import type { HookRequest } from '../../src/hook/index.ts';
import { buildApp } from '../../src/server/app.ts';
import { ObjectStore, startKubeApi, type StoredObject } from '../support/kube-api/index.ts';
import { validateK8sObject } from '../support/k8s-validate.ts';
import { installValidation } from './validation.ts';
import {
  applyUpdate,
  canonicalJson,
  LAST_APPLIED_ANNOTATION,
  loadCompositeController,
  merge,
  startMetacontroller,
  type CompositeController,
  type Metacontroller,
} from './metacontroller/index.ts';
import { parseGoDuration } from './metacontroller/hook-client.ts';
import { until } from '../support/until.ts';
import { setTimeout as sleep } from 'node:timers/promises';

const NS = 'default';
const NAME = 'my-redis';
const KEY = `${NS}/${NAME}`;
const CHILD_RESOURCES = ['statefulsets', 'services', 'configmaps', 'poddisruptionbudgets'] as const;
const EXAMPLE = parse(readFileSync(new URL('../../manifests/examples/redis.yaml', import.meta.url), 'utf8')) as Record<string, unknown>;

type Json = Record<string, unknown>;

function children(store: ObjectStore): StoredObject[] {
  return CHILD_RESOURCES.flatMap((r) => store.list(r, { namespace: NS }));
}

function conditionReasons(obj: StoredObject | undefined): string[] {
  const conditions = ((obj?.['status'] as Json | undefined)?.['conditions'] ?? []) as Array<Json>;
  return conditions.map((c) => String(c['reason']));
}

/** What a StatefulSet controller reports: enough for the finalize hook's "policy applied" check. */
function stubStatefulSetController(store: ObjectStore): () => void {
  const handle = store.watch('statefulsets', {}, (ev) => {
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED') return;
    const sts = ev.object as StoredObject;
    const generation = sts.metadata.generation;
    if ((sts['status'] as Json | undefined)?.['observedGeneration'] === generation) return;
    setImmediate(() => {
      try {
        store.patch(
          'statefulsets',
          sts.metadata.namespace,
          sts.metadata.name,
          { status: { observedGeneration: generation, replicas: 0, availableReplicas: 0 } },
          { subresource: 'status' },
        );
      } catch {
        // gone meanwhile
      }
    });
  });
  return () => handle.stop();
}

type Transport = 'store' | 'http';

interface Cluster {
  transport: Transport;
  store: ObjectStore;
  mc: Metacontroller;
  controller: CompositeController;
  /** Raw JSON bodies the hook service received, by path. */
  received: Array<{ path: string; body: Json }>;
  /** While true the sync hook answers 500. */
  failSync: { on: boolean };
  close(): Promise<void>;
}

async function startCluster(transport: Transport = 'store'): Promise<Cluster> {
  const api = transport === 'http' ? await startKubeApi() : undefined;
  const store = api?.store ?? new ObjectStore();
  const validation = installValidation(store);
  const stopSts = stubStatefulSetController(store);
  const failSync = { on: false };
  const received: Cluster['received'] = [];
  const app = buildApp({
    logger: pino({ level: 'silent' }),
    defaultMetrics: false,
    hooks: {
      sync: (request: HookRequest) => {
        if (failSync.on) throw new Error('injected fault');
        return hook.sync(request);
      },
    },
  });
  app.addHook('preHandler', (request, _reply, done) => {
    received.push({ path: request.url, body: request.body as Json });
    done();
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const controller = loadCompositeController();
  const where = api ? { kubeconfig: api.kubeConfig('metacontroller') } : { store };
  const mc = startMetacontroller({ ...where, controller, hookBaseUrl: url, backoff: { initialMs: 20, maxMs: 400 }, resyncPeriodMs: 0 });
  await mc.ready;
  return {
    transport,
    store,
    mc,
    controller,
    received,
    failSync,
    close: async () => {
      await mc.stop();
      await app.close();
      stopSts();
      validation.uninstall();
      await api?.close();
    },
  };
}

/** Idle and staying idle: over HTTP the watch events of its own last writes arrive after waitForIdle(). */
async function settle(c: Cluster): Promise<void> {
  for (;;) {
    await c.mc.waitForIdle();
    const calls = c.mc.syncCount(KEY);
    if (c.transport === 'store') return;
    await new Promise((r) => setTimeout(r, 150));
    await c.mc.waitForIdle();
    if (c.mc.syncCount(KEY) === calls) return;
  }
}

async function applyExample(c: Cluster): Promise<StoredObject> {
  c.store.create('redises', structuredClone(EXAMPLE), { keepStatus: false });
  await until('the Redis status', () => (c.store.get('redises', NS, NAME)?.['status'] as Json | undefined)?.['phase']);
  await until('eight children', () => children(c.store).length === 8);
  await settle(c);
  return c.store.read('redises', NS, NAME);
}

// ------------------------------------------------------------------ pure parts

describe('three-way merge (Metacontroller apply semantics)', () => {
  const cases: Array<{ name: string; observed: Json; last: Json | undefined; desired: Json; want: Json }> = [
    {
      name: 'keeps fields nobody applied (API defaults, other controllers)',
      observed: { spec: { a: 1, defaulted: 'x' }, metadata: { annotations: { other: 'keep' } } },
      last: { spec: { a: 1 } },
      desired: { spec: { a: 2 } },
      want: { spec: { a: 2, defaulted: 'x' }, metadata: { annotations: { other: 'keep' } } },
    },
    {
      name: 'removes a field that was applied and is no longer desired',
      observed: { spec: { a: 1, b: 2 } },
      last: { spec: { a: 1, b: 2 } },
      desired: { spec: { a: 1 } },
      want: { spec: { a: 1 } },
    },
    {
      name: 'merges lists of objects by name, keeping observed order and server fields',
      observed: {
        c: [
          { name: 'x', image: 'a', tmp: 1 },
          { name: 'y', image: 'b' },
        ],
      },
      last: {
        c: [
          { name: 'x', image: 'a' },
          { name: 'y', image: 'b' },
        ],
      },
      desired: {
        c: [
          { name: 'y', image: 'b2' },
          { name: 'x', image: 'a' },
          { name: 'z', image: 'c' },
        ],
      },
      want: {
        c: [
          { name: 'x', image: 'a', tmp: 1 },
          { name: 'y', image: 'b2' },
          { name: 'z', image: 'c' },
        ],
      },
    },
    {
      name: 'drops a list-map item that was applied and is no longer desired',
      observed: {
        ports: [
          { port: 1, protocol: 'TCP' },
          { port: 2, protocol: 'TCP' },
        ],
      },
      last: { ports: [{ port: 1 }, { port: 2 }] },
      desired: { ports: [{ port: 2 }] },
      want: { ports: [{ port: 2, protocol: 'TCP' }] },
    },
    {
      name: 'replaces lists without a conventional merge key (volumeClaimTemplates)',
      observed: { vct: [{ metadata: { name: 'data' }, status: { phase: 'Pending' } }] },
      last: { vct: [{ metadata: { name: 'data' } }] },
      desired: { vct: [{ metadata: { name: 'data' } }] },
      want: { vct: [{ metadata: { name: 'data' } }] },
    },
    {
      name: 'no last-applied: adds and overwrites desired keys, removes nothing',
      observed: { a: 1, b: { c: 1 } },
      last: undefined,
      desired: { b: { d: 2 } },
      want: { a: 1, b: { c: 1, d: 2 } },
    },
  ];
  for (const c of cases) {
    test(c.name, () => assert.deepEqual(merge(c.observed, c.last, c.desired), c.want));
  }

  test('applyUpdate reverts system metadata and status, and records last-applied as sorted JSON', () => {
    const observed = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'x',
        uid: 'u1',
        resourceVersion: '7',
        creationTimestamp: 't',
        annotations: { [LAST_APPLIED_ANNOTATION]: canonicalJson({ data: { a: '1' } }) },
      },
      data: { a: '1' },
      status: { s: 1 },
    };
    const desired = { metadata: { name: 'x', uid: 'other', resourceVersion: '1' }, data: { b: '2' }, status: { s: 2 }, apiVersion: 'v1', kind: 'ConfigMap' };
    const next = applyUpdate(observed, desired) as { metadata: Json; data: Json; status: Json };
    assert.equal(next.metadata['uid'], 'u1');
    assert.equal(next.metadata['resourceVersion'], '7');
    assert.deepEqual(next.status, { s: 1 });
    assert.deepEqual(next.data, { b: '2' });
    assert.equal((next.metadata['annotations'] as Json)[LAST_APPLIED_ANNOTATION], canonicalJson(desired));
    assert.equal(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] }), '{"a":[{"c":2,"d":1}],"b":1}');
  });

  const durations: Array<[string, number | undefined]> = [
    ['5s', 5000],
    ['500ms', 500],
    ['1m30s', 90_000],
    ['1.5s', 1500],
    ['abc', undefined],
    ['5', undefined],
  ];
  for (const [text, ms] of durations) test(`Go duration ${text}`, () => assert.equal(parseGoDuration(text), ms));
});

// ------------------------------------------------------------------ with the real hook service

for (const transport of ['store', 'http'] as const)
  describe(`Metacontroller stand-in with the real hook service (${transport})`, () => {
    test('applying the design Redis creates every child, labelled, owned, valid, and writes status', async () => {
      const c = await startCluster(transport);
      try {
        const redis = await applyExample(c);
        const uid = redis.metadata.uid;
        assert.deepEqual(redis.metadata.finalizers, ['metacontroller.io/compositecontroller-redis-operator']);
        const kids = children(c.store);
        assert.deepEqual(kids.map((k) => `${k.kind}/${k.metadata.name}`).sort(), [
          'ConfigMap/my-redis-config',
          'PodDisruptionBudget/my-redis-pdb',
          'Service/my-redis-headless',
          'Service/my-redis-master',
          'Service/my-redis-metrics',
          'Service/my-redis-replicas',
          'StatefulSet/my-redis-master',
          'StatefulSet/my-redis-replica',
        ]);
        for (const kid of kids) {
          assert.equal(kid.metadata.labels?.['controller-uid'], uid, `${kid.kind}/${kid.metadata.name} label`);
          assert.deepEqual(kid.metadata.ownerReferences, [
            { apiVersion: 'redis.example.com/v1', kind: 'Redis', name: NAME, uid, controller: true, blockOwnerDeletion: true },
          ]);
          assert.ok(kid.metadata.annotations?.[LAST_APPLIED_ANNOTATION], `${kid.kind}/${kid.metadata.name} last-applied`);
          validateK8sObject(kid);
        }
        const status = redis['status'] as Json;
        assert.equal(status['phase'], 'Pending');
        assert.equal(status['observedGeneration'], 1);
        assert.equal(c.mc.lastError(KEY), undefined);
        assert.ok(c.mc.stats(KEY).statusWrites >= 1);
      } finally {
        await c.close();
      }
    });

    test('requests are built as the contract says: five keys, one outer entry per child resource, namespace/name keys', async () => {
      const c = await startCluster(transport);
      try {
        await applyExample(c);
        const syncs = c.received.filter((r) => r.path === '/sync');
        const last = syncs[syncs.length - 1]!.body;
        assert.deepEqual(Object.keys(last).sort(), ['children', 'controller', 'finalizing', 'parent', 'related']);
        assert.deepEqual(last['controller'], c.controller);
        assert.equal(last['finalizing'], false);
        const kids = last['children'] as Record<string, Record<string, Json>>;
        assert.deepEqual(Object.keys(kids).sort(), [
          'ConfigMap.v1',
          'CronJob.batch/v1',
          'NetworkPolicy.networking.k8s.io/v1',
          'PodDisruptionBudget.policy/v1',
          'Service.v1',
          'StatefulSet.apps/v1',
        ]);
        assert.deepEqual(Object.keys(kids['Service.v1']!).sort(), [
          'default/my-redis-headless',
          'default/my-redis-master',
          'default/my-redis-metrics',
          'default/my-redis-replicas',
        ]);
        const related = last['related'] as Record<string, Record<string, Json>>;
        assert.deepEqual(Object.keys(related).sort(), ['Job.batch/v1', 'PersistentVolumeClaim.v1', 'Pod.v1', 'Secret.v1']);
        // The very first request saw no children yet: every declared resource still has its (empty) entry.
        const first = syncs[0]!.body['children'] as Record<string, Record<string, Json>>;
        assert.deepEqual(
          Object.values(first).map((g) => Object.keys(g).length),
          [0, 0, 0, 0, 0, 0],
        );
        const customize = c.received.filter((r) => r.path === '/customize');
        assert.equal(customize.length, 1, 'customize is cached per uid and generation');
        assert.deepEqual(Object.keys(customize[0]!.body).sort(), ['controller', 'parent']);
      } finally {
        await c.close();
      }
    });

    test("related objects come from the parent's namespace only: a look-alike claim elsewhere is neither sent nor a reason to sync", async () => {
      const c = await startCluster(transport);
      try {
        await applyExample(c);
        await c.mc.waitForIdle();
        const before = c.mc.stats(KEY).syncCalls;
        c.store.create('namespaces', { metadata: { name: 'elsewhere' } });
        c.store.create('persistentvolumeclaims', {
          metadata: {
            name: 'data-my-redis-master-0',
            namespace: 'elsewhere',
            labels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': NAME, 'app.kubernetes.io/managed-by': 'redis-operator' },
          },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
        });
        await sleep(300);
        await c.mc.waitForIdle();
        assert.equal(c.mc.stats(KEY).syncCalls, before, 'a claim in another namespace triggers no sync');
        c.mc.resync(KEY);
        await until('the resync to run', () => c.mc.stats(KEY).syncCalls === before + 1);
        const syncs = c.received.filter((r) => r.path === '/sync');
        const related = syncs[syncs.length - 1]!.body['related'] as Record<string, Record<string, Json>>;
        assert.deepEqual(Object.keys(related['PersistentVolumeClaim.v1'] ?? {}), []);
      } finally {
        await c.close();
      }
    });

    test('status is written only when it changes: resyncs do not rewrite it (no hot loop)', async () => {
      const c = await startCluster(transport);
      try {
        await applyExample(c);
        const before = c.mc.stats(KEY);
        for (let i = 0; i < 5; i++) {
          c.mc.resync(KEY);
          await until('the resync to run', () => c.mc.stats(KEY).syncCalls === before.syncCalls + i + 1);
          await c.mc.waitForIdle();
        }
        const after = c.mc.stats(KEY);
        assert.equal(after.syncCalls, before.syncCalls + 5, 'each resync is exactly one sync: nothing it wrote triggered another');
        assert.equal(after.statusWrites, before.statusWrites);
        assert.equal(after.childWrites, before.childWrites);
      } finally {
        await c.close();
      }
    });

    test('a related object (the auth Secret) and a drifted child both trigger a sync that repairs state', async () => {
      const c = await startCluster(transport);
      try {
        await applyExample(c);
        assert.ok(conditionReasons(c.store.get('redises', NS, NAME)).includes('AuthSecretMissing'));
        c.store.create('secrets', { metadata: { name: 'my-redis-auth', namespace: NS }, stringData: { password: 'pw' } });
        c.store.create('secrets', { metadata: { name: 'my-redis-operator', namespace: NS }, stringData: { password: 'opw' } });
        await until('the Secret to be seen', () => !conditionReasons(c.store.get('redises', NS, NAME)).includes('AuthSecretMissing'));

        c.store.mutate('statefulsets', NS, 'my-redis-replica', (s) => {
          (s['spec'] as Json)['replicas'] = 7;
          s.metadata.annotations = { ...s.metadata.annotations, 'example.com/someone-else': 'kept' };
        });
        const repaired = await until('the replica count to be restored', () => {
          const s = c.store.get('statefulsets', NS, 'my-redis-replica');
          return (s?.['spec'] as Json | undefined)?.['replicas'] === 2 ? s : undefined;
        });
        assert.equal(repaired.metadata.annotations?.['example.com/someone-else'], 'kept', 'fields the hook never set are left alone');

        // An orphan that matches the selector is adopted back.
        c.store.mutate('poddisruptionbudgets', NS, 'my-redis-pdb', (p) => {
          delete p.metadata.ownerReferences;
        });
        await until('the PDB to be adopted', () => c.store.get('poddisruptionbudgets', NS, 'my-redis-pdb')?.metadata.ownerReferences?.[0]?.controller === true);

        const uid = c.store.read('configmaps', NS, 'my-redis-config').metadata.uid;
        c.store.delete('configmaps', NS, 'my-redis-config');
        const again = await until('the ConfigMap to be recreated', () => c.store.get('configmaps', NS, 'my-redis-config'));
        assert.notEqual(again.metadata.uid, uid);
      } finally {
        await c.close();
      }
    });

    test('an invalid spec that passes the schema: condition InvalidSpec, nothing deleted', async () => {
      const c = await startCluster(transport);
      try {
        await applyExample(c);
        const uids = children(c.store)
          .map((k) => k.metadata.uid)
          .sort();
        // The CRD accepts any toleration value; Kubernetes refuses a value with operator Exists.
        c.store.mutate('redises', NS, NAME, (r) => {
          (r['spec'] as Json)['tolerations'] = [{ key: 'dedicated', operator: 'Exists', value: 'redis', effect: 'NoSchedule' }];
        });
        const redis = await until('InvalidSpec', () => {
          const r = c.store.get('redises', NS, NAME);
          return conditionReasons(r).includes('InvalidSpec') ? r : undefined;
        });
        assert.ok(conditionReasons(redis).includes('InvalidSpec'));
        assert.equal((redis['status'] as Json)['observedGeneration'], 2);
        assert.deepEqual(
          children(c.store)
            .map((k) => k.metadata.uid)
            .sort(),
          uids,
        );
      } finally {
        await c.close();
      }
    });

    // Metacontroller records the desired object as last-applied; a desired child that is the
    // observed one verbatim carries the previous annotation inside it, so every sync writes a
    // longer annotation, which triggers the next sync (metacontroller/metacontroller#1003), until
    // the API server refuses the 256 KiB of annotations and every sync fails.
    test('an invalid spec is quiet: no child writes, no sync errors, last-applied unchanged', async () => {
      const c = await startCluster(transport);
      try {
        await applyExample(c);
        const lastApplied = () =>
          children(c.store)
            .map((k) => `${k.kind}/${k.metadata.name}=${k.metadata.annotations?.[LAST_APPLIED_ANNOTATION]?.length}`)
            .sort();
        const before = { stats: c.mc.stats(KEY), lastApplied: lastApplied() };
        c.store.mutate('redises', NS, NAME, (r) => {
          (r['spec'] as Json)['tolerations'] = [{ key: 'dedicated', operator: 'Exists', value: 'redis', effect: 'NoSchedule' }];
        });
        await until('InvalidSpec', () => conditionReasons(c.store.get('redises', NS, NAME)).includes('InvalidSpec'));
        for (let i = 0; i < 3; i++) {
          c.mc.resync(KEY);
          await c.mc.waitForIdle();
        }
        const after = c.mc.stats(KEY);
        assert.equal(after.lastError, undefined);
        assert.equal(after.failures, before.stats.failures);
        assert.equal(after.childWrites, before.stats.childWrites, 'an echoed child must not be rewritten');
        assert.deepEqual(lastApplied(), before.lastApplied);
      } finally {
        await c.close();
      }
    });

    test('a hook answering 500 changes nothing and records SyncError; the next good answer recovers', async () => {
      const c = await startCluster(transport);
      try {
        await applyExample(c);
        const before = children(c.store)
          .map((k) => `${k.metadata.uid}@${k.metadata.resourceVersion}`)
          .sort();
        const statusBefore = c.store.read('redises', NS, NAME)['status'];
        c.failSync.on = true;
        c.store.mutate('redises', NS, NAME, (r) => {
          (r['spec'] as Json)['replicas'] = 3;
        });
        await until('a failed sync', () => c.mc.stats(KEY).failures >= 2);
        assert.match(c.mc.lastError(KEY) ?? '', /unsupported status code: 500/);
        assert.deepEqual(
          children(c.store)
            .map((k) => `${k.metadata.uid}@${k.metadata.resourceVersion}`)
            .sort(),
          before,
        );
        assert.deepEqual(c.store.read('redises', NS, NAME)['status'], statusBefore);
        const events = c.store.list('events', { namespace: NS }).filter((e) => e['reason'] === 'SyncError');
        assert.equal(events.length, 1, 'repeated identical errors aggregate into one Event');
        const event = events[0]!;
        assert.equal(event['type'], 'Warning');
        assert.equal((event['involvedObject'] as Json)['uid'], c.store.read('redises', NS, NAME).metadata.uid);
        assert.match(String(event['message']), /^Sync error: sync hook failed/);
        validateK8sObject(event);

        c.failSync.on = false;
        await until(
          'the replica StatefulSet to scale',
          () => (c.store.get('statefulsets', NS, 'my-redis-replica')?.['spec'] as Json | undefined)?.['replicas'] === 3,
        );
        await until(
          'observedGeneration 2',
          () => (c.store.get('redises', NS, NAME)?.['status'] as Json | undefined)?.['observedGeneration'] === 2 || undefined,
        );
        await c.mc.waitForIdle();
        assert.equal(c.mc.lastError(KEY), undefined);
      } finally {
        await c.close();
      }
    });

    test('deleting the Redis (whenDeleted Retain): finalize, finalizer released, children collected, volumes kept', async () => {
      const c = await startCluster(transport);
      try {
        await applyExample(c);
        // A data volume as the StatefulSet controller would have made it (claim template labels, no owner).
        c.store.create('persistentvolumeclaims', {
          metadata: {
            name: 'data-my-redis-master-0',
            namespace: NS,
            labels: { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': NAME, 'app.kubernetes.io/managed-by': 'redis-operator' },
          },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
        });
        const { deleted } = c.store.delete('redises', NS, NAME);
        assert.equal(deleted, false, 'the finalizer holds the Redis');
        await until('the Redis to be gone', () => c.store.get('redises', NS, NAME) === undefined);
        assert.ok(c.mc.stats(KEY).finalizeCalls >= 1);
        assert.deepEqual(children(c.store), []);
        assert.ok(c.store.get('persistentvolumeclaims', NS, 'data-my-redis-master-0'), 'Retain keeps the volume');
        const finalize = c.received.filter((r) => r.path === '/finalize');
        assert.ok(finalize.length >= 1);
        assert.equal(finalize[finalize.length - 1]!.body['finalizing'], true);
      } finally {
        await c.close();
      }
    });
  });

// ------------------------------------------------------------------ hook protocol, against a scripted hook

interface ScriptedHook {
  url: string;
  /** Answer for the next /sync calls (the request JSON is passed in). */
  answer: (request: Json, res: ServerResponse) => void;
  close(): Promise<void>;
}

async function scriptedHook(): Promise<ScriptedHook> {
  const state: { answer: ScriptedHook['answer'] } = { answer: (_req, res) => res.writeHead(500).end() };
  const server: Server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const request = JSON.parse(body) as Json;
      if (req.url === '/customize') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ relatedResources: [] }));
        return;
      }
      state.answer(request, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    set answer(fn: ScriptedHook['answer']) {
      state.answer = fn;
    },
    get answer() {
      return state.answer;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A desired ConfigMap for the parent in a request, labelled with `uid` as controller-uid. */
function configMapFor(request: Json, uid: unknown): Json {
  const parent = request['parent'] as { metadata: { namespace: string } };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: parent.metadata.namespace, labels: { 'controller-uid': uid } },
    data: { a: '1' },
  };
}

describe('hook protocol handling (scripted hook)', () => {
  let hookServer: ScriptedHook;
  before(async () => {
    hookServer = await scriptedHook();
  });
  after(async () => {
    await hookServer.close();
  });

  const bad: Array<{ name: string; answer: ScriptedHook['answer']; error: RegExp }> = [
    {
      name: 'an unknown top-level field (v2 is strict)',
      answer: (r, res) => json(res, { status: {}, children: [configMapFor(r, uidOf(r))], Status: {} }),
      error: /unknown field "Status"/,
    },
    { name: 'a body that is not JSON', answer: (_r, res) => res.writeHead(200).end('{"status":'), error: /can't unmarshal/ },
    {
      name: 'a child whose labels do not match the generated selector',
      answer: (r, res) => json(res, { status: {}, children: [configMapFor(r, 'someone-else')] }),
      error: /don't match parent selector/,
    },
    {
      name: 'a child without a kind',
      answer: (_r, res) => json(res, { status: {}, children: [{ apiVersion: 'v1', metadata: { name: 'x' } }] }),
      error: /'Kind' is missing/,
    },
  ];
  for (const b of bad) {
    test(`${b.name}: the sync fails, nothing changes`, async () => {
      const store = new ObjectStore();
      installValidation(store);
      hookServer.answer = (r, res) => json(res, { status: { phase: 'Pending' }, children: [configMapFor(r, uidOf(r))] });
      const mc = startMetacontroller({
        store,
        controller: loadCompositeController(),
        hookBaseUrl: hookServer.url,
        backoff: { initialMs: 20, maxMs: 200 },
        resyncPeriodMs: 0,
      });
      try {
        store.create('redises', structuredClone(EXAMPLE), { keepStatus: false });
        const cm = await until('the first child', () => store.get('configmaps', NS, 'cm'));
        await mc.waitForIdle();
        const status = store.read('redises', NS, NAME)['status'];
        hookServer.answer = b.answer;
        const failures = mc.stats(KEY).failures;
        mc.resync(KEY);
        await until('a failed sync', () => mc.stats(KEY).failures > failures);
        assert.match(mc.lastError(KEY) ?? '', b.error);
        assert.equal(store.read('configmaps', NS, 'cm').metadata.resourceVersion, cm.metadata.resourceVersion);
        assert.deepEqual(store.read('redises', NS, NAME)['status'], status);
      } finally {
        await mc.stop();
      }
    });
  }

  test("an empty children list deletes every child (the contract's warning, modelled)", async () => {
    const store = new ObjectStore();
    hookServer.answer = (r, res) => json(res, { status: {}, children: [configMapFor(r, uidOf(r))] });
    const mc = startMetacontroller({ store, controller: loadCompositeController(), hookBaseUrl: hookServer.url, resyncPeriodMs: 0 });
    try {
      store.create('redises', structuredClone(EXAMPLE), { keepStatus: false });
      await until('the child', () => store.get('configmaps', NS, 'cm'));
      hookServer.answer = (_r, res) => json(res, { status: {} });
      mc.resync(KEY);
      await until('the child to be deleted', () => store.get('configmaps', NS, 'cm') === undefined);
    } finally {
      await mc.stop();
    }
  });

  test('resyncAfterSeconds requeues a parent once per answer; resyncPeriod resyncs every parent', async () => {
    const store = new ObjectStore();
    let calls = 0;
    hookServer.answer = (r, res) => {
      calls += 1;
      json(res, { status: { phase: 'Pending' }, children: [configMapFor(r, uidOf(r))], ...(calls < 6 ? { resyncAfterSeconds: 0.05 } : {}) });
    };
    const mc = startMetacontroller({ store, controller: loadCompositeController(), hookBaseUrl: hookServer.url, resyncPeriodMs: 0 });
    try {
      store.create('redises', structuredClone(EXAMPLE), { keepStatus: false });
      // Without resyncAfterSeconds this settles after two calls (create, then the echo of its own writes).
      await until('the requeues and the quiet answer', () => calls >= 6);
      await mc.waitForIdle();
    } finally {
      await mc.stop();
    }
    const periodic = startMetacontroller({ store, controller: loadCompositeController(), hookBaseUrl: hookServer.url, resyncPeriodMs: 50 });
    try {
      await until('the first sync', () => periodic.syncCount(KEY) >= 1);
      await periodic.waitForIdle();
      const writes = periodic.stats(KEY).statusWrites;
      await until('periodic resyncs', () => periodic.syncCount(KEY) >= 4);
      assert.equal(periodic.stats(KEY).statusWrites, writes, 'a resync with an unchanged status writes nothing');
    } finally {
      await periodic.stop();
    }
  });

  test("429 with Retry-After is not an error; a hung hook times out with the hook's timeout", async () => {
    const store = new ObjectStore();
    const controller = loadCompositeController();
    (controller.spec.hooks!.sync!.webhook as Json)['timeout'] = '200ms';
    hookServer.answer = (_r, res) => res.writeHead(429, { 'retry-after': '0' }).end();
    const mc = startMetacontroller({ store, controller, hookBaseUrl: hookServer.url, backoff: { initialMs: 20, maxMs: 200 }, resyncPeriodMs: 0 });
    try {
      store.create('redises', structuredClone(EXAMPLE), { keepStatus: false });
      await until('a few 429 answers', () => mc.stats(KEY).syncCalls >= 2);
      assert.equal(mc.stats(KEY).failures, 0);
      assert.equal(store.list('events').length, 0);
      hookServer.answer = () => undefined; // never answers
      await until('a timeout', () => mc.lastError(KEY));
      assert.match(mc.lastError(KEY) ?? '', /sync hook failed: http error/);
    } finally {
      await mc.stop();
    }
  });
});

function uidOf(request: Json): unknown {
  return ((request['parent'] as Json)['metadata'] as Json)['uid'];
}
