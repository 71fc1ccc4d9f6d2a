// System test: day-2 operations on one Redis, in sequence on one cluster (each boot of
// the real control plane costs about 20 s): dynamic config without a restart, switchovers on
// demand, a rollout (an image change) under SET + WAIT 1 traffic, a rollout stuck on a pod that never
// becomes Ready (and unstuck), the scale-down rule, application users, the optional NetworkPolicy,
// and hibernation. Figures are reported with
// t.diagnostic, never asserted. Network: 198.18.57.x.
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { performance } from 'node:perf_hooks';
import { SWITCHOVER_ANNOTATION, SWITCHOVER_STATUS_ANNOTATION } from '../../src/api/labels.ts';
import { isPodReady } from '../support/kubectl-tables.ts';
import { replyAs } from '../support/redis-keys.ts';
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
  servicesRouted,
  sleep,
  Writer,
  RUNNING_ROW,
} from './support.ts';

const SUBNET = 57;
type Cluster = NonNullable<Awaited<ReturnType<typeof boot>>>;
type Json = Record<string, unknown>;

const patchRedis = (c: Cluster, body: { spec?: Json; annotations?: Record<string, string> }) =>
  c.apply({
    apiVersion: 'redis.example.com/v1',
    kind: 'Redis',
    metadata: { name: NAME, namespace: NS, ...(body.annotations ? { annotations: body.annotations } : {}) },
    ...(body.spec ? { spec: body.spec } : {}),
  });

const status = (c: Cluster) => (c.get('redises', NAME, NS)?.['status'] ?? {}) as Json;
const conditionOf = (c: Cluster, type: string) =>
  ((status(c)['conditions'] ?? []) as Json[]).find((x) => x['type'] === type);
const uids = (c: Cluster) => Object.fromEntries(c.pods(NAME).map((p) => [p.metadata.name, p.metadata.uid]));
const switchoverRecord = (c: Cluster) =>
  c.get('redises', NAME, NS)?.metadata.annotations?.[SWITCHOVER_STATUS_ANNOTATION];

async function configOnEveryPod(c: Cluster, directive: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of podNames(c))
    out.push(String(((await call(c, podIp(c, name)!, 'CONFIG', 'GET', directive)) as string[])[1]));
  return out;
}

/** Polls how many of `expected` pods are not serving (missing, deleting or not Ready) and keeps the worst. */
function availability(t: TestContext, c: Cluster, expected: number) {
  const seen = { worst: 0, at: '' };
  const timer = setInterval(() => {
    const serving = c.pods(NAME).filter((p) => !p.metadata.deletionTimestamp && isPodReady(p)).length;
    if (expected - serving > seen.worst) {
      seen.worst = expected - serving;
      seen.at = c
        .pods(NAME)
        .map(
          (p) =>
            `${p.metadata.name}${p.metadata.deletionTimestamp ? ' (deleting)' : isPodReady(p) ? '' : ' (not Ready)'}`,
        )
        .join(', ');
    }
  }, 50);
  t.after(() => clearInterval(timer));
  return { seen, stop: () => clearInterval(timer) };
}

/**
 * One command as an ACL user on a fresh connection (AUTH as a command: a refusal is a reply, not a closed connection).
 */
const userCall = (c: Cluster, ip: string, user: string, password: string, ...command: string[]) =>
  replyAs(c.redis(ip, NAME), [user, password], command);

/** The longest time between two acknowledged writes in [from, to]. */
function longestPause(writer: Writer, from: number, to: number): number {
  const times = writer.acked.map((a) => a.at).filter((x) => x >= from && x <= to);
  let worst = 0;
  for (let i = 1; i < times.length; i++) worst = Math.max(worst, times[i]! - times[i - 1]!);
  return worst;
}

