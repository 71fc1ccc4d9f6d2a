// Runs a REAL Metacontroller binary (METACONTROLLER_BIN: one a user built or downloaded; the
// project never builds, vendors or copies Metacontroller) as a process against a real API server,
// for the contract test (metacontroller-real.test.ts); clusters run it as its StatefulSet.
//
//   const mc = await startRealMetacontroller({
//     bin: process.env.METACONTROLLER_BIN, kubeconfig: cp.adminKubeconfig, logFile,
//     hosts: { 'redis-operator.redis-operator': '198.19.40.17' },   // '<service>.<namespace>' -> IP
//   });
//   mc.logTail(20); mc.alive(); await mc.stop();
//
// How a hook is reached: Metacontroller (v4.17, pkg/hooks/webhook.go) turns a hook's
// `webhook.service {name, namespace, port, protocol}` + `path` into
// `<protocol>://<name>.<namespace>:<port><path>` (port 80, protocol http by default) and leaves
// the name to DNS; it never reads the Service object, so `port` is what it dials (the Service's
// port, behind which cluster DNS + kube-proxy would forward to the targetPort). There is no
// cluster DNS here: the binary runs in a private mount namespace whose /etc/hosts maps each
// `hosts` entry (`<name>.<namespace>`, `.svc`, `.svc.cluster.local`) to its address. It stays in
// this host's network namespace, so the API server on 127.0.0.1 is reachable.
//
// Owns: one Metacontroller process group, its hosts file and temp dir. Invariants:
// - Runs under `setpriv --pdeathsig KILL` in its own process group (spawnGroup): it dies with the
//   test process, even on SIGKILL. stop() is idempotent: SIGTERM, SIGKILL after 5 s, then the temp
//   dir is removed; nothing else is ever signalled.
// - Nothing listens outside loopback: metrics and health probes are off unless given a 127.x
//   address, pprof is off, leader election is off. Hosts map only to 127.0.0.0/8 or the
//   never-routed benchmarking range 198.18.0.0/15 this project's clusters use (Services, pods).
// - The bind mount over /etc/hosts exists only in the child's private mount namespace; this
//   host's /etc/hosts is never touched. Needs root (mount) and util-linux `unshare`.
// - The environment is minimal (PATH, HOME): no proxy variable can send a hook call off-host.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnGroup, type ExitInfo } from '../support/processes.ts';

export interface RealMetacontrollerOptions {
  /** Path of the Metacontroller executable (v4.x; flags as in its pkg/cmd/metacontroller/main.go). */
  bin: string;
  /** The kubeconfig it uses (`--kubeconfig`). */
  kubeconfig: string;
  /** Its stdout and stderr are appended here (JSON lines from zap). */
  logFile: string;
  /** '<service>.<namespace>' -> IPv4 address, one per hook Service it must reach. */
  hosts: Record<string, string>;
  /** `--discovery-interval` (default 1s: a CRD installed by the test is seen at once; upstream 30s). */
  discoveryInterval?: string;
  /** `--zap-log-level`: info (default), debug, or a number (6 logs every hook request and response). */
  logLevel?: string;
  /** `--metrics-address` (default 0 = off); only 127.x.y.z:port is accepted. */
  metricsAddress?: string;
  /** `--health-probe-bind-address` (default 0 = off); only 127.x.y.z:port is accepted. */
  healthProbeAddress?: string;
  /** More `--flag=value`s (e.g. `--workers=1`, `--apply-strategy=server-side-apply`); not the ones set here. */
  extraArgs?: readonly string[];
}

export interface RealMetacontroller {
  readonly pid: number;
  /** The arguments the binary was started with (after the unshare/mount wrapper). */
  readonly args: readonly string[];
  /** The hosts file bind-mounted over /etc/hosts for the binary. */
  readonly hostsFile: string;
  readonly exited: Promise<ExitInfo>;
  alive(): boolean;
  /** The last n lines of its log. */
  logTail(n?: number): string[];
  /** The version it logs at start ("version" of its "Configuration information" line), once logged. */
  version(): string | undefined;
  stop(): Promise<void>;
}

