// Ports of the processes the harnesses start: bound by the process itself, never found free here
// and handed on. A port probed free (listen on 0, close) is an ephemeral port: until the child
// binds it, any listener or the local end of any outgoing connection can take it, and the child
// fails with EADDRINUSE. So:
// - A process that can listen on port 0 does, and the harness reads back the port it got: from
//   its log (the hook service and the sidecar say it in a pino line, Prometheus in its
//   "Listening on" line), or from /proc when its output goes nowhere (listeningPorts).
// - A process that cannot (kube-apiserver refuses --secure-port=0; etcd's advertised URLs must
//   name the port) is started by startOnFreePorts: on ports probed free, again on fresh ones when
//   it exits because one was taken in between, and it counts as started only once it holds every
//   port itself (whoever took a port may answer there too).
// Fixed ports on an address a test owns (redis-server's 6379 on its own 127.0.N.x, versitygw's
// 7070, the hook's 8080 on a cluster's bridge address) are outside the ephemeral range and are
// not probed; they are not this module's business.
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { until } from './until.ts';

/** A process as far as these helpers watch it (a ProcessGroup fits; setpriv execs, so its pid is the program's). */
export interface Running {
  readonly pid: number;
  alive(): boolean;
}

/** The msg of the line src/server/main.ts logs once it listens, with the port in `port`. */
export const HOOK_LISTENING = 'hook service listening';
/** The start of the msg of the line src/sidecar/main.ts logs once its metrics server listens (`port`). */
export const SIDECAR_LISTENING = 'metrics and probes listening';

/** How often startOnFreePorts starts a process again after it lost a port to someone else. */
const ATTEMPTS = 4;

/** `port` of the first pino line in `text` whose msg starts with `msg` and, given `pid`, that this process wrote. */
export function pinoPort(text: string, msg: string, pid?: number): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.includes(msg)) continue;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (typeof o['msg'] !== 'string' || !o['msg'].startsWith(msg) || typeof o['port'] !== 'number') continue;
    if (pid === undefined || o['pid'] === pid) return o['port'];
  }
  return undefined;
}

/** The size of `file` now (0 when there is none): a process started next appends its lines after it. */
export function logEnd(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/**
 * `file` from byte `offset` on ('' when it cannot be read): one process's lines of a log several restarts append to.
 */
export function logFrom(file: string, offset: number): string {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return '';
  }
  try {
    const buf = Buffer.alloc(Math.max(0, fstatSync(fd).size - offset));
    const n = readSync(fd, buf, 0, buf.length, offset);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** TCP ports process `pid` listens on (from /proc: its socket fds and its network namespace's tables). */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return [];
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    // sl local_address rem_address st ... inode; st 0A is LISTEN, the port is the address's hex tail.
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === '0A' && inodes.has(f[9] ?? '')) ports.add(parseInt(f[1]?.split(':')[1] ?? '', 16));
    }
  }
  return [...ports];
}

/**
 * Waits until `read` finds the port `proc` listens on (in its log, or listeningPorts) and returns
 * it. Fails when the process exits first, or after `timeoutMs`, with `tail()` in the message.
 */
export async function reportedPort(
  what: string,
  proc: Running,
  read: () => number | undefined,
  tail: () => string[],
  timeoutMs = 30_000,
): Promise<number> {
  return until(
    `${what} to say which port it listens on`,
    () => {
      const port = read();
      if (port !== undefined) return port;
      if (proc.alive()) return undefined;
      // It may have said so just before exiting.
      const late = read();
      if (late !== undefined) return late;
      throw new Error(`${what} exited before it said which port it listens on:\n${tail().join('\n')}`);
    },
    timeoutMs,
    { everyMs: 20, dump: () => tail().join('\n') },
  );
}

function listenOnZero(host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => resolve(srv));
  });
}

/** `count` distinct ports free on `host` a moment ago (all held at once while probing, so distinct). */
async function probedFree(count: number, host: string): Promise<number[]> {
  const servers = await Promise.all(Array.from({ length: count }, () => listenOnZero(host)));
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

/** True when a log says a bind failed because the address was taken (Go's and Node's wording). */
export function addressInUse(text: string): boolean {
  return /address already in use|EADDRINUSE/i.test(text);
}

export interface FreePortsStart<P extends Running> {
  /** For messages, e.g. 'etcd'. */
  what: string;
  /** How many ports it listens on. */
  count: number;
  /** Where it listens (default 127.0.0.1): the ports are probed there. */
  host?: string;
  /** Starts it on these ports, in order. */
  launch(ports: number[]): P;
  /** Where it logs (appended to): its lines since the launch tell a taken port from other failures. */
  logFile: string;
  /** Per attempt (default 60 s). */
  timeoutMs?: number;
}

/**
 * For a program that cannot listen on port 0 and say which port it got: starts it on ports
 * probed free and, when it exits because one of them was taken before it bound it, again on
 * fresh ones (a few times). Resolves once the process itself listens on every port. A process
 * that fails otherwise, or does not listen in time, is an error with its log; stopping a process
 * still running is the caller's (launch registered it wherever its other processes are).
 */
export async function startOnFreePorts<P extends Running>(o: FreePortsStart<P>): Promise<{ proc: P; ports: number[] }> {
  const host = o.host ?? '127.0.0.1';
  for (let attempt = 1; ; attempt++) {
    const ports = await probedFree(o.count, host);
    const offset = logEnd(o.logFile);
    const proc = o.launch(ports);
    const lines = () => logFrom(o.logFile, offset).split('\n').filter(Boolean);
    await until(
      `${o.what} listening on ${host}:${ports.join(', ')}`,
      () => {
        if (!proc.alive()) return true;
        const held = listeningPorts(proc.pid);
        return ports.every((p) => held.includes(p));
      },
      o.timeoutMs ?? 60_000,
      { everyMs: 50, dump: () => lines().slice(-30).join('\n') },
    );
    if (proc.alive()) return { proc, ports };
    const log = lines();
    if (attempt < ATTEMPTS && addressInUse(log.join('\n'))) continue;
    throw new Error(
      `${o.what} exited at start on ${host}:${ports.join(', ')} (attempt ${attempt}):\n${log.slice(-30).join('\n')}`,
    );
  }
}
