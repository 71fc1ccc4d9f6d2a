// Backup benchmark (a benchmark, not a test): `npm run bench:backup`.
// Loopback addresses 127.0.74.x.
//
// A master and a replica (real redis-server) loaded with BACKUP_MB (default 1024) of random,
// incompressible values, and a real S3 server (versitygw, test/s3). The backup is what the backup
// Job does (src/backup): a snapshot read from the replica over the replication protocol, streamed
// into the bucket with the AWS SDK's multipart upload. The restore downloads it, lays it out for a
// node with AOF on (src/backup/restore-layout.ts) and starts a fresh redis-server on it, until
// it answers. Every key is compared with DEBUG DIGEST (equal digests: the same data set), and
// counted when the digests differ.
// Baseline, same run, same bytes: `redis-cli --rdb` from the same replica to a local file, then
// that file uploaded to the same bucket with the same SDK call.
// Prints name=value lines on stdout (the last ones are the figures); progress on stderr.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { backupKey } from '../src/backup/naming.ts';
import { restoreFiles } from '../src/backup/restore-layout.ts';
import { downloadSnapshot, s3Client, uploadSnapshot, type S3Target } from '../src/backup/s3.ts';
import { openSnapshot } from '../src/backup/snapshot.ts';
import { redisClient } from '../test/sidecar/redis/manager/harness-redis.ts';
import { buildS3Server, startS3Server } from '../test/s3/server.ts';
import {
  addr,
  OPERATOR_USER,
  RedisServer,
  TEST_OPERATOR_PASSWORD,
  TEST_PASSWORD,
} from '../test/support/redis-server.ts';

