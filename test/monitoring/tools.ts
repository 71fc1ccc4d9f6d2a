// The monitoring tests' real binaries: Prometheus and promtool (Debian bookworm's `prometheus`,
// 2.42.0) and redis_exporter (`prometheus-redis-exporter`, 1.45.0, the version of the exporter
// image the operator defaults to). Owns finding them and fetching them into a cache.
// Invariants:
// - Resolution order per binary: PROMETHEUS_BIN / PROMTOOL_BIN / REDIS_EXPORTER_BIN, else the
//   cache ~/.cache/redis-operator-monitoring/<key>/usr/bin/ (MONITORING_CACHE_DIR moves the root).
//   monitoringTools() only resolves (it never fetches), so a test never downloads behind its back:
//   it fails with the command to run instead.
// - The packages are never installed (their maintainer scripts create a user and start daemons):
//   `apt-get download` fetches the .debs into a temporary directory and `dpkg-deb -x` unpacks
//   them into <key>.partial, renamed to <key> only once every binary is there, so an interrupted
//   fetch is never mistaken for a finished one.
// - The key names the upstream versions and the architecture; the Debian revision may move with
//   a bookworm point release (the archive keeps only the newest), so a fetch accepts any revision
//   of the pinned upstream version and refuses any other version.
// - Debian builds Prometheus without Kubernetes discovery (kubernetes_sd_configs is unknown to
//   this prometheus and promtool); test/monitoring/pod-sd.ts stands in for it with file SD.
// CLI: `node test/monitoring/tools.ts` fetches if needed and prints prometheus=<path> etc.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROMETHEUS_PACKAGE = 'prometheus';
export const EXPORTER_PACKAGE = 'prometheus-redis-exporter';
export const PROMETHEUS_VERSION = '2.42.0';
export const EXPORTER_VERSION = '1.45.0';
const PACKAGES = [PROMETHEUS_PACKAGE, EXPORTER_PACKAGE] as const;

export interface MonitoringTools {
  prometheus: string;
  promtool: string;
  redisExporter: string;
  /** Full versions as the binaries' --version / the packages report them. */
  versions: { prometheus: string; redisExporter: string };
}

const TOOLS = [
  { key: 'prometheus', env: 'PROMETHEUS_BIN', file: 'usr/bin/prometheus' },
  { key: 'promtool', env: 'PROMTOOL_BIN', file: 'usr/bin/promtool' },
  { key: 'redisExporter', env: 'REDIS_EXPORTER_BIN', file: 'usr/bin/prometheus-redis-exporter' },
] as const;

const FETCH_HINT = 'run `node test/monitoring/tools.ts` (or `npm run cluster:build`) to fetch them';

export function monitoringCacheRoot(): string {
  return (
    process.env['MONITORING_CACHE_DIR'] ??
    path.join(process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'redis-operator-monitoring')
  );
}

function debianArch(): string {
  // Debian's names for the two architectures this project runs on; anything else is passed as is.
  return ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
}

/** The cache directory for the pinned versions (whether fetched yet or not). */
export function monitoringCacheDir(): string {
  return path.join(
    monitoringCacheRoot(),
    `prometheus-${PROMETHEUS_VERSION}-redis-exporter-${EXPORTER_VERSION}-${debianArch()}`,
  );
}

type ToolName = (typeof TOOLS)[number]['key'];

/**
 * One binary's path, or an Error with a one-line reason and what to run. For a caller that needs
 * only one of them (the exporter runners), so a missing Prometheus does not stop it.
 */
export function monitoringTool(name: ToolName): string {
  const t = TOOLS.find((x) => x.key === name)!;
  const override = process.env[t.env];
  const p = override || path.join(monitoringCacheDir(), t.file);
  if (existsSync(p)) return p;
  if (override) throw new Error(`${t.env}=${p} does not exist`);
  throw new Error(
    `the monitoring tools (Prometheus ${PROMETHEUS_VERSION}, redis_exporter ${EXPORTER_VERSION}) are not in ${monitoringCacheDir()}: ${FETCH_HINT}`,
  );
}

function versionOf(bin: string): string {
  // redis_exporter logs its version line on stderr; Prometheus prints it on stdout.
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  const text = `${r.stdout ?? ''}\n${r.stderr ?? ''}`;
  return /version (\S+)/.exec(text)?.[1] ?? /Exporter (\S+)/.exec(text)?.[1] ?? 'unknown';
}

let memo: MonitoringTools | undefined;

/**
 * The three binaries, or an Error whose one-line message says what is missing and what to run.
 * Tests call this and let it throw: they fail (never skip) when the tools cannot be had.
 */
