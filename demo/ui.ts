// What both walk-throughs of the demo share: output helpers, and the one cluster to stop however
// the demo ends (done, failed, SIGINT or SIGTERM).
// Invariants: stop() runs at most once, and only after the start it tracks has settled: a start
// that fails stops what it started itself (startRealCluster, startCluster), a start that succeeds
// is stopped here, and the walk-through never goes on after an interrupt. During the builds, an
// interrupt ends the build tools this process runs (go, buildah: its children in its own process
// group, by pid); a terminal's Ctrl-C reaches them anyway, a SIGTERM sent to the demo alone would
// otherwise wait for a build of minutes. The builds resume where they stopped.
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';

export const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
export const dim = (s: string) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);
/** Prints in any case: the interrupt and the cleanup. */
export const announce = (s = '') => {
  process.stdout.write(`${s}\n`);
};
/** Prints, unless the demo was interrupted: a walk-through still running meanwhile must not talk over the cleanup. */
export const say = (s = '') => {
  if (!interrupted) announce(s);
};
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Stoppable {
  stop(): Promise<void>;
}

let started: Promise<Stoppable | undefined> | undefined;
let what = '';
let stopping: Promise<void> | undefined;
let interrupted = false;
let inBuild = false;
let builds: Promise<unknown> | undefined;
let settled = false;

const INTERRUPTED = 'interrupted';

/** Runs the builds; throws once they are over if the demo was interrupted meanwhile. */
export async function building<T>(build: () => Promise<T>): Promise<T> {
  inBuild = true;
  const run = build().finally(() => (inBuild = false));
  builds = run.catch(() => undefined);
  const result = await run;
  if (interrupted) throw new Error(INTERRUPTED);
  return result;
}

/**
 * Remembers the cluster being started, so that cleanup() can stop it; resolves with it unless interrupted meanwhile.
 */
export function track<T extends Stoppable>(start: Promise<T>, description: string): Promise<T> {
  started = start.catch(() => undefined);
  void started.then(() => (settled = true));
  what = description;
  return start.then((c) => {
    if (interrupted) throw new Error(INTERRUPTED);
    return c;
  });
}

export function cleanup(): Promise<void> {
  stopping ??= (async () => {
    // Interrupted while building: the tools were told to end; their callers tidy up (locks, partial files).
    await builds;
    // Interrupted while starting: let the start finish (or fail and clean up after itself), then stop it.
    if (started && !settled)
      announce(dim('waiting for the cluster to finish starting (a minute at most), then stopping it'));
    const cluster = await started;
    if (!cluster) return;
    announce(dim(`\ncleaning up: ${what}`));
    await cluster
      .stop()
      .catch((err: unknown) => announce(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
  })();
  return stopping;
}

/** SIGINT or SIGTERM: stops what runs; returns false when an interrupt is already being handled. */
export function interrupt(): boolean {
  if (interrupted) return false;
  interrupted = true;
  if (inBuild) endBuildTools();
  return true;
}

export const wasInterrupted = () => interrupted;

/** SIGTERM to this process's children in its own process group (daemons run in groups of their own). */
function endBuildTools(): void {
  const read = (file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return ''; // not Linux, or gone meanwhile
    }
  };
  // After the `(comm)` field, which may hold spaces: state, ppid, pgrp.
  const groupOf = (pid: string) => read(`/proc/${pid}/stat`).split(') ').pop()?.split(' ')[2];
  const mine = groupOf(String(process.pid));
  // Node spawns from its main thread: that task's children are all of them.
  for (const child of read(`/proc/${process.pid}/task/${process.pid}/children`).split(' ').filter(Boolean)) {
    if (mine && groupOf(child) === mine) {
      try {
        process.kill(Number(child), 'SIGTERM');
      } catch {
        // exited meanwhile
      }
    }
  }
}

/** Reads the 100 demo keys and the role of the recreated pod (a connected client) and says what it holds. */
export async function sayRecovered(back: Redis, pod: string, ip: string, master: string): Promise<void> {
  const keys = await back.mget(...Array.from({ length: 100 }, (_, i) => `demo:${i + 1}`));
  const role = String(await back.call('ROLE')).split(',')[0];
  back.disconnect();
  const held = keys.filter((x, i) => x === String(i + 1)).length;
  say(
    `${pod} (recreated at ${ip}, same volume) is a ${role === 'slave' ? 'replica' : role} of ${master} and has ${held} of the 100 demo keys`,
  );
}
