// What a backup or restore failure means, as kopf's temporary and permanent errors: a message that
// names the object or field at fault, and whether trying again can help. Also the one way both
// entry points (main.ts, restore-main.ts) turn a run into a JSON result line and an exit code:
// 0 done, 1 failed but worth retrying, 2 failed until something changes.
// Invariant: a result line is at most RESULT_LINE_MAX bytes (the termination log keeps 4096).
import { writeFileSync } from 'node:fs';

export class BackupFailure extends Error {
  readonly permanent: boolean;
  constructor(message: string, permanent: boolean) {
    super(message);
    this.permanent = permanent;
  }
}

const CREDENTIALS = /^(AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch|InvalidToken|ExpiredToken|Forbidden)$/;

/** What an S3 error means for the user, naming the bucket or the credentials. */
export function s3Failure(
  err: unknown,
  s3: { bucket: string; endpoint: string | undefined },
  what: string,
): BackupFailure {
  const e = err as { name?: string; Code?: string; code?: string; message?: string };
  const code = e.name ?? e.Code ?? e.code ?? '';
  const where = `s3://${s3.bucket}${s3.endpoint ? ` at ${s3.endpoint}` : ''}`;
  if (CREDENTIALS.test(code))
    return new BackupFailure(
      `${what}: ${where} refused the credentials (${code}); check the credentials Secret of spec.backup.storage.s3`,
      true,
    );
  if (code === 'NoSuchBucket')
    return new BackupFailure(
      `${what}: bucket ${s3.bucket} does not exist${s3.endpoint ? ` at ${s3.endpoint}` : ''} (spec.backup.storage.s3.bucket)`,
      true,
    );
  if (
    /ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|ECONNRESET|socket hang up|TimeoutError/i.test(
      `${code} ${e.message ?? ''}`,
    )
  )
    return new BackupFailure(`${what}: ${where} is unreachable (${e.message ?? code}); retried next time`, false);
  return new BackupFailure(`${what}: ${where}: ${code || 'error'}: ${e.message ?? String(err)}`, false);
}

/** Where a volume is mounted, for messages: the claim and the variable that says where. */
export interface VolumeWhere {
  claim: string;
  variable: 'BACKUP_DIR' | 'RESTORE_DIR';
  dir: string;
}

/** What a file-system error on a backup volume means, naming the claim and where it is mounted. */
export function volumeFailure(err: unknown, v: VolumeWhere, what: string): BackupFailure {
  if (err instanceof BackupFailure) return err;
  const e = err as { code?: string; path?: string; message?: string };
  const code = e.code ?? '';
  const file = e.path ?? v.dir;
  const where = `claim ${v.claim} (mounted at ${v.variable}=${v.dir})`;
  // A read-only mount, a wrong fsGroup or a missing folder stays so until the spec or the claim changes.
  const access = v.variable === 'BACKUP_DIR' ? 'writable' : 'readable';
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS')
    return new BackupFailure(
      `${what}: ${file} on ${where} is not ${access} (${code}); check the claim's access mode and the pod's fsGroup`,
      true,
    );
  if (code === 'ENOENT' || code === 'ENOTDIR')
    return new BackupFailure(
      `${what}: ${file} on ${where} does not exist or is not a directory (${code}); is the claim mounted there?`,
      true,
    );
  // Space can be freed (or the claim grown), and retention may free it on a later success.
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return new BackupFailure(
      `${what}: ${where} is full (${code}); nothing was left on it; free space, grow the claim or keep fewer backups`,
      false,
    );
  // Anything else (an I/O error, the snapshot cut short while it was written): retried next time.
  return new BackupFailure(`${what} on ${where}: ${e.message ?? String(err)}`, false);
}

/** Any error as a failure: ours as they are, anything else temporary, described by `describe`. */
export function asFailure(err: unknown, prefix: string, describe: (e: Error) => string): BackupFailure {
  return err instanceof BackupFailure
    ? err
    : new BackupFailure(`${prefix}: ${err instanceof Error ? describe(err) : String(err)}`, false);
}

export function failureResult(f: BackupFailure): Record<string, unknown> {
  return { ok: false, permanent: f.permanent, error: f.message };
}

export const RESULT_LINE_MAX = 2048;

/**
 * The result as one JSON line of at most `max` bytes. What gives way, in order: names in
 * `pruned` (prunedCount keeps the number), the end of `error`, then any long string. Pure.
 */
export function resultLine(body: Record<string, unknown>, max = RESULT_LINE_MAX): string {
  const size = (b: Record<string, unknown>) => Buffer.byteLength(JSON.stringify(b));
  let b = { ...body };
  while (size(b) > max && Array.isArray(b['pruned']) && b['pruned'].length > 0)
    b = { ...b, pruned: b['pruned'].slice(0, -1) };
  while (size(b) > max && typeof b['error'] === 'string' && b['error'].length > 80) {
    const error = b['error'];
    b = { ...b, error: `${error.slice(0, Math.max(79, error.length - (size(b) - max) - 8))}…` };
  }
  if (size(b) > max)
    b = {
      ...Object.fromEntries(
        Object.entries(b).map(([k, v]) => [k, typeof v === 'string' && v.length > 200 ? `${v.slice(0, 199)}…` : v]),
      ),
      truncated: true,
    };
  return size(b) > max ? JSON.stringify({ ok: body['ok'] === true, truncated: true }) : JSON.stringify(b);
}

/** The result line on stdout, and in the termination log when there is one (the pod's status carries it). */
export function reportResult(terminationLog: string | undefined, body: Record<string, unknown>): void {
  const line = resultLine(body);
  process.stdout.write(`${line}\n`);
  if (terminationLog === undefined) return;
  try {
    writeFileSync(terminationLog, line);
  } catch {
    // Outside a pod there may be no termination log; stdout has it.
  }
}

export const exitCode = (f: BackupFailure): number => (f.permanent ? 2 : 1);

export function configFailure(errors: readonly string[]): BackupFailure {
  return new BackupFailure(`invalid configuration: ${errors.join('; ')}`, true);
}

/** Runs an entry point's main and exits with its code (1 for anything it did not catch). */
export function runMain(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
