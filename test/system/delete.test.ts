// System test 5: `kubectl delete redis` runs the finalize hook: with
// persistence.whenDeleted Retain (the design's default) the claims and their data stay; with
// Delete they go; in both cases the finalizer is released and the Redis, its children, pods and
// generated Secret are gone. Both Redis run side by side in one cluster. Network: 198.18.54.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { SystemCluster as Cluster } from './cluster.ts';
import { boot, BOUND, call, METACONTROLLER_FINALIZER, settle, exampleManifest } from './support.ts';

const SUBNET = 54;
const NS = 'default';

function ownedBy(c: Cluster, name: string): string[] {
  const out: string[] = [];
  for (const kind of ['statefulsets', 'services', 'configmaps', 'poddisruptionbudgets', 'pods', 'secrets']) {
    for (const o of c.list(kind, { namespace: NS }))
      if (o.metadata.name.startsWith(`${name}-`)) out.push(`${kind}/${o.metadata.name}`);
  }
  return out.sort();
}

function claims(c: Cluster, name: string) {
  return c.list('persistentvolumeclaims', { namespace: NS }).filter((p) => p.metadata.name.includes(`-${name}-`));
}

/** Up with three linked pods and some data written through the master Service. */
async function upWithData(c: Cluster, name: string): Promise<void> {
  await c.waitFor(
    () =>
      c.redisRow(name) === `${name} 7.2 Ready 2 Running` &&
      (c.get('redises', name, NS)!['status'] as { readyReplicas?: number }).readyReplicas === 2 &&
      c.masterEndpoint(name),
    BOUND.allReady,
    `${name} Running with two Ready replicas`,
  );
  const master = c.masterEndpoint(name)!;
  const client = c.redis(master.ip, name);
  client.on('error', () => {});
  await client.connect();
  for (let i = 0; i < 50; i++) await client.set(`k${i}`, `v${i}`);
  client.disconnect();
  await c.waitFor(
    async () => {
      try {
        await settle(c, master.ip, 2, 1000, name);
        return true;
      } catch {
        return false;
      }
    },
    BOUND.allReady,
    `${name}'s replicas caught up`,
  );
}

test(
  'deleting a Redis follows its PVC policy (Retain keeps the volumes and their data, Delete removes them) and releases the finalizer',
  { timeout: 150_000 },
  async (t) => {
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    // The design (Retain by default) and the same Redis with whenDeleted: Delete, side by side.
    await c.apply(exampleManifest());
    await c.apply(
      exampleManifest()
        .replace('name: my-redis', 'name: doomed')
        .replace('size: "10Gi"', 'size: "10Gi"\n    whenDeleted: Delete'),
    );
    assert.equal(
      (c.get('redises', 'doomed', NS)!['spec'] as { persistence: { whenDeleted: string } }).persistence.whenDeleted,
      'Delete',
    );
    assert.equal(
      (c.get('redises', 'my-redis', NS)!['spec'] as { persistence: { whenDeleted: string } }).persistence.whenDeleted,
      'Retain',
      'the schema default',
    );
    await Promise.all([upWithData(c, 'my-redis'), upWithData(c, 'doomed')]);
    for (const name of ['my-redis', 'doomed']) {
      assert.ok(
        c.get('redises', name, NS)!.metadata.finalizers?.includes(METACONTROLLER_FINALIZER),
        `${name} carries the finalizer`,
      );
      assert.equal(claims(c, name).length, 3, `${name} has three claims`);
    }
    const retainedDirs = claims(c, 'my-redis').map((p) => c.claimPath(NS, p.metadata.name)!);
    const deletedDirs = claims(c, 'doomed').map((p) => c.claimPath(NS, p.metadata.name)!);
    assert.ok(
      [...retainedDirs, ...deletedDirs].every((d) => existsSync(d) && readdirSync(d).length > 0),
      'every claim directory holds data files',
    );

    // kubectl delete redis my-redis doomed
    const t0 = performance.now();
    await c.delete('redises', 'my-redis', NS);
    await c.delete('redises', 'doomed', NS);
    // doomed (Delete) is held by the finalizer while its volumes go; my-redis (Retain) has nothing to
    // wait for, and a real Metacontroller releases it within milliseconds: held or already gone.
    assert.ok(
      c.get('redises', 'doomed', NS)?.metadata.deletionTimestamp,
      'doomed is being deleted, held by the finalizer',
    );
    const retained = c.get('redises', 'my-redis', NS);
    assert.ok(!retained || retained.metadata.deletionTimestamp, 'my-redis is being deleted or already released');
    await c.waitFor(() => !c.get('redises', 'my-redis', NS), BOUND.rejoin, 'my-redis gone (finalizer released)');
    const retainMs = performance.now() - t0;
    await c.waitFor(() => !c.get('redises', 'doomed', NS), BOUND.rejoin * 2, 'doomed gone (finalizer released)');
    const deleteMs = performance.now() - t0;
    t.diagnostic(
      `delete -> finalizer released: Retain ${Math.round(retainMs)} ms, Delete ${Math.round(deleteMs)} ms (the finalize hook polls every 5 s while volumes go)`,
    );

    // Everything else goes with them (garbage collection of owned objects); pods end their processes.
    await c.waitFor(
      async () =>
        ownedBy(c, 'my-redis').length === 0 &&
        ownedBy(c, 'doomed').length === 0 &&
        (await c.containers(NS)).length === 0,
      BOUND.rejoin,
      "children, pods, Secrets gone, and every pod's containers gone from the node",
    );

    // Retain: the claims and their data stay, owned by nothing, ready for a Redis of the same name.
    const kept = claims(c, 'my-redis');
    assert.deepEqual(kept.map((p) => p.metadata.name).sort(), [
      'data-my-redis-master-0',
      'data-my-redis-replica-0',
      'data-my-redis-replica-1',
    ]);
    assert.ok(
      kept.every((p) => (p.metadata.ownerReferences ?? []).length === 0 && !p.metadata.deletionTimestamp),
      'retained claims are owned by nothing and not deleting',
    );
    assert.ok(
      retainedDirs.every((d) => existsSync(d) && readdirSync(d).length > 0),
      'retained volumes still hold their files',
    );
    // Delete: the claims and their directories are gone.
    await c.waitFor(
      () => claims(c, 'doomed').length === 0 && deletedDirs.every((d) => !existsSync(d)),
      BOUND.rejoin,
      "doomed's claims and volumes gone",
    );

    // The retained data comes back: the same Redis applied again starts from those volumes.
    await c.apply(exampleManifest());
    await c.waitFor(
      () => c.redisRow('my-redis') === 'my-redis 7.2 Ready 2 Running' && c.masterEndpoint('my-redis'),
      BOUND.running * 2,
      'my-redis Running again',
    );
    const master = c.masterEndpoint('my-redis')!;
    // A new generated Secret (new password): the data survived, the old password did not.
    assert.equal(await call(c, master.ip, 'GET', 'k49'), 'v49', 'data written before the delete is back');
    assert.equal(Number(await call(c, master.ip, 'DBSIZE')), 50);
    const reasons = c.events({ name: 'my-redis' }).map((e) => e.reason);
    t.diagnostic(
      `re-created my-redis from the retained volumes: master ${master.pod}; events ${[...new Set(reasons)].join(', ')}`,
    );
  },
);
