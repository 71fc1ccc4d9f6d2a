// Where a backup lives in a bucket, and which objects are ours. Pure.
// Layout: <prefix><namespace>/<redis>/<YYYYMMDDTHHMMSSZ>-<offset>.rdb. The time is when the
// snapshot was taken, the offset where it stands in the replication stream.
// Invariant: parseBackupKey accepts exactly what backupKey writes for that Redis, so retention
// never touches an object it did not write (other files under the same prefix are left alone).

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
