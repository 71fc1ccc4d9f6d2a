// The operator's two processes as the Deployment in manifests/ would run them, but as processes on
// this host: the hook service (the Deployment's command: compiled, --lite-mode) and N sidecars (`node src/sidecar/main.ts`)
// that authenticate to the real API server with a token of the Deployment's ServiceAccount, so
// every call they make is checked against manifests/rbac.yaml.
// Invariants: the hook listens on one given address (127.0.0.1, or the pod bridge's service address); each sidecar connects to Redis pods from its own
// host address on the pod bridge (REDIS_LOCAL_ADDRESS: a loopback source cannot reach a pod);
// every process runs under `setpriv --pdeathsig KILL` in its own group and stop() kills them all.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { spawnGroup, type ProcessGroup } from '../cluster/workloads/processes.ts';
import { hookCommand } from '../support/hook-command.ts';
import { nodeBinary, tailLines } from '../support/host.ts';
import { HOOK_LISTENING, logEnd, logFrom, pinoPort, reportedPort, SIDECAR_LISTENING } from '../support/ports.ts';
import { OPERATOR_NAMESPACE, REPO_ROOT } from './operator.ts';

export const LEASE_NAME = 'redis-operator-sidecar';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export interface HookProcess {
  readonly url: string;
  readonly logFile: string;
  readonly group: ProcessGroup;
}

/** The hook service on host:port (default 127.0.0.1 on a port it binds itself and logs). */
export async function startHook(logDir: string, host = '127.0.0.1', port?: number): Promise<HookProcess> {
  mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, 'hook.log');
  const offset = logEnd(logFile);
  const group = spawnGroup(hookCommand(), {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PORT: String(port ?? 0), HOST: host, LOG_LEVEL: 'info' },
    logFile,
  });
  port ??= await reportedPort(
    'the hook service',
    group,
    () => pinoPort(logFrom(logFile, offset), HOOK_LISTENING, group.pid),
    () => tailLines(logFile, 20),
  ).catch((err: unknown) => {
    group.signal('SIGKILL');
    throw err;
  });
  const url = `http://${host}:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (
      await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { url, logFile, group };
    if (!group.alive() || Date.now() > deadline) {
      group.signal('SIGKILL');
      throw new Error(`the hook service did not become ready:\n${tailLines(logFile, 20).join('\n')}`);
    }
    await sleep(50);
  }
}

export interface SidecarSpec {
  name: string;
  kubeconfig: string;
  sourceIp: string;
  logDir: string;
  logLevel?: string;
  env?: Record<string, string>;
}

export interface SidecarProcess {
  readonly name: string;
  /** The metrics port the running process bound and logged; 0 until it has (each start gets its own). */
  readonly metricsPort: number;
  readonly sourceIp: string;
  readonly logFile: string;
  readonly kubeconfig: string;
  group: ProcessGroup | undefined;
  /** (Re)starts the process, same identity (a container restart). */
  launch(): void;
  /** Signals it; resolves when it exited for SIGKILL/SIGTERM/SIGINT. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  ready(): Promise<boolean>;
}

export async function createSidecar(spec: SidecarSpec): Promise<SidecarProcess> {
  mkdirSync(spec.logDir, { recursive: true });
  const logFile = path.join(spec.logDir, `${spec.name}.log`);
  let logOffset = 0;
  let metricsPort = 0;
  const s: SidecarProcess = {
    name: spec.name,
    get metricsPort() {
      if (metricsPort === 0 && s.group) metricsPort = pinoPort(logFrom(logFile, logOffset), SIDECAR_LISTENING, s.group.pid) ?? 0;
      return metricsPort;
    },
    sourceIp: spec.sourceIp,
    logFile,
    kubeconfig: spec.kubeconfig,
    group: undefined,
    launch() {
      logOffset = logEnd(logFile);
      metricsPort = 0;
      s.group = spawnGroup([nodeBinary(), 'src/sidecar/main.ts'], {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env['PATH'] ?? '/usr/bin:/bin',
          KUBECONFIG: spec.kubeconfig,
          POD_NAME: spec.name,
          POD_NAMESPACE: OPERATOR_NAMESPACE,
          LEASE_NAME,
          METRICS_PORT: '0',
          METRICS_HOST: '127.0.0.1',
          REDIS_LOCAL_ADDRESS: spec.sourceIp,
          LOG_LEVEL: spec.logLevel ?? 'info',
          ...spec.env,
        },
        logFile,
      });
    },
    async kill(signal = 'SIGKILL') {
      const g = s.group;
      if (!g || !g.alive()) return;
      g.signal(signal);
      if (signal === 'SIGKILL' || signal === 'SIGTERM' || signal === 'SIGINT') await g.exited;
    },
    ready: () =>
      s.metricsPort === 0
        ? Promise.resolve(false)
        : fetch(`http://127.0.0.1:${s.metricsPort}/readyz`).then(
            (r) => r.ok,
            () => false,
          ),
  };
  return s;
}

/** Waits until every sidecar answers /readyz and `leader()` names a holder (as a Deployment's rollout would). */
export async function waitForSidecars(sidecars: readonly SidecarProcess[], leader: () => string | undefined, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(sidecars);
  while (pending.size > 0 || leader() === undefined) {
    for (const s of [...pending]) {
      if (!s.group?.alive()) throw new Error(`sidecar ${s.name} exited during start-up:\n${tailLines(s.logFile, 20).join('\n')}`);
      if (await s.ready()) pending.delete(s);
    }
    if (Date.now() > deadline) throw new Error(`sidecars not ready within ${timeoutMs} ms: ${[...pending].map((s) => s.name).join(', ') || 'no Lease holder'}`);
    await sleep(50);
  }
}
