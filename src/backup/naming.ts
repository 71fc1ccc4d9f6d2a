// Where a backup lives, in a bucket or on a volume (the same relative key on both), and which
// objects are ours. Pure.
// Layout: <prefix><folder>/<YYYYMMDDTHHMMSSZ>-<offset>.rdb, where <folder> is ONE path segment
// naming the owner: redis~<namespace>~<name> for a Redis, rediscluster~<namespace>~<name>~shard-<i>
// for a RedisCluster shard. The time is when the snapshot was taken, the offset where it stands in
// the replication stream.
// Invariants:
// - No two owners share a folder, nor does one's folder start another's, whatever the names and
//   prefixes: names (Kubernetes object names) and prefixes (api/backup-validate.ts) never contain
//   "~" nor the folder "/", so the last segment of a folder says whose it is, and a folder ends where
//   its "~"s do. Retention lists by folder and can only ever see its own owner's objects.
// - parseBackupKey accepts exactly what backupKey writes for that owner, so retention never
//   touches an object it did not write (other files under the same prefix are left alone).
// - A volume's temporary file (partialKey) sits beside the backups but is never a backup:
//   parseBackupKey refuses it, and only isPartialKey names it (for cleaning up after a crash).
// - On a volume, every path is a plain relative path (api/backup-validate.ts): no "..", no
//   absolute path, so nothing lands outside the mounted claim.
// Before this layout, backups went to <prefix><namespace>/<name>/ (a shard's to .../<name>/shard-<i>/),
// where a Redis and a RedisCluster shard could share a folder. Those folders are no longer written
// nor pruned (pruning them could delete another's backups); a restore still reads any of them by
// its recorded location, and removing them is left to the user (README, Backup and restore).

export interface BackupOwner {
  kind: 'Redis' | 'RedisCluster';
  namespace: string;
  name: string;
  /** A RedisCluster's shard; undefined for a Redis. */
  shard?: number | undefined;
}

/** The folder's one segment: the owner's kind, namespace, name (and shard), "~"-separated. */
export function ownerSegment(owner: BackupOwner): string {
  return owner.kind === 'Redis'
    ? `redis~${owner.namespace}~${owner.name}`
    : `rediscluster~${owner.namespace}~${owner.name}~shard-${owner.shard ?? 0}`;
}

export function backupFolder(prefix: string, owner: BackupOwner): string {
  const p = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  return `${p}${ownerSegment(owner)}/`;
}

const stamp = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');

export function backupKey(prefix: string, owner: BackupOwner, takenAt: Date, offset: number): string {
  return `${backupFolder(prefix, owner)}${stamp(takenAt)}-${offset}.rdb`;
}

/** The time and offset of one of our backups, or undefined for any other object. */
export function parseBackupKey(
  prefix: string,
  owner: BackupOwner,
  key: string,
): { takenAt: number; offset: number } | undefined {
  const folder = backupFolder(prefix, owner);
  if (!key.startsWith(folder)) return undefined;
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z-(\d+)\.rdb$/.exec(key.slice(folder.length));
  if (!m) return undefined;
  const takenAt = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return Number.isFinite(takenAt) ? { takenAt, offset: Number(m[7]) } : undefined;
}

/** A volume backup's temporary name, in the folder its backup goes to: hidden, and not ending in .rdb. */
export function partialKey(prefix: string, owner: BackupOwner, startedAt: Date, tag: string): string {
  return `${backupFolder(prefix, owner)}.${stamp(startedAt)}-${tag}.rdb.partial`;
}

export function isPartialKey(prefix: string, owner: BackupOwner, key: string): boolean {
  const folder = backupFolder(prefix, owner);
  return key.startsWith(folder) && /^\.\d{8}T\d{6}Z-[0-9a-f]{1,32}\.rdb\.partial$/.test(key.slice(folder.length));
}

/** A Kubernetes object name (DNS subdomain): a claim's, a namespace's, a Redis's. */
export const isObjectName = (s: string): boolean => s.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(s);
