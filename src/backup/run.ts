// One backup, as the backup Job runs it: make sure the target can take it, find a node to read from
// (a replica first), read its snapshot, stream it to the target (an S3 bucket or a mounted
// PersistentVolumeClaim: store.ts), then apply retention. Returns what the status shows.
// Invariants:
// - Retention runs only after the new backup is stored whole: a failure never deletes anything.
// - Every failure is a BackupFailure that says what went wrong, naming the object or field, and
//   whether trying again can help (temporary: unreachable, not ready, disk full) or not
//   (permanent: the credentials, the bucket or the volume are wrong): failure.ts.
// - The result stays small whatever retention removed: `pruned` names at most PRUNED_NAMES
//   backups, `prunedCount` counts them all (it ends in the 4096-byte termination log).
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { backupOwner, type BackupConfig } from './config.ts';
import { backupKey } from './naming.ts';
import { backupsToPrune } from './retention.ts';
import { s3Store } from './s3.ts';
import { BackupFailure } from './failure.ts';
import { readShardSlots } from './shard-slots.ts';
import { openSnapshot } from './snapshot.ts';
import { backupTlsOptions } from './tls.ts';
import type { BackupStore, StorageKind } from './store.ts';
import { volumeStore } from './volume.ts';

export const PRUNED_NAMES = 3;

export interface BackupResult {
  storage: StorageKind;
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
  /** Some of the backups retention removed (the oldest), at most PRUNED_NAMES. */
  pruned: string[];
  prunedCount: number;
  /** A RedisCluster shard's: the slots it served for the whole snapshot ("0-5460,5462"). */
  slots?: string;
}

function tlsOptions(config: BackupConfig): ConnectionOptions | undefined {
  if (config.tlsCaFile === undefined) return undefined;
  // The chain AND the name (tls.ts): the CA may sign other Redis's certificates too.
  return backupTlsOptions(readFileSync(config.tlsCaFile, 'utf8'), config.name, config.namespace);
}

/**
 * A replica that answers with its link up, else the first master that answers: the master forks
 * for a snapshot only when nothing else can give one. Sources are tried in order (a Redis gives
 * its replicas Service first; a RedisCluster shard gives its pods, whose roles move on failover).
 */
async function pickSource(config: BackupConfig, tls: ConnectionOptions | undefined, log: Logger) {
  const problems: string[] = [];
  let master: { host: string; port: number; version: string; role: string } | undefined;
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
    // What went wrong on the socket (a refused certificate, say): connect() itself then says only that the connection
    // closed.
    let socketError: Error | undefined;
    c.on('error', (err: Error) => (socketError ??= err));
    try {
      await c.connect();
      const info = String(await c.call('INFO', 'server', 'replication'));
      const field = (k: string) => new RegExp(`^${k}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '';
      const role = field('role');
      if (field('loading') === '1') throw new Error('it is loading its data');
      if (role === 'slave' && field('master_link_status') !== 'up') throw new Error('its link to the master is down');
      const found = { ...s, version: field('redis_version'), role: role === 'slave' ? 'replica' : role };
      if (found.role === 'replica') return found;
      master ??= found;
    } catch (err) {
      const why = (socketError ?? (err as Error)).message;
      problems.push(`${s.host}:${s.port}: ${why}`);
      log.warn({ source: `${s.host}:${s.port}`, err: why }, 'cannot back up from this node');
    } finally {
      c.disconnect();
    }
  }
  if (master !== undefined) return master;
  throw new BackupFailure(
    `no node of ${config.shard === undefined ? 'Redis' : 'RedisCluster'} ${config.namespace}/${config.name}${config.shard === undefined ? '' : ` shard ${config.shard}`} can be read (${problems.join('; ')}); is it Running?`,
    false,
  );
}

/** The target config.storage names. */
export function openStore(config: BackupConfig, now: () => Date = () => new Date()): BackupStore {
  const s = config.storage;
  if (s.kind === 'pvc')
    return volumeStore({ dir: s.dir, claim: s.claim, prefix: config.prefix, owner: backupOwner(config) }, now);
  const target = {
    bucket: s.bucket,
    region: s.region,
    endpoint: s.endpoint,
    prefix: config.prefix,
    credentials: s.credentials,
  };
  return s3Store(target, backupOwner(config));
}

/** The oldest first: those are what a reader of the status expects to have gone. */
const someOf = (pruned: readonly string[]) => [...pruned].sort().slice(0, PRUNED_NAMES);

export async function runBackup(
  config: BackupConfig,
  log: Logger,
  now: () => Date = () => new Date(),
): Promise<BackupResult> {
  const store = openStore(config, now);
  try {
    // The target first: a volume that cannot take the backup fails before any node forks for it.
    const cleaned = await store.prepare();
    if (cleaned.length > 0)
      log.info(
        { removed: cleaned.length, first: cleaned.slice(0, PRUNED_NAMES) },
        'removed temporaries left by crashed runs',
      );
    const tls = tlsOptions(config);
    const source = await pickSource(config, tls, log);
    // A shard's snapshot is worth restoring only with the slots it holds the keys of, read before and after it.
    const slotsAt = async () => {
      if (config.shard === undefined) return undefined;
      const read = await readShardSlots({ ...source, username: config.username, password: config.password, tls });
      if (!read.ok)
        throw new BackupFailure(`shard ${config.shard} at ${source.host}:${source.port}: ${read.reason}`, false);
      return read.slots;
    };
    const slots = await slotsAt();
    const takenAt = now();
    const snap = await openSnapshot({
      host: source.host,
      port: source.port,
      username: config.username,
      password: config.password,
      tls,
    }).catch((err: unknown) => {
      throw new BackupFailure(
        `reading the snapshot from ${source.host}:${source.port} failed: ${(err as Error).message}`,
        false,
      );
    });
    const key = backupKey(config.prefix, backupOwner(config), takenAt, snap.offset);
    log.info(
      { source: `${source.host}:${source.port}`, role: source.role, offset: snap.offset, key, storage: store.kind },
      'snapshot started',
    );
    const metadata = {
      'redis-version': source.version,
      'replication-id': snap.replicationId,
      'replication-offset': String(snap.offset),
      redis: `${config.namespace}/${config.name}`,
      ...(config.shard !== undefined ? { shard: String(config.shard) } : {}),
    };
    const bytes = await store.put(key, snap.rdb, metadata).catch((err: unknown) => {
      snap.rdb.destroy();
      throw err;
    });
    await snap.done;
    const slotsAfter = await slotsAt();
    if (slotsAfter !== slots)
      throw new BackupFailure(
        `shard ${config.shard} served slots ${slots} when its snapshot started and ${slotsAfter} when it ended: taken again`,
        false,
      );
    const { prune, reason } = backupsToPrune(await store.list(), now().getTime(), config.retention);
    if (prune.length > 0) {
      await store.remove(prune);
      log.info({ prunedCount: prune.length, pruned: someOf(prune), reason }, 'retention applied');
    }
    return {
      storage: store.kind,
      location: store.location(key),
      key,
      bytes,
      replicationId: snap.replicationId,
      offset: snap.offset,
      redisVersion: source.version,
      source: `${source.host}:${source.port}`,
      role: source.role,
      takenAt: takenAt.toISOString(),
      finishedAt: now().toISOString(),
      pruned: someOf(prune),
      prunedCount: prune.length,
      ...(slots !== undefined ? { slots } : {}),
    };
  } finally {
    await store.close();
  }
}