test(
  'day-2: dynamic config, switchovers on demand, a safe rollout (and a stuck one), the scale-down rule, hibernation',
  { timeout: 600_000 },
  async (t) => {
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    await applyDesign(t, c);
    const masters = new MasterWatch(t, c);
    const writer = new Writer(c).start();
    t.after(() => writer.stop());
    await c.waitFor(() => writer.acked.length >= 200, 10_000, '200 acknowledged writes');

    await t.test('a dynamic directive reaches every node at runtime: no pod restarts, no rollout', async () => {
      const before = uids(c);
      await patchRedis(c, { spec: { config: { 'maxmemory-policy': 'allkeys-lru', timeout: '300' } } });
      await c.waitFor(
        async () => (await configOnEveryPod(c, 'maxmemory-policy')).every((v) => v === 'allkeys-lru'),
        15_000,
        'allkeys-lru on every node',
      );
      assert.deepEqual(await configOnEveryPod(c, 'timeout'), ['300', '300', '300']);
      await sleep(1500);
      assert.deepEqual(uids(c), before, 'no pod was replaced');
      assert.equal(conditionOf(c, 'Updated')?.['reason'], 'UpToDate', 'the pod template did not change');
      // Removed from the spec: back to the Redis default, still without a restart.
      await patchRedis(c, {
        spec: { config: { 'maxmemory-policy': 'allkeys-lru', timeout: null } as unknown as Json },
      });
      await c.waitFor(
        async () => (await configOnEveryPod(c, 'timeout')).every((v) => v === '0'),
        15_000,
        'timeout back to 0 on every node',
      );
      assert.deepEqual(uids(c), before, 'no pod was replaced');
    });

    await t.test(
      'switchover on demand: to a named pod, repeated (nothing), to the best replica, and refused with the reason',
      async () => {
        const from = c.masterEndpoint(NAME)!.pod;
        const target = podNames(c).find((p) => p !== from)!;
        let t0 = performance.now();
        await patchRedis(c, { annotations: { [SWITCHOVER_ANNOTATION]: target } });
        await c.waitFor(
          () => switchoverRecord(c)?.startsWith(`${target}: Done`),
          BOUND.failover,
          `"${target}: Done" recorded`,
        );
        await c.waitFor(
          () => c.masterEndpoint(NAME)?.pod === target && servicesRouted(c),
          BOUND.failover,
          `${target} behind the master Service`,
        );
        t.diagnostic(`switchover to ${target}: ${Math.round(performance.now() - t0)} ms to Done and routed`);
        // The Event is sent beside the annotation write, not before it: wait for it too.
        await c.waitFor(
          () => c.events({ name: NAME, reason: 'SwitchoverDone' }).length >= 1,
          10_000,
          'a SwitchoverDone event',
        );
        await assert.doesNotReject(
          c.waitFor(() => status(c)['switchover'] === switchoverRecord(c), 10_000, 'the record in status'),
        );

        // The same request again changes nothing.
        await patchRedis(c, { annotations: { [SWITCHOVER_ANNOTATION]: target } });
        await sleep(1500);
        assert.equal(c.masterEndpoint(NAME)?.pod, target);
        assert.equal(c.events({ name: NAME, reason: 'SwitchoverDone' }).length, 1, 'one SwitchoverDone event, not two');

        t0 = performance.now();
        await patchRedis(c, { annotations: { [SWITCHOVER_ANNOTATION]: 'any@2' } });
        await c.waitFor(() => switchoverRecord(c)?.startsWith('any@2: Done'), BOUND.failover, '"any@2: Done" recorded');
        await c.waitFor(
          () => c.masterEndpoint(NAME)?.pod !== target && allLinked(c, 3),
          BOUND.rejoin,
          'the master moved to the best replica',
        );
        t.diagnostic(
          `switchover to the best replica (${c.masterEndpoint(NAME)?.pod}): ${Math.round(performance.now() - t0)} ms`,
        );

        await patchRedis(c, { annotations: { [SWITCHOVER_ANNOTATION]: 'my-redis-replica-9' } });
        await c.waitFor(
          () => switchoverRecord(c)?.startsWith('my-redis-replica-9: Refused'),
          10_000,
          '"my-redis-replica-9: Refused" recorded',
        );
        assert.match(switchoverRecord(c)!, /no pod my-redis-replica-9/);
        await c.waitFor(
          () =>
            c.events({ name: NAME, reason: 'SwitchoverRefused' }).some((e) => e.message.includes('my-redis-replica-9')),
          10_000,
          'a SwitchoverRefused event naming my-redis-replica-9',
        );
        assert.deepEqual(masters.violations, [], 'never two pods labelled master');
      },
    );

    await t.test(
      'an image change rolls out one pod at a time, the master last and never while master, nothing acknowledged lost',
      async () => {
        await c.waitFor(() => allLinked(c, 3) && servicesRouted(c), BOUND.rejoin, 'three linked pods');
        const before = uids(c);
        const firstMaster = c.masterEndpoint(NAME)!.pod;
        const deletedBefore = masters.deletedWhileMaster.length;
        const sawRollingOut: string[] = [];
        const watchStatus = setInterval(() => {
          const u = conditionOf(c, 'Updated');
          if (u && u['status'] === 'False' && !sawRollingOut.includes(String(u['reason'])))
            sawRollingOut.push(String(u['reason']));
        }, 50);
        t.after(() => clearInterval(watchStatus));
        const avail = availability(t, c, 3);
        const t0 = performance.now();
        // A pod-template change as a version bump makes it, with an image the nodes have: the same
        // engine under its full tag (no other Redis a 7.2 data set can move to is built here).
        await patchRedis(c, { spec: { image: 'redis:7.2.6' } });
        await c.waitFor(
          () => {
            const now = uids(c);
            return (
              Object.keys(before).every((n) => now[n] !== undefined && now[n] !== before[n]) &&
              allLinked(c, 3) &&
              conditionOf(c, 'Updated')?.['status'] === 'True'
            );
          },
          180_000,
          'every pod replaced, linked, and Updated=True',
        );
        const t1 = performance.now();
        avail.stop();
        clearInterval(watchStatus);
        await c.waitFor(() => servicesRouted(c), BOUND.rejoin, 'the Services routing as labelled');
        t.diagnostic(
          `rollout redis:7.2 -> redis:7.2.6: ${Math.round(t1 - t0)} ms; longest write pause ${Math.round(longestPause(writer, t0, t1))} ms; worst moment: ${avail.seen.worst} pod(s) not serving (${avail.seen.at}); master ${firstMaster} -> ${c.masterEndpoint(NAME)?.pod}`,
        );
        assert.ok(avail.seen.worst <= 1, `at most one pod down at a time (worst: ${avail.seen.at})`);
        assert.deepEqual(
          masters.deletedWhileMaster.slice(deletedBefore),
          [],
          'no pod was deleted while labelled master',
        );
        assert.notEqual(c.masterEndpoint(NAME)?.pod, undefined);
        assert.ok(sawRollingOut.length > 0, 'status showed the rollout (Updated=False) while it ran');
        assert.deepEqual((status(c)['rollout'] as Json)['stalePods'], []);
        await c.waitFor(
          () => c.events({ name: NAME, reason: 'RolloutStep' }).length >= 3,
          10_000,
          'a RolloutStep event per pod',
        );
        assert.ok(
          c.events({ name: NAME, reason: 'Switchover' }).some((e) => e.message.includes(`from ${firstMaster}`)),
          'the master was moved by a planned switchover',
        );
        assert.equal(c.redisRow(NAME), RUNNING_ROW);
        assert.ok(
          c
            .pods(NAME)
            .every((p) =>
              ((p['spec'] as Json)['containers'] as Json[]).some(
                (x) => x['name'] === 'redis' && x['image'] === 'redis:7.2.6',
              ),
            ),
          'every pod runs the new image',
        );
        assert.deepEqual(masters.violations, [], 'never two pods labelled master');
      },
    );

    await t.test(
      'a rollout stuck on a pod that never becomes Ready stops there and says so; fixing the spec unsticks it',
      async () => {
        const before = uids(c);
        const master = c.masterEndpoint(NAME)!.pod;
        // A static directive with a value redis-server refuses at start: the first new pod crash-loops.
        await patchRedis(c, { spec: { config: { 'maxmemory-policy': 'allkeys-lru', 'io-threads': 'many' } } });
        const waiting = await c.waitFor(
          () => {
            const u = conditionOf(c, 'Updated');
            return u?.['reason'] === 'RolloutWaiting' ? String(u['message']) : undefined;
          },
          60_000,
          'Updated=False, RolloutWaiting',
        );
        t.diagnostic(`stuck rollout, as status says it: ${waiting}`);
        await sleep(5000);
        const now = uids(c);
        const replaced = Object.keys(before).filter((n) => now[n] !== before[n]);
        assert.equal(replaced.length, 1, `exactly one pod was taken down (${replaced.join(', ')})`);
        assert.match(waiting, new RegExp(`waiting for ${replaced[0]}`), 'status names the pod the rollout waits for');
        assert.equal(c.masterEndpoint(NAME)?.pod, master, 'the master was not touched');
        assert.equal(status(c)['phase'], 'Running');

        await patchRedis(c, {
          spec: { config: { 'maxmemory-policy': 'allkeys-lru', 'io-threads': null } as unknown as Json },
        });
        await c.waitFor(
          () => allLinked(c, 3) && conditionOf(c, 'Updated')?.['status'] === 'True',
          90_000,
          'the broken pod replaced, every pod linked, Updated=True',
        );
        const after = uids(c);
        assert.deepEqual(
          Object.keys(before).filter((n) => after[n] !== before[n]),
          replaced,
          'only the broken pod was replaced again: the others already ran the fixed template',
        );
      },
    );

    await t.test('the scale-down rule: 2 -> 0 in one step is refused with the reason, the replicas stay', async () => {
      await c.scale(NAME, 0);
      await c.waitFor(
        () => conditionOf(c, 'SpecValid')?.['reason'] === 'ScaleDownRefused',
        15_000,
        'SpecValid=False, ScaleDownRefused',
      );
      assert.match(String(conditionOf(c, 'SpecValid')?.['message']), /redis\.example\.com\/confirm-scale-down-to=0/);
      await sleep(1500);
      assert.equal((c.get('statefulsets', `${NAME}-replica`, NS)?.['spec'] as Json)['replicas'], 2);
      assert.equal(podNames(c).length, 3);
      await c.scale(NAME, 2);
      await c.waitFor(() => conditionOf(c, 'SpecValid')?.['status'] === 'True', 15_000, 'SpecValid=True again');
    });

    await t.test(
      'spec.users: a user on every pod (one recreated in between), its rules enforced, then removed everywhere',
      async () => {
        await c.apply({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'shop-redis', namespace: NS },
          stringData: { password: 'shop-pw' },
        });
        await patchRedis(c, {
          spec: { users: [{ name: 'shop', rules: '~shop:* +get +set +ping', passwordSecret: { name: 'shop-redis' } }] },
        });
        const asShop = (ip: string, ...command: string[]) => userCall(c, ip, 'shop', 'shop-pw', ...command);
        const onEveryPod = async (want: string) =>
          (await Promise.all(podNames(c).map((p) => asShop(podIp(c, p) ?? '', 'PING')))).every((r) => r === want);
        await c.waitFor(() => onEveryPod('PONG'), 20_000, 'shop on every pod');
        assert.equal(await asShop(podIp(c, podNames(c)[0]!)!, 'GET', 'other:key'), 'NOPERM');
        // A pod recreated (a new, empty redis-server) gets the user as it joins.
        const replica = podNames(c).find((p) => p !== c.masterEndpoint(NAME)?.pod)!;
        await c.deletePod(replica);
        await c.waitFor(() => allLinked(c, 3), BOUND.rejoin, `${replica} back`);
        await c.waitFor(
          async () => (await asShop(podIp(c, replica) ?? '', 'PING')) === 'PONG',
          20_000,
          `shop on the recreated ${replica}`,
        );
        await patchRedis(c, { spec: { users: null } as unknown as Json });
        await c.waitFor(() => onEveryPod('WRONGPASS'), 20_000, 'shop gone from every pod');
      },
    );

    await t.test(
      'spec.networkPolicy: the API server takes the NetworkPolicy the hook returns; removing the field removes it',
      async () => {
        await patchRedis(c, { spec: { networkPolicy: { allowFrom: { app: 'shop' } } } });
        const policy = await c.waitFor(
          () => c.get('networkpolicies', `${NAME}-ingress`, NS),
          15_000,
          `NetworkPolicy ${NAME}-ingress`,
        );
        assert.deepEqual(((policy['spec'] as Json)['ingress'] as Json[])[0]!['ports'], [
          { protocol: 'TCP', port: 6379 },
        ]);
        await patchRedis(c, { spec: { networkPolicy: null } as unknown as Json });
        await c.waitFor(
          () => c.get('networkpolicies', `${NAME}-ingress`, NS) === undefined,
          15_000,
          'the NetworkPolicy gone',
        );
      },
    );

    await writer.stop();
    await assertNothingLost(t, c, writer, 3);

    await t.test('hibernation stops every pod and keeps the volumes; waking brings the data back', async () => {
      const claims = c
        .list('persistentvolumeclaims', { namespace: NS, labelSelector: `app.kubernetes.io/instance=${NAME}` })
        .map((p) => p.metadata.uid);
      await patchRedis(c, { spec: { hibernate: true } });
      await c.waitFor(
        () => c.pods(NAME).length === 0 && conditionOf(c, 'Hibernated')?.['status'] === 'True',
        90_000,
        'no pod left, Hibernated=True',
      );
      assert.equal(status(c)['phase'], 'Hibernated');
      assert.deepEqual(
        c
          .list('persistentvolumeclaims', { namespace: NS, labelSelector: `app.kubernetes.io/instance=${NAME}` })
          .map((p) => p.metadata.uid),
        claims,
        'every claim kept',
      );
      const t0 = performance.now();
      await patchRedis(c, { spec: { hibernate: false } });
      await c.waitFor(() => c.redisRow(NAME) === RUNNING_ROW, 90_000, 'Running again');
      t.diagnostic(`wake -> Running: ${Math.round(performance.now() - t0)} ms`);
      await assertNothingLost(t, c, writer, 3);
    });
  },
);
