// The restore init container's entry point (`node src/backup/restore-main.ts`, the operator
// image): restores the backup named in its environment into an empty data directory (restore.ts)
// and prints one JSON result line. Exit codes: 0 restored or nothing to do (data present), 1 failed
// and worth retrying (the pod's init container is restarted), 2 failed until something changes.
import { BackupFailure } from './run.ts';
import { restore, restoreConfig } from './restore.ts';

async function main(): Promise<number> {
  const parsed = restoreConfig(process.env);
  const out = (body: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(body)}\n`);
  if (!parsed.ok) {
    out({ ok: false, permanent: true, error: `invalid configuration: ${parsed.errors.join('; ')}` });
    return 2;
  }
  try {
    out({ ok: true, ...(await restore(parsed.config)) });
    return 0;
  } catch (err) {
    const failure = err instanceof BackupFailure ? err : new BackupFailure(`restore failed: ${(err as Error).message}`, false);
    out({ ok: false, permanent: failure.permanent, error: failure.message });
    return failure.permanent ? 2 : 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
