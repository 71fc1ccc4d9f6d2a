// Test harness: a real Prometheus (test/monitoring/tools.ts finds the binary) on a loopback
// address, with the config and rule files a test gives it, and a small client for its HTTP API;
// plus promtool. Owns the process, its files and its log.
// Invariants:
// - It listens on 127.0.0.0/8 only (startPrometheus refuses any other address).
// - It runs under `setpriv --pdeathsig KILL` in its own process group (spawnGroup), so it dies
//   with the test process; stop() signals that group by its id (SIGTERM, SIGKILL after a
//   timeout), never anything by name.
// - Its files live in one directory: prometheus.yml, rules/<name>, data/, prometheus.log.
//   Relative paths in the config resolve against it, so a config's `rule_files: [rules/*]` finds
//   the rule files; an object config without rule_files gets exactly that. A directory the
//   harness created is removed by stop(); one passed in is left for the test to read.
// - Nothing is read from /etc/prometheus: the console directories are the harness's own.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import { spawnGroup } from '../support/processes.ts';
import { tailLines } from '../support/host.ts';
import { logEnd, logFrom, reportedPort } from '../support/ports.ts';
import { monitoringTools } from './tools.ts';

export interface PrometheusOptions {
  /** prometheus.yml: an object (serialised as YAML) or the file's text as is. */
  config: object | string;
  /** Rule files by file name (no directories), YAML text. */
  ruleFiles?: Record<string, string>;
  /**
   * `127.x.y.z`: Prometheus binds a port of its own and the harness reads it from its log (`url`
   * says which); or `127.x.y.z:port` with a port > 0 the caller owns.
   */
  listen: string;
  /** Where the files go; default a fresh temporary directory, removed by stop(). */
  dir?: string;
  logger?: (line: string) => void;
  /** How long to wait for /-/ready (default 60 s: a cold start replays nothing but is slow on 2 busy cores). */
  readyTimeoutMs?: number;
}

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export type QueryResult = { resultType: 'vector'; samples: Sample[] } | { resultType: 'scalar'; value: number };

export interface ActiveAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
  value: string;
}

export interface RuleGroup {
  name: string;
  file: string;
  rules: Array<{
    type: 'alerting' | 'recording';
    name: string;
    query: string;
    health: string;
    state?: string;
    lastError?: string;
    alerts?: ActiveAlert[];
  }>;
}

export interface Target {
  labels: Record<string, string>;
  discoveredLabels: Record<string, string>;
  scrapePool: string;
  scrapeUrl: string;
  health: 'up' | 'down' | 'unknown';
  lastError: string;
}

export interface Prometheus {
  url: string;
  dir: string;
  logFile: string;
  query(expr: string): Promise<QueryResult>;
  /** Active (pending or firing) alerts; a resolved alert is no longer listed. */
  alerts(): Promise<ActiveAlert[]>;
  rules(): Promise<RuleGroup[]>;
  targets(): Promise<{ activeTargets: Target[]; droppedTargets: Array<{ discoveredLabels: Record<string, string> }> }>;
  /** Rewrites what is given (new rule files replace the whole set) and reloads; rejects if Prometheus refuses it. */
  reload(config?: object | string, ruleFiles?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
  logTail(lines?: number): string[];
}

const CONFIG_FILE = 'prometheus.yml';
const RULES_DIR = 'rules';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Host and port; port 0 when only the host is given (an explicit `:0` is refused: the host alone asks for that). */
function parseListen(listen: string): { host: string; port: number } {
  const m = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3})(?::(\d{1,5}))?$/.exec(listen);
  const port = m?.[2] === undefined ? 0 : Number(m[2]);
  if (!m || (m[2] !== undefined && (port < 1 || port > 65535)))
    throw new Error(
      `refusing listen address ${listen}: only 127.x.y.z (a port Prometheus binds itself) or 127.x.y.z:<port> with a port > 0`,
    );
  return { host: m[1]!, port };
}

/**
 * The port in Prometheus's `msg="Listening on" address=host:port` line: the address it bound, so the real port after a
 * :0.
 */
function listeningOn(log: string): number | undefined {
  const m = /msg="Listening on" address=\S*:(\d+)/.exec(log);
  return m ? Number(m[1]) : undefined;
}

function configText(config: object | string): string {
  if (typeof config === 'string') return config;
  const c = config as Record<string, unknown>;
  return stringify('rule_files' in c ? c : { ...c, rule_files: [`${RULES_DIR}/*`] });
}

function writeRuleFiles(dir: string, ruleFiles: Record<string, string>): void {
  const rules = path.join(dir, RULES_DIR);
  mkdirSync(rules, { recursive: true });
  for (const name of Object.keys(ruleFiles)) {
    if (!/^[\w.-]+$/.test(name) || name.startsWith('.'))
      throw new Error(`bad rule file name ${JSON.stringify(name)}: a plain file name`);
  }
  for (const old of readdirSync(rules)) if (!(old in ruleFiles)) rmSync(path.join(rules, old), { force: true });
  for (const [name, text] of Object.entries(ruleFiles)) writeFileSync(path.join(rules, name), text);
}

async function api<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== 'success') throw new Error(`${url}: ${res.status} ${body.error ?? JSON.stringify(body)}`);
  return body.data;
}

