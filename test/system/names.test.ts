// System test: a Redis and a RedisCluster of the same name in one namespace. The RedisCluster,
// created after the Redis, is refused its names: Ready False with reason NameConflict naming the
// Redis, a Warning Event saying so, and not one child (no StatefulSet, Service, ConfigMap, PDB, pod
// or Secret of its own); the Redis is untouched (every child, pod and Secret the same object at
// the same version, no write of Metacontroller's, still Running and linked). Deleting the
// refused RedisCluster releases it and still changes nothing of the Redis. Network: 198.18.78.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import type { SystemCluster as Cluster } from './cluster.ts';
import { allLinked, applyDesign, boot, BOUND, NAME, NS, RUNNING_ROW, sleep, writeSnapshot } from './support.ts';

const SUBNET = 85;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

const readyOf = (c: Cluster): Condition | undefined =>
  ((c.get('redisclusters', NAME, NS)?.['status'] as { conditions?: Condition[] } | undefined)?.conditions ?? []).find(
    (x) => x.type === 'Ready',
  );

/**
 * Every object in the namespace whose name starts with the shared name: its uid, and for those
 * nothing but the operator writes at rest (Services, ConfigMaps, Secrets) its resourceVersion too
 * (a pod's or a StatefulSet's status moves with the kubelet; writeSnapshot covers their specs).
 */
function inventory(c: Cluster): Map<string, string> {
  const out = new Map<string, string>();
  const versioned = new Set(['services', 'configmaps', 'secrets']);
  for (const kind of [
    'statefulsets',
    'services',
    'configmaps',
    'poddisruptionbudgets',
    'pods',
    'persistentvolumeclaims',
    'secrets',
    'cronjobs',
  ]) {
    for (const o of c.list(kind, { namespace: NS }))
      if (o.metadata.name.startsWith(NAME))
        out.set(
          `${kind}/${o.metadata.name}`,
          versioned.has(kind) ? `${o.metadata.uid}@${o.metadata.resourceVersion}` : `${o.metadata.uid}`,
        );
  }
  return out;
}

/** Objects labelled as a RedisCluster's own (app.kubernetes.io/name=redis-cluster) for the shared name. */
function clusterObjects(c: Cluster): string[] {
  const selector = `app.kubernetes.io/name=redis-cluster,app.kubernetes.io/instance=${NAME}`;
  return ['statefulsets', 'services', 'configmaps', 'poddisruptionbudgets', 'pods', 'secrets'].flatMap((kind) =>
    c.list(kind, { namespace: NS, labelSelector: selector }).map((o) => `${kind}/${o.metadata.name}`),
  );
}

/** Objects owned by the RedisCluster (ownerReferences), whatever their labels. */
function ownedByCluster(c: Cluster, uid: string): string[] {
  return ['statefulsets', 'services', 'configmaps', 'poddisruptionbudgets', 'secrets'].flatMap((kind) =>
    c
      .list(kind, { namespace: NS })
      .filter((o) => (o.metadata.ownerReferences ?? []).some((r) => r.uid === uid))
      .map((o) => `${kind}/${o.metadata.name}`),
  );
}

test(
  'a RedisCluster created after a Redis of the same name: NameConflict, no child; the Redis untouched',
  { timeout: 180_000 },
  async (t) => {
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    await applyDesign(t, c);
    // The sidecar has made the Redis's Secrets (operator, exporter) by now: they are part of what must not change.
    await c.waitFor(
      () => c.get('secrets', `${NAME}-operator`, NS) !== undefined,
      BOUND.running,
      `Secret ${NAME}-operator`,
    );
    await sleep(2000);
    const before = inventory(c);
    const writesBefore = writeSnapshot(c, NAME);

    const t0 = performance.now();
    await c.apply({
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisCluster',
      metadata: { name: NAME, namespace: NS },
      spec: { version: '7.2', master: { replicas: 3 }, replicas: 1 },
    });
    const ready = await c.waitFor(
      () => {
        const r = readyOf(c);
        return r?.status === 'False' && r.reason === 'NameConflict' ? r : undefined;
      },
      BOUND.running,
      'the RedisCluster: Ready False, reason NameConflict',
    );
    t.diagnostic(`apply -> NameConflict in ${Math.round(performance.now() - t0)} ms: ${ready.message}`);
    assert.match(ready.message ?? '', new RegExp(`^Redis ${NAME} is older`), 'the message names the Redis');
    assert.match(ready.message ?? '', /create it under another name/, 'and says what to do');
    const event = await c.waitFor(
      () => c.events({ name: NAME, reason: 'NameConflict' }).find((e) => e.object === `RedisCluster/${NAME}`),
      BOUND.running,
      'a NameConflict Event on the RedisCluster',
    );
    assert.equal(event.type, 'Warning');

    // Metacontroller's and the sidecars' last moves for the new object land first; then nothing moves.
    await sleep(4000);
    const uid = c.get('redisclusters', NAME, NS)!.metadata.uid!;
    assert.deepEqual(clusterObjects(c), [], 'no object of the RedisCluster kind for the name');
    assert.deepEqual(ownedByCluster(c, uid), [], 'nothing owned by the RedisCluster');
    assert.equal(c.get('statefulsets', `${NAME}-shard-0`, NS), undefined);
    assert.deepEqual(inventory(c), before, 'every object of the Redis is the same object at the same version');
    assert.deepEqual(writeSnapshot(c, NAME), writesBefore, 'no child or status write for the Redis');
    assert.equal(c.redisRow(NAME), RUNNING_ROW);
    assert.ok(allLinked(c, 3), 'the Redis pods still Ready and linked');

    // Deleted, the refused RedisCluster goes (its finalizer released) and takes nothing with it.
    await c.delete('redisclusters', NAME, NS);
    await c.waitFor(() => c.get('redisclusters', NAME, NS) === undefined, BOUND.running, 'the RedisCluster gone');
    await sleep(2000);
    assert.deepEqual(inventory(c), before, 'deleting it changed nothing of the Redis');
    assert.equal(c.redisRow(NAME), RUNNING_ROW);
  },
);
