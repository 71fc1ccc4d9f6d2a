// Loopback octet: 127.0.73.x. The backup Job's entry point (src/backup/main.ts) run as the Job runs
// it, a process with its environment, against real redis-servers and a real S3 server
// (versitygw): it reads from the replica (the first source that answers), stores the backup,
// applies retention and reports one JSON result (stdout and the termination log); bad input is
// refused naming the variable, refused credentials and a missing bucket are permanent (exit 2),
// an unreachable endpoint or no readable node temporary (exit 1), and a failure deletes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { backupKey } from '../../src/backup/naming.ts';
import { listBackups } from '../../src/backup/s3.ts';
import { redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { isS3ServerBuilt } from '../s3/server.ts';
import { BACKUP_MAIN, bucketOn, runEntry } from './support.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../support/redis-server.ts';
import { until } from '../support/until.ts';
import { selectedEngine } from '../support/engines.ts';

const N = 73;

const runJob = (env: Record<string, string>) => runEntry(BACKUP_MAIN, env);

const call = redisCommand;

test(
  'the backup Job: a backup from the replica with its offset and version, retention, and every failure reported without deleting anything',
  { skip: isS3ServerBuilt() ? false : 'the S3 server is not built (node test/k8s/cli.ts build)' },
  async (t) => {
    const { s3, target, client } = await bucketOn(t, addr(N, 100), 'backups', 'nightly/');
    const [master, replica] = await Promise.all(
      [1, 2].map((i) =>
        startRedis(t, { ip: addr(N, i), minReplicasToWrite: 0, extra: { 'repl-diskless-sync-delay': '0' } }),
      ),
    );
    await call(master!.ip, 'REPLICAOF', 'NO', 'ONE');
    for (let i = 0; i < 100; i++) await call(master!.ip, 'SET', `k${i}`, 'v');
    await call(replica!.ip, 'REPLICAOF', master!.ip, '6379');
    // Writes after the replica joined move the replication offset (a master without replicas keeps it at 0).
    for (let i = 100; i < 110; i++) await call(master!.ip, 'SET', `k${i}`, 'v');
    await until('linked', async () => Number(await call(replica!.ip, 'DBSIZE')) === 110);
    const old = backupKey(
      'nightly/',
      { kind: 'Redis', namespace: 'shop', name: 'cache' },
      new Date(Date.now() - 30 * 86_400_000),
      7,
    );
    await client.send(new PutObjectCommand({ Bucket: 'backups', Key: old, Body: 'old' }));

    const env = {
      REDIS_NAMESPACE: 'shop',
      REDIS_NAME: 'cache',
      // The replicas Service first, then the master's; here a dead address stands first.
      REDIS_HOSTS: `${addr(N, 9)}:6379,${replica!.ip}:6379,${master!.ip}:6379`,
      REDIS_USERNAME: OPERATOR_USER,
      REDIS_PASSWORD: TEST_OPERATOR_PASSWORD,
      S3_BUCKET: 'backups',
      S3_REGION: s3.region,
      S3_ENDPOINT: s3.endpoint,
      S3_PREFIX: 'nightly/',
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      RETENTION_DAYS: '7',
    };
    const ok = await runJob(env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.result['ok'], true);
    assert.equal(ok.result['source'], `${replica!.ip}:6379`, 'read from the replica, not the master');
    assert.equal(ok.result['role'], 'replica');
    // INFO's redis_version: Valkey's is the Redis it is compatible with (7.2.4 for 8.0).
    assert.equal(ok.result['redisVersion'], selectedEngine().redisVersion);
    assert.match(String(ok.result['location']), /^s3:\/\/backups\/nightly\/redis~shop~cache\/\d{8}T\d{6}Z-\d+\.rdb$/);
    assert.ok(Number(ok.result['bytes']) > 0 && Number(ok.result['offset']) > 0, JSON.stringify(ok.result));
    assert.deepEqual(ok.result['pruned'], [old], 'the 30-day-old backup is past a 7-day retention');
    assert.equal(ok.result['prunedCount'], 1);
    assert.equal(ok.result['storage'], 's3');
    assert.deepEqual(JSON.parse(ok.terminationLog), ok.result, 'the termination log carries the same result');
    const stored = () =>
      listBackups(client, target, { kind: 'Redis', namespace: 'shop', name: 'cache' }).then((l) =>
        l.map((b) => b.key).sort(),
      );
    const after = await stored();
    assert.deepEqual(after, [ok.result['key']]);

    const failures: Array<[string, Record<string, string>, number, RegExp]> = [
      [
        'missing configuration',
        { S3_BUCKET: '', AWS_ACCESS_KEY_ID: '' },
        2,
        /S3_BUCKET is required.*AWS_ACCESS_KEY_ID is required/,
      ],
      [
        'refused credentials',
        { AWS_SECRET_ACCESS_KEY: 'wrong' },
        2,
        /refused the credentials \(SignatureDoesNotMatch\).*credentials Secret/,
      ],
      ['no such bucket', { S3_BUCKET: 'missing-bucket' }, 2, /bucket missing-bucket does not exist/],
      ['unreachable endpoint', { S3_ENDPOINT: `http://${addr(N, 99)}:7070` }, 1, /is unreachable/],
      ['no readable node', { REDIS_HOSTS: `${addr(N, 9)}:6379` }, 1, /no node of Redis shop\/cache can be read/],
    ];
    for (const [name, change, code, message] of failures) {
      await t.test(name, async () => {
        const r = await runJob({ ...env, ...change });
        assert.equal(r.code, code, `${name}: exit ${r.code} ${JSON.stringify(r.result)}`);
        assert.equal(r.result['ok'], false);
        assert.match(String(r.result['error']), message);
        assert.deepEqual(await stored(), after, 'nothing deleted, nothing added');
      });
    }
  },
);
