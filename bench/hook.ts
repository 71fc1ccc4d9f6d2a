// Benchmark of POST /sync (a benchmark, not a test): `npm run bench:hook`.
// Starts the hook service as the Deployment runs it (the compiled dist/ with the manifest's Node
// flags, built first when stale) and, for reference, a bare fastify app whose one route only
// parses and echoes the same body under the same flags, each in its own process on a loopback
// port (so the load generator does not share their event loop), warms each up, then drives each
// with autocannon at concurrency 5 (Metacontroller's worker count) with
// test/fixtures/sync-request.json. The measured time per target is split into alternating 1 s
// rounds (sync, echo, sync, ...) so that load from anything else on a shared machine hits both
// alike; rps is the median round, p99 is over every sync request (and echo_p99_ms over every echo
// request: an absolute p99 on a shared machine measures the machine, the ratio sync_vs_echo_p99
// measures the hook). Then a fleet resync: FLEET (200) different Redis, each with its children,
// POSTed once each at the same concurrency, as Metacontroller's resync of a whole fleet does, to
// both targets (fleet_resync_ms against fleet_resync_echo_ms). Prints on stdout: sync_rps,
// echo_rps, sync_vs_echo, sync_p99_ms, echo_p99_ms, sync_vs_echo_p99, fleet_redis,
// fleet_resync_ms, fleet_resync_echo_ms, fleet_resync_vs_echo, rss_mb (VmRSS of the hook process
// after all of it); progress goes to stderr. BENCH_SECONDS (default 10 per target) and
// BENCH_WARMUP_SECONDS (default 3) set the durations; BENCH_SERVER_NODE_OPTIONS replaces the
// flags of both servers (for example "" for V8's defaults). The hook logs its usual line per
// request, to /dev/null.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { hookCommand } from '../test/support/hook-command.ts';
import { listeningPorts, reportedPort } from '../test/support/ports.ts';

/** The slice of autocannon's API used here (the package ships no type declarations). */
interface AutocannonResult {
  errors: number;
  timeouts: number;
  non2xx: number;
  duration: number;
  requests: { total: number };
}
interface AutocannonInstance extends PromiseLike<AutocannonResult> {
  on(
    event: 'response',
    listener: (client: unknown, statusCode: number, bytes: number, responseTimeMs: number) => void,
  ): void;
}
type Autocannon = (options: Record<string, unknown>) => AutocannonInstance;
// Loaded by the driving process only: the server children import nothing they do not serve with
// (autocannon brings a WebAssembly histogram, which a server run with --lite-mode cannot load).
const loadAutocannon = () => createRequire(import.meta.url)('autocannon') as Autocannon;

const HOST = '127.0.0.1';
const CONNECTIONS = 5;
const ROUND_SECONDS = 1;
const FIXTURE = new URL('../test/fixtures/sync-request.json', import.meta.url);
const FLEET = Number(process.env['FLEET'] ?? 200);
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

type Kind = 'sync' | 'echo';

/** A bare fastify app whose one route parses and echoes the body: plain JS, so it runs under any flags. */
const ECHO_SERVER = `
import { fastify } from 'fastify';
const app = fastify({ bodyLimit: 4 * 1024 * 1024 });
app.post('/echo', async (request) => request.body);
await app.listen({ port: Number(process.env.PORT), host: process.env.HOST });
`;

interface Server {
  child: ChildProcess;
  url: string;
}

/**
 * The sync target is the hook service exactly as the Deployment runs it (its command from
 * manifests/deployment.yaml: the compiled dist/ with its Node flags, logging every request at
 * info, here to /dev/null); the echo target runs under the same flags. BENCH_SERVER_NODE_OPTIONS
 * replaces the flags for both.
 */
