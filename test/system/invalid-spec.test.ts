// System test 4: edits that the API server's schema accepts but the hook refuses. A
// nodeSelector key that is not a label key (the CRD allows any string key; Kubernetes would refuse
// the StatefulSet on every sync) and a Redis name too long for its pods' labels: condition
// InvalidSpec naming the field, nothing deleted, the pods keep serving, no hot loop; fixing the
// edit brings the Redis back. Network: 198.18.53.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import type { SystemCluster as Cluster } from './cluster.ts';
import { allLinked, applyDesign, boot, BOUND, NAME, NS, RUNNING_ROW, sleep, Writer, writeSnapshot } from './support.ts';

const SUBNET = 53;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

function conditions(c: Cluster, name: string): Condition[] {
  return (c.get('redises', name, NS)?.['status'] as { conditions?: Condition[] } | undefined)?.conditions ?? [];
}

function condition(c: Cluster, name: string, type: string): Condition | undefined {
  return conditions(c, name).find((x) => x.type === type);
}

/** uid and resourceVersion of every object the Redis owns (children, pods, claims). */
function inventory(c: Cluster): Map<string, string> {
  const out = new Map<string, string>();
  for (const kind of [
    'statefulsets',
    'services',
    'configmaps',
    'poddisruptionbudgets',
    'pods',
    'persistentvolumeclaims',
  ]) {
    for (const o of c.list(kind, { namespace: NS })) out.set(`${kind}/${o.metadata.name}`, o.metadata.uid!);
  }
  return out;
}

test(
  'an edit past the schema that the hook refuses: InvalidSpec, nothing deleted, the pods keep serving, no hot loop; the fix restores it',
  { timeout: 150_000 },
  async (t) => {
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    await applyDesign(t, c);
    const writer = new Writer(c).start();
    t.after(() => writer.stop());
    await c.waitFor(() => writer.acked.length >= 100, 10_000, '100 acknowledged writes');
    const before = inventory(c);

    // kubectl patch redis my-redis --type merge -p '{"spec":{"nodeSelector":{"disk type":"ssd"}}}'
    const t0 = performance.now();
    await c.apply({
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: NAME, namespace: NS },
      spec: { nodeSelector: { 'disk type': 'ssd' } },
    });
    const refused = await c.waitFor(
      () => {
        const ready = condition(c, NAME, 'Ready');
        return ready?.status === 'False' && ready.reason === 'InvalidSpec' ? ready : undefined;
      },
      BOUND.running,
      'condition Ready=False reason InvalidSpec',
    );
    t.diagnostic(`edit -> InvalidSpec in ${Math.round(performance.now() - t0)} ms: ${refused.message}`);
    assert.match(refused.message ?? '', /spec\.nodeSelector\.disk type/, 'the message names the field');
    assert.equal(condition(c, NAME, 'SpecValid')?.status, 'False');
    // Metacontroller's last writes for the change land first (its API client: 5 requests/s).
    await sleep(2000);

    // No hot loop: over a few seconds Metacontroller writes no child and no status.
    const w0 = writeSnapshot(c, NAME);
    const acked0 = writer.acked.length;
    await sleep(4000);
    assert.deepEqual(writeSnapshot(c, NAME), w0, 'no child and no status writes while the spec is invalid');
    t.diagnostic(
      `over 4 s with the invalid spec: 0 child writes, 0 status writes, ${writer.acked.length - acked0} writes acknowledged`,
    );

    // Nothing deleted or replaced, and the StatefulSets did not take the refused value.
    assert.deepEqual(inventory(c), before, 'every child, pod and claim is still there, same uid');
    for (const sts of ['my-redis-master', 'my-redis-replica']) {
      const spec = c.get('statefulsets', sts, NS)!['spec'] as { template: { spec: { nodeSelector?: unknown } } };
      assert.equal(spec.template.spec.nodeSelector, undefined, `${sts} did not get the refused nodeSelector`);
    }
    // The pods keep serving: writes through the master Service are still acknowledged.
    assert.ok(writer.acked.length - acked0 > 50, 'writes kept being acknowledged through the master Service');
    assert.ok(allLinked(c, 3), 'all three pods Ready and linked');
    assert.equal(c.masterEndpoint(NAME)?.pod, 'my-redis-master-0');

    // The fix: remove the key (a merge patch with null), and the Redis is valid and Running again.
    await c.apply({
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: NAME, namespace: NS },
      spec: { nodeSelector: { 'disk type': null } },
    } as never);
    await c.waitFor(
      () =>
        condition(c, NAME, 'SpecValid')?.status === 'True' &&
        c.redisRow(NAME) === RUNNING_ROW &&
        condition(c, NAME, 'Ready')?.status === 'True',
      BOUND.running,
      'the fixed spec: SpecValid, Ready, Running',
    );
    assert.deepEqual(inventory(c), before, 'the fix replaced nothing either');

    // A name too long for its pods' labels: refused as a whole, nothing is created for it.
    const long = `r${'x'.repeat(44)}`;
    await c.apply({
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: long, namespace: NS },
      spec: { replicas: 1 },
    });
    const tooLong = await c.waitFor(
      () => {
        const ready = condition(c, long, 'Ready');
        return ready?.reason === 'InvalidSpec' ? ready : undefined;
      },
      BOUND.running,
      `InvalidSpec for ${long}`,
    );
    assert.match(tooLong.message ?? '', /metadata\.name/);
    // Metacontroller's last writes for the change land first (its API client: 5 requests/s).
    await sleep(2000);
    const owned = c.list('statefulsets', { namespace: NS }).filter((s) => s.metadata.name.startsWith(long));
    assert.deepEqual(owned, [], 'no StatefulSet for the refused Redis');
    const phase = (c.get('redises', long, NS)!['status'] as { phase?: string }).phase;
    t.diagnostic(`${long.length}-character name: phase ${phase}; ${tooLong.message}`);
    const l0 = writeSnapshot(c, long);
    await sleep(2000);
    assert.deepEqual(writeSnapshot(c, long), l0, 'no hot loop for the refused Redis');

    await writer.stop();
    assert.ok(allLinked(c, 3), 'all three pods Ready and linked at the end');
    assert.deepEqual(
      inventory(c),
      before,
      'at the end, still every child, pod and claim of the start, same uid (no rollout either)',
    );
  },
);
