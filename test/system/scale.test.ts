// System test 3: `kubectl scale redis my-redis --replicas=3` then `--replicas=1`
// through the scale subresource, under SET + WAIT 1 traffic. The new replica syncs; scaling down
// never removes the current master: with the master on my-redis-replica-2, the hook holds the
// replica StatefulSet at 3 until the sidecar has switched the master over to a pod that stays.
// Network: 198.18.52.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { CONFIRM_SCALE_DOWN_ANNOTATION, ROLE_LABEL } from '../../src/api/labels.ts';
import {
  allLinked,
  applyDesign,
  assertNothingLost,
  boot,
  BOUND,
  call,
  MasterWatch,
  missingKeys,
  NAME,
  NS,
  podIp,
  podNames,
  replication,
  settle,
  sleep,
  Writer,
} from './support.ts';

const SUBNET = 52;

function replicaSetSize(c: NonNullable<Awaited<ReturnType<typeof boot>>>): number | undefined {
  return (c.get('statefulsets', 'my-redis-replica', NS)?.['spec'] as { replicas?: number } | undefined)?.replicas;
}

test(
  'scale 2 -> 3 -> 1 through the scale subresource: the new replica syncs, the master is switched over before its pod is removed, nothing acknowledged lost',
  { timeout: 180_000 },
  async (t) => {
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    await applyDesign(t, c);
    const masters = new MasterWatch(t, c);
    const writer = new Writer(c).start();
    t.after(() => writer.stop());
    await c.waitFor(() => writer.acked.length >= 300, 10_000, '300 acknowledged writes');

    // 2 -> 3: my-redis-replica-2 appears, syncs, and serves reads.
    let t0 = performance.now();
    await c.scale(NAME, 3);
    assert.equal(((await c.getScale(NAME, NS))['spec'] as { replicas: number }).replicas, 3);
    await c.waitFor(() => allLinked(c, 4), BOUND.rejoin, 'four Ready, linked pods');
    t.diagnostic(`scale to 3 -> my-redis-replica-2 Ready and linked: ${Math.round(performance.now() - t0)} ms`);
    await c.waitFor(
      () => c.redisRow(NAME) === 'my-redis 7.2 Ready 3 Running',
      BOUND.running,
      'my-redis 7.2 Ready 3 Running',
    );
    const scale = await c.getScale(NAME, NS);
    assert.equal((scale['status'] as { replicas?: number }).replicas, 3, 'the scale subresource reports the replicas');
    const master = c.masterEndpoint(NAME)!;
    await settle(c, master.ip, 3);
    const soFar = writer.acked.map((a) => a.key);
    assert.deepEqual(
      await missingKeys(c, podIp(c, 'my-redis-replica-2')!, soFar),
      [],
      'the new replica has every acknowledged key',
    );

    // Put the master on my-redis-replica-2 (the ordinal a scale-down to 1 removes): the other
    // nodes refuse promotion (replica-priority 0, as an admin could set), then the master pod is deleted.
    const others = ['my-redis-master-0', 'my-redis-replica-0', 'my-redis-replica-1'].filter((p) => p !== master.pod);
    for (const p of others) await call(c, podIp(c, p)!, 'CONFIG', 'SET', 'replica-priority', '0');
    // The sidecars probe every 100 ms (INFO + CONFIG GET): let them see the new priorities first.
    await sleep(600);
    await c.deletePod(master.pod);
    await c.waitFor(
      () => c.masterEndpoint(NAME)?.pod === 'my-redis-replica-2',
      BOUND.failover,
      'my-redis-replica-2 as the master',
    );
    await c.waitFor(() => allLinked(c, 4), BOUND.rejoin, `${master.pod} back as a replica`);
    for (const p of others) await call(c, podIp(c, p)!, 'CONFIG', 'SET', 'replica-priority', '100');
    await c.waitFor(
      () => writer.acked.length >= soFar.length + 200,
      10_000,
      'writes acknowledged by the master on replica-2',
    );

    // 3 -> 1: the hook holds the replica StatefulSet at 3 while the master lives on ordinal 2; the
    // sidecar switches over to a pod that stays; only then do replica-1 and replica-2 go.
    // Every write of the replica StatefulSet, with who was labelled master at that instant (the
    // store calls watchers synchronously inside the write).
    const sizes: Array<{ replicas: number; masters: string[] }> = [];
    const stsWatch = c.watch(
      'statefulsets',
      { namespace: NS, fieldSelector: 'metadata.name=my-redis-replica' },
      (ev) => {
        const replicas = (ev.object as { spec?: { replicas?: number } }).spec?.replicas;
        if (typeof replicas === 'number' && sizes.at(-1)?.replicas !== replicas)
          sizes.push({ replicas, masters: c.masterLabelled(NAME) });
      },
    );
    t.after(() => stsWatch.stop());
    const deletedBefore = masters.deletedWhileMaster.length;
    t0 = performance.now();
    // 3 -> 1 removes more than half of the replicas in one step: the hook holds it unless confirmed.
    await c.apply({
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name: NAME, namespace: NS, annotations: { [CONFIRM_SCALE_DOWN_ANNOTATION]: '1' } },
    });
    await c.scale(NAME, 1);
    const switched = await c.waitFor(
      () => {
        const ep = c.masterEndpoint(NAME);
        return ep && ep.pod !== 'my-redis-replica-2' ? ep : undefined;
      },
      BOUND.failover,
      'the master switched over off my-redis-replica-2',
    );
    t.diagnostic(`scale to 1 -> master moved to ${switched.pod}: ${Math.round(performance.now() - t0)} ms`);
    assert.match(switched.pod, /^my-redis-(master-0|replica-0)$/, 'the new master is a pod that stays');
    await c.waitFor(
      () => replicaSetSize(c) === 1 && podNames(c).join() === 'my-redis-master-0,my-redis-replica-0' && allLinked(c, 2),
      BOUND.rejoin,
      'two pods left, Ready and linked',
    );
    t.diagnostic(
      `scale to 1 -> two pods left: ${Math.round(performance.now() - t0)} ms; replica StatefulSet sizes (masters then): ${sizes.map((s) => `${s.replicas} (${s.masters.join(',')})`).join(' -> ')}`,
    );
    const shrink = sizes.find((s) => s.replicas < 3);
    assert.ok(shrink, 'the replica StatefulSet was scaled down');
    assert.ok(
      !shrink.masters.includes('my-redis-replica-2'),
      `the replica StatefulSet shrank only once my-redis-replica-2 no longer carried the master label (masters then: ${shrink.masters.join(', ')})`,
    );
    assert.deepEqual(
      masters.deletedWhileMaster.slice(deletedBefore),
      [],
      'the scale-down removed no pod while it was labelled master',
    );
    assert.ok(
      c.events({ name: NAME, reason: 'Switchover' }).some((e) => e.message.includes('my-redis-replica-2')),
      'a Switchover event for the scale-down',
    );
    await c.waitFor(
      () => c.redisRow(NAME) === 'my-redis 7.2 Ready 1 Running',
      BOUND.running,
      'my-redis 7.2 Ready 1 Running',
    );

    const ackedAtScale = writer.acked.length;
    await c.waitFor(
      () => writer.acked.length >= ackedAtScale + 100,
      10_000,
      'writes acknowledged after the scale-down',
    );
    await writer.stop();
    await assertNothingLost(t, c, writer, 2);
    const survivor = podNames(c).find((p) => c.get('pods', p, NS)!.metadata.labels?.[ROLE_LABEL] === 'replica')!;
    assert.equal((await replication(c, podIp(c, survivor)!))['master_link_status'], 'up');
    assert.deepEqual(masters.violations, [], 'never two pods labelled master');
  },
);
