// Runs a documented command block as a user's shell would, for the docs test
// (test/system/docs.test.ts): bash in the repository's root, in a process group of its own so that
// what the block starts in the background (`npm start &`, `kubectl port-forward ... &`) can be
// stopped when its section ends, output to files so a background process holding them open never
// keeps the block from ending.
// Invariants: `set -euo pipefail` (a failing command, a failing stage of a pipe or an unset
// variable fails the block) except that a grep matching nothing is not a failure (a troubleshooting
// grep for a symptom finds nothing on a healthy Redis); a block is killed at its deadline; every
// group started is killed by stopAll.
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface ShellResult {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

const PRELUDE = 'set -euo pipefail\ngrep() { local s=0; command grep "$@" || s=$?; [ "$s" -le 1 ] || return "$s"; }\n';

/** A Redis error reply in a block's output: redis-cli prints it and may still exit 0. */
export const REDIS_ERROR = /^(\(error\) |ERR |NOAUTH|WRONGPASS|NOPERM)/m;

export class Shell {
  private readonly groups: number[] = [];
  private readonly dir = mkdtempSync(path.join(tmpdir(), 'docs-test-'));
  private n = 0;

  private readonly cwd: string;
  private readonly env: Record<string, string>;

  constructor(cwd: string, env: Record<string, string>) {
    this.cwd = cwd;
    this.env = env;
  }

  run(script: string, timeoutMs: number, input?: string): Promise<ShellResult> {
    const i = this.n++;
    const out = path.join(this.dir, `${i}.out`);
    const err = path.join(this.dir, `${i}.err`);
    const fdOut = openSync(out, 'w');
    const fdErr = openSync(err, 'w');
    const child = spawn('bash', ['-c', PRELUDE + script], {
      cwd: this.cwd,
      env: { ...process.env, ...this.env },
      detached: true,
      stdio: [input === undefined ? 'ignore' : 'pipe', fdOut, fdErr],
    });
    if (input !== undefined) child.stdin?.end(input);
    if (child.pid !== undefined) this.groups.push(child.pid);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.kill(child.pid);
    }, timeoutMs);
    return new Promise((resolve) =>
      child.once('exit', (code) => {
        clearTimeout(timer);
        closeSync(fdOut);
        closeSync(fdErr);
        resolve({ code, stdout: readFileSync(out, 'utf8'), stderr: readFileSync(err, 'utf8'), timedOut });
      }),
    );
  }

  private kill(pid: number | undefined, signal: NodeJS.Signals = 'SIGTERM'): void {
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // the group is gone already
    }
  }

  private static alive(pid: number): boolean {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Stops every process group a block started (what it left in the background), and waits until
   * they are gone (SIGKILL after 5 s), so a port one held is free for the next section.
   */
  async stopAll(): Promise<void> {
    const groups = this.groups.splice(0);
    for (const pid of groups) this.kill(pid);
    const deadline = Date.now() + 5000;
    while (groups.some(Shell.alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    for (const pid of groups.filter(Shell.alive)) this.kill(pid, 'SIGKILL');
  }

  async dispose(): Promise<void> {
    await this.stopAll();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
