// Loopback octet: 127.0.132.x. Backup folders that no combination of names and prefixes can make
// collide (src/backup/naming.ts), shown where it mattered: a RedisCluster's shard and a Redis named
// like that shard's folder, in a namespace named like the cluster, with prefixes that once made
// their folders one (<prefix><namespace>/<name>/shard-<i>/ against <prefix'><namespace'>/<name'>/).
// Each backs up into the same bucket or claim with a retention of one; neither may remove, list or
// overwrite the other's backup. The entry point runs as the Job runs it, on a real redis-server,
// into a real S3 server (versitygw) and a directory standing for a mounted claim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { isS3ServerBuilt } from '../s3/server.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../support/redis-server.ts';
import { BACKUP_MAIN, bucketOn, claimDir, runEntry } from './support.ts';

const N = 132;

/**
 * The cluster prod/cache's shard 0 under team/, and the Redis cache/shard-0 under team/prod/: one folder in the old
 * layout.
 */
const CLUSTER_SHARD = { REDIS_NAMESPACE: 'prod', REDIS_NAME: 'cache', BACKUP_SHARD: '0', BACKUP_PREFIX: 'team/' };
const LOOKALIKE_REDIS = { REDIS_NAMESPACE: 'cache', REDIS_NAME: 'shard-0', BACKUP_PREFIX: 'team/prod/' };

for (const storage of ['pvc', 's3'] as const) {
  test(
    `${storage}: a Redis named like a RedisCluster's shard folder never prunes, lists or overwrites the shard's backups`,
    { skip: storage === 's3' && !isS3ServerBuilt() ? 'the S3 server is not built (node test/s3/cli.ts build)' : false },
    async (t) => {
      const node = await startRedis(t, { ip: addr(N, storage === 'pvc' ? 1 : 2), minReplicasToWrite: 0 });
      await redisCommand(node.ip, 'REPLICAOF', 'NO', 'ONE');
      await redisCommand(node.ip, 'SET', 'k', 'v');
      // The shard: a cluster node serving every slot (its backup records the slots it serves).
      const shardNode = await startRedis(t, { ip: addr(N, storage === 'pvc' ? 3 : 4), cluster: {} });
      await redisCommand(shardNode.ip, 'CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      let target: Record<string, string>;
      let exists: (key: string) => Promise<boolean>;
      if (storage === 'pvc') {
        const dir = claimDir(t)!;
        target = { BACKUP_STORAGE: 'pvc', BACKUP_CLAIM: 'redis-backups', BACKUP_DIR: dir };
        exists = (key) => Promise.resolve(existsSync(path.join(dir, key)));
      } else {
        const { s3, client } = await bucketOn(t, addr(N, 100), 'backups');
        target = {
          BACKUP_STORAGE: 's3',
          S3_BUCKET: 'backups',
          S3_REGION: s3.region,
          S3_ENDPOINT: s3.endpoint,
          AWS_ACCESS_KEY_ID: s3.accessKeyId,
          AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
        };
        exists = (key) =>
          client.send(new HeadObjectCommand({ Bucket: 'backups', Key: key })).then(
            () => true,
            () => false,
          );
      }
      const run = async (who: Record<string, string>) => {
        const r = await runEntry(BACKUP_MAIN, {
          ...who,
          ...target,
          REDIS_HOSTS: `${who === CLUSTER_SHARD ? shardNode.ip : node.ip}:6379`,
          REDIS_USERNAME: OPERATOR_USER,
          REDIS_PASSWORD: TEST_OPERATOR_PASSWORD,
          RETENTION_COUNT: '1',
        });
        assert.equal(r.code, 0, `${JSON.stringify(r.result)}\n${r.stderr}`);
        return r.result;
      };
      const shard = await run(CLUSTER_SHARD);
      assert.equal(shard['slots'], '0-16383', "the shard's backup records the slots it serves");
      // A second later, so the Redis's backup is the newer one whatever its key: a retention of one
      // that saw both would remove the shard's.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const redis = await run(LOOKALIKE_REDIS);
      assert.notEqual(redis['key'], shard['key'], 'two owners, two keys');
      assert.equal(redis['prunedCount'], 0, `the Redis's retention saw only its own backup: ${JSON.stringify(redis)}`);
      assert.ok(await exists(String(shard['key'])), "the shard's backup is still there");
      assert.ok(await exists(String(redis['key'])), "the Redis's backup is there");
      const again = await run(CLUSTER_SHARD);
      assert.deepEqual(
        again['pruned'],
        [shard['key']],
        "the shard's retention removes its own older backup, and only it",
      );
      assert.ok(await exists(String(redis['key'])), "the Redis's backup survives the shard's retention");
    },
  );
}
