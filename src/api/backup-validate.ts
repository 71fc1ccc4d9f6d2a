// Where backups go and where a restore reads, checked the same way at admission (the hook's
// validation, beside the CRD's patterns and CEL rules in backup-schema.ts) and by the backup and
// restore programs at start-up. Pure.
// Invariants:
// - Allow-lists only: a bucket is an S3 bucket name (3-63 of a-z 0-9 . -, dot-separated labels
//   that start and end alphanumeric, not an IPv4 address); a key prefix and a location's path are
//   relative paths of segments over [A-Za-z0-9._-] (a location's also "~", which the operator's own
//   folders use), no segment empty, "." or "..". Nothing else passes, so no "..", leading "/",
//   "//", backslash, control character or %-encoded form reaches a key or a path on a volume.
// - A prefix never contains "~": the operator's folder names (src/backup/naming.ts) do, which is
//   what keeps any two Redis's folders apart whatever prefixes they choose.
// - Every message names the field it is about.
import type { BackupStorage, RestoreSpec } from './backup-schema.ts';

export interface StorageProblem {
  field: string;
  message: string;
}

/** The S3 bucket name rules (AWS's general-purpose buckets), as one regular expression per part. */
const BUCKET_LABELS = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;
const IPV4_LIKE = /^\d+\.\d+\.\d+\.\d+$/;
/** A Kubernetes object name (DNS subdomain): a claim's. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const PREFIX_SEGMENT = /^[A-Za-z0-9._-]+$/;
const KEY_SEGMENT = /^[A-Za-z0-9._~-]+$/;

export const MAX_PREFIX_LENGTH = 256;
export const MAX_LOCATION_LENGTH = 1024;

/**
 * Why `bucket` is not an S3 bucket name, or undefined. Dots are allowed (AWS allows them and
 * existing buckets have them; the SDK then addresses the bucket path-style) but only between
 * labels, as in a DNS name: never "..", ".-" or "-.", and never four numbers (an IP address).
 */
export function bucketProblem(bucket: string): string | undefined {
  if (bucket.length < 3 || bucket.length > 63) return 'must be 3 to 63 characters (an S3 bucket name)';
  if (!/^[a-z0-9.-]+$/.test(bucket)) return 'may only use lower-case letters, digits, "." and "-" (an S3 bucket name)';
  if (!BUCKET_LABELS.test(bucket))
    return 'must start and end with a letter or digit, with no "..", ".-" or "-." (an S3 bucket name)';
  if (IPV4_LIKE.test(bucket)) return 'must not be an IP address (an S3 bucket name)';
  return undefined;
}

/** Why `claim` is not a PersistentVolumeClaim name, or undefined. */
export function claimProblem(claim: string): string | undefined {
  return claim.length <= 253 && DNS_SUBDOMAIN.test(claim)
    ? undefined
    : 'must be a PersistentVolumeClaim name (a DNS subdomain: a-z, 0-9, "-" and ".")';
}

function segmentsProblem(path: string, segment: RegExp, chars: string): string | undefined {
  if (path.startsWith('/')) return 'must be relative (no leading "/")';
  const segments = path.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..'))
    return 'must not have an empty, "." or ".." segment (no "//", "./" or "../")';
  if (segments.some((s) => !segment.test(s))) return `may only use ${chars} and "/"`;
  return undefined;
}

/**
 * Why `prefix` (spec...s3.prefix, or a volume's BACKUP_PREFIX) is not a key prefix, or undefined. A trailing "/" is
 * optional.
 */
export function prefixProblem(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  if (prefix.length > MAX_PREFIX_LENGTH) return `must be at most ${MAX_PREFIX_LENGTH} characters`;
  return segmentsProblem(
    prefix.endsWith('/') ? prefix.slice(0, -1) : prefix,
    PREFIX_SEGMENT,
    'letters, digits, ".", "_", "-"',
  );
}

/** Why `key` (an object key, or a path under a claim's mount) is not one a restore reads, or undefined. */
export function keyProblem(key: string): string | undefined {
  if (key.length > MAX_LOCATION_LENGTH) return `is longer than ${MAX_LOCATION_LENGTH} characters`;
  return segmentsProblem(key, KEY_SEGMENT, 'letters, digits, ".", "_", "-", "~"');
}

export type ParsedLocation = { kind: 's3'; bucket: string; key: string } | { kind: 'pvc'; claim: string; key: string };

/** A location (s3://<bucket>/<key>.rdb or pvc://<claim>/<path>.rdb) taken apart, or why it is not one. */
export function parseLocation(
  location: string,
): { ok: true; location: ParsedLocation } | { ok: false; message: string } {
  const no = (message: string) => ({ ok: false as const, message });
  if (location.length > MAX_LOCATION_LENGTH) return no(`is longer than ${MAX_LOCATION_LENGTH} characters`);
  const m = /^(s3|pvc):\/\/([^/]*)\/(.*)$/s.exec(location);
  if (!m) return no('must be s3://<bucket>/<key>.rdb or pvc://<claim>/<path>.rdb');
  const [, scheme, where, key] = m as unknown as [string, 's3' | 'pvc', string, string];
  const whereProblem = scheme === 's3' ? bucketProblem(where) : claimProblem(where);
  if (whereProblem !== undefined)
    return no(`${scheme === 's3' ? 'the bucket' : 'the claim'} "${where}" ${whereProblem}`);
  const bad = keyProblem(key);
  if (bad !== undefined) return no(`the ${scheme === 's3' ? 'key' : 'path'} ${bad}`);
  if (!key.endsWith('.rdb')) return no(`the ${scheme === 's3' ? 'key' : 'path'} must end in .rdb (an RDB snapshot)`);
  // A bare ".rdb" names no snapshot the operator writes (<time>-<offset>.rdb): a typo, not a backup.
  if (/(^|\/)\.rdb$/.test(key)) return no(`the ${scheme === 's3' ? 'key' : 'path'} must name a file before .rdb`);
  return {
    ok: true,
    location: scheme === 's3' ? { kind: 's3', bucket: where, key } : { kind: 'pvc', claim: where, key },
  };
}

/** Problems of one storage block, each naming its field under `field`. */
export function storageProblems(field: string, storage: BackupStorage | undefined): StorageProblem[] {
  const problems: StorageProblem[] = [];
  if (storage?.s3 !== undefined) {
    const bucket = bucketProblem(storage.s3.bucket);
    if (bucket !== undefined) problems.push({ field: `${field}.s3.bucket`, message: bucket });
    const prefix = prefixProblem(storage.s3.prefix);
    if (prefix !== undefined) problems.push({ field: `${field}.s3.prefix`, message: prefix });
  }
  if (storage?.pvc !== undefined) {
    const claim = claimProblem(storage.pvc.claimName);
    if (claim !== undefined) problems.push({ field: `${field}.pvc.claimName`, message: claim });
  }
  return problems;
}

/** Where spec.backup writes and spec.restore reads (Redis; a RedisCluster has spec.backup only). */
export function backupLocationProblems(spec: {
  backup?: { storage: BackupStorage } | undefined;
  restore?: RestoreSpec | undefined;
}): StorageProblem[] {
  const problems = storageProblems('spec.backup.storage', spec.backup?.storage);
  if (spec.restore !== undefined) {
    problems.push(...storageProblems('spec.restore.storage', spec.restore.storage));
    if (spec.restore.location !== undefined) {
      const parsed = parseLocation(spec.restore.location);
      if (!parsed.ok) problems.push({ field: 'spec.restore.location', message: parsed.message });
    }
  }
  return problems;
}