async function start(kind: Kind): Promise<Server> {
  const [node, ...rest] = hookCommand();
  const entry = rest[rest.length - 1]!;
  const override = process.env['BENCH_SERVER_NODE_OPTIONS'];
  const flags = override === undefined ? rest.slice(0, -1) : override.split(' ').filter(Boolean);
  const args = kind === 'sync' ? [...flags, entry] : [...flags, '--input-type=module', '-e', ECHO_SERVER];
  const child = spawn(node!, args, {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PORT: '0', HOST, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // Its stdout is /dev/null (reading its log would mean keeping a line per request): the port it
  // bound is read from /proc instead.
  const pid = child.pid ?? -1;
  const alive = () => child.exitCode === null && child.signalCode === null;
  const port = await reportedPort(
    `the ${kind} server`,
    { pid, alive },
    () => listeningPorts(pid)[0],
    () => [args.join(' ')],
  );
  const url = `http://${HOST}:${port}`;
  const deadline = performance.now() + 30_000;
  for (;;) {
    const up = await fetch(`${url}/${kind === 'sync' ? 'readyz' : 'nothing'}`).then(
      (r) => kind === 'echo' || r.ok,
      () => false,
    );
    if (up) return { child, url: `${url}/${kind}` };
    if (child.exitCode !== null || performance.now() > deadline)
      throw new Error(`the ${kind} server did not start (${args.join(' ')})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The process's resident set (VmRSS) in bytes. */
function rssOf(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) * 1024;
}

/** The app's own view of its heap (prom-client's default metrics on /metrics), for the log. */
async function heapLine(metricsUrl: string): Promise<string> {
  const text = await (await fetch(metricsUrl)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
  const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
  return `heap ${mb(value('nodejs_heap_size_used_bytes'))} of ${mb(value('nodejs_heap_size_total_bytes'))} MB, external ${mb(value('nodejs_external_memory_bytes'))} MB`;
}

interface Round {
  rps: number;
  latenciesMs: number[];
}

async function drive(url: string, body: string, seconds: number): Promise<Round> {
  const latenciesMs: number[] = [];
  const instance = loadAutocannon()({
    url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: CONNECTIONS,
    pipelining: 1,
    duration: seconds,
  });
  // autocannon's own histogram has whole-millisecond resolution; keep the exact times.
  instance.on('response', (_client, _status, _bytes, responseTime) => void latenciesMs.push(responseTime));
  const result = await instance;
  if (result.errors > 0 || result.timeouts > 0 || result.non2xx > 0) {
    throw new Error(`${url}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx answers`);
  }
  return { rps: result.requests.total / (result.duration || seconds), latenciesMs };
}

/** Shares of /sync requests the app itself timed under 1, 2.5 and 5 ms (from its /metrics). */
async function serverSideShares(metricsUrl: string): Promise<string> {
  const text = await (await fetch(metricsUrl)).text();
  const count = (le: string) =>
    Number(
      new RegExp(
        `^redis_operator_hook_duration_seconds_bucket\\{le="${le.replace('+', '\\+')}",route="sync"\\} (\\d+)$`,
        'm',
      ).exec(text)?.[1],
    );
  const total = count('+Inf');
  return ['0.001', '0.0025', '0.005']
    .map((le) => `${((count(le) / total) * 100).toFixed(1)}% under ${Number(le) * 1000} ms`)
    .join(', ');
}

/** The fixture as the request about Redis number i: its own name, uid and children's names. */
function fleetBody(fixture: string, i: number): string {
  const uid = `6f1c2b9e-3d4a-4c8e-9b7f-${String(i).padStart(12, '0')}`;
  return fixture.replaceAll('my-redis', `fleet-${i}`).replaceAll('6f1c2b9e-3d4a-4c8e-9b7f-2a1d5e8c4b10', uid);
}

/** POSTs every body once, CONNECTIONS at a time; the wall time in ms. */
async function resync(url: string, bodies: string[]): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${url}: ${res.status} during the fleet resync`);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  return performance.now() - t0;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))] ?? Number.NaN;
}

