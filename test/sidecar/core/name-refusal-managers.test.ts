// Both kinds' managers with a refused parent: no worker and no status series for it (the sidecar
// makes no Secret and sends no Redis command for it), while the older parent of the other kind
// keeps its worker; a refusal the sidecar sees itself (the other manager's informer) holds until
// the rival goes, then the parent is managed. Informers are in-memory stand-ins; no instance leads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { KubernetesObject } from '@kubernetes/client-node';
import { NAME_CONFLICT_REASON } from '../../../src/api/name-conflict.ts';
import { RedisManager } from '../../../src/sidecar/redis/manager/index.ts';
import { RedisClusterManager } from '../../../src/sidecar/rediscluster/manager/manager.ts';
import { DEFAULT_TIMING } from '../../../src/sidecar/config.ts';
import { createSidecarMetrics } from '../../../src/sidecar/metrics.ts';

type Verb = 'add' | 'update' | 'delete';

/** An informer over a list the test edits: handlers are called as the real one calls them. */
class FakeInformer<T extends KubernetesObject> {
  readonly items = new Map<string, T>();
  readonly #handlers: Record<Verb, Array<(o: T) => void>> = { add: [], update: [], delete: [] };
  on(verb: Verb, cb: (o: T) => void): void {
    this.#handlers[verb].push(cb);
  }
  onError(): void {}
  list(namespace?: string): T[] {
    return [...this.items.values()].filter((o) => namespace === undefined || o.metadata?.namespace === namespace);
  }
  get(name: string, namespace: string): T | undefined {
    return this.items.get(`${namespace}/${name}`);
  }
  async start(): Promise<void> {
    for (const o of this.items.values()) for (const cb of this.#handlers.add) cb(o);
  }
  async stop(): Promise<void> {}
  put(o: T): void {
    const k = `${o.metadata?.namespace}/${o.metadata?.name}`;
    const verb = this.items.has(k) ? 'update' : 'add';
    this.items.set(k, o);
    for (const cb of this.#handlers[verb]) cb(o);
  }
  remove(o: T): void {
    this.items.delete(`${o.metadata?.namespace}/${o.metadata?.name}`);
    for (const cb of this.#handlers.delete) cb(o);
  }
}

/** Kube calls nobody should make for a refused parent; any other is answered with nothing. */
function fakeKube(informers: Record<string, unknown>, calls: string[]) {
  return new Proxy(informers, {
    get: (target, prop) =>
      prop in target
        ? target[prop as string]
        : async (...args: unknown[]) => {
            calls.push(`${String(prop)} ${JSON.stringify(args[0] ?? null)}`);
            return null;
          },
  }) as never;
}

const parent = (kind: string, name: string, at: string, uid: string, status?: unknown) =>
  ({
    apiVersion: 'redis.example.com/v1',
    kind,
    metadata: { name, namespace: 'ns', uid, creationTimestamp: at },
    spec: {},
    ...(status !== undefined ? { status } : {}),
  }) as unknown as KubernetesObject;

const refused = {
  phase: 'Failed',
  conditions: [{ type: 'Ready', status: 'False', reason: NAME_CONFLICT_REASON, message: 'Redis x is older' }],
};

function managers() {
  const redises = new FakeInformer();
  const clusters = new FakeInformer();
  const calls: string[] = [];
  const metrics = createSidecarMetrics();
  const logger = pino({ level: 'silent' });
  const leader = { isLeader: () => false };
  const timing = DEFAULT_TIMING;
  // Each manager reaches the other through this holder, as main.ts wires them.
  const both: { r?: RedisManager; c?: RedisClusterManager } = {};
  const r = new RedisManager({
    kube: fakeKube(
      {
        redisInformer: () => redises,
        podInformer: () => new FakeInformer(),
        statefulSetInformer: () => new FakeInformer(),
      },
      calls,
    ),
    leader,
    logger,
    metrics,
    timing,
    rivals: (ns) => both.c?.parentsIn(ns) ?? [],
    onRemoved: (ns) => both.c?.recheckRefused(ns),
  });
  const c = new RedisClusterManager({
    kube: fakeKube(
      {
        redisClusterInformer: () => clusters,
        clusterPodInformer: () => new FakeInformer(),
        statefulSetInformer: () => new FakeInformer(),
      },
      calls,
    ),
    leader,
    logger,
    registry: metrics.registry,
    status: metrics,
    timing,
    rivals: (ns) => both.r?.parentsIn(ns) ?? [],
    onRemoved: (ns) => both.r?.recheckRefused(ns),
  });
  both.r = r;
  both.c = c;
  return { redises, clusters, calls, metrics, r, c };
}

test('a RedisCluster refused by its status gets no worker; the older Redis of its name keeps its own', async (t) => {
  const m = managers();
  t.after(() => Promise.all([m.r.stop(), m.c.stop()]));
  m.redises.put(parent('Redis', 'x', '2026-01-01T00:00:00Z', 'uid-r'));
  m.clusters.put(parent('RedisCluster', 'x', '2026-02-01T00:00:00Z', 'uid-c', refused));
  await Promise.all([m.r.start(), m.c.start()]);
  assert.equal(m.c.worker('ns', 'x'), undefined);
  assert.equal(m.c.refused('ns', 'x'), true);
  assert.ok(m.r.worker('ns', 'x'), 'the Redis is managed');
  assert.equal(m.r.refused('ns', 'x'), false);
  assert.deepEqual(
    m.calls.filter((c) => c.includes('uid-c')),
    [],
    'no Kubernetes call about the refused RedisCluster',
  );
});

test('a RedisCluster created after a Redis of its name is refused before the hook judges it, and managed once the Redis is gone', async (t) => {
  const m = managers();
  t.after(() => Promise.all([m.r.stop(), m.c.stop()]));
  await Promise.all([m.r.start(), m.c.start()]);
  const redis = parent('Redis', 'x', '2026-01-01T00:00:00Z', 'uid-r');
  m.redises.put(redis);
  m.clusters.put(parent('RedisCluster', 'x', '2026-02-01T00:00:00Z', 'uid-c'));
  assert.equal(m.c.worker('ns', 'x'), undefined, 'no status yet: its own informers decide');
  assert.ok(m.r.worker('ns', 'x'));
  m.redises.remove(redis);
  assert.equal(m.r.worker('ns', 'x'), undefined);
  assert.ok(m.c.worker('ns', 'x'), 'the rival gone, the RedisCluster is managed');
  assert.equal(m.c.refused('ns', 'x'), false);
});

test('a Redis younger than a RedisCluster it collides with is not managed; its name keeps no status series', async (t) => {
  const m = managers();
  t.after(() => Promise.all([m.r.stop(), m.c.stop()]));
  await Promise.all([m.r.start(), m.c.start()]);
  m.clusters.put(parent('RedisCluster', 'x-master', '2026-01-01T00:00:00Z', 'uid-c'));
  m.redises.put(parent('Redis', 'x', '2026-02-01T00:00:00Z', 'uid-r', refused));
  assert.equal(m.r.worker('ns', 'x'), undefined);
  assert.ok(m.c.worker('ns', 'x-master'));
  const series = await m.metrics.registry.getMetricsAsJSON();
  const labels = series.flatMap((s) => s.values.map((v) => v.labels));
  assert.deepEqual(
    labels.filter((l) => l['redis'] === 'x'),
    [],
  );
  assert.ok(
    labels.some((l) => l['redis'] === 'x-master'),
    'the managed RedisCluster has its series',
  );
});
