// OS processes the test harness starts (control plane, nodes' daemons, CoreDNS, S3, Prometheus,
// redis-server). Owns the rule that
// nothing outlives the test process. Invariants:
// - Every process runs under `setpriv --pdeathsig KILL` in its own process group (detached), so
//   it dies when node dies (even by SIGKILL), and signals reach its whole tree (sh -c + children).
// - Every group is registered until its leader exits; the process 'exit' hook SIGKILLs every
//   registered group synchronously (SIGKILL kills a SIGSTOPped "hung" process too; no SIGCONT,
//   which would let it run, and handle a pending SIGTERM, before it dies).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (e.g. the binary is missing). */
  error?: string;
}

export interface ProcessGroup {
  readonly pid: number;
  readonly exited: Promise<ExitInfo>;
  /** True until the leader has exited. */
  alive(): boolean;
  /** Signals the whole group; false when it is already gone. */
  signal(signal: NodeJS.Signals): boolean;
  /** Everything the process wrote to stdout/stderr when `capture` was asked for (first 4 KiB). */
  output(): string;
}

export interface SpawnOptions {
  env: Record<string, string>;
  cwd: string;
  /** Append stdout and stderr to this file (a container's log). */
  logFile?: string;
  /** Keep stdout and stderr in memory (probes). */
  capture?: boolean;
}

const live = new Map<number, ChildProcess>();
let hooked = false;

function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** SIGKILLs every live group: for exit hooks and stop(). */
export function killAllSync(): void {
  for (const pid of live.keys()) {
    signalGroup(pid, 'SIGKILL');
  }
}

/** pids of every live group leader started by this module (every harness in this process). */
export function livePids(): number[] {
  return [...live.keys()];
}

function installExitHook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAllSync);
}

export function spawnGroup(argv: readonly string[], options: SpawnOptions): ProcessGroup {
  if (argv.length === 0) throw new Error('spawnGroup: empty command');
  installExitHook();
  const fd = options.logFile !== undefined ? openSync(options.logFile, 'a') : undefined;
  let child: ChildProcess;
  try {
    child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', ...argv], {
      env: options.env,
      cwd: options.cwd,
      detached: true,
      stdio: ['ignore', fd ?? (options.capture ? 'pipe' : 'ignore'), fd ?? (options.capture ? 'pipe' : 'ignore')],
    });
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  let out = '';
  const keep = (chunk: Buffer) => {
    if (out.length < 4096) out += chunk.toString('utf8');
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const pid = child.pid ?? -1;
  if (pid > 0) live.set(pid, child);
  let running = pid > 0;
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('error', (err) => {
      running = false;
      if (pid > 0) live.delete(pid);
      resolve({ code: null, signal: null, error: err.message });
    });
    // 'close' (not 'exit'): also waits for the pipes, so output() is complete.
    child.once('close', (code, signal) => {
      running = false;
      if (pid > 0) live.delete(pid);
      resolve({ code, signal });
    });
  });
  return {
    pid,
    exited,
    alive: () => running,
    signal: (signal) => (running && pid > 0 ? signalGroup(pid, signal) : false),
    output: () => out,
  };
}
