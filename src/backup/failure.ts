// What a backup or restore failure means, as kopf's temporary and permanent errors: a message that
// names the object or field at fault, and whether trying again can help. Also the one way both
// entry points (main.ts, restore-main.ts) turn a run into a JSON result line and an exit code:
// 0 done, 1 failed but worth retrying, 2 failed until something changes.

export class BackupFailure extends Error {
  readonly permanent: boolean;
  constructor(message: string, permanent: boolean) {
    super(message);
    this.permanent = permanent;
  }
}

const CREDENTIALS = /^(AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch|InvalidToken|ExpiredToken|Forbidden)$/;

/** What an S3 error means for the user, naming the bucket or the credentials. */
export function s3Failure(err: unknown, s3: { bucket: string; endpoint: string | undefined }, what: string): BackupFailure {
  const e = err as { name?: string; Code?: string; code?: string; message?: string };
  const code = e.name ?? e.Code ?? e.code ?? '';
  const where = `s3://${s3.bucket}${s3.endpoint ? ` at ${s3.endpoint}` : ''}`;
  if (CREDENTIALS.test(code))
    return new BackupFailure(`${what}: ${where} refused the credentials (${code}); check the credentials Secret of spec.backup.storage.s3`, true);
  if (code === 'NoSuchBucket')
    return new BackupFailure(`${what}: bucket ${s3.bucket} does not exist${s3.endpoint ? ` at ${s3.endpoint}` : ''} (spec.backup.storage.s3.bucket)`, true);
  if (/ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|ECONNRESET|socket hang up|TimeoutError/i.test(`${code} ${e.message ?? ''}`))
    return new BackupFailure(`${what}: ${where} is unreachable (${e.message ?? code}); retried next time`, false);
  return new BackupFailure(`${what}: ${where}: ${code || 'error'}: ${e.message ?? String(err)}`, false);
}

/** Any error as a failure: ours as they are, anything else temporary, described by `describe`. */
export function asFailure(err: unknown, prefix: string, describe: (e: Error) => string): BackupFailure {
  return err instanceof BackupFailure ? err : new BackupFailure(`${prefix}: ${err instanceof Error ? describe(err) : String(err)}`, false);
}

export function failureResult(f: BackupFailure): Record<string, unknown> {
  return { ok: false, permanent: f.permanent, error: f.message };
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
