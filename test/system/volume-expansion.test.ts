// System test (volume expansion): growing spec.persistence.size from 1Gi to 2Gi under
// SET + WAIT 1 traffic. The sidecar raises every claim's request (the test provisioner's resizer grows
// the volume, as external-resizer does), then replaces each StatefulSet with its pods orphaned;
// Metacontroller recreates it with 2Gi claim templates and it adopts the running pods. No pod is
// restarted, nothing acknowledged is lost, a replica added afterwards gets 2Gi. With a
// StorageClass that does not allow expansion (local-dir-fixed) the claims and StatefulSets are
// left alone, a Warning names the class and each claim carries the resize-refused annotation.
// Network: 198.18.66.x / 198.19.66.x.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { RESIZE_REFUSED_ANNOTATION } from '../../src/api/labels.ts';
import { missing, type SystemCluster as Cluster } from './cluster.ts';
import { borrowCluster, giveBack } from './lane.ts';
import {
  allLinked,
  assertNothingLost,
  BOUND,
  NAME,
  NS,
  RUNNING_ROW,
  servicesRouted,
  sleep,
  Writer,
  exampleManifest,
} from './support.ts';

const SUBNET = 66;
/**
 * Size grown -> every claim and both StatefulSets at 2Gi: three sidecar passes 5 s apart, plus the garbage collector
 * and Metacontroller.
 */
const EXPANDED_WITHIN = 90_000;

type Json = Record<string, any>;

const skip = missing() ?? false;

function manifest(name: string, storageClassName?: string): string {
  const size = storageClassName ? `size: "1Gi"\n    storageClassName: ${storageClassName}` : 'size: "1Gi"';
  return exampleManifest().replace('name: my-redis', `name: ${name}`).replace('size: "10Gi"', size);
}

const grow = (c: Cluster, name: string, size: string) =>
  c.apply({
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name, namespace: NS },
    spec: { persistence: { size } },
  });

function claims(c: Cluster, name: string): Json[] {
  return c
    .list('persistentvolumeclaims', { namespace: NS, labelSelector: `app.kubernetes.io/instance=${name}` })
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1)) as Json[];
}
const requested = (claim: Json) => claim['spec']?.resources?.requests?.storage as string | undefined;
const capacity = (claim: Json) => claim['status']?.capacity?.storage as string | undefined;

function sets(c: Cluster, name: string): Record<string, { uid: string; size: string | undefined }> {
  const out: Record<string, { uid: string; size: string | undefined }> = {};
  for (const set of [`${name}-master`, `${name}-replica`]) {
    const s = c.get('statefulsets', set, NS) as Json | undefined;
    if (!s || s['metadata'].deletionTimestamp) continue;
    const data = (s['spec'].volumeClaimTemplates ?? []).find((t: Json) => t['metadata'].name === 'data');
    out[set] = { uid: s['metadata'].uid, size: data?.spec?.resources?.requests?.storage };
  }
  return out;
}

/** Each pod: uid, its controller's uid, and the restart count of each container. */
function podState(
  c: Cluster,
  name: string,
): Record<string, { uid: string; owner: string | undefined; restarts: string }> {
  const out: Record<string, { uid: string; owner: string | undefined; restarts: string }> = {};
  for (const p of c.pods(name) as Json[]) {
    const statuses = (p['status']?.containerStatuses ?? []) as Json[];
    out[p['metadata'].name] = {
      uid: p['metadata'].uid,
      owner: (p['metadata'].ownerReferences ?? []).find((r: Json) => r['controller'])?.uid,
      restarts: statuses.map((s) => `${s['name']}=${s['restartCount']}`).join(','),
    };
  }
  return out;
}