async function main(): Promise<void> {
  const seconds = Number(process.env['BENCH_SECONDS'] ?? 10);
  const warmup = Number(process.env['BENCH_WARMUP_SECONDS'] ?? 3);
  const rounds = Math.max(1, Math.round(seconds / ROUND_SECONDS));
  const body = readFileSync(FIXTURE, 'utf8');
  const sync = await start('sync');
  const echo = await start('echo');
  try {
    process.stderr.write(
      `bench: ${body.length} byte request, ${CONNECTIONS} connections, ${warmup} s warm-up each, then ${rounds} alternating ${ROUND_SECONDS} s rounds per target\n`,
    );
    await drive(sync.url, body, warmup);
    await drive(echo.url, body, warmup);
    const syncRounds: Round[] = [];
    const echoRounds: Round[] = [];
    // Alternating short rounds: load from anything else on the machine hits both targets alike.
    for (let i = 0; i < rounds; i++) {
      syncRounds.push(await drive(sync.url, body, ROUND_SECONDS));
      echoRounds.push(await drive(echo.url, body, ROUND_SECONDS));
    }
    const serverSide = await serverSideShares(sync.url.replace(/\/sync$/, '/metrics'));
    const bodies = Array.from({ length: FLEET }, (_, i) => fleetBody(body, i));
    // Each target once to warm the new names' paths, then alternately three times; the median.
    await resync(sync.url, bodies);
    await resync(echo.url, bodies);
    const fleetSync: number[] = [];
    const fleetEcho: number[] = [];
    for (let i = 0; i < 3; i++) {
      fleetSync.push(await resync(sync.url, bodies));
      fleetEcho.push(await resync(echo.url, bodies));
    }
    const rss = rssOf(sync.child.pid!);
    process.stderr.write(
      `bench: sync server memory: rss ${(rss / 1024 / 1024).toFixed(1)} MB, ${await heapLine(sync.url.replace(/\/sync$/, '/metrics'))}\n`,
    );
    const syncRps = median(syncRounds.map((r) => r.rps));
    const echoRps = median(echoRounds.map((r) => r.rps));
    const syncLatencies = syncRounds.flatMap((r) => r.latenciesMs);
    const echoLatencies = echoRounds.flatMap((r) => r.latenciesMs);
    const syncP99 = percentile(syncLatencies, 0.99);
    const echoP99 = percentile(echoLatencies, 0.99);
    const fleetMs = median(fleetSync);
    const fleetEchoMs = median(fleetEcho);
    process.stderr.write(
      `bench: per-round rps sync [${syncRounds.map((r) => Math.round(r.rps)).join(' ')}] echo [${echoRounds.map((r) => Math.round(r.rps)).join(' ')}]\n` +
        `bench: sync p50 ${percentile(syncLatencies, 0.5).toFixed(2)} ms, echo p50 ${percentile(echoLatencies, 0.5).toFixed(2)} ms, echo p99 ${percentile(echoLatencies, 0.99).toFixed(2)} ms\n` +
        `bench: sync server-side time (the app's own histogram, request start to answer sent): ${serverSide}\n` +
        `bench: fleet resync of ${FLEET} Redis: sync [${fleetSync.map((v) => Math.round(v)).join(' ')}] ms, echo [${fleetEcho.map((v) => Math.round(v)).join(' ')}] ms\n`,
    );
    process.stdout.write(
      [
        `sync_rps=${Math.round(syncRps)}`,
        `echo_rps=${Math.round(echoRps)}`,
        `sync_vs_echo=${(syncRps / echoRps).toFixed(2)}`,
        `sync_p99_ms=${syncP99.toFixed(2)}`,
        `echo_p99_ms=${echoP99.toFixed(2)}`,
        `sync_vs_echo_p99=${(syncP99 / echoP99).toFixed(2)}`,
        `fleet_redis=${FLEET}`,
        `fleet_resync_ms=${Math.round(fleetMs)}`,
        `fleet_resync_echo_ms=${Math.round(fleetEchoMs)}`,
        `fleet_resync_vs_echo=${(fleetMs / fleetEchoMs).toFixed(2)}`,
        `rss_mb=${(rss / 1024 / 1024).toFixed(1)}`,
      ].join('\n') + '\n',
    );
  } finally {
    for (const { child } of [sync, echo]) {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
    }
  }
}

await main();
