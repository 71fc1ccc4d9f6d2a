// Where a backup lives, in a bucket or on a volume (the same relative key on both), and which
// objects are ours. Pure.
// Layout: <prefix><namespace>/<redis>/<YYYYMMDDTHHMMSSZ>-<offset>.rdb. The time is when the
// snapshot was taken, the offset where it stands in the replication stream.
// Invariants:
// - parseBackupKey accepts exactly what backupKey writes for that Redis, so retention never
//   touches an object it did not write (other files under the same prefix are left alone).
// - A volume's temporary file (partialKey) sits beside the backups but is never a backup:
//   parseBackupKey refuses it, and only isPartialKey names it (for cleaning up after a crash).
// - On a volume, every path is a plain relative path (safeRelativePath): no "..", no absolute
//   path, so nothing lands outside the mounted claim.

export function backupFolder(prefix: string, namespace: string, name: string): string {
  const p = prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`;
  return `${p}${namespace}/${name}/`;
}

const stamp = (d: Date) =>
  d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');

export function backupKey(prefix: string, namespace: string, name: string, takenAt: Date, offset: number): string {
  return `${backupFolder(prefix, namespace, name)}${stamp(takenAt)}-${offset}.rdb`;
}

/** The time and offset of one of our backups, or undefined for any other object. */
export function parseBackupKey(prefix: string, namespace: string, name: string, key: string): { takenAt: number; offset: number } | undefined {
  const folder = backupFolder(prefix, namespace, name);
  if (!key.startsWith(folder)) return undefined;
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z-(\d+)\.rdb$/.exec(key.slice(folder.length));
  if (!m) return undefined;
  const takenAt = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return Number.isFinite(takenAt) ? { takenAt, offset: Number(m[7]) } : undefined;
}

/** A volume backup's temporary name, in the folder its backup goes to: hidden, and not ending in .rdb. */
export function partialKey(prefix: string, namespace: string, name: string, startedAt: Date, tag: string): string {
  return `${backupFolder(prefix, namespace, name)}.${stamp(startedAt)}-${tag}.rdb.partial`;
}

export function isPartialKey(prefix: string, namespace: string, name: string, key: string): boolean {
  const folder = backupFolder(prefix, namespace, name);
  return key.startsWith(folder) && /^\.\d{8}T\d{6}Z-[0-9a-f]{1,32}\.rdb\.partial$/.test(key.slice(folder.length));
}

/** A Kubernetes object name (DNS subdomain): a claim's, a namespace's, a Redis's. */
export const isObjectName = (s: string): boolean => s.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(s);

/** Why `p` is not a plain relative path on a volume (segments of [A-Za-z0-9._-], none empty, "." or ".."), or undefined. */
export function pathProblem(p: string, trailingSlash: 'allowed' | 'refused'): string | undefined {
  if (p.length > 1024) return 'is longer than 1024 characters';
  const segments = (trailingSlash === 'allowed' && p.endsWith('/') ? p.slice(0, -1) : p).split('/');
  if (p.startsWith('/')) return 'must be relative (no leading /)';
  if (segments.some((s) => s === '' || s === '.' || s === '..')) return 'must not have empty, "." or ".." segments';
  if (segments.some((s) => !/^[A-Za-z0-9._-]+$/.test(s))) return 'may only use letters, digits, ".", "_", "-" and "/"';
  return undefined;
}
