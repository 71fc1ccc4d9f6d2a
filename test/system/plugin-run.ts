// The `kubectl redis` plugin run as a user runs it, for the system tests (plugin.test.ts,
// plugin-ops.test.ts): bin/kubectl-redis as a subprocess, its exit code and both streams.
// Invariant: colour is off (NO_COLOR) so the tests match plain text; the caller's env (KUBECONFIG)
// is added to this process's, and a run is killed after 10 minutes rather than hanging the suite.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

export const BIN_DIR = new URL('../../bin/', import.meta.url).pathname;
export const PLUGIN = path.join(BIN_DIR, 'kubectl-redis');

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(file: string, args: string[], env: Record<string, string>): Promise<Result> {
  return promisify(execFile)(file, args, { env: { ...process.env, NO_COLOR: '1', ...env }, timeout: 600_000 }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}
