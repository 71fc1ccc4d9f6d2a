// System test 7: a full outage (every pod deleted at once). Before it, the master is
// moved off my-redis-master-0 and master-0's replication link is cut (iptables), so
// master-0 (the fresh-cluster default) holds LESS data than the others. After the restart, the
// pod with the most data must become master and nothing acknowledged may be lost.
// Subnet 56. Needs root + iptables (as CI has): the cut is made in the pods' network namespaces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { ROLE_LABEL } from '../../src/api/labels.ts';
import {
  allLinked,
  applyDesign,
  assertNothingLost,
  boot,
  BOUND,
  call,
  MasterWatch,
  NAME,
  NS,
  podIp,
  podNames,
  RUNNING_ROW,
  Writer,
} from './support.ts';

const SUBNET = 56;

test(
  'every pod deleted at once: the pod with the most data becomes master, nothing acknowledged is lost',
  { timeout: 180_000 },
  async (t) => {
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    await applyDesign(t, c);
    const masters = new MasterWatch(t, c);
    const writer = new Writer(c).start();
    t.after(() => writer.stop());
    await c.waitFor(() => writer.acked.length >= 200, 10_000, '200 acknowledged writes');

    // Move the master off my-redis-master-0 and let master-0 rejoin as a replica.
    await c.deletePod('my-redis-master-0');
    await c.waitFor(
      () => c.masterEndpoint(NAME) && c.masterEndpoint(NAME)!.pod !== 'my-redis-master-0',
      BOUND.failover,
      'a master other than my-redis-master-0',
    );
    await c.waitFor(
      () => allLinked(c, 3) && c.get('pods', 'my-redis-master-0', NS)?.metadata.labels?.[ROLE_LABEL] === 'replica',
      BOUND.rejoin,
      'my-redis-master-0 back as a replica',
    );
    const master = c.masterEndpoint(NAME)!;
    const lagging = { pod: 'my-redis-master-0', ip: podIp(c, 'my-redis-master-0')! };

    // Cut master-0 off its master: it keeps what it has; the other replica acknowledges new writes.
    const cut = await c.cutLink(t, master.ip, lagging.ip);
    const cutAt = writer.acked.length;
    await c.waitFor(() => writer.acked.length >= cutAt + 500, 15_000, '500 writes acknowledged after the cut');
    await writer.stop();
    const before: Record<string, number> = {};
    for (const pod of podNames(c)) before[pod] = Number(await call(c, podIp(c, pod)!, 'DBSIZE'));
    t.diagnostic(`before the outage: master ${master.pod}; keys per pod ${JSON.stringify(before)}`);
    const most = Math.max(...Object.values(before));
    assert.ok(before[lagging.pod]! < most, `${lagging.pod} holds less data than the others`);

    // Redis 7 makes a master wait up to shutdown-timeout (10 s) for lagging replicas on SIGTERM, and
    // pods recreated meanwhile sync from it (measured: master-0 then comes back with everything).
    // A power loss does not wait: with shutdown-timeout 0 every node goes at once, so the restarted
    // pods really differ and the choice matters.
    await call(c, master.ip, 'CONFIG', 'SET', 'shutdown-timeout', '0');

    // The operator goes down with everything else (a power loss takes it too). Otherwise a pod the
    // StatefulSet recreates while the old master is still terminating is, rightly, re-pointed to it
    // and syncs everything before the outage is complete: measured once in about five runs, master-0
    // came back with all the data and the choice no longer mattered.
    const sidecars = c.sidecarNames();
    for (const s of sidecars) await c.killSidecar(s);

    // The outage: every pod deleted at once (the kubelet SIGTERMs them; Redis saves on the way out).
    const uids = new Map(c.pods(NAME).map((p) => [p.metadata.name, p.metadata.uid]));
    const t0 = performance.now();
    await Promise.all(podNames(c).map((pod) => c.deletePod(pod)));
    await c.waitFor(
      () => c.pods(NAME).every((p) => p.metadata.uid !== uids.get(p.metadata.name)) && c.pods(NAME).length === 3,
      BOUND.rejoin,
      'three new pods',
    );
    await cut.restore(); // the old addresses are gone; nothing uses the rule any more
    for (const s of sidecars) await c.restartSidecar(s);
    const chosen = await c.waitFor(() => c.masterEndpoint(NAME), BOUND.rejoin, 'a master after the restart');
    const chosenMs = performance.now() - t0;
    await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, 'three Ready, linked pods after the restart');
    t.diagnostic(
      `delete all -> ${chosen.pod} master behind the Service: ${Math.round(chosenMs)} ms; all linked: ${Math.round(performance.now() - t0)} ms`,
    );
    const bootstrap = c.events({ name: NAME, reason: 'Bootstrap' }).at(-1);
    assert.equal(
      before[chosen.pod],
      most,
      `the new master ${chosen.pod} is a pod that had the most data (${JSON.stringify(before)}); the sidecar said: ${bootstrap?.message ?? 'no Bootstrap event'}`,
    );
    assert.notEqual(chosen.pod, lagging.pod);
    assert.ok(bootstrap && bootstrap.message.includes(chosen.pod), 'a Bootstrap event names the chosen master');
    t.diagnostic(`Bootstrap: ${bootstrap.message}`);

    await assertNothingLost(t, c, writer, 3);
    assert.equal(
      Number(await call(c, chosen.ip, 'DBSIZE')),
      most,
      'the restarted set holds exactly the most complete data set',
    );
    await c.waitFor(() => c.redisRow(NAME) === RUNNING_ROW, BOUND.running, RUNNING_ROW);
    // Writes work again through the master Service.
    const again = new Writer(c, 'after').start();
    t.after(() => again.stop());
    await c.waitFor(() => again.acked.length >= 50, 10_000, 'writes acknowledged after the restart');
    await again.stop();
    assert.deepEqual(masters.violations, [], 'never two pods labelled master');
  },
);