const SERVICE_KEY = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function ipv4(ip: string): number[] | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p) && Number(p) <= 255)) return undefined;
  return parts.map(Number);
}

/** 127.0.0.0/8, or 198.18.0.0/15 (RFC 2544; this project's Service and pod ranges, never routed). */
export function isLocalAddress(ip: string): boolean {
  const o = ipv4(ip);
  if (!o) return false;
  return o[0] === 127 || (o[0] === 198 && (o[1] === 18 || o[1] === 19));
}

function loopbackListen(flag: string, value: string | undefined): string {
  if (value === undefined || value === '0') return '0';
  const m = /^(\d+\.\d+\.\d+\.\d+):(\d{1,5})$/.exec(value);
  if (!m?.[1] || ipv4(m[1])?.[0] !== 127)
    throw new Error(`${flag} must be 0 (off) or 127.x.y.z:port, got ${JSON.stringify(value)}`);
  return value;
}

/** The /etc/hosts the binary sees: localhost, then each Service name in its three DNS forms. */
export function hostsFileText(hosts: Record<string, string>): string {
  const lines = ['127.0.0.1 localhost', '::1 localhost ip6-localhost ip6-loopback'];
  for (const [key, ip] of Object.entries(hosts).sort(([a], [b]) => a.localeCompare(b))) {
    if (!SERVICE_KEY.test(key))
      throw new Error(`hosts key must be '<service>.<namespace>' (DNS labels), got ${JSON.stringify(key)}`);
    if (!isLocalAddress(ip))
      throw new Error(`hosts['${key}'] = ${JSON.stringify(ip)}: only 127.0.0.0/8 and 198.18.0.0/15 are allowed`);
    lines.push(`${ip} ${key} ${key}.svc ${key}.svc.cluster.local`);
  }
  return `${lines.join('\n')}\n`;
}

/** Flags this module sets itself; extraArgs may not override them (the listeners stay on loopback). */
const OWN_FLAGS = [
  'kubeconfig',
  'discovery-interval',
  'metrics-address',
  'health-probe-bind-address',
  'pprof-address',
  'leader-election',
  'zap-log-level',
  'zap-encoder',
  'zap-time-encoding',
];

/** The flags for the binary (Metacontroller v4.17's main.go; Go `flag` syntax, `--name=value`). */
export function metacontrollerArgs(options: RealMetacontrollerOptions): string[] {
  for (const arg of options.extraArgs ?? []) {
    const name = /^--?([^=]+)/.exec(arg)?.[1];
    if (name === undefined || OWN_FLAGS.includes(name))
      throw new Error(
        `extraArgs: ${JSON.stringify(arg)} is not a --flag=value this module leaves open (it sets ${OWN_FLAGS.join(', ')})`,
      );
  }
  return [
    `--kubeconfig=${options.kubeconfig}`,
    `--discovery-interval=${options.discoveryInterval ?? '1s'}`,
    `--metrics-address=${loopbackListen('metricsAddress', options.metricsAddress)}`,
    `--health-probe-bind-address=${loopbackListen('healthProbeAddress', options.healthProbeAddress)}`,
    '--pprof-address=0',
    '--leader-election=false',
    `--zap-log-level=${options.logLevel ?? 'info'}`,
    '--zap-encoder=json',
    '--zap-time-encoding=rfc3339nano',
    ...(options.extraArgs ?? []),
  ];
}

/** The last n lines written to file after byte offset `from` (this run's part of a shared log). */
function readTail(file: string, from: number, n: number): string[] {
  try {
    return readFileSync(file).subarray(from).toString('utf8').split('\n').filter(Boolean).slice(-n);
  } catch {
    return [];
  }
}

/** The real Metacontroller v4.17.2 the workplace provides beside the checkout (read, never copied). */
export const SHARED_METACONTROLLER = fileURLToPath(
  new URL('../../../shared/metacontroller/bin/metacontroller', import.meta.url),
);

