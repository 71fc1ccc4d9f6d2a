// The restore init container's entry point (`node src/backup/restore-main.ts`, the operator
// image): restores the backup named in its environment (from S3 or a mounted
// PersistentVolumeClaim) into an empty data directory (restore.ts) and prints one bounded JSON
// result line, on stdout and in the termination log when TERMINATION_LOG says where.
// Exit codes: 0 restored or nothing to do (no location, data present), 1 failed and worth
// retrying (the pod's init container is restarted), 2 failed until something changes.
import { present } from '../runtime/env.ts';
import { asFailure, configFailure, exitCode, failureResult, reportResult, runMain } from './failure.ts';
import { restore, restoreConfig } from './restore.ts';

async function main(): Promise<number> {
  // Written only when the pod says where (the init container sets it): never a stray file outside one.
  const out = (body: Record<string, unknown>) => reportResult(present(process.env, 'TERMINATION_LOG'), body);
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
