// Restoring a backup into an empty data directory, as an init container of a new Redis's pods
// runs it (`node src/backup/restore.ts`, the operator image): the snapshot is downloaded next to
// its place, checked to be an RDB file, and moved where Redis 7 loads it (restore-layout.ts).
// Invariants:
// - Data is never overwritten: a directory that holds any Redis data, or that was restored once
//   already (the marker file), is left as it is, so a restarted pod keeps what it wrote since.
// - Nothing lands in place half-written: the download goes to a temporary name and is renamed
//   once whole and checked (a rename within one directory tree is atomic).
// - Configuration from the environment, checked at start, naming each variable (restore-main.ts
//   is the entry point; exit codes as the backup Job's: 0 done or nothing to do, 1 temporary, 2
//   permanent).
import { createWriteStream, existsSync, mkdirSync, openSync, readdirSync, readSync, closeSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { present, type Env } from '../runtime/env.ts';
import { restoreFiles } from './restore-layout.ts';
import { BackupFailure, s3Failure } from './failure.ts';
import { downloadSnapshot, s3Client, type S3Target } from './s3.ts';

export const RESTORED_MARKER = '.redis-operator-restored';

export interface RestoreConfig {
  bucket: string;
  key: string;
  region: string;
  endpoint: string | undefined;
  accessKeyId: string;
  secretAccessKey: string;
  dataDir: string;
  appendOnly: boolean;
}

export function restoreConfig(env: Env): { ok: true; config: RestoreConfig } | { ok: false; errors: string[] } {
  const errors: string[] = [];
  const required = (name: string, why: string) => {
    const v = present(env, name);
    if (v === undefined) errors.push(`${name} is required: ${why}`);
    return v ?? '';
  };
  const location = required('RESTORE_LOCATION', 'the backup to restore (s3://bucket/key, from spec.restore)');
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])\/(.+\.rdb)$/.exec(location);
  if (location !== '' && !m) errors.push(`RESTORE_LOCATION=${JSON.stringify(location)} is invalid: must be s3://<bucket>/<key>.rdb`);
  const aof = present(env, 'APPENDONLY') ?? 'no';
  if (aof !== 'yes' && aof !== 'no') errors.push(`APPENDONLY=${JSON.stringify(aof)} is invalid: must be yes or no (spec.persistence.enableAof)`);
  const config: RestoreConfig = {
    bucket: m?.[1] ?? '',
    key: m?.[2] ?? '',
    region: required('S3_REGION', 'the bucket region'),
    endpoint: present(env, 'S3_ENDPOINT'),
    accessKeyId: required('AWS_ACCESS_KEY_ID', 'from the credentials Secret'),
    secretAccessKey: required('AWS_SECRET_ACCESS_KEY', 'from the credentials Secret'),
    dataDir: present(env, 'DATA_DIR') ?? '/data',
    appendOnly: aof === 'yes',
  };
  return errors.length > 0 ? { ok: false, errors } : { ok: true, config };
}

/** Why the directory must be left alone (it holds data, or was restored before), or undefined when it is empty of Redis data. */
export function dataPresent(dataDir: string): string | undefined {
  if (!existsSync(dataDir)) return undefined;
  if (existsSync(path.join(dataDir, RESTORED_MARKER))) return `${dataDir} was restored before (${RESTORED_MARKER})`;
  const files = readdirSync(dataDir).filter((f) => f === 'dump.rdb' || (f === 'appendonlydir' && readdirSync(path.join(dataDir, f)).length > 0));
  return files.length > 0 ? `${dataDir} holds Redis data (${files.join(', ')})` : undefined;
}

function assertRdb(file: string): void {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(5);
    readSync(fd, head, 0, 5, 0);
    if (head.toString('latin1') !== 'REDIS')
      throw new BackupFailure(`the backup is not an RDB file (it starts with ${JSON.stringify(head.toString('latin1'))})`, true);
  } finally {
    closeSync(fd);
  }
}

export async function restore(config: RestoreConfig): Promise<{ restored: boolean; reason: string; files: string[] }> {
  const holding = dataPresent(config.dataDir);
  if (holding !== undefined) return { restored: false, reason: `${holding}: nothing restored, nothing overwritten`, files: [] };
  mkdirSync(config.dataDir, { recursive: true });
  const s3 = {
    bucket: config.bucket,
    region: config.region,
    endpoint: config.endpoint,
    prefix: '',
    accessKeyId: config.accessKeyId,
    secretAccessKey: config.secretAccessKey,
  };
  const target: S3Target = { ...s3, credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey } };
  const client = s3Client(target);
  const partial = path.join(config.dataDir, '.restore.partial');
  try {
    const body = await downloadSnapshot(client, target, config.key).catch((err: unknown) => {
      if ((err as { name?: string }).name === 'NoSuchKey') throw new BackupFailure(`s3://${config.bucket}/${config.key} does not exist (spec.restore)`, true);
      throw s3Failure(err, s3, 'fetching the backup');
    });
    await pipeline(body, createWriteStream(partial));
    assertRdb(partial);
    const files: string[] = [];
    for (const f of restoreFiles(config.appendOnly)) {
      const dest = path.join(config.dataDir, f.path);
      mkdirSync(path.dirname(dest), { recursive: true });
      if ('snapshot' in f.content) renameSync(partial, dest);
      else writeFileSync(dest, f.content.text);
      files.push(f.path);
    }
    writeFileSync(
      path.join(config.dataDir, RESTORED_MARKER),
      `${JSON.stringify({ location: `s3://${config.bucket}/${config.key}`, at: new Date().toISOString() })}\n`,
    );
    return { restored: true, reason: `restored s3://${config.bucket}/${config.key}`, files };
  } finally {
    rmSync(partial, { force: true });
    client.destroy();
  }
}