/** The binary the tests run: METACONTROLLER_BIN when set, else the one in ../shared when it is there. */
export function metacontrollerBin(): string | undefined {
  return process.env['METACONTROLLER_BIN'] || (existsSync(SHARED_METACONTROLLER) ? SHARED_METACONTROLLER : undefined);
}

/** Why a real Metacontroller cannot run here, or undefined when it can. */
export function realMetacontrollerUnavailable(bin: string | undefined): string | undefined {
  if (!bin)
    return `no Metacontroller binary: neither METACONTROLLER_BIN nor ${SHARED_METACONTROLLER} (build v4.17.2 from its release tag and set METACONTROLLER_BIN)`;
  if (!existsSync(bin) || !statSync(bin).isFile()) return `METACONTROLLER_BIN=${bin} is not a file`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0)
    return 'running a real Metacontroller needs root (a private mount namespace for its /etc/hosts)';
  const missing = ['unshare', 'setpriv'].filter(
    (c) => !(process.env['PATH'] ?? '/usr/bin:/bin').split(':').some((d) => existsSync(path.join(d, c))),
  );
  if (missing.length > 0) return `util-linux ${missing.join(' and ')} not found on PATH`;
  return undefined;
}

/**
 * Starts the binary and returns once its CompositeController workers run (install Metacontroller's
 * CRDs first), or throws with its log when it exits or is not ready within 60 s.
 */
export async function startRealMetacontroller(options: RealMetacontrollerOptions): Promise<RealMetacontroller> {
  const why = realMetacontrollerUnavailable(options.bin);
  if (why) throw new Error(why);
  const bin = path.resolve(options.bin);
  const args = metacontrollerArgs(options);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'real-metacontroller-'));
  const hostsFile = path.join(dir, 'hosts');
  try {
    writeFileSync(hostsFile, hostsFileText(options.hosts));
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const from = existsSync(options.logFile) ? statSync(options.logFile).size : 0;
  // $0 = the binary, $1 = the hosts file (shifted away), "$@" = its flags: nothing is quoted by hand.
  const script = 'mount --bind "$1" /etc/hosts && shift && exec "$0" "$@"';
  const group = spawnGroup(
    ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', script, bin, hostsFile, ...args],
    {
      env: { PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin', HOME: dir },
      cwd: dir,
      logFile: options.logFile,
    },
  );
  const logTail = (n = 30) => readTail(options.logFile, from, n);
  let seenVersion: string | undefined;
  const version = () => {
    // The "Configuration information" line is the first it logs; read only its first lines.
    for (const line of seenVersion === undefined ? readTail(options.logFile, from, Infinity).slice(0, 50) : []) {
      try {
        const rec = JSON.parse(line) as { msg?: unknown; version?: unknown };
        if (rec.msg === 'Configuration information' && typeof rec.version === 'string') seenVersion = rec.version;
      } catch {
        // not a JSON line (e.g. mount or unshare complaining)
      }
    }
    return seenVersion;
  };

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      if (group.signal('SIGTERM')) {
        const done = await Promise.race([group.exited.then(() => true), sleep(5000).then(() => false)]);
        if (!done) group.signal('SIGKILL');
      }
      await group.exited;
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopping;
  };

  // Ready: the CompositeController workers run, i.e. it reached the API server, found its CRDs and
  // synced its caches (controller-runtime logs "Starting workers" for composite-metacontroller).
  const ready = () =>
    logTail(Infinity).some(
      (l) => l.includes('"msg":"Starting workers"') && l.includes('"controller":"composite-metacontroller"'),
    );
  const deadline = Date.now() + 60_000;
  while (!ready()) {
    if (!group.alive() || Date.now() > deadline) {
      const exit = group.alive()
        ? "did not start its workers within 60 s (are Metacontroller's CRDs installed?)"
        : `exited (${JSON.stringify(await group.exited)})`;
      await stop();
      throw new Error(`Metacontroller ${bin} ${exit}:\n${logTail(30).join('\n')}`);
    }
    await sleep(100);
  }
  return { pid: group.pid, args, hostsFile, exited: group.exited, alive: group.alive, logTail, version, stop };
}