export function monitoringTools(): MonitoringTools {
  // Overrides first, so a wrong override is what the message names.
  const order = [...TOOLS].sort((a, b) => Number(!process.env[a.env]) - Number(!process.env[b.env]));
  const paths = {} as Record<ToolName, string>;
  for (const t of order) paths[t.key] = monitoringTool(t.key);
  if (
    memo &&
    memo.prometheus === paths.prometheus &&
    memo.promtool === paths.promtool &&
    memo.redisExporter === paths.redisExporter
  )
    return memo;
  let versions: MonitoringTools['versions'];
  try {
    versions = JSON.parse(
      readFileSync(path.join(monitoringCacheDir(), 'versions.json'), 'utf8'),
    ) as MonitoringTools['versions'];
  } catch {
    versions = { prometheus: 'unknown', redisExporter: 'unknown' };
  }
  // An override is whatever it is: ask the binary itself.
  if (process.env['PROMETHEUS_BIN']) versions.prometheus = versionOf(paths.prometheus);
  if (process.env['REDIS_EXPORTER_BIN']) versions.redisExporter = versionOf(paths.redisExporter);
  memo = { ...paths, versions };
  return memo;
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  timeoutMs: number,
): Promise<{ code: number | null; stderr: string; error?: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (c: string) => (stderr = (stderr + c).slice(-8192)));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      resolve({ code: null, stderr, error: err.message });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** The apt error worth showing: its `E:` line (apt's warnings about sandboxing as root are noise). */
function aptReason(stderr: string, error?: string): string {
  return (
    error ??
    stderr
      .split('\n')
      .find((l) => l.startsWith('E:'))
      ?.trim() ??
    stderr.trim().split('\n').pop() ??
    'no output'
  );
}

/**
 * Fetches the packages into the cache unless every binary already resolves; returns the tools.
 * Prints a line per step. Fails with the command to run when apt cannot deliver.
 */
export async function ensureMonitoringTools(
  log: (line: string) => void = (l) => console.log(l),
): Promise<MonitoringTools> {
  try {
    return monitoringTools();
  } catch (err) {
    for (const t of TOOLS) if (process.env[t.env] && !existsSync(process.env[t.env] as string)) throw err;
  }
  for (const cmd of ['apt-get', 'dpkg-deb']) {
    if (spawnSync(cmd, ['--version'], { stdio: 'ignore' }).error) {
      throw new Error(
        `fetching the monitoring tools needs ${cmd} (Debian/Ubuntu); or set PROMETHEUS_BIN, PROMTOOL_BIN and REDIS_EXPORTER_BIN`,
      );
    }
  }
  const dir = monitoringCacheDir();
  const partial = `${dir}.partial`;
  const t0 = Date.now();
  log(`fetching the monitoring tools (Debian packages ${PACKAGES.join(', ')}) into ${dir}`);
  const debs = mkdtempSync(path.join(os.tmpdir(), 'monitoring-debs-'));
  try {
    const dl = await run('apt-get', ['download', '-q', ...PACKAGES], debs, 300_000);
    if (dl.code !== 0) {
      const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
      throw new Error(
        `apt-get download ${PACKAGES.join(' ')} failed (${aptReason(dl.stderr, dl.error)}); the apt lists may be missing or stale: run \`${sudo}apt-get update\`, then \`node test/monitoring/tools.ts\``,
      );
    }
    const files = readdirSync(debs).filter((f) => f.endsWith('.deb'));
    const mib = (files.reduce((n, f) => n + statSync(path.join(debs, f)).size, 0) / 2 ** 20).toFixed(1);
    log(`monitoring tools: downloaded ${files.join(', ')} (${mib} MiB) in ${Math.round((Date.now() - t0) / 1000)} s`);
    rmSync(partial, { recursive: true, force: true });
    mkdirSync(partial, { recursive: true });
    const versions: Record<string, string> = {};
    for (const pkg of PACKAGES) {
      const deb = files.find((f) => f.startsWith(`${pkg}_`));
      if (!deb) throw new Error(`apt-get download left no ${pkg}_*.deb in ${debs}`);
      const version = execFileSync('dpkg-deb', ['-f', path.join(debs, deb), 'Version'], { encoding: 'utf8' }).trim();
      const want = pkg === PROMETHEUS_PACKAGE ? PROMETHEUS_VERSION : EXPORTER_VERSION;
      // Debian versions are <upstream>[+ds][-revision]: the upstream part must be the pinned one.
      if (!new RegExp(`^${want.replace(/\./g, '\\.')}[+~-]`).test(version)) {
        throw new Error(
          `apt offers ${pkg} ${version}, not ${want} (Debian bookworm's); set PROMETHEUS_BIN, PROMTOOL_BIN and REDIS_EXPORTER_BIN instead`,
        );
      }
      versions[pkg === PROMETHEUS_PACKAGE ? 'prometheus' : 'redisExporter'] = version;
      execFileSync('dpkg-deb', ['-x', path.join(debs, deb), partial], { stdio: ['ignore', 'ignore', 'pipe'] });
    }
    for (const t of TOOLS)
      if (!existsSync(path.join(partial, t.file))) throw new Error(`the packages hold no ${t.file}`);
    writeFileSync(path.join(partial, 'versions.json'), `${JSON.stringify(versions)}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } finally {
    rmSync(debs, { recursive: true, force: true });
  }
  memo = undefined;
  const tools = monitoringTools();
  log(
    `monitoring tools fetched in ${Math.round((Date.now() - t0) / 1000)} s: prometheus ${tools.versions.prometheus}, redis_exporter ${tools.versions.redisExporter}`,
  );
  return tools;
}

/** The lines the CLI and `cli.ts build` print. */
export function toolLines(tools: MonitoringTools): string[] {
  return [`prometheus=${tools.prometheus}`, `promtool=${tools.promtool}`, `redis_exporter=${tools.redisExporter}`];
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);
  ensureMonitoringTools(log).then(
    (tools) => console.log(toolLines(tools).join('\n')),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
