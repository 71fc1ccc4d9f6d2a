// One backup, as the backup Job runs it: find a node to read from (a replica first), read its
// snapshot, stream it into the bucket, then apply retention. Returns what the status shows.
// Invariants:
// - Retention runs only after the new backup is stored whole: a failure never deletes anything.
// - Every failure is a BackupFailure that says what went wrong, naming the object or field, and
//   whether trying again can help (temporary: unreachable, not ready) or not (permanent: the
//   credentials or the bucket are wrong): failure.ts.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { BackupConfig } from './config.ts';
import { backupKey } from './naming.ts';
import { backupsToPrune } from './retention.ts';
import { deleteBackups, listBackups, s3Client, uploadSnapshot, type S3Target } from './s3.ts';
import { BackupFailure, s3Failure } from './failure.ts';
import { openSnapshot } from './snapshot.ts';

export interface BackupResult {
  location: string;
  key: string;
  bytes: number;
  replicationId: string;
  offset: number;
  redisVersion: string;
  /** The node read from, and its role then. */
  source: string;
  role: string;
  takenAt: string;
  finishedAt: string;
  pruned: string[];
}

function tlsOptions(config: BackupConfig): ConnectionOptions | undefined {
  if (config.tlsCaFile === undefined) return undefined;
  // The Job reaches nodes through Services; the chain is what is checked (as the probes do).
  return { ca: readFileSync(config.tlsCaFile, 'utf8'), checkServerIdentity: () => undefined };
}

/** The first source that answers, with its version and role. */
async function pickSource(config: BackupConfig, tls: ConnectionOptions | undefined, log: Logger) {
  const problems: string[] = [];
  for (const s of config.sources) {
    const c = new Redis({
      host: s.host,
      port: s.port,
      username: config.username,
      password: config.password,
      lazyConnect: true,
      connectTimeout: 3000,
      commandTimeout: 5000,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: false,
      ...(tls ? { tls } : {}),
    });
    c.on('error', () => {});
    try {
      await c.connect();
      const info = String(await c.call('INFO', 'server', 'replication'));
      const field = (k: string) => new RegExp(`^${k}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '';
      const role = field('role');
      if (field('loading') === '1') throw new Error('it is loading its data');
      if (role === 'slave' && field('master_link_status') !== 'up') throw new Error('its link to the master is down');
      return { ...s, version: field('redis_version'), role: role === 'slave' ? 'replica' : role };
    } catch (err) {
      problems.push(`${s.host}:${s.port}: ${(err as Error).message}`);
      log.warn({ source: `${s.host}:${s.port}`, err: (err as Error).message }, 'cannot back up from this node');
    } finally {
      c.disconnect();
    }
  }
  throw new BackupFailure(`no node of Redis ${config.namespace}/${config.name} can be read (${problems.join('; ')}); is it Running?`, false);
}

export async function runBackup(config: BackupConfig, log: Logger, now: () => Date = () => new Date()): Promise<BackupResult> {
  const tls = tlsOptions(config);
  const source = await pickSource(config, tls, log);
  const target: S3Target = {
    bucket: config.s3.bucket,
    region: config.s3.region,
    endpoint: config.s3.endpoint,
    prefix: config.s3.prefix,
    credentials: { accessKeyId: config.s3.accessKeyId, secretAccessKey: config.s3.secretAccessKey },
  };
  const client = s3Client(target);
  try {
    const takenAt = now();
    const snap = await openSnapshot({ host: source.host, port: source.port, username: config.username, password: config.password, tls }).catch(
      (err: unknown) => {
        throw new BackupFailure(`reading the snapshot from ${source.host}:${source.port} failed: ${(err as Error).message}`, false);
      },
    );
    const key = backupKey(config.s3.prefix, config.namespace, config.name, takenAt, snap.offset);
    log.info({ source: `${source.host}:${source.port}`, role: source.role, offset: snap.offset, key }, 'snapshot started');
    const metadata = {
      'redis-version': source.version,
      'replication-id': snap.replicationId,
      'replication-offset': String(snap.offset),
      redis: `${config.namespace}/${config.name}`,
    };
    const bytes = await uploadSnapshot(client, target, key, snap.rdb, metadata).catch((err: unknown) => {
      snap.rdb.destroy();
      throw s3Failure(err, config.s3, 'storing the backup');
    });
    await snap.done;
    const stored = await listBackups(client, target, config.namespace, config.name).catch((err: unknown) => {
      throw s3Failure(err, config.s3, 'listing backups for retention');
    });
    const { prune, reason } = backupsToPrune(stored, now().getTime(), config.retention);
    if (prune.length > 0) {
      await deleteBackups(client, target, prune).catch((err: unknown) => {
        throw s3Failure(err, config.s3, 'removing backups past retention');
      });
      log.info({ pruned: prune, reason }, 'retention applied');
    }
    return {
      location: `s3://${config.s3.bucket}/${key}`,
      key,
      bytes,
      replicationId: snap.replicationId,
      offset: snap.offset,
      redisVersion: source.version,
      source: `${source.host}:${source.port}`,
      role: source.role,
      takenAt: takenAt.toISOString(),
      finishedAt: now().toISOString(),
      pruned: prune,
    };
  } finally {
    client.destroy();
  }
}
