// System test 2: `kubectl delete pod my-redis-master-0` under SET + WAIT 1 traffic: a
// replica is promoted, the master Service follows, the recreated pod rejoins as a replica with its
// volume's data, no acknowledged write is lost, Events tell the story, the status returns to
// Running. Network: 198.18.51.x.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { ROLE_LABEL } from '../../src/api/labels.ts';
import { OPERATOR_NAMESPACE } from '../k8s/operator.ts';
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

const SUBNET = 51;

describe('the master goes away', { timeout: 300_000, skip: missing() ?? false }, () => {
  let c: Cluster;
  before(async () => {
    c = await borrowCluster({ subnet: SUBNET });
    await applyDesign({ diagnostic: (m) => console.log(`# ${m}`) }, c);
  });
  after(() => c && giveBack(c));

  test(
    'deleting the master pod: promotion, the Service follows, the old pod rejoins as a replica with its data, nothing acknowledged lost',
    { timeout: 120_000 },
    async (t) => {
      const masters = new MasterWatch(t, c);
      const writer = new Writer(c).start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 300, 10_000, '300 acknowledged writes');

      const old = c.masterEndpoint(NAME)!;
      assert.equal(old.pod, 'my-redis-master-0');
      const oldPod = c.get('pods', old.pod, NS)!;
      const claim = c.get('persistentvolumeclaims', `data-${old.pod}`, NS)!;
      const ackedBefore = writer.acked.length;

      const t0 = performance.now();
      await c.deletePod(old.pod);
      const promoted = await newMasterEndpoint(c, old.pod, 'a new master behind my-redis-master');
      const failoverMs = performance.now() - t0;
      const firstWrite = await c.waitFor(
        () => writer.ackedAfter(t0, promoted.pod),
        BOUND.failover,
        'an acknowledged write on the new master',
      );
      t.diagnostic(
        `delete master pod -> ${promoted.pod} Ready behind the master Service: ${Math.round(failoverMs)} ms; first acknowledged write through it: ${Math.round(firstWrite.at - t0)} ms`,
      );
      assert.match(promoted.pod, /^my-redis-replica-[01]$/);
      assert.equal((await replication(c, promoted.ip))['role'], 'master');

      // The StatefulSet recreates my-redis-master-0 (new UID, new IP, same claim), and it rejoins as a replica.
      const rejoined = await c.waitFor(
        () => {
          const p = c.get('pods', old.pod, NS);
          if (!p || p.metadata.uid === oldPod.metadata.uid || p.metadata.deletionTimestamp) return undefined;
          return allLinked(c, 3) ? p : undefined;
        },
        BOUND.rejoin,
        `${old.pod} recreated and Ready as a replica`,
      );
      t.diagnostic(`delete -> ${old.pod} back as a Ready, linked replica: ${Math.round(performance.now() - t0)} ms`);
      assert.equal(rejoined.metadata.labels?.[ROLE_LABEL], 'replica');
      const newIp = podIp(c, old.pod)!;
      assert.notEqual(newIp, old.ip, 'a recreated pod gets a new address');
      assert.equal(
        c.get('persistentvolumeclaims', `data-${old.pod}`, NS)!.metadata.uid,
        claim.metadata.uid,
        'the same volume (claim) is reused',
      );
      const info = await replication(c, newIp);
      assert.equal(info['master_host'], promoted.ip, 'it replicates from the new master');
      assert.equal(info['master_link_status'], 'up');
      // Its volume's data was loaded at start (before the sidecar pointed it anywhere).
      assert.match(
        c.podLog(NS, old.pod),
        /DB loaded from|Done loading RDB/,
        'the recreated pod loaded its data from the volume',
      );

      await c.waitFor(
        () => writer.acked.length >= ackedBefore + 300,
        15_000,
        '300 more acknowledged writes after the failover',
      );
      await writer.stop();
      await assertNothingLost(t, c, writer, 3);

      // Events on the Redis, and the status is back to Running with the new master.
      const reasons = c.events({ name: NAME }).map((e) => e.reason);
      assert.ok(
        reasons.includes('FailoverStarted') || reasons.includes('Switchover'),
        `a failover or switchover event (${reasons.join(', ')})`,
      );
      assert.ok(
        reasons.includes('FailoverCompleted') || reasons.includes('Switchover'),
        `a completion event (${reasons.join(', ')})`,
      );
      await c.waitFor(() => c.redisRow(NAME) === RUNNING_ROW, BOUND.running, RUNNING_ROW);
      const status = c.get('redises', NAME, NS)!['status'] as Record<string, unknown>;
      assert.equal(status['master'], promoted.pod);
      assert.equal(status['masterIP'], promoted.ip);
      assert.deepEqual(masters.violations, [], 'never two pods labelled master');
      assert.equal(masters.maxSeen, 1);
      t.diagnostic(
        `events: ${c
          .events({ name: NAME })
          .map((e) => `${e.reason}(${e.source})`)
          .join(', ')}`,
      );
    },
  );

  test(
    "the master's redis-server crashes (SIGKILL, the container restarts in place): failover with Events, the restarted node rejoins as a replica, nothing acknowledged lost",
    { timeout: 120_000 },
    async (t) => {
      const masters = new MasterWatch(t, c);
      const writer = new Writer(c, 'crash').start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 300, 10_000, '300 acknowledged writes');
      const old = c.masterEndpoint(NAME)!;
      const eventsBefore = c.events({ name: NAME }).length;
      const restartsBefore = restartCount(c, old.pod);

      const t0 = performance.now();
      assert.ok(await c.killPodProcess(NS, old.pod, 'SIGKILL'), `SIGKILL to ${old.pod}'s redis-server`);
      const promoted = await newMasterEndpoint(c, old.pod, 'a new master behind my-redis-master');
      const firstWrite = await c.waitFor(
        () => writer.ackedAfter(t0, promoted.pod),
        BOUND.failover,
        'an acknowledged write on the new master',
      );
      t.diagnostic(
        `SIGKILL of ${old.pod} -> ${promoted.pod} Ready behind the master Service: ${Math.round(performance.now() - t0)} ms... first acknowledged write ${Math.round(firstWrite.at - t0)} ms`,
      );

      // The container restarted in the same pod (same IP, restartCount + 1) and follows the new master.
      await c.waitFor(
        () => restartCount(c, old.pod) > restartsBefore && allLinked(c, 3),
        BOUND.rejoin,
        `${old.pod} restarted and Ready as a replica`,
      );
      assert.equal(podIp(c, old.pod), old.ip, 'a container restart keeps the pod IP');
      assert.equal(c.get('pods', old.pod, NS)!.metadata.labels?.[ROLE_LABEL], 'replica');
      assert.equal((await replication(c, old.ip))['master_host'], promoted.ip);

      await c.waitFor(
        () => writer.acked.some((a) => a.at > firstWrite.at + 500),
        10_000,
        'writes keep being acknowledged',
      );
      await writer.stop();
      await assertNothingLost(t, c, writer, 3);
      const events = c.events({ name: NAME }).slice(eventsBefore);
      const started = events.find((e) => e.reason === 'FailoverStarted');
      const completed = events.find((e) => e.reason === 'FailoverCompleted');
      assert.ok(started, `a FailoverStarted event (${events.map((e) => e.reason).join(', ')})`);
      assert.ok(completed, `a FailoverCompleted event (${events.map((e) => e.reason).join(', ')})`);
      assert.match(
        completed.message,
        new RegExp(`${old.pod}[\\s\\S]*${promoted.pod}|${promoted.pod}[\\s\\S]*${old.pod}`),
        'the completion names the old and the new master',
      );
      t.diagnostic(`FailoverCompleted: ${completed.message}`);
      await c.waitFor(() => c.redisRow(NAME) === RUNNING_ROW, BOUND.running, RUNNING_ROW);
      assert.deepEqual(masters.violations, [], 'never two pods labelled master');
    },
  );

  test(
    'a Sentinel client (ioredis sentinels:, through the operator pods on 26379) and a client of the master Service, side by side through a crash of the master',
    { timeout: 120_000 },
    async (t) => {
      await c.apply({
        apiVersion: 'redis.example.com/v1',
        kind: 'Redis',
        metadata: { name: NAME, namespace: NS },
        spec: { sentinel: { enabled: true } },
      });
      const operators = c
        .sidecarNames()
        .map((p) => c.get('pods', p, OPERATOR_NAMESPACE)?.['status'] as { podIP?: string });
      const sentinels = operators.map((s) => ({ host: s.podIP!, port: 26379 }));
      const password = c.password(NAME)!;
      const old = c.masterEndpoint(NAME)!;
      // Every operator pod answers, each from its own informers, with the master the operator made (once its feed
      // has read the password: a fresh connection per try, closed whatever happens).
      let lastError = '';
      const ask = async (s: { host: string; port: number }): Promise<string | null> => {
        const probe = new Redis({
          ...s,
          password,
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        probe.on('error', () => {});
        try {
          await probe.connect();
          return ((await probe.call('SENTINEL', 'get-master-addr-by-name', NAME)) as string[] | null)?.[0] ?? null;
        } catch (err) {
          lastError = `${s.host}: ${err instanceof Error ? err.message : String(err)}`;
          return null;
        } finally {
          probe.disconnect();
        }
      };
      for (const s of sentinels) {
        await c
          .waitFor(async () => (await ask(s)) === old.ip, BOUND.running, `${s.host} names ${old.ip}`)
          .catch((err: unknown) => assert.fail(`${String(err)}; last error: ${lastError}`));
      }
      const client = new Redis({
        sentinels,
        name: NAME,
        sentinelPassword: password,
        password,
        maxRetriesPerRequest: 1,
      });
      client.on('error', () => {});
      t.after(() => client.disconnect());
      let n = 0;
      const writeOn = async (not: string | null): Promise<string | false> => {
        try {
          await client.set(`sentinel-${++n}`, 'x');
          const at = client.stream.remoteAddress;
          return at !== undefined && at !== not && at;
        } catch {
          return false;
        }
      };
      assert.equal(await c.waitFor(() => writeOn(null), BOUND.running, 'a write through Sentinel'), old.ip);
      const writer = new Writer(c, 'side-by-side').start();
      t.after(() => writer.stop());
      await c.waitFor(() => writer.acked.length >= 100, 10_000, '100 acknowledged writes');

      const t0 = performance.now();
      assert.ok(await c.killPodProcess(NS, old.pod, 'SIGKILL'), `SIGKILL to ${old.pod}'s redis-server`);
      const sentinelIp = await c.waitFor(() => writeOn(old.ip), BOUND.failover, 'a Sentinel client write elsewhere');
      const sentinelMs = performance.now() - t0;
      const promoted = await newMasterEndpoint(c, old.pod, 'a new master behind my-redis-master');
      const viaService = await c.waitFor(
        () => writer.ackedAfter(t0, promoted.pod),
        BOUND.failover,
        'an acknowledged write on the new master through the Service',
      );
      t.diagnostic(
        `sentinel_client_failover_ms=${Math.round(sentinelMs)} service_client_failover_ms=${Math.round(viaService.at - t0)}`,
      );
      assert.equal(sentinelIp, promoted.ip, 'the Sentinel client writes on the master the operator made');
      await writer.stop();
    },
  );
});

function restartCount(c: Cluster, pod: string): number {
  const statuses = ((c.get('pods', pod, NS)?.['status'] as Record<string, unknown> | undefined)?.[
    'containerStatuses'
  ] ?? []) as Array<{
    name?: string;
    restartCount?: number;
  }>;
  return statuses.find((s) => s.name === 'redis')?.restartCount ?? 0;
}
