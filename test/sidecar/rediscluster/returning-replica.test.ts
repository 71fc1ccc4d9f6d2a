// Real redis-server processes: a shard back on the volumes a scale-down kept (its nodes restart
// with their old nodes.conf at new addresses, the staying nodes forgot them). The replica learns
// its master's new address from a staying node's gossip before the master can ping it (the master
// knows the replica only at its old address), and Redis then never re-points its replication: it
// keeps replicating from the address the master left, its link down. The round's decision
// (decide/formation.ts) sees it from the probes and tells it to REPLICATE again, which links it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ClusterAdapter } from '../../../src/sidecar/adapters/redis/rediscluster.ts';
import { planRound } from '../../../src/sidecar/rediscluster/decide/plan.ts';
import type { PodObservation } from '../../../src/sidecar/rediscluster/decide/types.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { redisClient } from '../redis/manager/harness-redis.ts';
import { nodesOf } from './nodes.ts';

const OCTET = 213;

async function client(t: { after(fn: () => unknown): void }, ip: string): Promise<Redis> {
  const c = redisClient(ip, undefined, 5000);
  t.after(() => c.disconnect());
  await c.connect();
  return c;
}

const replication = async (c: Redis) => {
  const text = await c.info('replication');
  return {
    host: /^master_host:(\S+)/m.exec(text)?.[1] ?? null,
    up: /^master_link_status:up/m.test(text),
  };
};

test('a replica back at a new address with its old nodes.conf is re-pointed at its master by REPLICATE', async (t) => {
  // S and T stay (half the slots each; a node gossips about others only when it knows a few);
  // M and R are a leaving shard's master and replica.
  const s = await startRedis(t, { ip: addr(OCTET, 1), cluster: {} });
  const st = await startRedis(t, { ip: addr(OCTET, 4), cluster: {} });
  const m = await startRedis(t, { ip: addr(OCTET, 2), cluster: {} });
  const r = await startRedis(t, { ip: addr(OCTET, 3), cluster: {} });
  const [sc, tc, mc, rc] = (await Promise.all([s, st, m, r].map((x) => client(t, x.ip)))) as [
    Redis,
    Redis,
    Redis,
    Redis,
  ];
  await sc.call('CLUSTER', 'ADDSLOTSRANGE', '0', '8191');
  await tc.call('CLUSTER', 'ADDSLOTSRANGE', '8192', '16383');
  for (const ip of [st.ip, m.ip, r.ip]) await sc.call('CLUSTER', 'MEET', ip, '6379');
  const [mId, rId] = (await Promise.all([mc.call('CLUSTER', 'MYID'), rc.call('CLUSTER', 'MYID')])) as string[];
  // Known for good (no handshake left): a node in handshake is not in the nodes.conf a restart reads.
  await until('every node knows the others', async () =>
    (await Promise.all([s, st, m, r].map((x) => nodesOf(x.ip)))).every(
      (v) => v?.length === 4 && v.every((n) => !n.handshake),
    ),
  );
  await rc.call('CLUSTER', 'REPLICATE', mId!);
  await until(
    'the replica linked, and its master knows it as its replica',
    async () => (await replication(rc)).up && (await nodesOf(m.ip))?.find((n) => n.id === rId)?.masterId === mId,
  );

  // Scale-down: both pods go before they are reset (their nodes.conf stays), the staying nodes forget them.
  const oldMasterIp = m.ip;
  await Promise.all([m.kill(), r.kill()]);
  for (const c of [sc, tc]) for (const id of [mId!, rId!]) await c.call('CLUSTER', 'FORGET', id);
  // Scale-up: the pods come back on their claims, at new addresses; a staying node meets the master.
  await m.restart({ ip: addr(OCTET, 12) });
  await r.restart({ ip: addr(OCTET, 13) });
  const [m2, r2] = [await client(t, m.ip), await client(t, r.ip)];
  assert.equal(await r2.call('CLUSTER', 'MYID'), rId, 'the old id, from the kept nodes.conf');
  await sc.call('CLUSTER', 'MEET', m.ip, '6379');
  await until(
    "the replica learnt its master's new address (from the staying node's gossip)",
    async () => (await nodesOf(r.ip))?.find((n) => n.id === mId)?.ip === m.ip,
    30_000,
  );
  let last = '';
  // The master then learns the replica's address (its ping) and pings it: R answered (a pong), and
  // still replicates from the old address: the master's ping finds the address already current.
  await until(
    'the master pinged the replica at its new address and had its answer',
    async () => {
      const line = (await nodesOf(m.ip))?.find((n) => n.id === rId);
      last = JSON.stringify([line, (await nodesOf(r.ip))?.find((n) => n.id === mId), await replication(r2)]);
      return line?.ip === r.ip && line.connected && (line.pongRecv ?? 0) > 0;
    },
    30_000,
    { dump: () => `${last}\nM:\n${m.logTail(15)}\nR:\n${r.logTail(15)}` },
  );
  const stuck = await replication(r2);
  assert.deepEqual(stuck, { host: oldMasterIp, up: false }, 'it still replicates from the old address');

  // The round, on what the sidecar's own probes read from the three nodes.
  const redis = new ClusterAdapter({ username: OPERATOR_USER, timeouts: { commandTimeoutMs: 5000 } });
  redis.setPassword(TEST_OPERATOR_PASSWORD);
  t.after(() => redis.close());
  const pods: PodObservation[] = [];
  for (const [name, shard, ordinal, ip] of [
    ['c-shard-0-0', 0, 0, s.ip],
    ['c-shard-1-0', 1, 0, st.ip],
    ['c-shard-2-0', 2, 0, m.ip],
    ['c-shard-2-1', 2, 1, r.ip],
  ] as const)
    pods.push({ name, uid: name, shard, ordinal, ip, deleting: false, record: null, roleLabel: null, probe: null });
  for (const p of pods) p.probe = await redis.probe(p.ip!);
  const plan = planRound({
    pods,
    spec: { shards: 3, replicasPerShard: 1, failoverTimeoutMs: 10_000 },
    remembered: new Map(),
    failover: { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() },
    now: 0,
  });
  const replicate = plan.steps.filter((x) => x.kind === 'replicate');
  assert.deepEqual(
    replicate.map((x) => [x.pod, x.masterId]),
    [['c-shard-2-1', mId]],
  );
  assert.match(replicate[0]!.reason, new RegExp(`replicates from ${oldMasterIp.replaceAll('.', '\\.')}`));
  const done = await redis.replicate(r.ip, mId!);
  assert.ok(done.ok, JSON.stringify(done));
  await until('the replica linked at the new address', async () => {
    const now = await replication(r2);
    return now.up && now.host === m.ip;
  });
  assert.equal((await m2.info('replication')).includes('connected_slaves:1'), true);
});