function sampleValue(v: [number, string]): number {
  // Prometheus sends values as strings ("NaN", "+Inf" included); Number() reads all of them.
  return Number(v[1]);
}

export async function startPrometheus(options: PrometheusOptions): Promise<Prometheus> {
  const { host, port } = parseListen(options.listen);
  const tools = monitoringTools();
  const log = options.logger ?? (() => undefined);
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(path.join(os.tmpdir(), 'prometheus-'));
  mkdirSync(dir, { recursive: true });
  for (const d of ['data', 'consoles', 'console_libraries']) mkdirSync(path.join(dir, d), { recursive: true });
  const configFile = path.join(dir, CONFIG_FILE);
  writeFileSync(configFile, configText(options.config));
  writeRuleFiles(dir, options.ruleFiles ?? {});
  const logFile = path.join(dir, 'prometheus.log');
  const logOffset = logEnd(logFile);
  // The web UI's assets ship next to the binary (Debian: /usr/share/prometheus/web); the API needs none.
  const assets = path.join(path.dirname(tools.prometheus), '../share/prometheus/web');
  const args = [
    `--config.file=${configFile}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=${host}:${port}`,
    '--web.enable-lifecycle',
    `--web.console.templates=${path.join(dir, 'consoles')}`,
    `--web.console.libraries=${path.join(dir, 'console_libraries')}`,
    ...(existsSync(assets) ? [`--web.local-assets=${assets}`] : []),
  ];
  const group = spawnGroup([tools.prometheus, ...args], {
    cwd: dir,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    logFile,
  });
  // Set once: when Prometheus picks the port, from its log (below) before anything uses the URL.
  let url = `http://${host}:${port}`;
  const logTail = (lines = 30) => tailLines(logFile, lines);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      group.signal('SIGTERM');
      // A timer of its own, cleared: a pending one would hold the test process open for its length.
      let timer: NodeJS.Timeout | undefined;
      const done = await Promise.race([
        group.exited.then(() => true),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 10_000))),
      ]);
      clearTimeout(timer);
      if (!done) {
        group.signal('SIGKILL');
        await group.exited;
      }
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    })();
    return stopping;
  };

  try {
    const timeout = options.readyTimeoutMs ?? 60_000;
    const deadline = Date.now() + timeout;
    if (port === 0)
      url = `http://${host}:${await reportedPort('prometheus', group, () => listeningOn(logFrom(logFile, logOffset)), logTail, timeout)}`;
    for (;;) {
      if (!group.alive()) throw new Error(`prometheus exited before it was ready:\n${logTail().join('\n')}`);
      const ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline)
        throw new Error(`prometheus on ${url} not ready within ${timeout} ms:\n${logTail().join('\n')}`);
      await sleep(100);
    }
    log(`prometheus ${tools.versions.prometheus} ready on ${url} (${dir})`);
  } catch (err) {
    // The message already carries the log's tail; what must not stay is the process.
    await stop().catch(() => undefined);
    throw err;
  }

  return {
    url,
    dir,
    logFile,
    async query(expr) {
      const data = await api<{ resultType: string; result: unknown }>(
        `${url}/api/v1/query?${new URLSearchParams({ query: expr }).toString()}`,
      );
      if (data.resultType === 'vector') {
        const result = data.result as Array<{ metric: Record<string, string>; value: [number, string] }>;
        return {
          resultType: 'vector',
          samples: result.map((r) => ({ labels: r.metric, value: sampleValue(r.value) })),
        };
      }
      if (data.resultType === 'scalar')
        return { resultType: 'scalar', value: sampleValue(data.result as [number, string]) };
      throw new Error(`query ${expr}: a ${data.resultType} result (only instant vectors and scalars are parsed)`);
    },
    alerts: async () => (await api<{ alerts: ActiveAlert[] }>(`${url}/api/v1/alerts`)).alerts,
    rules: async () => (await api<{ groups: RuleGroup[] }>(`${url}/api/v1/rules`)).groups,
    targets: () => api(`${url}/api/v1/targets`),
    async reload(config, ruleFiles) {
      if (config !== undefined) writeFileSync(configFile, configText(config));
      if (ruleFiles !== undefined) writeRuleFiles(dir, ruleFiles);
      // The reload handler answers only once the reload is done: 200, or 500 with Prometheus's reason.
      const res = await fetch(`${url}/-/reload`, { method: 'POST', signal: AbortSignal.timeout(30_000) });
      if (!res.ok) throw new Error(`prometheus refused the reload: ${res.status} ${(await res.text()).trim()}`);
    },
    stop,
    logTail,
  };
}

export interface PromtoolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs promtool with `args` (stdin `input` when given); never rejects on a non-zero exit. */
export function promtool(args: string[], input?: string): Promise<PromtoolResult> {
  const bin = monitoringTools().promtool;
  return new Promise((resolve, reject) => {
    const child = execFile(bin, args, { encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      // A numeric code is promtool's verdict; anything else (not found, killed) is a failure to run it.
      // ExecFileException is an Error whose typing (built with Omit) no longer says so.
      if (err !== null && typeof err.code !== 'number') return reject(err as Error);
      resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr });
    });
    child.stdin?.end(input ?? '');
  });
}
