// Restoring a backup into an empty data directory, as an init container of a new Redis's pods
// runs it (`node src/backup/restore-main.ts`, the operator image): the snapshot is fetched (from S3,
// or from a PersistentVolumeClaim the init container mounts at RESTORE_DIR) next to its place,
// checked to be an RDB file, and moved where Redis 7 loads it (restore-layout.ts).
// Invariants:
// - Data is never overwritten: a directory that holds any Redis data, or that was restored once
//   already (the marker file), is left as it is, so a restarted pod keeps what it wrote since.
// - Nothing lands in place half-written: the copy goes to a temporary name, is synced, and is
//   renamed once whole and checked (a rename within one directory tree is atomic).
// - Configuration from the environment, checked at start, naming each variable (restore-main.ts
//   is the entry point; exit codes as the backup Job's: 0 done or nothing to do, 1 temporary, 2
//   permanent). A pvc:// location needs no S3 variable, an s3:// one no RESTORE_DIR; no
//   RESTORE_LOCATION at all means nothing to restore (the hook removes it once the restore is
//   complete, so a pod created later starts empty and syncs from the master).
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  closeSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseLocation } from '../api/backup-validate.ts';
import { present, type Env } from '../runtime/env.ts';
import { mountDir, s3Credentials, type S3Settings } from './config.ts';
import { restoreFiles } from './restore-layout.ts';
import { BackupFailure, s3Failure } from './failure.ts';
import { downloadSnapshot, s3Client, type S3Target } from './s3.ts';
import type { StorageKind } from './store.ts';
import { openVolumeBackup, volumeLocation } from './volume.ts';

export const RESTORED_MARKER = '.redis-operator-restored';

export type RestoreSource =
  | ({ kind: 's3'; key: string } & S3Settings)
  | { kind: 'pvc'; claim: string; key: string; /** Where the claim is mounted. */ dir: string };

export interface RestoreConfig {
  /**
   * Undefined when RESTORE_LOCATION is unset: the hook removes it once the restore is complete, and later pods start
   * empty.
   */
  source: RestoreSource | undefined;
  dataDir: string;
  appendOnly: boolean;
  /**
   * Why this pod restores nothing though a location is set: a RedisCluster shard restores only into its
   * pod 0 (RESTORE_FIRST_POD_ONLY=yes with POD_NAME), the master it is formed around; its other pods start
   * empty and replicate it (a node holding keys cannot be made a replica).
   */
  skip?: string;
}

export const restoreLocation = (s: RestoreSource): string =>
  s.kind === 'pvc' ? volumeLocation(s.claim, s.key) : `s3://${s.bucket}/${s.key}`;

export function restoreConfig(env: Env): { ok: true; config: RestoreConfig } | { ok: false; errors: string[] } {
  const errors: string[] = [];
  const required = (name: string, why: string) => {
    const v = present(env, name);
    if (v === undefined) errors.push(`${name} is required: ${why}`);
    return v ?? '';
  };
  const location = present(env, 'RESTORE_LOCATION') ?? '';
  const invalid = (why: string) => errors.push(`RESTORE_LOCATION=${JSON.stringify(location)} is invalid: ${why}`);
  // Checked as at admission (spec.restore.location): the key is joined to RESTORE_DIR on a claim,
  // and sent to an S3 server that may keep objects as files; nothing may lead outside either.
  const parsed = location === '' ? undefined : parseLocation(location);
  if (parsed !== undefined && !parsed.ok) invalid(`${parsed.message} (spec.restore.location)`);
  const at = parsed?.ok ? parsed.location : undefined;
  const aof = present(env, 'APPENDONLY') ?? 'no';
  if (aof !== 'yes' && aof !== 'no')
    errors.push(`APPENDONLY=${JSON.stringify(aof)} is invalid: must be yes or no (spec.persistence.enableAof)`);
  // Only what the location's storage needs is asked for: a pvc:// location needs no S3 variable.
  const source: RestoreSource | undefined =
    at?.kind === 'pvc'
      ? { kind: 'pvc', claim: at.claim, key: at.key, dir: mountDir(env, 'RESTORE_DIR', errors) }
      : at?.kind === 's3'
        ? {
            kind: 's3',
            bucket: at.bucket,
            key: at.key,
            region: required('S3_REGION', 'the bucket region'),
            endpoint: present(env, 'S3_ENDPOINT'),
            credentials: s3Credentials(env, errors),
          }
        : undefined;
  const config: RestoreConfig = { source, dataDir: present(env, 'DATA_DIR') ?? '/data', appendOnly: aof === 'yes' };
  if (present(env, 'RESTORE_FIRST_POD_ONLY') === 'yes') {
    const pod = required('POD_NAME', 'RESTORE_FIRST_POD_ONLY restores only into pod 0');
    if (pod !== '' && !pod.endsWith('-0'))
      config.skip = `${pod} is not its shard's pod 0: it starts empty and replicates`;
  }
  return errors.length > 0 ? { ok: false, errors } : { ok: true, config };
}

