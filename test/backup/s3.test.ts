// Loopback octet: 127.0.72.x. The backup engine end to end against a real S3-compatible server
// (versitygw, test/s3) and real redis-servers: a snapshot read from a replica is streamed into the
// bucket with the AWS SDK, listed with its time and offset, pruned by retention (objects that are
// not ours are left alone), fetched back and laid out for restore into a fresh node with every key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { backupFolder, backupKey, type BackupOwner } from '../../src/backup/naming.ts';
import { restoreFiles } from '../../src/backup/restore-layout.ts';
import { backupsToPrune } from '../../src/backup/retention.ts';
import { deleteBackups, downloadSnapshot, listBackups, uploadSnapshot } from '../../src/backup/s3.ts';
import { openSnapshot } from '../../src/backup/snapshot.ts';
import { redisClient, redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { isS3ServerBuilt } from '../s3/server.ts';
import { bucketOn } from './support.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../support/redis-server.ts';
import { until } from '../support/until.ts';

const N = 72;
const CACHE: BackupOwner = { kind: 'Redis', namespace: 'shop', name: 'cache' };

const call = redisCommand;

test(
  'backup to S3 and restore: every key back, retention prunes only our old backups',
  { skip: isS3ServerBuilt() ? false : 'the S3 server is not built (node test/s3/cli.ts build)' },
  async (t) => {
    const { target, client } = await bucketOn(t, addr(N, 100), 'backups', 'redis/');

    const [master, replica] = await Promise.all(
      [1, 2].map((i) =>
        startRedis(t, { ip: addr(N, i), minReplicasToWrite: 0, extra: { 'repl-diskless-sync-delay': '0' } }),
      ),
    );
    await call(master!.ip, 'REPLICAOF', 'NO', 'ONE');
    const w = redisClient(master!.ip);
    await w.connect();
    for (let i = 0; i < 50_000; i += 1000) {
      const batch = w.pipeline();
      for (let k = i; k < i + 1000; k++) batch.set(`k:${k}`, String(k));
      await batch.exec();
    }
    w.disconnect();
    await call(replica!.ip, 'REPLICAOF', master!.ip, '6379');
    await until('the replica caught up', async () => Number(await call(replica!.ip, 'DBSIZE')) === 50_000);

    // Back up: read from the replica, stream into the bucket.
    const snap = await openSnapshot({
      host: replica!.ip,
      port: 6379,
      username: OPERATOR_USER,
      password: TEST_OPERATOR_PASSWORD,
    });
    const takenAt = new Date();
    const key = backupKey(target.prefix, CACHE, takenAt, snap.offset);
    const bytes = await uploadSnapshot(client, target, key, snap.rdb, {
      'replication-offset': String(snap.offset),
      'replication-id': snap.replicationId,
    });
    assert.equal(bytes, await snap.done, 'every byte of the snapshot went up');

    // Older backups, and an object of the user's under the same prefix.
    const old = backupKey(target.prefix, CACHE, new Date(takenAt.getTime() - 10 * 86_400_000), 1);
    for (const k of [old, `${backupFolder(target.prefix, CACHE)}README.txt`, 'redis/shop/cache/20200101T000000Z-1.rdb'])
      await client.send(new PutObjectCommand({ Bucket: target.bucket, Key: k, Body: 'x' }));
    const listed = await listBackups(client, target, CACHE);
    assert.deepEqual(listed.map((b) => b.key).sort(), [key, old].sort(), 'only our backups are listed');
    const { prune } = backupsToPrune(listed, Date.now(), { days: 7 });
    assert.deepEqual(prune, [old]);
    await deleteBackups(client, target, prune);
    assert.deepEqual(
      (await listBackups(client, target, CACHE)).map((b) => b.key),
      [key],
    );

    // Restore into a fresh node with AOF on (the harder layout).
    const fresh = await startRedis(t, { ip: addr(N, 3), appendonly: true, minReplicasToWrite: 0 });
    await fresh.kill();
    for (const f of restoreFiles(true)) {
      const file = path.join(fresh.dataDir, f.path);
      mkdirSync(path.dirname(file), { recursive: true });
      if ('snapshot' in f.content) await pipeline(await downloadSnapshot(client, target, key), createWriteStream(file));
      else writeFileSync(file, f.content.text);
    }
    await fresh.restart();
    assert.equal(Number(await call(fresh.ip, 'DBSIZE')), 50_000, 'every key restored');
    assert.equal(await call(fresh.ip, 'GET', 'k:49999'), '49999');
  },
);
