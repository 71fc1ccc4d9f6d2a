// Backups on a mounted PersistentVolumeClaim, for clusters without object storage: the backup Job
// mounts the claim at BACKUP_DIR, the restore init container at RESTORE_DIR. Backups are files
// under the mount at the same relative keys as in a bucket (naming.ts). Owns all volume I/O.
// Invariants:
// - A backup's name only ever holds a whole snapshot on disk: it is written to a temporary name
//   in the same folder (naming.ts partialKey), fsynced, renamed, then the folder is fsynced. A
//   failed write removes the temporary; a crash can leave one, never a half backup, and one idle
//   for STALE_PARTIAL_MS is a crashed run's, removed by the next run (a live run keeps writing).
// - The mount point itself is never created: when it is missing the claim is not mounted where
//   the variable says, and files written to the container's own disk would be lost.
// - The temporary is opened before Redis is asked for anything, so an unusable volume fails
//   (permanently) without any node forking for it.
// - Only files naming.ts recognises as ours are listed or removed; nothing else is touched.
import { randomBytes } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { BackupFailure, volumeFailure, type VolumeWhere } from './failure.ts';
import { backupFolder, isPartialKey, parseBackupKey, partialKey, type BackupOwner } from './naming.ts';
import type { StoredBackup } from './retention.ts';
import type { BackupStore } from './store.ts';

export interface VolumeTarget {
  /** Where the claim is mounted (BACKUP_DIR). */
  dir: string;
  claim: string;
  prefix: string;
  owner: BackupOwner;
}

export const STALE_PARTIAL_MS = 15 * 60_000;

export const volumeLocation = (claim: string, key: string): string => `pvc://${claim}/${key}`;

/** A relative key as a path under the mount (keys were checked to be plain relative paths). */
const fileOf = (dir: string, key: string) => path.join(dir, ...key.split('/'));

const codeOf = (err: unknown) => (err as { code?: string }).code ?? '';

/** The mount point must be an existing directory. */
async function assertMounted(where: VolumeWhere): Promise<void> {
  const s = await stat(where.dir).catch((err: unknown) => {
    const why = codeOf(err) === 'ENOENT' ? 'does not exist' : `cannot be read (${codeOf(err)})`;
    throw new BackupFailure(`${where.variable}=${where.dir} ${why}: is claim ${where.claim} mounted there?`, true);
  });
  if (!s.isDirectory())
    throw new BackupFailure(
      `${where.variable}=${where.dir} is not a directory: is claim ${where.claim} mounted there?`,
      true,
    );
}

/**
 * Creates `rel`'s folders under the mount point, one at a time: mkdir's recursive mode reports a
 * read-only or refused parent as ENOENT, which would blame the mount instead of its access.
 */
async function mkdirUnder(dir: string, rel: string): Promise<void> {
  let at = dir;
  for (const segment of rel.split('/').filter((s) => s !== '')) {
    at = path.join(at, segment);
    await mkdir(at).catch((err: unknown) => {
      if (codeOf(err) !== 'EEXIST') throw err;
    });
  }
}

/** Makes a rename in `dir` durable. Some file systems cannot sync a directory; the rename stands there anyway. */
async function syncDir(dir: string): Promise<void> {
  const h = await open(dir, 'r');
  try {
    await h.sync().catch((err: unknown) => {
      if (!['EINVAL', 'ENOTSUP', 'EOPNOTSUPP'].includes(codeOf(err))) throw err;
    });
  } finally {
    await h.close();
  }
}

async function entries(folder: string): Promise<Dirent[]> {
  return readdir(folder, { withFileTypes: true }).catch((err: unknown) => {
    if (codeOf(err) === 'ENOENT') return [];
    throw err;
  });
}

/** Removes the temporaries of crashed runs (idle for STALE_PARTIAL_MS); returns their keys. */
async function removeStalePartials(t: VolumeTarget, now: number): Promise<string[]> {
  const rel = backupFolder(t.prefix, t.owner);
  const removed: string[] = [];
  for (const e of await entries(fileOf(t.dir, rel))) {
    const key = `${rel}${e.name}`;
    if (!e.isFile() || !isPartialKey(t.prefix, t.owner, key)) continue;
    const s = await stat(fileOf(t.dir, key)).catch(() => undefined);
    if (s === undefined || now - s.mtimeMs < STALE_PARTIAL_MS) continue;
    await rm(fileOf(t.dir, key), { force: true });
    removed.push(key);
  }
  return removed;
}

