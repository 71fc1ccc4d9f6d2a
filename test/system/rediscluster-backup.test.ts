// System test: on-demand backup of a RedisCluster and restore into a new one, on the real control
// plane with a real S3 server (versitygw on the cluster's bridge). In order, on one cluster:
// 1. a RedisCluster of three shards (one replica each) scaled to four under SET + WAIT 1 traffic,
//    so its slot layout is no longer the even contiguous ranges a new cluster starts with;
// 2. `kubectl redis backup rediscluster/orders` (a RedisBackup naming it, spec.redisCluster), still
//    under traffic, waiting until it is Completed: one Job per shard, each
//    snapshot read from a replica of its shard, in the bucket under the shard's folder, recorded
//    with the shard's slots (those status.shardStatus shows) and its replication offset;
// 3. `kubectl redis restore orders-restored --from-backup B --like orders` (a new RedisCluster with
//    spec.restore naming that backup), waiting until it is restored: Running with the same layout (every
//    slot's owner is the same shard as in the source, read from CLUSTER NODES), status.restore
//    Completed, and every key acknowledged before the RedisBackup was created is back, with its value;
// 4. a restore naming a backup of another shard count is refused before any pod exists.
// Network: subnet 91.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { CreateBucketCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { s3Client } from '../../src/backup/s3.ts';
import { isS3ServerBuilt, startS3Server } from '../s3/server.ts';
import { ClusterWriter, missingFromCluster } from '../support/cluster-writer.ts';
import { BUCKET, credentials, s3Storage } from './backup-objects.ts';
import { PLUGIN, run } from './plugin-run.ts';
import type { SystemCluster } from './cluster.ts';
import {
  admin,
  healthy,
  livePods,
  reshardOf,
  row,
  secretValue,
  seedsOf,
  statusOf,
  type Json,
} from './rediscluster-support.ts';
import { boot, NS } from './support.ts';

const SUBNET = 91;
const SOURCE = 'orders';
const RESTORED = 'orders-restored';
const IMAGES = ['redis-7.0'];

function redisCluster(name: string, endpoint: string, shards: number, restore?: string): Json {
  return {
    apiVersion: 'redis.example.com/v1',
    kind: 'RedisCluster',
    metadata: { name, namespace: NS },
    spec: {
      version: '7.0',
      master: { replicas: shards },
      replicas: 1,
      // On-demand backups only: a schedule is required, this one never comes during the test.
      backup: { schedule: '0 0 1 1 *', storage: s3Storage(endpoint) },
      ...(restore !== undefined ? { restore: { backup: restore } } : {}),
    },
  };
}

/** Each slot's owner, as the shard index of the pod serving it (CLUSTER NODES of one node). */
async function slotOwners(c: SystemCluster, name: string): Promise<number[]> {
  const pods = livePods(c, name);
  const shardOfIp = new Map(pods.map((p) => [p.status!.podIP!, Number(/-shard-(\d+)-\d+$/.exec(p.metadata.name)![1])]));
  const r = admin(c, name, pods[0]!.status!.podIP!);
  try {
    const owners = new Array<number>(16384).fill(-1);
    for (const line of String(await r.call('CLUSTER', 'NODES'))
      .trim()
      .split('\n')) {
      const f = line.split(' ');
      if (!f[2]!.includes('master')) continue;
      const shard = shardOfIp.get(f[1]!.split(':')[0]!) ?? -1;
      for (const range of f.slice(8)) {
        if (range.startsWith('[')) continue;
        const [a, b] = range.split('-').map(Number);
        for (let s = a!; s <= (b ?? a!); s++) owners[s] = shard;
      }
    }
    return owners;
  } finally {
    r.disconnect();
  }
}

/** Shards the status shows serving slots (each its share, once the reshard's record is Done). */
const shardsServing = (c: SystemCluster, name: string) =>
  ((statusOf(c, name)['shardStatus'] ?? []) as Json[]).filter((x) => Number(x['slotCount']) > 0).length;

