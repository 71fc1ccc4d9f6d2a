// Loopback octet: 127.0.75.x. The restore init container (src/backup/restore-main.ts) run as a
// process with its environment, against a real S3 server (versitygw) and real redis-servers: a
// backup restored into an empty data directory loads with RDB and with AOF persistence; a
// directory holding data, or restored once already, is never overwritten; a missing backup, a
// file that is not an RDB and bad configuration are refused, naming what is wrong.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { RESTORED_MARKER } from '../../src/backup/restore.ts';
import { uploadSnapshot } from '../../src/backup/s3.ts';
import { openSnapshot } from '../../src/backup/snapshot.ts';
import { redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { isS3ServerBuilt } from '../s3/server.ts';
import { bucketOn, RESTORE_MAIN, runEntry } from './support.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../support/redis-server.ts';

const N = 75;

const runRestore = (env: Record<string, string>) => runEntry(RESTORE_MAIN, env);

const call = redisCommand;

test(
  'restore into an empty data directory (RDB and AOF), never over data, and refusals that name the problem',
  { skip: isS3ServerBuilt() ? false : 'the S3 server is not built (node test/k8s/cli.ts build)' },
  async (t) => {
    const { s3, target, client } = await bucketOn(t, addr(N, 100), 'restores');
    // A backup of a node with 1000 keys.
    const source = await startRedis(t, { ip: addr(N, 1), minReplicasToWrite: 0 });
    await call(source.ip, 'REPLICAOF', 'NO', 'ONE');
    for (let i = 0; i < 1000; i++) await call(source.ip, 'SET', `k${i}`, String(i));
    const snap = await openSnapshot({
      host: source.ip,
      port: 6379,
      username: OPERATOR_USER,
      password: TEST_OPERATOR_PASSWORD,
    });
    await uploadSnapshot(client, target, 'shop/cache/20261201T000000Z-1.rdb', snap.rdb, {});
    await client.send(new PutObjectCommand({ Bucket: 'restores', Key: 'shop/cache/not-an-rdb.rdb', Body: 'hello' }));
    const loc = 's3://restores/shop/cache/20261201T000000Z-1.rdb';
    // Another bucket's backup, which a key climbing out of "restores" would reach on a server that
    // keeps objects as files (versitygw's POSIX backend does).
    await client.send(new CreateBucketCommand({ Bucket: 'others' }));
    const theirs = await client.send(
      new GetObjectCommand({ Bucket: 'restores', Key: 'shop/cache/20261201T000000Z-1.rdb' }),
    );
    await client.send(
      new PutObjectCommand({ Bucket: 'others', Key: 'secret.rdb', Body: await theirs.Body!.transformToByteArray() }),
    );
    const env = (dataDir: string, appendOnly: boolean) => ({
      RESTORE_LOCATION: loc,
      S3_REGION: s3.region,
      S3_ENDPOINT: s3.endpoint,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      DATA_DIR: dataDir,
      APPENDONLY: appendOnly ? 'yes' : 'no',
    });

    for (const appendOnly of [false, true]) {
      await t.test(
        `appendonly ${appendOnly ? 'yes' : 'no'}: restored, loaded, and a second run leaves the data alone`,
        async () => {
          const node = await startRedis(t, {
            ip: addr(N, appendOnly ? 3 : 2),
            appendonly: appendOnly,
            minReplicasToWrite: 0,
          });
          await node.kill();
          // A new pod's volume: empty (the harness' first start left an empty AOF behind).
          rmSync(path.join(node.dataDir, 'appendonlydir'), { recursive: true, force: true });
          const r = await runRestore(env(node.dataDir, appendOnly));
          assert.equal(r.code, 0, JSON.stringify(r.result));
          assert.equal(r.result['restored'], true);
          assert.equal(r.result['storage'], 's3');
          assert.equal(r.result['restoredFrom'], loc, 'the result names the backup the hook checks');
          assert.ok(existsSync(path.join(node.dataDir, RESTORED_MARKER)));
          await node.restart();
          assert.equal(Number(await call(node.ip, 'DBSIZE')), 1000);
          await call(node.ip, 'REPLICAOF', 'NO', 'ONE');
          await call(node.ip, 'SET', 'written-after', '1');
          if (!appendOnly) await call(node.ip, 'SAVE');
          await node.kill();
          // The pod restarts: its init container runs again and must not restore over what was written.
          const again = await runRestore(env(node.dataDir, appendOnly));
          assert.equal(again.code, 0);
          assert.equal(again.result['restored'], false);
          assert.match(String(again.result['reason']), /restored before.*nothing overwritten/);
          assert.equal(again.result['restoredFrom'], loc, 'a later start still says which backup the data came from');
          await node.restart();
          assert.equal(Number(await call(node.ip, 'DBSIZE')), 1001, 'the write made after the restore is still there');
        },
      );
    }

    await t.test('a directory that already holds data is never overwritten', async () => {
      const node = await startRedis(t, { ip: addr(N, 4), minReplicasToWrite: 0 });
      await call(node.ip, 'REPLICAOF', 'NO', 'ONE');
      await call(node.ip, 'SET', 'mine', '1');
      await call(node.ip, 'SAVE');
      await node.kill();
      const before = readFileSync(path.join(node.dataDir, 'dump.rdb'));
      const r = await runRestore(env(node.dataDir, false));
      assert.equal(r.result['restored'], false);
      assert.match(String(r.result['reason']), /holds Redis data \(dump\.rdb\)/);
      assert.equal(r.result['restoredFrom'], undefined, 'data of its own is not the backup');
      assert.deepEqual(readFileSync(path.join(node.dataDir, 'dump.rdb')), before);
    });

    const refusals: Array<[string, Record<string, string>, number, RegExp]> = [
      [
        'a backup that does not exist',
        { RESTORE_LOCATION: 's3://restores/shop/cache/20200101T000000Z-1.rdb' },
        2,
        /does not exist \(spec\.restore\)/,
      ],
      [
        'an object that is not an RDB file',
        { RESTORE_LOCATION: 's3://restores/shop/cache/not-an-rdb.rdb' },
        2,
        /is not an RDB file/,
      ],
      [
        'a location that is not s3://',
        { RESTORE_LOCATION: 'https://restores/x.rdb' },
        2,
        /RESTORE_LOCATION="https:\/\/restores\/x\.rdb" is invalid/,
      ],
      ['refused credentials', { AWS_SECRET_ACCESS_KEY: 'wrong' }, 2, /refused the credentials/],
      // Refused before any request: the same allow-list as admission (spec.restore.location).
      [
        'a key climbing into another bucket',
        { RESTORE_LOCATION: 's3://restores/../others/secret.rdb' },
        2,
        /RESTORE_LOCATION=.* is invalid: the key must not have an empty, "\." or "\.\." segment/,
      ],
      [
        'a %-encoded climb',
        { RESTORE_LOCATION: 's3://restores/%2e%2e/others/secret.rdb' },
        2,
        /RESTORE_LOCATION=.* is invalid: the key may only use/,
      ],
    ];
    for (const [name, change, code, message] of refusals) {
      await t.test(name, async () => {
        const dir = path.join(source.root, `empty-${name.replaceAll(' ', '-')}`);
        const r = await runRestore({ ...env(dir, false), ...change });
        assert.equal(r.code, code, JSON.stringify(r.result));
        assert.match(String(r.result['error']), message);
        assert.ok(
          !existsSync(path.join(dir, 'dump.rdb')) && !existsSync(path.join(dir, RESTORED_MARKER)),
          'nothing left in place',
        );
      });
    }
  },
);
