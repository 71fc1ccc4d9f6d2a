// Bring-up of a restored RedisCluster by the real cluster manager, on real redis-server processes
// in cluster mode: pod 0 of each shard starts holding its shard's keys (as the restore left them)
// and, as Redis does at start, serving the unassigned slots it holds keys of; the RedisCluster
// has spec.restore and the layout in status.restore.shards (not the even one). The sidecar gives
// every other slot to the shard that held it when backed up, the pod 1s replicate, and every key
// is read back through the cluster. A shard whose snapshot held no key gets its slots too.
// Network: 127.0.167.x (nodes .1-.6, the sidecar's source address .100).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSlotRanges } from '../../../src/api/rediscluster-names.ts';
import { keySlot, missingFromCluster, type Written } from '../../support/cluster-writer.ts';
import { addr, TEST_PASSWORD } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { redisClient } from '../redis/manager/harness-redis.ts';
import { ClusterEnv, NS } from './harness.ts';
import { allCovered, clusterInfo, myself, nodesOf } from './nodes.ts';

const OCTET = 167;
const NAME = 'restored';
/**
 * A layout after a reshard: no shard holds an even contiguous range, but the counts are balanced
 * (5461, 5462, 5461), as a backup of a settled RedisCluster is, so that no reshard follows the
 * bring-up and the layout read afterwards is the one the restore formed.
 */
const LAYOUT = ['100-5460,10923-11022', '0-99,5461-10822', '10823-10922,11023-16383'];
/** Shard 2's snapshot held no key: it serves nothing at start. */
const KEYS_PER_SHARD = [300, 300, 0];

const ipOf = (shard: number, ordinal: number) => addr(OCTET, 1 + shard * 2 + ordinal);
const inRanges = (slot: number, text: string) => parseSlotRanges(text)!.some(([a, b]) => slot >= a && slot <= b);

/** `count` keys whose slots are in `ranges`, numbered from where the last search stopped. */
function keysIn(text: string, count: number, from: { i: number }): Written[] {
  const out: Written[] = [];
  while (out.length < count) {
    const key = `r:${from.i++}`;
    if (inRanges(keySlot(key), text)) out.push({ key, value: `v-${key}`, at: 0 });
  }
  return out;
}

test('a restored RedisCluster is formed with the slots each shard held when backed up, every key served', async (t) => {
  const env = await ClusterEnv.start(t);
  await env.createSecrets(NAME);
  await env.store.create('redisclusters', {
    apiVersion: 'redis.example.com/v1',
    kind: 'RedisCluster',
    metadata: { name: NAME, namespace: NS },
    spec: {
      master: { replicas: 3 },
      replicas: 1,
      sentinel: { downAfterMilliseconds: 1000, failoverTimeout: 3000 },
      restore: { backup: 'before' },
    },
    status: {
      restore: {
        source: 'RedisBackup/before',
        phase: 'Restoring',
        message: '',
        shards: LAYOUT.map((slots, shard) => ({ shard, location: `s3://b/k${shard}.rdb`, slots })),
      },
    },
  });
  const from = { i: 0 };
  const written: Written[] = [];
  const ips: string[] = [];
  for (let s = 0; s < 3; s++) {
    for (let o = 0; o < 2; o++) {
      ips.push(ipOf(s, o));
      await env.startNode(t, NAME, s, o, ipOf(s, o));
    }
    // Pod 0 as the restore leaves it: its shard's keys, and the slots of those keys claimed.
    const keys = keysIn(LAYOUT[s]!, KEYS_PER_SHARD[s]!, from);
    const c = redisClient(ipOf(s, 0));
    await c.connect();
    try {
      const slots = [...new Set(keys.map((k) => keySlot(k.key)))];
      if (slots.length > 0) {
        await c.call('CLUSTER', 'ADDSLOTS', ...slots.map(String));
        await until(
          'the node serves its slots',
          async () => (await clusterInfo(ipOf(s, 0)))['cluster_state'] === 'ok',
          10_000,
          {
            everyMs: 50,
          },
        );
      }
      for (const k of keys) await c.set(k.key, k.value);
    } finally {
      c.disconnect();
    }
    written.push(...keys);
  }

  await env.startInstance({ id: 'sidecar-a', sourceIp: addr(OCTET, 100) });
  await until('every slot served and every node knowing all six', () => allCovered(ips, 6), 30_000, { everyMs: 100 });

  const view = await nodesOf(ipOf(0, 0));
  for (let s = 0; s < 3; s++) {
    const master = view!.find((n) => n.ip === ipOf(s, 0));
    const served = master!.slots.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`)).join(',');
    assert.equal(served, LAYOUT[s], `shard ${s}'s pod 0 serves the slots its shard held`);
  }
  await until(
    'every pod 1 a replica of its shard pod 0',
    async () => {
      for (let s = 0; s < 3; s++) {
        const me = myself(await nodesOf(ipOf(s, 1)));
        const master = myself(await nodesOf(ipOf(s, 0)));
        if (!me || !master || me.role !== 'replica' || me.masterId !== master.id) return false;
      }
      return true;
    },
    30_000,
    { everyMs: 100 },
  );
  const missing = await missingFromCluster(
    { seeds: ips.map((host) => ({ host, port: 6379 })), password: TEST_PASSWORD },
    written,
  );
  assert.deepEqual(missing, [], 'every restored key is served by the cluster');
  assert.equal(written.length, 600);
});
