// Runs the real Helm (built by helm-build.ts) against a cluster: the chart's tests and the
// operator install with Helm (real-cluster.ts, `operator: { helm }`).
// Invariants: Helm's config, cache and data live in a directory the caller owns (never ~), so a
// test never reads or writes a user's repositories or plugins; every call has the caller's
// kubeconfig and a deadline; a failure carries Helm's own stderr.
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './operator.ts';
export const CHART_DIR = path.join(REPO_ROOT, 'charts/redis-operator');
export const HELM_RELEASE = 'redis-operator';

export type Helm = (args: string[]) => Promise<string>;

/** Helm's environment: its own homes under `home`, the caller's kubeconfig (if any), nothing else of ours. */
export function helmEnv(home: string, kubeconfig?: string): NodeJS.ProcessEnv {
  for (const d of ['config', 'cache', 'data']) mkdirSync(path.join(home, d), { recursive: true });
  return {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_DATA_HOME: path.join(home, 'data'),
    ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}),
  };
}

/** A helm command line bound to one binary, home and kubeconfig. */
export function helmCommand(bin: string, home: string, kubeconfig?: string, timeoutMs = 180_000): Helm {
  const env = helmEnv(home, kubeconfig);
  return (args) =>
    new Promise((resolve, reject) => {
      execFile(
        bin,
        args,
        { env, cwd: REPO_ROOT, timeout: timeoutMs, maxBuffer: 64 * 2 ** 20, encoding: 'utf8' },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`helm ${args.join(' ')} failed: ${err.message}\n${stderr}`));
          else resolve(stdout);
        },
      );
    });
}

/**
 * `helm install` of the chart as a user would (release namespace created by Helm). The values
 * are the caller's (--set, in order); the system harness sets replicas=0 (no container runtime
 * for the image: the hook and sidecars run as processes, as with the kubectl install).
 */
export async function helmInstall(helm: Helm, namespace: string, set: string[] = []): Promise<string> {
  return helm([
    'install',
    HELM_RELEASE,
    CHART_DIR,
    '--namespace',
    namespace,
    '--create-namespace',
    '--wait',
    '--timeout',
    '120s',
    ...set.flatMap((s) => ['--set', s]),
  ]);
}