/** Our backups of one Redis on the volume (other files beside them are not listed). */
export async function listVolumeBackups(t: VolumeTarget): Promise<StoredBackup[]> {
  const rel = backupFolder(t.prefix, t.owner);
  return (await entries(fileOf(t.dir, rel))).flatMap((e) => {
    const parsed = e.isFile() ? parseBackupKey(t.prefix, t.owner, `${rel}${e.name}`) : undefined;
    return parsed ? [{ key: `${rel}${e.name}`, takenAt: parsed.takenAt }] : [];
  });
}

export function volumeStore(t: VolumeTarget, now: () => Date = () => new Date()): BackupStore {
  const where: VolumeWhere = { claim: t.claim, variable: 'BACKUP_DIR', dir: t.dir };
  const folder = fileOf(t.dir, backupFolder(t.prefix, t.owner));
  let partial: { file: string; handle: FileHandle } | undefined;
  const discard = async () => {
    const p = partial;
    partial = undefined;
    if (p === undefined) return;
    await p.handle.close().catch(() => {});
    await rm(p.file, { force: true }).catch(() => {});
  };
  return {
    kind: 'pvc',
    async prepare() {
      await assertMounted(where);
      try {
        await mkdirUnder(t.dir, backupFolder(t.prefix, t.owner));
        const cleaned = await removeStalePartials(t, now().getTime());
        const file = fileOf(t.dir, partialKey(t.prefix, t.owner, now(), randomBytes(4).toString('hex')));
        partial = { file, handle: await open(file, 'wx', 0o640) };
        return cleaned;
      } catch (err) {
        throw volumeFailure(err, where, 'preparing the backup folder');
      }
    },
    async put(key, rdb) {
      const p = partial;
      if (p === undefined) throw new Error('volumeStore: put() before prepare()');
      try {
        // flush: fsynced before the stream closes the file, so the rename below publishes whole data.
        await pipeline(rdb, p.handle.createWriteStream({ flush: true, highWaterMark: 1 << 20 }));
        const { size } = await stat(p.file);
        await rename(p.file, fileOf(t.dir, key));
        partial = undefined;
        await syncDir(folder);
        return size;
      } catch (err) {
        await discard();
        throw volumeFailure(err, where, 'storing the backup');
      }
    },
    list: () =>
      listVolumeBackups(t).catch((err: unknown) =>
        Promise.reject(volumeFailure(err, where, 'listing backups for retention')),
      ),
    async remove(keys) {
      for (const key of keys) {
        // Retention only names what list() returned; checked again because this deletes.
        if (!parseBackupKey(t.prefix, t.owner, key))
          throw new BackupFailure(
            `refusing to remove ${key}: not a backup of ${t.owner.namespace}/${t.owner.name}`,
            true,
          );
        await unlink(fileOf(t.dir, key)).catch((err: unknown) => {
          if (codeOf(err) !== 'ENOENT') throw volumeFailure(err, where, 'removing backups past retention');
        });
      }
    },
    location: (key) => volumeLocation(t.claim, key),
    close: discard,
  };
}

/** The backup `key` on the claim mounted at RESTORE_DIR, as a stream; a missing directory or file is permanent. */
export async function openVolumeBackup(where: VolumeWhere, key: string): Promise<Readable> {
  await assertMounted(where);
  const location = volumeLocation(where.claim, key);
  const h = await open(fileOf(where.dir, key), 'r').catch((err: unknown) => {
    if (codeOf(err) === 'ENOENT')
      throw new BackupFailure(
        `${location} does not exist (looked in ${where.variable}=${where.dir}; spec.restore)`,
        true,
      );
    throw volumeFailure(err, where, `reading ${location}`);
  });
  const s = await h.stat();
  if (!s.isFile()) {
    await h.close();
    throw new BackupFailure(`${location} is not a file (looked in ${where.variable}=${where.dir}; spec.restore)`, true);
  }
  return h.createReadStream();
}
