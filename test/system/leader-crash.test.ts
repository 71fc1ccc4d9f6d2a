// System test 6: the sidecar leader is SIGKILLed in the middle of a failover. Its pod
// label patches are held by the API server (a fault on its own client only), so it gets as far as
// promoting a node in Redis but cannot publish it; then it is killed. The other instance takes
// the Lease when it expires and completes the failover from what the pods report. Every pod write
// is watched: never two pods labelled master. Network: 198.18.55.x.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { ROLE_LABEL } from '../../src/api/labels.ts';
import { missing, type SystemCluster as Cluster } from './cluster.ts';
import { borrowCluster, giveBack } from './lane.ts';
import {
  allLinked,
  applyDesign,
  assertNothingLost,
  BOUND,
  MasterWatch,
  NAME,
  newMasterEndpoint,
  NS,
  podIp,
  replication,
  RUNNING_ROW,
  Writer,
} from './support.ts';

const SUBNET = 55;

describe('the sidecar leader dies in the middle of a failover', { timeout: 400_000, skip: missing() ?? false }, () => {
  let c: Cluster;
  before(async () => {
    c = await borrowCluster({ subnet: SUBNET });
    await applyDesign({ diagnostic: (m) => console.log(`# ${m}`) }, c);
  });
  after(() => c && giveBack(c));

  test(
    'the master pod is deleted; the leader is SIGKILLed after promoting in Redis, before moving labels: the other instance completes it; never two masters',
    { timeout: 120_000 },
    async (t) => {
      const masters = new MasterWatch(t, c);
      const leader = c.leader(NAME)!;
      const standby = c.sidecarNames().find((n) => n !== leader)!;
      assert.ok(leader && standby, 'one leader and one standby');
      const writer = new Writer(c).start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 300, 10_000, '300 acknowledged writes');
      const old = c.masterEndpoint(NAME)!;
      const replicas = ['my-redis-replica-0', 'my-redis-replica-1'].map((p) => ({ pod: p, ip: podIp(c, p)! }));

      // The leader's pod PATCHes hang from now on (its Redis commands and Lease renewals still work).
      const hold = c.faults.add({ client: leader, method: 'PATCH', path: /\/pods\//, action: { kind: 'hang' } });
      t.after(() => hold.remove());
      const t0 = performance.now();
      await c.deletePod(old.pod);
      const promoted = await c.waitFor(
        async () => {
          if (hold.hits === 0) return undefined;
          for (const r of replicas)
            if ((await replication(c, r.ip).catch(() => ({}) as Record<string, string>))['role'] === 'master') return r;
          return undefined;
        },
        BOUND.failover,
        `the leader ${leader} promoting a replica in Redis (its label patch held)`,
      );
      const promotedMs = performance.now() - t0;
      assert.ok(!c.masterLabelled(NAME).includes(promoted.pod), 'the promotion is not published yet');
      await c.killSidecar(leader);
      const killedMs = performance.now() - t0;
      hold.remove();
      t.diagnostic(
        `delete ${old.pod} -> ${leader} promoted ${promoted.pod} at ${Math.round(promotedMs)} ms (labels held), SIGKILLed at ${Math.round(killedMs)} ms`,
      );

      // The standby takes the Lease (after it expires) and completes the failover.
      await c.waitFor(() => c.leader(NAME) === standby, BOUND.failover, `${standby} holding the Lease`);
      const done = await newMasterEndpoint(c, old.pod, 'a new master behind the master Service');
      const doneMs = performance.now() - t0;
      assert.equal(done.pod, promoted.pod, `${standby} adopted the node ${leader} promoted (no second promotion)`);
      const firstWrite = await c.waitFor(
        () => writer.ackedAfter(t0, done.pod),
        BOUND.failover,
        'an acknowledged write on the new master',
      );
      t.diagnostic(
        `${standby} leads; ${done.pod} Ready behind the master Service at ${Math.round(doneMs)} ms; first acknowledged write at ${Math.round(firstWrite.at - t0)} ms`,
      );

      await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, 'three Ready, linked pods');
      assert.equal(
        c.get('pods', old.pod, NS)!.metadata.labels?.[ROLE_LABEL],
        'replica',
        `${old.pod} rejoined as a replica`,
      );
      assert.equal((await replication(c, podIp(c, old.pod)!))['master_host'], done.ip);

      // The killed instance restarts (as its container would) and stays a standby.
      await c.restartSidecar(leader);
      await c.waitFor(() => c.sidecarReady(leader), 30_000, `${leader} ready again`);
      const since = writer.acked.length;
      await c.waitFor(() => writer.acked.length >= since + 200, 10_000, 'writes keep being acknowledged');
      // The manifests' SHARDS=4 shares the shards out among the live instances by a fixed rule: once
      // back, the restarted instance owns this Redis's shard again and the standby hands it over,
      // with no failover (the master stays where the standby put it).
      await c.waitFor(() => c.leader(NAME) === leader, 30_000, `${leader} holding this Redis's shard Lease again`);
      assert.equal(c.masterEndpoint(NAME)?.pod, done.pod, 'the hand-over moved no master');
      await writer.stop();
      await assertNothingLost(t, c, writer, 3);

      const events = c.events({ name: NAME });
      t.diagnostic(`events: ${events.map((e) => `${e.reason}(${e.source})`).join(', ')}`);
      // The standby tells how it finished: the node the dead leader promoted is the master (depending
      // on whether the old pod was already gone, as an adoption when no pod was labelled master, or as
      // the completion of the failover).
      const told = events.filter(
        (e) => e.source === standby && e.message.includes(promoted.pod) && /FailoverCompleted|Bootstrap/.test(e.reason),
      );
      assert.ok(
        told.length > 0,
        `${standby} recorded that ${promoted.pod} is the master (${events
          .filter((e) => e.source === standby)
          .map((e) => `${e.reason}: ${e.message}`)
          .join(' | ')})`,
      );
      t.diagnostic(`${standby}: ${told.map((e) => `${e.reason}: ${e.message}`).join(' | ')}`);
      await c.waitFor(() => c.redisRow(NAME) === RUNNING_ROW, BOUND.running, RUNNING_ROW);
      assert.deepEqual(masters.violations, [], 'never two pods labelled master');
      assert.equal(masters.maxSeen, 1);
    },
  );

  test(
    "the master's redis-server crashes (its pod stays, labelled master); the leader is SIGKILLed after promoting: the other instance moves the label; never two masters",
    { timeout: 120_000 },
    async (t) => {
      await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, 'three Ready, linked pods');
      const masters = new MasterWatch(t, c);
      const leader = c.leader(NAME)!;
      const standby = c.sidecarNames().find((n) => n !== leader)!;
      const writer = new Writer(c, 'crash').start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 300, 10_000, '300 acknowledged writes');
      const old = c.masterEndpoint(NAME)!;
      const others = c
        .pods(NAME)
        .map((p) => p.metadata.name)
        .filter((p) => p !== old.pod)
        .map((p) => ({ pod: p, ip: podIp(c, p)! }));
      const eventsBefore = c.events({ name: NAME }).length;

      const hold = c.faults.add({ client: leader, method: 'PATCH', path: /\/pods\//, action: { kind: 'hang' } });
      t.after(() => hold.remove());
      const t0 = performance.now();
      assert.ok(await c.killPodProcess(NS, old.pod, 'SIGKILL'));
      const promoted = await c.waitFor(
        async () => {
          for (const r of others)
            if ((await replication(c, r.ip).catch(() => ({}) as Record<string, string>))['role'] === 'master') return r;
          return undefined;
        },
        BOUND.failover,
        `the leader ${leader} promoting a replica in Redis`,
      );
      await c.waitFor(() => hold.hits > 0, BOUND.failover, `${leader} trying to move the labels`);
      assert.deepEqual(c.masterLabelled(NAME), [old.pod], 'the crashed master still carries the label');
      await c.killSidecar(leader);
      hold.remove();
      t.diagnostic(
        `SIGKILL of ${old.pod}'s redis-server -> ${leader} promoted ${promoted.pod} and was SIGKILLed at ${Math.round(performance.now() - t0)} ms`,
      );

      const done = await newMasterEndpoint(c, old.pod, 'a new master behind the master Service');
      assert.equal(done.pod, promoted.pod, `${standby} adopted the node ${leader} promoted`);
      assert.equal(c.leader(NAME), standby);
      const firstWrite = await c.waitFor(
        () => writer.ackedAfter(t0, done.pod),
        BOUND.failover,
        'an acknowledged write on the new master',
      );
      t.diagnostic(
        `${done.pod} Ready behind the master Service at ${Math.round(performance.now() - t0)} ms; first acknowledged write at ${Math.round(firstWrite.at - t0)} ms`,
      );
      await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, `${old.pod} restarted and linked as a replica`);
      assert.equal(c.get('pods', old.pod, NS)!.metadata.labels?.[ROLE_LABEL], 'replica');

      await c.restartSidecar(leader);
      const since = writer.acked.length;
      await c.waitFor(() => writer.acked.length >= since + 200, 10_000, 'writes keep being acknowledged');
      await writer.stop();
      await assertNothingLost(t, c, writer, 3);
      const events = c.events({ name: NAME }).slice(eventsBefore);
      t.diagnostic(`events: ${events.map((e) => `${e.reason}(${e.source})`).join(', ')}`);
      const completed = events.filter((e) => e.reason === 'FailoverCompleted' && e.source === standby);
      assert.ok(
        completed.length > 0 && completed[0]!.message.includes(promoted.pod),
        `${standby} recorded FailoverCompleted to ${promoted.pod}; events since the crash: ${events.map((e) => `${e.reason}(${e.source}): ${e.message}`).join(' | ')}\n${standby}'s log:\n${c.sidecarLog(standby, 40).join('\n')}`,
      );
      assert.deepEqual(masters.violations, [], 'never two pods labelled master');
      assert.equal(masters.maxSeen, 1);
    },
  );
});
