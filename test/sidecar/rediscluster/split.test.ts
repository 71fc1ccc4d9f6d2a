// A shard split between two masters, with real redis-servers: while no sidecar runs, shard 2's
// replica is made a master (CLUSTER RESET, MEET) and given one slot with its keys by hand, the
// way a node restarted after a failover ends up when a slot is assigned to it. Neither master of
// shard 2 has a replica then, and nothing in Redis ends it. The next sidecar says so (ShardSplit)
// and merges: the slot goes back live, the emptied node becomes the master's replica.
// Network: 127.0.38.x (shard s pod o at .(1 + 2s + o), the sidecar's source address .100).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addr } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { redisCommand } from '../redis/manager/harness-redis.ts';
import { ClusterEnv, podName } from './harness.ts';
import { allCovered, clusterInfo, myself, nodesOf, openSlots, slotCountsOf } from './nodes.ts';
import { fill, keySlot, SlotWriter } from './writer.ts';

const OCTET = 38;
const NAME = 'carts';
const ip = (s: number, o: number) => addr(OCTET, 1 + s * 2 + o);

/** A hash tag in shard 2's slots (10923-16383 after bring-up). */
function tagInShard2(): string {
  for (let i = 0; ; i++) if (keySlot(`{s${i}}`) >= 10923) return `{s${i}}`;
}

test('a shard served by two masters is told and merged back: the slot moves live, the emptied node becomes the replica', async (t) => {
  const env = await ClusterEnv.start(t);
  const ips = await env.startShards(t, NAME, 3, ip);
  const a = await env.startInstance({ id: 'sidecar-a', sourceIp: addr(OCTET, 100) });
  await until('the cluster formed', () => allCovered(ips, 6), 30_000, { everyMs: 100, dump: () => env.dump(NAME) });
  await until(
    'shard 2 pod 1 replicates pod 0',
    async () => myself(await nodesOf(ip(2, 1)))?.role === 'replica',
    20_000,
    { everyMs: 100 },
  );
  const writer = new SlotWriter(ips);
  t.after(() => writer.close());
  const tag = tagInShard2();
  const slot = keySlot(tag);
  const tagged = await fill(writer, tag, 500);
  const spread = await fill(writer, `${NAME}-pre`, 2000);
  await a.stop();

  // By hand, with no sidecar: pod 1 becomes an empty master, meets the cluster, and takes the slot.
  const [m, r] = [ip(2, 0), ip(2, 1)];
  const mId = myself(await nodesOf(m))!.id;
  const rId = myself(await nodesOf(r))!.id;
  await redisCommand(r, 'CLUSTER', 'RESET', 'SOFT');
  await redisCommand(r, 'CLUSTER', 'MEET', m, '6379');
  await until(
    'every node knows pod 1 as a master, and it serves queries',
    async () => {
      for (const x of ips) if ((await nodesOf(x))?.find((n) => n.id === rId)?.role !== 'master') return false;
      return (await nodesOf(r))?.length === 6 && (await clusterInfo(r)).cluster_state === 'ok';
    },
    20_000,
    { everyMs: 100 },
  );
  await redisCommand(r, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', mId);
  await redisCommand(m, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', rId);
  for (;;) {
    const keys = (await redisCommand(m, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '100')) as string[];
    if (keys.length === 0) break;
    await redisCommand(
      m,
      'MIGRATE',
      r,
      '6379',
      '',
      '0',
      '5000',
      'AUTH',
      env.servers.get(podName(NAME, 2, 0))!.password,
      'KEYS',
      ...keys,
    );
  }
  for (const x of [r, m]) await redisCommand(x, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', rId);
  await until(
    'every node sees the slot on pod 1',
    async () => {
      for (const x of ips)
        if (!(await nodesOf(x))?.find((n) => n.id === rId)?.slots.some(([lo, hi]) => slot >= lo && slot <= hi))
          return false;
      return true;
    },
    20_000,
    { everyMs: 100 },
  );
  assert.equal((await slotCountsOf([r])).get(r), 1, 'the split is made: pod 1 serves one slot');

  writer.start(`${NAME}-w`);
  await env.startInstance({ id: 'sidecar-b', sourceIp: addr(OCTET, 101) });
  await until(
    'shard 2 merged: pod 1 replicates pod 0 again, pod 0 serves the slot',
    async () => {
      const rView = myself(await nodesOf(r));
      const counts = await slotCountsOf([m, r]);
      return (
        rView?.role === 'replica' && rView.masterId === mId && counts.get(m) === 5461 && (counts.get(r) ?? 0) === 0
      );
    },
    60_000,
    { everyMs: 200, dump: () => env.dump(NAME) },
  );
  await writer.stop();
  const split = (await env.eventsWith(NAME, { ShardSplit: 1 })).filter((e) => e.reason === 'ShardSplit');
  assert.equal(split.length >= 1, true, JSON.stringify(env.events(NAME).map((e) => e.reason)));
  assert.match(
    split[0]!.message,
    new RegExp(
      `shard 2 is served by two masters, ${podName(NAME, 2, 0)} .* and ${podName(NAME, 2, 1)} .*: .*slots move to`,
    ),
  );
  assert.equal(split[0]!.type, 'Warning');
  assert.equal(
    env.events(NAME).filter((e) => e.reason === 'SlotMoveFinished').length,
    0,
    'the merge tells itself once, not per slot',
  );
  assert.deepEqual(await openSlots(ips), [], 'no slot left open');
  assert.ok(await allCovered(ips, 6), 'every slot served');
  assert.deepEqual(writer.errors, [], 'no client error: the slot moved live');
  assert.deepEqual(await writer.missing(tagged), [], 'every key of the slot is there');
  assert.deepEqual(await writer.missing(spread), [], 'every key written before is there');
  assert.deepEqual(await writer.missing(writer.acked), [], 'every acknowledged write is there');
});
