// System test: the work shared across sidecar instances. With SHARDS=4 the two
// sidecars divide four Redis between them, one Lease per shard. The instance that holds shards
// with Redis in them is SIGKILLed: the survivor takes every one of its shard Leases once they
// expire, and then acts on each of its Redis (a master pod deleted in each is failed over by the
// survivor, the only instance left). Network: 198.18.59.x.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { isPodReady } from '../support/kubectl-tables.ts';
import { ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import { ownerOf, shardLeaseName, shardOf } from '../../src/sidecar/redis/decide/shards.ts';
import { OPERATOR_NAMESPACE } from '../k8s/operator.ts';
import { LEASE_NAME } from '../k8s/system-cluster.ts';
import { missing, type SystemCluster } from './cluster.ts';
import { borrowCluster, giveBack } from './lane.ts';
import { BOUND, newMasterEndpoint, NS } from './support.ts';

const SUBNET = 59;
/** manifests/deployment.yaml's SHARDS. */
const SHARDS = 4;

/** Two Redis owned by each sidecar (as both compute it), so killing either one takes Redis with it. */
function pickNames(sidecars: string[]): Map<string, string> {
  const picked = new Map<string, string>();
  for (let i = 0; picked.size < 4 && i < 100; i++) {
    const name = `shop-${i}`;
    const owner = ownerOf(shardOf(NS, name, SHARDS), sidecars)!;
    if ([...picked.values()].filter((o) => o === owner).length < 2) picked.set(name, owner);
  }
  assert.equal(picked.size, 4, 'four names, two per sidecar');
  return picked;
}

const redis = (name: string) => ({
  apiVersion: 'redis.example.com/v1',
  kind: 'Redis',
  metadata: { name, namespace: NS },
  spec: { version: '7.2', replicas: 1, persistence: { enableRdb: false, enableAof: false } },
});

/** Both pods Ready, one labelled master, the replica labelled and linked. */
function linked(c: SystemCluster, name: string): boolean {
  const pods = c.pods(name).filter((p) => !p.metadata.deletionTimestamp);
  if (pods.length !== 2 || !pods.every(isPodReady)) return false;
  const roles = pods.map((p) => p.metadata.labels?.[ROLE_LABEL]).sort();
  const replica = pods.find((p) => p.metadata.labels?.[ROLE_LABEL] === 'replica');
  return (
    roles.join() === `${ROLE_MASTER},replica` && replica?.metadata.annotations?.['redis.example.com/link'] === 'up'
  );
}

const holderOf = (c: SystemCluster, shard: number) =>
  (
    c.get('leases', shardLeaseName(LEASE_NAME, shard, SHARDS), OPERATOR_NAMESPACE)?.['spec'] as
      { holderIdentity?: string } | undefined
  )?.holderIdentity ?? '';

describe('work shared across sidecar instances (SHARDS=4)', { timeout: 600_000, skip: missing() ?? false }, () => {
  let c: SystemCluster;
  before(async () => {
    c = await borrowCluster({ subnet: SUBNET, waitForSidecars: false });
  });
  after(() => c && giveBack(c));

  test(
    'a sidecar SIGKILLed while it holds shards: the survivor takes every shard and fails over each of its Redis',
    { timeout: 420_000 },
    async (t) => {
      const all = [...Array(SHARDS).keys()];
      let sidecars = await c.waitFor(
        () => (c.sidecarNames().length === 2 ? c.sidecarNames() : undefined),
        60_000,
        "the Deployment's two pods",
      );
      // Pod names are random, so one sidecar may own all four shards (1 time in 8): replace the
      // other one until each owns some (a new pod, a new name, a new draw).
      for (let draw = 0; new Set(all.map((i) => ownerOf(i, sidecars))).size < 2 && draw < 6; draw++) {
        const idle = sidecars.find((s) => !all.some((i) => ownerOf(i, sidecars) === s))!;
        t.diagnostic(`${idle} would own no shard: replacing its pod`);
        await c.kubectl(['delete', 'pod', idle, '-n', OPERATOR_NAMESPACE, '--wait=false']);
        const before = sidecars;
        sidecars = await c.waitFor(
          () => (c.sidecarNames().length === 2 && !c.sidecarNames().includes(idle) ? c.sidecarNames() : undefined),
          60_000,
          `a new pod in place of ${idle} (was ${before.join(', ')})`,
        );
      }
      const names = pickNames(sidecars);
      const expected = all.map((i) => ownerOf(i, sidecars));
      await c.waitFor(
        () => all.every((i) => holderOf(c, i) === expected[i]),
        60_000,
        `the shard Leases held as both compute it (${expected.join(', ')})`,
      );
      const t0 = performance.now();
      await c.apply([...names.keys()].map(redis));
      for (const name of names.keys())
        await c.waitFor(
          () => c.redisRow(name) === `${name} 7.2 Ready 1 Running` && linked(c, name),
          BOUND.allReady * 2,
          `${name} Running and linked`,
        );
      t.diagnostic(`four Redis Running and linked ${Math.round(performance.now() - t0)} ms after apply`);

      const [victim, survivor] = sidecars as [string, string];
      const lost = all.filter((i) => holderOf(c, i) === victim);
      const orphans = [...names].filter(([, owner]) => owner === victim).map(([n]) => n);
      assert.ok(
        lost.length > 0 && orphans.length === 2,
        `${victim} holds shards ${lost.join(',')} with ${orphans.join(', ')} in them`,
      );
      const kill = performance.now();
      await c.killSidecar(victim);
      await c.waitFor(
        () => all.every((i) => holderOf(c, i) === survivor),
        30_000,
        `${survivor} holding every shard Lease`,
      );
      const takeoverMs = performance.now() - kill;
      t.diagnostic(
        `${victim} SIGKILLed holding shards ${lost.join(',')}; ${survivor} holds all ${SHARDS} ${Math.round(takeoverMs)} ms later`,
      );
      // The lease is 3 s, renewals every 500 ms: the survivor waits out one lease duration, plus a poll.
      assert.ok(
        takeoverMs >= 2000,
        `the survivor did not take a shard before its Lease could expire (${Math.round(takeoverMs)} ms)`,
      );

      // Each Redis of the dead instance is acted on again: its master pod deleted, the survivor fails it over.
      for (const name of orphans) {
        const old = c.masterEndpoint(name)!;
        assert.ok(old, `${name} has a master behind its Service`);
        const f0 = performance.now();
        await c.deletePod(old.pod);
        const next = await newMasterEndpoint(
          c,
          old.pod,
          `${name}: a new master behind the master Service (failed over by ${survivor})`,
          name,
        );
        t.diagnostic(
          `${name}: ${old.pod} deleted -> ${next.pod} master behind the Service in ${Math.round(performance.now() - f0)} ms`,
        );
        await c.waitFor(() => linked(c, name), BOUND.rejoin, `${name}: the recreated pod rejoined as a replica`);
        const masters = c.pods(name).filter((p) => p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER);
        assert.deepEqual(
          masters.map((p) => p.metadata.name),
          [next.pod],
          `${name}: exactly one pod labelled master`,
        );
      }
      // The survivor's own Redis were never disturbed.
      for (const [name, owner] of names) if (owner === survivor) assert.ok(linked(c, name), `${name} still linked`);
    },
  );
});