describe('volume expansion', { skip, timeout: 420_000 }, () => {
  let c: Cluster;
  before(async () => {
    c = await borrowCluster({ subnet: SUBNET });
  });
  after(() => c && giveBack(c));

  test(
    'grow 1Gi -> 2Gi: claims grown, StatefulSets replaced with 2Gi templates, no pod restarted, nothing lost; a new replica gets 2Gi',
    { timeout: 240_000 },
    async (t) => {
      await c.apply(manifest(NAME));
      await c.waitFor(
        () => c.redisRow(NAME) === RUNNING_ROW && allLinked(c, 3) && servicesRouted(c),
        BOUND.allReady,
        `${RUNNING_ROW}, three linked pods`,
      );
      assert.deepEqual(claims(c, NAME).map(requested), ['1Gi', '1Gi', '1Gi']);
      const setsBefore = sets(c, NAME);
      const podsBefore = podState(c, NAME);
      assert.equal(Object.keys(podsBefore).length, 3);
      const deleted: string[] = [];
      const podWatch = c.watch('pods', { namespace: NS, labelSelector: `app.kubernetes.io/instance=${NAME}` }, (ev) => {
        if (ev.type === 'DELETED') deleted.push(String((ev.object as Json)['metadata']?.name));
      });
      t.after(() => podWatch.stop());
      const writer = new Writer(c).start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 200, 10_000, '200 acknowledged writes');

      // kubectl patch redis my-redis --type merge -p '{"spec":{"persistence":{"size":"2Gi"}}}'
      const t0 = performance.now();
      await grow(c, NAME, '2Gi');
      await c.waitFor(
        () => claims(c, NAME).every((p) => requested(p) === '2Gi'),
        EXPANDED_WITHIN,
        'every claim requests 2Gi',
      );
      const requestedMs = performance.now() - t0;
      await c.waitFor(
        () => claims(c, NAME).every((p) => capacity(p) === '2Gi'),
        EXPANDED_WITHIN,
        'every claim has 2Gi',
      );
      const grownMs = performance.now() - t0;
      await c.waitFor(
        () => {
          const now = sets(c, NAME);
          return Object.entries(setsBefore).every(([n, s]) => now[n] && now[n].uid !== s.uid && now[n].size === '2Gi');
        },
        EXPANDED_WITHIN,
        'both StatefulSets recreated with 2Gi claim templates',
      );
      const recreatedMs = performance.now() - t0;
      const setsAfter = sets(c, NAME);
      // The recreated sets adopted the orphaned pods: same pods, same containers, new controller.
      await c.waitFor(
        () =>
          Object.entries(podState(c, NAME)).every(([n, p]) => p.owner === setsAfter[n.replace(/-[0-9]+$/, '')]?.uid),
        BOUND.rejoin,
        'every pod adopted by its recreated StatefulSet',
      );
      const podsAfter = podState(c, NAME);
      t.diagnostic(
        `size 1Gi -> 2Gi: claims requested ${Math.round(requestedMs)} ms, volumes grown ${Math.round(grownMs)} ms, both StatefulSets recreated ${Math.round(recreatedMs)} ms`,
      );
      for (const [n, p] of Object.entries(podsBefore)) {
        assert.equal(podsAfter[n]?.uid, p.uid, `${n} is the same pod`);
        assert.equal(podsAfter[n]?.restarts, p.restarts, `${n}'s containers did not restart`);
      }
      assert.deepEqual(deleted, [], 'no pod deleted');
      assert.equal(c.redisRow(NAME), RUNNING_ROW);
      assert.ok(allLinked(c, 3));
      const specValid = ((c.get('redises', NAME, NS)!['status'] as Json)['conditions'] as Json[]).find(
        (x) => x['type'] === 'SpecValid',
      );
      assert.equal(specValid?.['status'], 'True', `a grown size is no conflict: ${specValid?.['message']}`);
      const events = (reason: string) => c.events({ name: NAME, reason }).map((e) => e.message);
      // Events are sent beside the writes they tell of: let the last ones arrive before comparing.
      await c.waitFor(
        () => events('VolumeExpansion').length >= 3 && events('StatefulSetRecreated').length >= 2,
        10_000,
        'the expansion Events',
      );
      assert.deepEqual(
        events('VolumeExpansion').sort(),
        ['data-my-redis-master-0', 'data-my-redis-replica-0', 'data-my-redis-replica-1'].map(
          (n) => `${n} requested 1Gi -> 2Gi`,
        ),
      );
      assert.deepEqual(
        events('StatefulSetRecreated').map((m) => m.split(' ')[1]),
        ['my-redis-master', 'my-redis-replica'],
      );

      // kubectl scale redis my-redis --replicas=3: the new replica's claim comes from the new template.
      await c.scale(NAME, 3);
      await c.waitFor(() => allLinked(c, 4), BOUND.rejoin, 'four Ready, linked pods');
      const added = c.get('persistentvolumeclaims', 'data-my-redis-replica-2', NS) as Json;
      assert.equal(requested(added), '2Gi', 'the new claim requests 2Gi');
      await c.waitFor(
        () => capacity(c.get('persistentvolumeclaims', 'data-my-redis-replica-2', NS) as Json) === '2Gi',
        BOUND.rejoin,
        'the new volume has 2Gi',
      );
      await c.waitFor(
        () => c.redisRow(NAME) === 'my-redis 7.2 Ready 3 Running',
        BOUND.running,
        'my-redis 7.2 Ready 3 Running',
      );
      await writer.stop();
      await assertNothingLost(t, c, writer, 4);
      for (const [n, p] of Object.entries(podsBefore))
        assert.equal(podState(c, NAME)[n]?.restarts, p.restarts, `${n} still not restarted`);
    },
  );

  test(
    'a StorageClass without expansion (local-dir-fixed): claims and StatefulSets left alone, a Warning names the class once per claim, the claims say why',
    { timeout: 120_000 },
    async () => {
      const name = 'fixed';
      await c.apply(manifest(name, 'local-dir-fixed'));
      await c.waitFor(() => c.redisRow(name) === `${name} 7.2 Ready 2 Running`, BOUND.allReady, `${name} Running`);
      await c.waitFor(
        () => claims(c, name).length === 3 && claims(c, name).every((p) => p['status']?.phase === 'Bound'),
        BOUND.allReady,
        'three bound claims',
      );
      const setsBefore = sets(c, name);
      const podsBefore = podState(c, name);

      await grow(c, name, '2Gi');
      const refusals = () => c.events({ name, reason: 'VolumeExpansionRefused' });
      await c.waitFor(() => refusals().length >= 3, EXPANDED_WITHIN, 'a VolumeExpansionRefused Warning per claim');
      await c.waitFor(
        () =>
          claims(c, name).every((p) =>
            String(p['metadata'].annotations?.[RESIZE_REFUSED_ANNOTATION] ?? '').includes('local-dir-fixed'),
          ),
        BOUND.rejoin,
        'every claim annotated with the refusal',
      );
      for (const e of refusals()) {
        assert.equal(e.type, 'Warning');
        assert.match(
          e.message,
          /cannot grow from 1Gi to 2Gi: StorageClass local-dir-fixed does not allow volume expansion \(allowVolumeExpansion is false\)/,
        );
      }
      // Two more passes of the sidecar: nothing changes and nothing is told twice.
      await sleep(11_000);
      assert.equal(refusals().length, 3, 'told once per claim and size');
      assert.deepEqual(claims(c, name).map(requested), ['1Gi', '1Gi', '1Gi']);
      assert.deepEqual(sets(c, name), setsBefore, 'the StatefulSets are the same objects, 1Gi templates');
      assert.deepEqual(podState(c, name), podsBefore, 'the pods are untouched');
      assert.equal(c.redisRow(name), `${name} 7.2 Ready 2 Running`);
    },
  );
});
