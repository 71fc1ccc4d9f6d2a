// Loopback octet: 127.0.134.x. A RedisCluster shard's data path end to end, as its Jobs and its
// pod 0's restore container run it, on real cluster-mode redis-servers: the shard's backup reads
// its replica (not the master), records the slots the shard serves; the restore puts the snapshot
// into an empty data directory; a new cluster node started on it holds every key and, as Redis
// does at start, serves exactly the unassigned slots it holds keys of (the sidecar gives it the
// rest of the recorded slots: test/sidecar/rediscluster/restore.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { parseSlotRanges } from '../../src/api/rediscluster-names.ts';
import { redisClient, redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { keySlot } from '../support/cluster-writer.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../support/redis-server.ts';
import { until } from '../support/until.ts';
import { BACKUP_MAIN, claimDir, RESTORE_MAIN, runEntry } from './support.ts';

const N = 134;
const KEYS = 500;

test("a shard backed up from its replica, with its slots, and restored into a new node's empty volume", async (t) => {
  const master = await startRedis(t, { ip: addr(N, 1), cluster: {} });
  const replica = await startRedis(t, { ip: addr(N, 2), cluster: {} });
  await redisCommand(master.ip, 'CLUSTER', 'ADDSLOTSRANGE', '0', '8191');
  await redisCommand(replica.ip, 'CLUSTER', 'MEET', master.ip, '6379');
  const masterId = String(await redisCommand(master.ip, 'CLUSTER', 'MYID'));
  await until(
    'the replica knows the master',
    async () => String(await redisCommand(replica.ip, 'CLUSTER', 'NODES')).includes(masterId),
    10_000,
    { everyMs: 50 },
  );
  await redisCommand(replica.ip, 'CLUSTER', 'REPLICATE', masterId);
  await until(
    'the replica linked',
    async () => String(await redisCommand(replica.ip, 'INFO', 'replication')).includes('master_link_status:up'),
    10_000,
    { everyMs: 50 },
  );
  await until(
    'the master serves its slots',
    async () => String(await redisCommand(master.ip, 'CLUSTER', 'INFO')).includes('cluster_state:ok'),
    10_000,
    { everyMs: 50 },
  );
  const keys: string[] = [];
  for (let i = 0; keys.length < KEYS; i++) if (keySlot(`s:${i}`) <= 8191) keys.push(`s:${i}`);
  const c = redisClient(master.ip);
  await c.connect();
  try {
    for (const k of keys) await c.set(k, `v-${k}`);
    assert.equal(Number(await c.call('WAIT', '1', '5000')), 1);
  } finally {
    c.disconnect();
  }

  const dir = claimDir(t)!;
  const claim = { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'redis-backups', BACKUP_DIR: dir };
  const backup = await runEntry(BACKUP_MAIN, {
    REDIS_NAMESPACE: 'prod',
    REDIS_NAME: 'orders',
    BACKUP_SHARD: '0',
    REDIS_HOSTS: `${replica.ip}:6379,${master.ip}:6379`,
    REDIS_USERNAME: OPERATOR_USER,
    REDIS_PASSWORD: TEST_OPERATOR_PASSWORD,
    ...claim,
  });
  assert.equal(backup.code, 0, `${JSON.stringify(backup.result)}\n${backup.stderr}`);
  assert.equal(backup.result['role'], 'replica', 'read from the replica');
  assert.equal(backup.result['slots'], '0-8191');
  assert.match(String(backup.result['location']), /^pvc:\/\/redis-backups\/rediscluster~prod~orders~shard-0\//);

  // A new node, its volume emptied as a new pod's is, restored as pod 0 of its shard, then started.
  const node = await startRedis(t, { ip: addr(N, 3), cluster: {} });
  await node.kill();
  rmSync(node.dataDir, { recursive: true, force: true });
  mkdirSync(node.dataDir);
  const restored = await runEntry(RESTORE_MAIN, {
    RESTORE_LOCATION: String(backup.result['location']),
    RESTORE_DIR: dir,
    BACKUP_STORAGE: 'pvc',
    DATA_DIR: node.dataDir,
    APPENDONLY: 'no',
    RESTORE_FIRST_POD_ONLY: 'yes',
    POD_NAME: 'orders-copy-shard-0-0',
  });
  assert.equal(restored.code, 0, `${JSON.stringify(restored.result)}\n${restored.stderr}`);
  assert.equal(restored.result['restoredFrom'], backup.result['location']);
  await node.restart();

  assert.equal(Number(await redisCommand(node.ip, 'DBSIZE')), KEYS, 'every key is back');
  const me = String(await redisCommand(node.ip, 'CLUSTER', 'NODES'))
    .split('\n')
    .find((l) => l.includes('myself'))!;
  const served = new Set(
    parseSlotRanges(me.split(' ').slice(8).join(','))!.flatMap(([a, b]) =>
      Array.from({ length: b - a + 1 }, (_, k) => a + k),
    ),
  );
  assert.deepEqual(
    [...served].sort((a, b) => a - b),
    [...new Set(keys.map(keySlot))].sort((a, b) => a - b),
    'it serves exactly the slots of its keys, all within the recorded ones',
  );
});
