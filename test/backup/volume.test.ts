// Loopback octet: 127.0.76.x. The PersistentVolumeClaim target end to end, as the pods run it: the
// backup Job's entry point (src/backup/main.ts, BACKUP_STORAGE=pvc) against a real master and
// replica writes the snapshot to a directory standing for the mounted claim, whole and under its
// key, with no S3 variable set; retention removes only our old backups (other files, another
// Redis's backups and a live run's temporary stay; a crashed run's temporary goes); the result line
// stays small however many backups go. The restore init container (src/backup/restore-main.ts)
// then loads it into empty data directories (RDB and AOF), every key compared with the source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { backupFolder, backupKey, partialKey, type BackupOwner } from '../../src/backup/naming.ts';
import { RESTORED_MARKER } from '../../src/backup/restore.ts';
import { redisClient, redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../support/redis-server.ts';
import { until } from '../support/until.ts';
import { BACKUP_MAIN, keyDigests, RESTORE_MAIN, runEntry } from './support.ts';

const N = 76;
const call = redisCommand;
const DAY = 86_400_000;
const CACHE: BackupOwner = { kind: 'Redis', namespace: 'shop', name: 'cache' };
const FOLDER = backupFolder('nightly/', CACHE);

test('backup to a volume and restore from it: whole files under their keys, retention leaves what is not ours, every key back', async (t) => {
  const [master, replica] = await Promise.all(
    [1, 2].map((i) =>
      startRedis(t, { ip: addr(N, i), minReplicasToWrite: 0, extra: { 'repl-diskless-sync-delay': '0' } }),
    ),
  );
  await call(master!.ip, 'REPLICAOF', 'NO', 'ONE');
  // Every type, so the comparison covers more than strings.
  const w = redisClient(master!.ip);
  await w.connect();
  for (let i = 0; i < 5000; i += 500) {
    const batch = w.pipeline();
    for (let k = i; k < i + 500; k++) batch.set(`s:${k}`, randomBytes(64));
    batch.hset(`h:${i}`, { a: String(i), b: 'x'.repeat(100) });
    batch.rpush(`l:${i}`, 'a', 'b', String(i));
    batch.sadd(`set:${i}`, 'a', String(i));
    batch.zadd(`z:${i}`, i, 'm', 1, 'n');
    await batch.exec();
  }
  w.disconnect();
  await call(replica!.ip, 'REPLICAOF', master!.ip, '6379');
  await until(
    'the replica caught up',
    async () => Number(await call(replica!.ip, 'DBSIZE').catch(() => -1)) === Number(await call(master!.ip, 'DBSIZE')),
  );
  const source = await keyDigests(master!.ip);

  // The claim, as mounted: our old backups, files that are not ours, another Redis's backup, and temporaries.
  const claimDir = mkdtempSync(path.join(os.tmpdir(), 'backup-claim-'));
  t.after(() => rmSync(claimDir, { recursive: true, force: true }));
  const put = (key: string, body = 'REDIS-old', ageMs = 0) => {
    const file = path.join(claimDir, key);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, body);
    if (ageMs > 0) utimesSync(file, new Date(Date.now() - ageMs), new Date(Date.now() - ageMs));
    return key;
  };
  const old = put(backupKey('nightly/', CACHE, new Date(Date.now() - 30 * DAY), 7));
  const recent = put(backupKey('nightly/', CACHE, new Date(Date.now() - 2 * DAY), 8));
  const crashed = put(partialKey('nightly/', CACHE, new Date(Date.now() - DAY), 'dead0001'), 'REDIS-half', DAY);
  const foreign = [
    put(`${FOLDER}README.txt`, 'mine'),
    put(`${FOLDER}${path.basename(old)}.bak`, 'mine'),
    put(`${FOLDER}keep/${path.basename(old)}`, 'mine'),
    // A backup of the layout before owner folders (<prefix><namespace>/<name>/): never pruned any more, left to the
    // user.
    put(`nightly/shop/cache/${path.basename(old)}`, 'REDIS-old-layout', 30 * DAY),
    put(backupKey('nightly/', { ...CACHE, name: 'other' }, new Date(Date.now() - 30 * DAY), 1)),
    put(`${path.basename(old)}`, 'mine'),
    // A run going on right now: its temporary is fresh, so it is not a crashed run's.
    put(partialKey('nightly/', CACHE, new Date(), 'a11ve001'), 'REDIS-writing'),
  ];

  const env = {
    REDIS_NAMESPACE: 'shop',
    REDIS_NAME: 'cache',
    REDIS_HOSTS: `${addr(N, 9)}:6379,${replica!.ip}:6379,${master!.ip}:6379`,
    REDIS_USERNAME: OPERATOR_USER,
    REDIS_PASSWORD: TEST_OPERATOR_PASSWORD,
    BACKUP_STORAGE: 'pvc',
    BACKUP_CLAIM: 'redis-backups',
    BACKUP_DIR: claimDir,
    BACKUP_PREFIX: 'nightly/',
    RETENTION_DAYS: '7',
  };
  const ok = await runEntry(BACKUP_MAIN, env);
  assert.equal(ok.code, 0, `${JSON.stringify(ok.result)}\n${ok.stderr}`);
  const r = ok.result;
  assert.equal(r['ok'], true, `${JSON.stringify(r)} ${ok.stderr}`);
  assert.equal(r['storage'], 'pvc');
  assert.equal(r['source'], `${replica!.ip}:6379`, 'read from the replica');
  assert.match(String(r['key']), /^nightly\/redis~shop~cache\/\d{8}T\d{6}Z-\d+\.rdb$/);
  assert.equal(r['location'], `pvc://redis-backups/${String(r['key'])}`);
  const file = path.join(claimDir, String(r['key']));
  assert.equal(statSync(file).size, r['bytes'], 'the whole snapshot is on the volume');
  assert.equal(readFileSync(file).subarray(0, 5).toString('latin1'), 'REDIS');
  assert.deepEqual(r['pruned'], [old], 'the 30-day-old backup is past a 7-day retention');
  assert.equal(r['prunedCount'], 1);
  assert.deepEqual(JSON.parse(ok.terminationLog), r, 'the termination log carries the same result');
  assert.ok(
    !existsSync(path.join(claimDir, old)) && existsSync(path.join(claimDir, recent)),
    'only the old backup went',
  );
  assert.ok(!existsSync(path.join(claimDir, crashed)), "a crashed run's temporary is cleaned up");
  for (const f of foreign) assert.ok(existsSync(path.join(claimDir, f)), `${f} is not ours to remove`);
  const folder = readdirSync(path.join(claimDir, FOLDER));
  assert.equal(
    folder.filter((f) => f.endsWith('.partial')).length,
    1,
    `only the live run's temporary: ${folder.join(', ')}`,
  );

  for (const appendOnly of [false, true]) {
    await t.test(
      `restored from the claim into an empty data directory (appendonly ${appendOnly ? 'yes' : 'no'}): every key as in the source`,
      async () => {
        const node = await startRedis(t, {
          ip: addr(N, appendOnly ? 4 : 3),
          appendonly: appendOnly,
          minReplicasToWrite: 0,
        });
        await node.kill();
        rmSync(path.join(node.dataDir, 'appendonlydir'), { recursive: true, force: true });
        const restoreEnv = {
          RESTORE_LOCATION: String(r['location']),
          RESTORE_DIR: claimDir,
          DATA_DIR: node.dataDir,
          APPENDONLY: appendOnly ? 'yes' : 'no',
        };
        const restored = await runEntry(RESTORE_MAIN, restoreEnv);
        assert.equal(restored.code, 0, JSON.stringify(restored.result));
        assert.equal(restored.result['restored'], true);
        assert.equal(restored.result['storage'], 'pvc');
        assert.ok(existsSync(path.join(node.dataDir, RESTORED_MARKER)));
        assert.deepEqual(
          readdirSync(node.dataDir).filter((f) => f.includes('partial')),
          [],
          'no temporary left',
        );
        await node.restart();
        const back = await keyDigests(node.ip);
        assert.equal(back.size, source.size);
        assert.deepEqual(back, source, 'every key, every value');
        assert.equal(existsSync(file), true, 'a restore never changes the claim');
        await node.kill();
        const again = await runEntry(RESTORE_MAIN, restoreEnv);
        assert.equal(again.result['restored'], false, 'restored once: never again over what the node wrote');
      },
    );
  }

  await t.test('a backup at its location in the layout before owner folders is still restored', async () => {
    const oldLayout = `nightly/shop/cache/${path.basename(String(r['key']))}`;
    writeFileSync(path.join(claimDir, oldLayout), readFileSync(file));
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'restore-old-layout-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const restored = await runEntry(RESTORE_MAIN, {
      RESTORE_LOCATION: `pvc://redis-backups/${oldLayout}`,
      RESTORE_DIR: claimDir,
      DATA_DIR: dataDir,
    });
    assert.equal(restored.code, 0, JSON.stringify(restored.result));
    assert.equal(restored.result['restored'], true);
    assert.equal(statSync(path.join(dataDir, 'dump.rdb')).size, statSync(file).size, 'the whole snapshot, as dump.rdb');
  });

  await t.test('restore refusals name the location or RESTORE_DIR, and leave nothing', async (t) => {
    const refusals: Array<[string, Record<string, string>, RegExp]> = [
      [
        'a backup that is not there',
        { RESTORE_LOCATION: 'pvc://redis-backups/nightly/shop/cache/20200101T000000Z-1.rdb' },
        /pvc:\/\/redis-backups\/nightly\/shop\/cache\/20200101T000000Z-1\.rdb does not exist .*RESTORE_DIR=/,
      ],
      [
        'a claim not mounted at RESTORE_DIR',
        { RESTORE_DIR: path.join(claimDir, 'absent') },
        /RESTORE_DIR=\S+absent does not exist: is claim redis-backups mounted there\?/,
      ],
      [
        'a file that is not an RDB',
        { RESTORE_LOCATION: `pvc://redis-backups/${put('nightly/shop/cache/not-an-rdb.rdb', 'hello')}` },
        /is not an RDB file/,
      ],
      [
        'a folder, not a file',
        { RESTORE_LOCATION: 'pvc://redis-backups/nightly/shop/cache/keep.rdb' },
        /is not a file/,
      ],
    ];
    mkdirSync(path.join(claimDir, 'nightly/shop/cache/keep.rdb'));
    for (const [name, change, message] of refusals) {
      await t.test(name, async () => {
        const dataDir = mkdtempSync(path.join(os.tmpdir(), 'restore-refused-'));
        t.after(() => rmSync(dataDir, { recursive: true, force: true }));
        const run = await runEntry(RESTORE_MAIN, {
          RESTORE_LOCATION: String(r['location']),
          RESTORE_DIR: claimDir,
          DATA_DIR: dataDir,
          ...change,
        });
        assert.equal(run.code, 2, JSON.stringify(run.result));
        assert.match(String(run.result['error']), message);
        assert.deepEqual(readdirSync(dataDir), [], 'nothing left in the data directory');
      });
    }
  });

  await t.test('many backups past retention: all removed, the result line stays small', async () => {
    // A long prefix (the CRD allows 256 characters) and 400 old backups under it.
    const prefix = `${'p'.repeat(200)}/`;
    const olds = Array.from({ length: 400 }, (_, i) =>
      put(backupKey(prefix, CACHE, new Date(Date.now() - (10 + i) * DAY), i)),
    );
    const many = await runEntry(BACKUP_MAIN, {
      ...env,
      BACKUP_PREFIX: prefix,
      RETENTION_COUNT: '1',
      RETENTION_DAYS: '',
    });
    assert.equal(many.code, 0, JSON.stringify(many.result));
    assert.equal(many.result['prunedCount'], 400);
    assert.ok((many.result['pruned'] as string[]).length <= 3, 'a few names, not all');
    assert.ok(
      Buffer.byteLength(many.terminationLog) <= 2048,
      `${Buffer.byteLength(many.terminationLog)} bytes in the termination log`,
    );
    for (const k of olds) assert.ok(!existsSync(path.join(claimDir, k)));
    assert.deepEqual(
      readdirSync(path.join(claimDir, backupFolder(prefix, CACHE))).filter((f) => f.endsWith('.rdb')),
      [path.basename(String(many.result['key']))],
    );
    for (const f of foreign) assert.ok(existsSync(path.join(claimDir, f)), `${f} is still there`);
  });
});
