// Loopback octet: 127.0.79.x. How the backup Job (src/backup/main.ts, BACKUP_STORAGE=pvc) fails on
// a volume that cannot take a backup, run as the pod runs it against a real master and replica: a
// claim that is not mounted (BACKUP_DIR missing, or not a directory) or not writable (a read-only
// mount, a directory the Job's user may not write) is permanent (exit 2), names BACKUP_DIR and the
// claim, and no node forks for it; a full volume (ENOSPC) is temporary (exit 1), leaves no partial
// file and no backup under a backup's name, and deletes nothing.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { backupKey } from '../../src/backup/naming.ts';
import { redisClient, redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { addr, OPERATOR_USER, startRedis, TEST_OPERATOR_PASSWORD } from '../support/redis-server.ts';
import { until } from '../support/until.ts';
import { BACKUP_MAIN, claimDir, runEntry } from './support.ts';

const N = 79;
const call = redisCommand;
const NOBODY = 65534;

/** Whether `uid` can read `file` (every parent searchable): a checkout under a 0700 directory is not. */
function readableBy(uid: number, file: string): boolean {
  return (
    spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--', 'test', '-r', file]).status === 0
  );
}

const forks = async (ip: string) => Number(/^total_forks:(\d+)/m.exec(String(await call(ip, 'INFO', 'stats')))?.[1]);

test('a volume that cannot take the backup: permanent when it is not mounted or not writable, temporary when full, never a half file', async (t) => {
  const [master, replica] = await Promise.all(
    [1, 2].map((i) =>
      startRedis(t, { ip: addr(N, i), minReplicasToWrite: 0, extra: { 'repl-diskless-sync-delay': '0' } }),
    ),
  );
  await call(master!.ip, 'REPLICAOF', 'NO', 'ONE');
  // About 3 MB that does not compress: more than the small volume below holds.
  const w = redisClient(master!.ip);
  await w.connect();
  for (let i = 0; i < 3000; i += 500) {
    const batch = w.pipeline();
    for (let k = i; k < i + 500; k++) batch.set(`k:${k}`, randomBytes(1024));
    await batch.exec();
  }
  w.disconnect();
  await call(replica!.ip, 'REPLICAOF', master!.ip, '6379');
  await until('the replica caught up', async () => Number(await call(replica!.ip, 'DBSIZE').catch(() => -1)) === 3000);

  const env = (dir: string) => ({
    REDIS_NAMESPACE: 'shop',
    REDIS_NAME: 'cache',
    REDIS_HOSTS: `${replica!.ip}:6379,${master!.ip}:6379`,
    REDIS_USERNAME: OPERATOR_USER,
    REDIS_PASSWORD: TEST_OPERATOR_PASSWORD,
    BACKUP_STORAGE: 'pvc',
    BACKUP_CLAIM: 'redis-backups',
    BACKUP_DIR: dir,
    RETENTION_DAYS: '7',
  });
  const root = process.getuid?.() === 0;
  const permanent: Array<[string, (t: TestContext) => { dir: string; uid?: number } | string, RegExp]> = [
    [
      'BACKUP_DIR does not exist (the claim is not mounted there)',
      (t) => {
        const dir = claimDir(t)!;
        rmSync(dir, { recursive: true });
        return { dir };
      },
      /BACKUP_DIR=\S+ does not exist: is claim redis-backups mounted there\?/,
    ],
    [
      'BACKUP_DIR is a file',
      (t) => {
        const file = claimDir(t)!;
        rmSync(file, { recursive: true });
        writeFileSync(file, 'not a directory');
        return { dir: file };
      },
      /BACKUP_DIR=\S+ is not a directory: is claim redis-backups mounted there\?/,
    ],
    [
      'a read-only mount',
      (t) => {
        const dir = claimDir(t, 'ro,size=1m');
        return dir !== undefined ? { dir } : 'this process may not mount a tmpfs';
      },
      /on claim redis-backups \(mounted at BACKUP_DIR=\S+\) is not writable \(EROFS\)/,
    ],
    [
      "a directory the Job's user may not write",
      (t) => {
        const dir = claimDir(t)!;
        // As root, run the Job as another user (root may write anywhere); otherwise take the write bit away.
        if (root && !readableBy(NOBODY, BACKUP_MAIN))
          return 'the checkout is not readable by another user (a private parent directory): the Job cannot run as one';
        if (root) return { dir, uid: NOBODY };
        chmodSync(dir, 0o555);
        return { dir };
      },
      /on claim redis-backups \(mounted at BACKUP_DIR=\S+\) is not writable \(EACCES\); check the claim's access mode/,
    ],
  ];
  for (const [name, setup, message] of permanent) {
    await t.test(name, async (t) => {
      const target = setup(t);
      if (typeof target === 'string') return t.skip(target);
      const before = [await forks(master!.ip), await forks(replica!.ip)];
      const r = await runEntry(BACKUP_MAIN, env(target.dir), target.uid !== undefined ? { uid: target.uid } : {});
      assert.equal(r.code, 2, `${JSON.stringify(r.result)}\n${r.stderr}`);
      assert.equal(r.result['ok'], false);
      assert.equal(r.result['permanent'], true);
      assert.match(String(r.result['error']), message);
      assert.deepEqual(
        [await forks(master!.ip), await forks(replica!.ip)],
        before,
        'no node forked for a backup that could not be stored',
      );
    });
  }

  await t.test('a full volume: temporary, the partial file removed, nothing deleted', async (t) => {
    const dir = claimDir(t, 'size=1m');
    if (dir === undefined) return t.skip('this process may not mount a tmpfs');
    const old = backupKey(
      '',
      { kind: 'Redis', namespace: 'shop', name: 'cache' },
      new Date(Date.now() - 30 * 86_400_000),
      1,
    );
    mkdirSync(path.join(dir, 'redis~shop~cache'), { recursive: true });
    writeFileSync(path.join(dir, old), 'REDIS-old');
    writeFileSync(path.join(dir, 'redis~shop~cache/README.txt'), 'mine');
    const r = await runEntry(BACKUP_MAIN, env(dir));
    assert.equal(r.code, 1, `${JSON.stringify(r.result)}\n${r.stderr}`);
    assert.equal(r.result['permanent'], false);
    assert.match(
      String(r.result['error']),
      /claim redis-backups \(mounted at BACKUP_DIR=\S+\) is full \(ENOSPC\); nothing was left on it/,
    );
    assert.deepEqual(
      readdirSync(path.join(dir, 'redis~shop~cache')).sort(),
      [path.basename(old), 'README.txt'],
      'no partial file, no new backup',
    );
    assert.equal(
      readFileSync(path.join(dir, old), 'utf8'),
      'REDIS-old',
      'a failure deletes nothing, not even a backup past retention',
    );
    assert.ok(existsSync(path.join(dir, 'redis~shop~cache/README.txt')));
  });
});