/** The location an earlier restore recorded in its marker, if it is readable. */
function markerLocation(marker: string): string | undefined {
  try {
    const location: unknown = (JSON.parse(readFileSync(marker, 'utf8')) as { location?: unknown }).location;
    return typeof location === 'string' ? location : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why the directory must be left alone (it holds data, or was restored before, and then from
 * which backup), or undefined when it is empty of Redis data.
 */
export function dataPresent(dataDir: string): { reason: string; restoredFrom?: string } | undefined {
  if (!existsSync(dataDir)) return undefined;
  const marker = path.join(dataDir, RESTORED_MARKER);
  if (existsSync(marker)) {
    const restoredFrom = markerLocation(marker);
    return {
      reason: `${dataDir} was restored before (${RESTORED_MARKER})`,
      ...(restoredFrom !== undefined ? { restoredFrom } : {}),
    };
  }
  const files = readdirSync(dataDir).filter(
    (f) => f === 'dump.rdb' || (f === 'appendonlydir' && readdirSync(path.join(dataDir, f)).length > 0),
  );
  return files.length > 0 ? { reason: `${dataDir} holds Redis data (${files.join(', ')})` } : undefined;
}

function assertRdb(file: string): void {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(5);
    readSync(fd, head, 0, 5, 0);
    if (head.toString('latin1') !== 'REDIS')
      throw new BackupFailure(
        `the backup is not an RDB file (it starts with ${JSON.stringify(head.toString('latin1'))})`,
        true,
      );
  } finally {
    closeSync(fd);
  }
}

/** The backup's bytes, and what to release once they are read. */
async function openBackup(source: RestoreSource): Promise<{ body: Readable; close: () => void }> {
  if (source.kind === 'pvc')
    return {
      body: await openVolumeBackup({ claim: source.claim, variable: 'RESTORE_DIR', dir: source.dir }, source.key),
      close: () => {},
    };
  const target: S3Target = { ...source, prefix: '' };
  const client = s3Client(target);
  try {
    const body = await downloadSnapshot(client, target, source.key).catch((err: unknown) => {
      if ((err as { name?: string }).name === 'NoSuchKey')
        throw new BackupFailure(`s3://${source.bucket}/${source.key} does not exist (spec.restore)`, true);
      throw s3Failure(err, source, 'fetching the backup');
    });
    return { body, close: () => client.destroy() };
  } catch (err) {
    client.destroy();
    throw err;
  }
}

export async function restore(
  config: RestoreConfig,
): Promise<{ restored: boolean; restoredFrom?: string; reason: string; files: string[]; storage?: StorageKind }> {
  const source = config.source;
  if (source === undefined)
    return { restored: false, reason: 'RESTORE_LOCATION is not set: nothing to restore', files: [] };
  if (config.skip !== undefined) return { restored: false, reason: config.skip, files: [] };
  const storage = source.kind;
  const holding = dataPresent(config.dataDir);
  if (holding !== undefined)
    return {
      restored: false,
      ...holding,
      reason: `${holding.reason}: nothing restored, nothing overwritten`,
      files: [],
      storage,
    };
  mkdirSync(config.dataDir, { recursive: true });
  const location = restoreLocation(source);
  const partial = path.join(config.dataDir, '.restore.partial');
  let close = () => {};
  try {
    const backup = await openBackup(source);
    close = backup.close;
    // flush: synced before the rename, so a crash cannot leave a renamed but empty snapshot.
    await pipeline(backup.body, createWriteStream(partial, { flush: true }));
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
      `${JSON.stringify({ location, at: new Date().toISOString() })}\n`,
    );
    return { restored: true, restoredFrom: location, reason: `restored ${location}`, files, storage };
  } finally {
    rmSync(partial, { force: true });
    close();
  }
}
