// Hibernation and wake of a RedisCluster with real redis-servers and the real sidecar: keys
// written with WAIT 1; spec.hibernate true, every server shut down (SIGTERM, its AOF kept) and its
// pod deleted; a while asleep with no pod; then spec.hibernate false and the pods back on their
// data directories at NEW addresses, the replicas first and each master a few seconds later (as
// the start script's hold makes them), one shard's pods late. The sidecar meets the nodes at their new addresses: every
// slot served, each shard the slots it had, every acknowledged key there, no failover forced and no
// node forgotten. The hook does not run here: the test writes the Hibernated condition it would.
// Network: 127.0.40.x (pods .1-.6 before, .11-.16 after; the sidecar's source address .100).
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL } from '../../../src/api/rediscluster-names.ts';
import { addr } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { redisClient } from '../redis/manager/harness-redis.ts';
import { ClusterEnv, NS, podName } from './harness.ts';
import { allCovered, myself, nodesOf } from './nodes.ts';
import { SlotWriter } from './writer.ts';

const OCTET = 40;

/** INFO replication of the node at `ip` says it is a replica, linked, of a node among the new addresses. */
async function linkedReplica(ip: string): Promise<boolean> {
  const c = redisClient(ip);
  try {
    await c.connect();
    const info = await c.info('replication');
    return /role:slave/.test(info) && /master_link_status:up/.test(info);
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}
const AT = '2026-12-01T10:00:00Z';

test('hibernate, then wake at new addresses: the same slots per shard, every acknowledged key back', async (t) => {
  const name = 'sleepy';
  const env = await ClusterEnv.start(t);
  const before = (s: number, o: number) => addr(OCTET, 1 + s * 2 + o);
  const after = (s: number, o: number) => addr(OCTET, 11 + s * 2 + o);
  const ips = await env.startShards(t, name, 3, before, { appendonly: 'yes', appendfsync: 'always' });
  await env.startInstance({ id: 'sidecar-a', sourceIp: addr(OCTET, 100) });
  await until('the cluster formed', () => allCovered(ips, 6), 30_000, { everyMs: 100, dump: () => env.dump(name) });

  const writer = new SlotWriter(ips);
  t.after(() => writer.close());
  const acked: Array<{ key: string; value: string }> = [];
  for (let i = 0; i < 2000; i += 200) {
    const batch = Array.from({ length: 200 }, (_, k) => ({ key: `k:${i + k}`, value: `v${i + k}` }));
    const ok = await Promise.all(batch.map((w) => writer.write(w.key, w.value)));
    acked.push(...batch.filter((_, k) => ok[k]));
  }
  assert.ok(acked.length >= 1900, `${acked.length} writes acknowledged by a replica`);
  writer.close();
  const slotsOf = async (ip: (s: number, o: number) => string) => {
    const out: string[] = [];
    for (let s = 0; s < 3; s++) {
      const mine = await Promise.all([0, 1].map(async (o) => myself(await nodesOf(ip(s, o)))));
      out.push(`${s}: ${JSON.stringify(mine.find((m) => m?.role === 'master')?.slots ?? [])}`);
    }
    return out;
  };
  const layout = await slotsOf(before);
  const condition = (reason: string, status = 'False') =>
    env.store.patch(
      CLUSTER_PLURAL,
      NS,
      name,
      { status: { conditions: [{ type: 'Hibernated', status, reason, message: reason, lastTransitionTime: AT }] } },
      { type: 'merge', subresource: 'status' },
    );
  const eventsBefore = env.events(name).length;

  // Hibernate: every pod stopped (SIGTERM: Redis' own shutdown), every pod object gone.
  await env.patchSpec(name, { hibernate: true });
  await condition('Hibernating');
  await Promise.all(
    [0, 1, 2].flatMap((s) =>
      [0, 1].map(async (o) => {
        await env.servers.get(podName(name, s, o))!.shutdown();
        await env.deletePod(podName(name, s, o));
      }),
    ),
  );
  await condition('Hibernated', 'True');
  // Asleep longer than the node timeout and the failover timeout together.
  await new Promise((r) => setTimeout(r, 5000));

  // Wake: the replicas at new addresses at once, the masters' pods there but their Redis held 3 s
  // (the start script's hold). Shard 2's pods come 8 s late (a slow node, a volume still attaching):
  // meanwhile every pod that exists answers and the others flag shard 2's nodes failed, which is
  // what a forget (and then an empty master for its slots) would act on but for the waking hold.
  // Each announces its pod IP, as the start script has it (nodes.conf still says the old one).
  const announce = (ip: string) => ({ 'cluster-announce-ip': ip });
  const wakeShards = async (shards: number[]) => {
    for (const s of shards) {
      await env.addPod(name, s, 1, after(s, 1));
      await env.servers.get(podName(name, s, 1))!.restart({ ip: after(s, 1), extra: announce(after(s, 1)) });
      await env.addPod(name, s, 0, after(s, 0));
    }
    await new Promise((r) => setTimeout(r, 3000));
    for (const s of shards)
      await env.servers.get(podName(name, s, 0))!.restart({ ip: after(s, 0), extra: announce(after(s, 0)) });
  };
  await env.patchSpec(name, { hibernate: false });
  await condition('Waking');
  await wakeShards([0, 1]);
  await new Promise((r) => setTimeout(r, 8000));
  await wakeShards([2]);
  const now = [0, 1, 2].flatMap((s) => [after(s, 0), after(s, 1)]);
  const mastersUp = performance.now();
  await until('every slot served at the new addresses', () => allCovered(now, 6), 60_000, {
    everyMs: 200,
    dump: () => env.dump(name),
  });
  t.diagnostic(
    `masters started -> every slot served at the new addresses: ${Math.round(performance.now() - mastersUp)} ms`,
  );
  await until(
    "every replica linked again (master_link_status:up, from its master's new address)",
    async () => (await Promise.all(now.map(linkedReplica))).filter(Boolean).length === 3,
    30_000,
    { everyMs: 200, dump: () => env.dump(name) },
  );
  await condition('Awake');

  assert.deepEqual(await slotsOf(after), layout, 'each shard serves the slots it served before');
  // Every node's view at the new addresses, nothing failed: the sidecar met the nodes it had to,
  // gossip carries the rest.
  const whole = async () => {
    for (const ip of now) {
      const view = await nodesOf(ip);
      if (view?.length !== 6 || view.some((n) => !now.includes(n.ip) || n.fail || n.handshake)) return false;
    }
    return true;
  };
  const gossip = performance.now();
  await until('every node knows every other at its new address, none failed', whole, 30_000, {
    everyMs: 200,
    dump: () => env.dump(name),
  });
  t.diagnostic(`then every view whole: ${Math.round(performance.now() - gossip)} ms`);
  const reader = new SlotWriter(now);
  t.after(() => reader.close());
  assert.deepEqual(await reader.missing(acked), [], 'every acknowledged key reads back');
  const events = env.events(name).slice(eventsBefore);
  assert.deepEqual(
    events.filter((e) => e.reason === 'FailoverForced' || e.reason === 'NodeForgotten' || e.type === 'Warning'),
    [],
    'no failover forced, no node forgotten, no Warning',
  );
  t.diagnostic(`events while asleep and waking: ${events.map((e) => e.reason).join(', ')}`);
});