const MB = Number(process.env['BACKUP_MB'] ?? 1024);
const VALUE_BYTES = 1024;
const KEYS = Math.round((MB * 1024 * 1024) / VALUE_BYTES);
const log = (msg: string) => process.stderr.write(`${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function call(ip: string, ...args: string[]): Promise<unknown> {
  const c = redisClient(ip, TEST_PASSWORD, 600_000);
  await c.connect();
  try {
    return await c.call(args[0]!, ...args.slice(1));
  } finally {
    c.disconnect();
  }
}

const infoField = async (ip: string, section: string, field: string) =>
  new RegExp(`^${field}:(.*)$`, 'm').exec(String(await call(ip, 'INFO', section)))?.[1]?.trim() ?? '';

async function load(ip: string): Promise<void> {
  const c = redisClient(ip, TEST_PASSWORD, 60_000);
  await c.connect();
  const t0 = performance.now();
  for (let i = 0; i < KEYS; i += 1000) {
    const batch = c.pipeline();
    for (let k = i; k < Math.min(KEYS, i + 1000); k++) batch.set(`key:${k}`, randomBytes(VALUE_BYTES));
    await batch.exec();
    if (i % 100_000 === 0) log(`loaded ${i} keys`);
  }
  c.disconnect();
  log(`loaded ${KEYS} keys (${MB} MB of values) in ${Math.round((performance.now() - t0) / 1000)} s`);
}

function redisCliRdb(ip: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      'redis-cli',
      ['-h', ip, '-p', '6379', '--user', OPERATOR_USER, '--rdb', file],
      { env: { PATH: process.env['PATH'] ?? '', REDISCLI_AUTH: TEST_OPERATOR_PASSWORD }, timeout: 900_000 },
      (err, _stdout, stderr) => (err ? reject(new Error(`redis-cli --rdb failed: ${stderr}`)) : resolve()),
    );
  });
}

async function main(): Promise<void> {
  await buildS3Server(log);
  const work = mkdtempSync(path.join(os.tmpdir(), 'bench-backup-'));
  const s3 = await startS3Server({ ip: addr(74, 100), dataDir: path.join(work, 's3') });
  const target: S3Target = {
    bucket: 'bench',
    region: s3.region,
    endpoint: s3.endpoint,
    prefix: '',
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  };
  const client = s3Client(target);
  const servers: RedisServer[] = [];
  try {
    await client.send(new CreateBucketCommand({ Bucket: target.bucket }));
    const extra = { 'repl-diskless-sync-delay': '0', 'client-output-buffer-limit': 'replica 0 0 0' };
    const master = await RedisServer.start({ ip: addr(74, 1), minReplicasToWrite: 0, extra });
    const replica = await RedisServer.start({ ip: addr(74, 2), minReplicasToWrite: 0, extra });
    servers.push(master, replica);
    await call(master.ip, 'REPLICAOF', 'NO', 'ONE');
    await call(replica.ip, 'REPLICAOF', master.ip, '6379');
    await load(master.ip);
    for (;;) {
      if (
        (await infoField(replica.ip, 'replication', 'master_link_status')) === 'up' &&
        Number(await call(replica.ip, 'DBSIZE')) === KEYS
      )
        break;
      await sleep(200);
    }
    const forksBefore = Number(await infoField(master.ip, 'stats', 'total_forks'));

    // Backup, as the Job does it.
    let t0 = performance.now();
    const snap = await openSnapshot({
      host: replica.ip,
      port: 6379,
      username: OPERATOR_USER,
      password: TEST_OPERATOR_PASSWORD,
      startTimeoutMs: 600_000,
    });
    const key = backupKey('', { kind: 'Redis', namespace: 'bench', name: 'cache' }, new Date(), snap.offset);
    const bytes = await uploadSnapshot(client, target, key, snap.rdb, { 'replication-offset': String(snap.offset) });
    await snap.done;
    const backupS = (performance.now() - t0) / 1000;
    const forks = Number(await infoField(master.ip, 'stats', 'total_forks')) - forksBefore;
    log(`backup: ${bytes} bytes in ${backupS.toFixed(1)} s; master forks meanwhile: ${forks}`);

    // Baseline: redis-cli --rdb to a file, then the same bytes uploaded.
    const file = path.join(work, 'baseline.rdb');
    t0 = performance.now();
    await redisCliRdb(replica.ip, file);
    const rdbS = (performance.now() - t0) / 1000;
    t0 = performance.now();
    await uploadSnapshot(client, target, 'baseline.rdb', createReadStream(file), {});
    const uploadS = (performance.now() - t0) / 1000;
    log(
      `baseline: redis-cli --rdb ${statSync(file).size} bytes in ${rdbS.toFixed(1)} s, upload ${uploadS.toFixed(1)} s`,
    );
    rmSync(file);

    // Restore into a fresh node with AOF on.
    const fresh = await RedisServer.start({
      ip: addr(74, 3),
      minReplicasToWrite: 0,
      appendonly: true,
      startTimeoutMs: 600_000,
    });
    servers.push(fresh);
    await fresh.kill();
    t0 = performance.now();
    for (const f of restoreFiles(true)) {
      const dest = path.join(fresh.dataDir, f.path);
      mkdirSync(path.dirname(dest), { recursive: true });
      if ('snapshot' in f.content) await pipeline(await downloadSnapshot(client, target, key), createWriteStream(dest));
      else writeFileSync(dest, f.content.text);
    }
    await fresh.restart();
    const restoreS = (performance.now() - t0) / 1000;
    log(`restore: download + load in ${restoreS.toFixed(1)} s`);

    const same = (await call(fresh.ip, 'DEBUG', 'DIGEST')) === (await call(replica.ip, 'DEBUG', 'DIGEST'));
    let missing = 0;
    if (!same) {
      for (let i = 0; i < KEYS; i += 1000) {
        const keys = Array.from({ length: Math.min(1000, KEYS - i) }, (_, k) => `key:${i + k}`);
        missing += keys.length - Number(await call(fresh.ip, 'EXISTS', ...keys));
      }
    }
    const lines = [
      `backup_bytes=${bytes}`,
      `keys=${KEYS}`,
      `baseline_rdb_s=${rdbS.toFixed(1)}`,
      `baseline_upload_s=${uploadS.toFixed(1)}`,
      `data_identical=${same ? 1 : 0}`,
      `backup_s=${backupS.toFixed(1)}`,
      `restore_s=${restoreS.toFixed(1)}`,
      `backup_vs_baseline=${(backupS / (rdbS + uploadS)).toFixed(2)}`,
      `restore_keys_missing=${missing}`,
      `master_forks_during_backup=${forks}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    client.destroy();
    for (const s of servers) {
      await s.kill();
      s.cleanup();
    }
    await s3.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);