test(
  'a RedisCluster backed up on demand, one snapshot per shard from its replicas, and restored into a new RedisCluster with the same slot layout and every acknowledged key',
  { timeout: 900_000 },
  async (t) => {
    if (!isS3ServerBuilt()) return t.skip('the S3 server is not built (node test/k8s/cli.ts build)');
    const c = await boot(t, { subnet: SUBNET, nodes: 3, images: IMAGES });
    if (!c) return;
    const s3 = await startS3Server({ ip: c.hostAddress });
    t.after(() => s3.stop());
    const client = s3Client({
      bucket: BUCKET,
      region: s3.region,
      endpoint: s3.endpoint,
      prefix: '',
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    });
    t.after(() => client.destroy());
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await c.apply(credentials(NS, s3.accessKeyId, s3.secretAccessKey));
    const kubeconfig = c.kubeconfig;
    const plugin = (...args: string[]) => run(PLUGIN, [...args, '-n', NS], { KUBECONFIG: kubeconfig });

    // 1. Three shards, traffic, then four: a layout that is not the even one.
    const t0 = performance.now();
    await c.apply(redisCluster(SOURCE, s3.endpoint, 3));
    await c.waitFor(() => row(c, SOURCE) === `${SOURCE} 3 3 3 16384 Running`, 180_000, `${SOURCE} Running`);
    await c.waitFor(() => healthy(c, SOURCE, 3, 2), 60_000, 'six Ready pods, every node linked');
    t.diagnostic(`apply -> Running: ${Math.round(performance.now() - t0)} ms`);
    const password = secretValue(c, `${SOURCE}-auth`);
    const writer = new ClusterWriter({
      seeds: seedsOf(c, SOURCE),
      password,
      prefix: 'acked',
      waitReplicas: 1,
      waitTimeoutMs: 500,
    }).start();
    t.after(() => writer.stop());
    await c.waitFor(() => writer.acked.length >= 500, 60_000, '500 acknowledged writes');
    await c.scale(SOURCE, 4, NS, 'rediscluster');
    // The row says Running with four shards before the sidecar has moved a slot: the reshard's own
    // record says when the slots are where the backup will find them.
    await c.waitFor(
      () =>
        row(c, SOURCE) === `${SOURCE} 4 4 4 16384 Running` &&
        healthy(c, SOURCE, 4, 2) &&
        reshardOf(c, SOURCE)?.to === 4 &&
        reshardOf(c, SOURCE)?.state === 'Done' &&
        shardsServing(c, SOURCE) === 4,
      300_000,
      `${SOURCE} resharded to four shards`,
    );
    const layout = (statusOf(c, SOURCE)['shardStatus'] as Json[]).map((s) => String(s['slots']));
    t.diagnostic(`source layout: ${layout.join(' | ')}`);
    const sourceOwners = await slotOwners(c, SOURCE);
    assert.ok(!sourceOwners.includes(-1), 'every slot of the source has an owner');

    // 2. The backup, under traffic.
    await c.waitFor(() => writer.acked.length >= 2000, 120_000, '2000 acknowledged writes');
    const tBackup = performance.now();
    const before = writer.acked.filter((w) => w.at < tBackup);
    const backed = await plugin('backup', `rediscluster/${SOURCE}`, '--backup-name', 'orders-now', '--timeout', '4m');
    t.diagnostic(`kubectl redis backup: exit ${backed.code}\n${backed.stdout}${backed.stderr}`);
    const backup = () => (c.get('redisbackups', 'orders-now', NS)?.['status'] ?? {}) as Json;
    assert.equal(backed.code, 0);
    assert.match(backed.stdout, /created RedisBackup orders-now of RedisCluster orders/);
    assert.match(backed.stdout, /phase Completed, 4\/4 shards stored/);
    t.diagnostic(
      `RedisBackup: ${backup()['phase']} in ${Math.round(performance.now() - tBackup)} ms: ${backup()['message']}`,
    );
    assert.equal(backup()['phase'], 'Completed', JSON.stringify(backup()));
    await writer.stop();
    assert.deepEqual(writer.errors, [], 'no client error');
    const shards = backup()['shards'] as Json[];
    assert.equal(shards.length, 4);
    const listed = await client.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    const keys = (listed.Contents ?? []).map((o) => `s3://${BUCKET}/${o.Key}`);
    shards.forEach((s, i) => {
      assert.equal(s['shard'], i);
      assert.match(
        String(s['location']),
        new RegExp(`^s3://${BUCKET}/rediscluster~${NS}~${SOURCE}~shard-${i}/\\d{8}T\\d{6}Z-\\d+\\.rdb$`),
      );
      assert.ok(keys.includes(String(s['location'])), `${String(s['location'])} is in the bucket`);
      assert.equal(s['slots'], layout[i], `shard ${i} recorded the slots it served`);
      assert.ok(Number(s['replicationOffset']) > 0, `shard ${i} recorded its offset`);
      assert.match(String(s['source']), /\(replica\)$/, `shard ${i} was read from a replica`);
    });

    // 3. Restored into a new RedisCluster.
    const tRestore = performance.now();
    const restored = await plugin(
      'restore',
      RESTORED,
      '--from-backup',
      'orders-now',
      '--like',
      SOURCE,
      '--timeout',
      '5m',
    );
    t.diagnostic(`kubectl redis restore: exit ${restored.code}\n${restored.stdout}${restored.stderr}`);
    assert.equal(restored.code, 0);
    assert.match(restored.stdout, /created RedisCluster orders-restored from orders-now/);
    await c.waitFor(
      () => row(c, RESTORED) === `${RESTORED} 4 4 4 16384 Running` && healthy(c, RESTORED, 4, 2),
      300_000,
      `${RESTORED} Running`,
    );
    const restore = statusOf(c, RESTORED)['restore'] as Json;
    t.diagnostic(
      `restore -> Running: ${Math.round(performance.now() - tRestore)} ms; ${restore['phase']}: ${restore['message']}`,
    );
    await c.waitFor(
      () => (statusOf(c, RESTORED)['restore'] as Json)['phase'] === 'Completed',
      60_000,
      'restore Completed',
    );
    assert.deepEqual(
      (statusOf(c, RESTORED)['shardStatus'] as Json[]).map((s) => String(s['slots'])),
      layout,
      'each restored shard serves the slots it served when backed up',
    );
    const restoredOwners = await slotOwners(c, RESTORED);
    const moved = restoredOwners.flatMap((o, slot) => (o === sourceOwners[slot] ? [] : [slot]));
    assert.deepEqual(moved.slice(0, 10), [], `${moved.length} slots have another owner shard than in the source`);
    const lost = await missingFromCluster(
      { seeds: seedsOf(c, RESTORED), password: secretValue(c, `${RESTORED}-auth`) },
      before,
    );
    t.diagnostic(
      `${before.length} keys acknowledged before the backup, ${writer.acked.length} in all; lost: ${lost.length}`,
    );
    assert.deepEqual(lost.slice(0, 10), [], `${lost.length} acknowledged keys missing from the restore`);
    assert.ok(before.length >= 2000);

    // 4. A backup of four shards cannot make a cluster of three: refused before any pod exists.
    await c.apply(redisCluster('orders-three', s3.endpoint, 3, 'orders-now'));
    await c.waitFor(
      () => (statusOf(c, 'orders-three')['restore'] as Json | undefined)?.['phase'] === 'Failed',
      60_000,
      'the three-shard restore refused',
    );
    assert.match(
      String((statusOf(c, 'orders-three')['restore'] as Json)['message']),
      /has 4 shards and master\.replicas is 3/,
    );
    assert.equal(c.get('statefulsets', 'orders-three-shard-0', NS), undefined, 'no shard created');
  },
);
