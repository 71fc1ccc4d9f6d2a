// The restore init container's entry point (`node src/backup/restore-main.ts`, the operator
// image): restores the backup named in its environment into an empty data directory (restore.ts)
// and prints one JSON result line. Exit codes: 0 restored or nothing to do (data present), 1 failed
// and worth retrying (the pod's init container is restarted), 2 failed until something changes.
import { asFailure, configFailure, exitCode, failureResult, runMain } from './failure.ts';
import { restore, restoreConfig } from './restore.ts';

async function main(): Promise<number> {
  const out = (body: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(body)}\n`);
  const parsed = restoreConfig(process.env);
  if (!parsed.ok) {
    const failure = configFailure(parsed.errors);
    out(failureResult(failure));
    return exitCode(failure);
  }
  try {
    out({ ok: true, ...(await restore(parsed.config)) });
    return 0;
  } catch (err) {
    const failure = asFailure(err, 'restore failed', (e) => e.message);
    out(failureResult(failure));
    return exitCode(failure);
  }
}

runMain(main);
