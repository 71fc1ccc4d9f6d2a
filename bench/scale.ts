// Scale benchmark (a benchmark, not a test): `npm run bench:scale`.
// REDIS_COUNT Redis (default 200) of three pods each, every pod a real redis-server on its own
// loopback address (127.0.100.x onwards, 250 a octet), managed by SIDECARS sidecar processes
// (default 2, src/sidecar/main.ts as in the Deployment) with SHARDS shards (default 4), on the real
// API server (etcd, kube-apiserver, controller-manager and scheduler built from source by
// test/k8s/build.ts). What stands in is in scale-fleet.ts (no kubelet runs the pods).
//
// Phases, each figure's baseline measured in the same run:
// 0. Every redis-server of the fleet starts (replicas of nowhere, as pods start), so the machine
//    carries the same processes in phases 1 and 4.
// 1. One Redis managed: FAILOVER_ROUNDS x SIGKILL of its master -> the time until another pod is
//    labelled master and answers as master (failover_ms_p50_single). The sidecars stop.
// 2. The other Redis are created; the sidecars start again: all_running_s = until every Redis has
//    one pod labelled master and two linked replicas (the sidecars' share of "Running").
// 3. At rest for REST_SECONDS, once every pod carries its first replication report (the one-time
//    work after bring-up, whose rate is logged): the sidecars' CPU per managed pod and RSS; API
//    requests per second (kube-apiserver's apiserver_request_total) minus the rate of a window of
//    the same length measured before the sidecars first started (the control plane's own traffic).
// 4. The same failover rounds on the same Redis, with the whole fleet managed:
//    failover_ms_p50_at_scale and failover_at_scale_vs_single.
// 5. The sidecar holding the most shards is SIGKILLed: shard_takeover_ms = until the survivors
//    hold every shard Lease.
// Prints name=value lines on stdout (figures last); progress on stderr.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { startControlPlane, type ControlPlane } from '../test/k8s/control-plane.ts';
import { REPLICATION_ANNOTATION } from '../src/api/labels.ts';
import { addr } from '../test/support/redis-server.ts';
import { redisCommand } from '../test/sidecar/redis/manager/harness-redis.ts';
import { median, sleep } from '../test/sidecar/redis/manager/harness.ts';
import { until as untilPolled } from '../test/support/until.ts';
import {
  cpuMs,
  Fleet,
  inBatches,
  POD_SUFFIXES,
  rssMb,
  startSidecar,
  stopSidecar,
  type Sidecar,
} from './scale-fleet.ts';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const REDIS_COUNT = num('REDIS_COUNT', 200);
const SIDECARS = num('SIDECARS', 2);
const SHARDS = num('SHARDS', 4);
const REST_SECONDS = num('REST_SECONDS', 20);
const FAILOVER_ROUNDS = num('FAILOVER_ROUNDS', 5);
const BASE_OCTET = 100;
const LEASE = 'redis-operator-sidecar';
const log = (msg: string) => process.stderr.write(`${new Date().toISOString().slice(11, 23)} ${msg}\n`);
const figure = (name: string, value: number | string) =>
  process.stdout.write(`${name}=${typeof value === 'number' ? Math.round(value * 100) / 100 : value}\n`);

/** The tests' one polling helper; a check that throws (a busy API server) counts as "not yet". */
const until = <T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs: number,
  everyMs = 20,
): Promise<T> => untilPolled(what, () => check().catch(() => undefined), timeoutMs, { everyMs });

/** apiserver_request_total by verb and resource. */
async function requestsTotal(cp: ControlPlane): Promise<Map<string, number>> {
  const text = await cp.kubectl(['get', '--raw', '/metrics']);
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const label = (l: string) => new RegExp(`${l}="([^"]*)"`).exec(line)?.[1] ?? '';
    const k = `${label('verb')} ${label('resource')}${label('subresource') ? '/' + label('subresource') : ''}`;
    out.set(k, (out.get(k) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

async function requestRate(cp: ControlPlane, seconds: number): Promise<number> {
  const a = await requestsTotal(cp);
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const b = await requestsTotal(cp);
  const s = (performance.now() - t0) / 1000;
  const by = [...b].map(([k, v]) => [k, (v - (a.get(k) ?? 0)) / s] as const).filter(([, r]) => r >= 0.1);
  log(
    `  API requests/s by verb and resource: ${by
      .sort((x, y) => y[1] - x[1])
      .map(([k, r]) => `${k} ${r.toFixed(1)}`)
      .join(', ')}`,
  );
  // The two /metrics reads are themselves requests: one of them falls in the window.
  return (by.reduce((sum, [, r]) => sum + r, 0) * s - 1) / s;
}

/**
 * SIGKILL of Redis 0's master; the time until another pod is labelled master and says role:master. The killed one
 * restarts empty.
 */
async function failoverRound(fleet: Fleet, name: string): Promise<number> {
  const old = await until(`${name}: one labelled master`, () => fleet.masterOf(name), 30_000);
  const server = fleet.servers.get(old)!;
  const t0 = performance.now();
  await server.kill();
  const next = await until(
    `${name}: a new master`,
    async () => {
      const m = await fleet.masterOf(name);
      if (!m || m === old) return undefined;
      const role = (await redisCommand(fleet.servers.get(m)!.ip, 'ROLE').catch(() => [])) as unknown[];
      return role[0] === 'master' ? m : undefined;
    },
    30_000,
    10,
  );
  const ms = performance.now() - t0;
  log(`  ${name}: ${old} SIGKILLed -> ${next} master in ${Math.round(ms)} ms`);
  await server.wipe();
  await until(
    `${name}: three pods linked again`,
    async () => Fleet.running(await fleet.pods(), [name]).length === 1,
    60_000,
    100,
  );
  return ms;
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'bench-scale-'));
  const cp = await startControlPlane({ subnet: 97, onProgress: (l) => log(`control plane: ${l}`) });
  const fleet = new Fleet(cp.adminKubeconfig, BASE_OCTET);
  let sidecars: Sidecar[] = [];
  const cleanup = async () => {
    await Promise.allSettled(sidecars.map((s) => stopSidecar(s)));
    fleet.cleanup();
    await cp.stop();
    if (process.env['KEEP_LOGS'] === '1') log(`sidecar logs kept in ${work}`);
    else rmSync(work, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    await cp.kubectl(['apply', '-f', new URL('../manifests/crd.yaml', import.meta.url).pathname]);
    await cp.kubectl(['wait', '--for=condition=Established', 'crd/redises.redis.example.com', '--timeout=60s']);
    await fleet.namespaces();
    const start = () => {
      sidecars = Array.from({ length: SIDECARS }, (_, i) =>
        startSidecar(
          `sidecar-${String.fromCharCode(97 + i)}`,
          cp.adminKubeconfig,
          addr(BASE_OCTET + 9, 250 - i),
          { SHARDS: String(SHARDS) },
          path.join(work, `sidecar-${i}.log`),
        ),
      );
    };
    log(
      `control plane ${cp.version}; ${REDIS_COUNT} Redis x ${POD_SUFFIXES.length} pods, ${SIDECARS} sidecars, ${SHARDS} shards; logs in ${work}`,
    );
    const baselineRate = await requestRate(cp, REST_SECONDS);
    log(`API requests/s before any sidecar (the control plane's own): ${baselineRate.toFixed(1)}`);

    // Every server first: the machine hosts the whole fleet in both phases, so the single-Redis
    // baseline and the figure at scale differ only in what the sidecars manage.
    const t0 = performance.now();
    await inBatches(
      Array.from({ length: REDIS_COUNT }, (_, i) => i),
      8,
      (i) => fleet.startServers(i),
    );
    log(`${fleet.servers.size} redis-server processes started in ${Math.round(performance.now() - t0)} ms`);

    // 1. One Redis managed.
    await fleet.register(0);
    start();
    const first = [Fleet.redisName(0)];
    await until('bench-0 running', async () => Fleet.running(await fleet.pods(), first).length === 1, 60_000, 100);
    const single: number[] = [];
    for (let r = 0; r < FAILOVER_ROUNDS; r++) single.push(await failoverRound(fleet, first[0]!));
    await Promise.all(sidecars.map((s) => stopSidecar(s)));

    // 2. The fleet on the API; the sidecars start again.
    const t1 = performance.now();
    await inBatches(
      Array.from({ length: REDIS_COUNT - 1 }, (_, i) => i + 1),
      8,
      (i) => fleet.register(i),
    );
    log(`${REDIS_COUNT} Redis on the API in ${Math.round(performance.now() - t1)} ms`);
    const names = Array.from({ length: REDIS_COUNT }, (_, i) => Fleet.redisName(i));
    const started = performance.now();
    start();
    let running = 0;
    await until(
      'every Redis running',
      async () => {
        const n = Fleet.running(await fleet.pods(), names).length;
        if (n !== running) log(`  ${n}/${REDIS_COUNT} Redis running`);
        running = n;
        return n === REDIS_COUNT;
      },
      900_000,
      1000,
    );
    const allRunningS = (performance.now() - started) / 1000;

    // 3. At rest. The first minute after bring-up is not rest: each pod gets its first replication
    // report (one PATCH per pod, once) and each Redis its first volume pass. Measured too, for
    // the log; the figure is the window after every pod carries its report.
    const firstRate = await requestRate(cp, REST_SECONDS);
    log(
      `first ${REST_SECONDS} s after all running: API requests/s ${firstRate.toFixed(1)} (one-time reports and volume passes)`,
    );
    await until(
      'every pod carrying its first replication report',
      async () => (await fleet.pods()).every((p) => p.metadata?.annotations?.[REPLICATION_ANNOTATION] !== undefined),
      300_000,
      1000,
    ).catch((err: unknown) => log(`not every pod was reported within 300 s (${String(err)}); measuring anyway`));
    await sleep(5000);
    const pids = sidecars.map((s) => s.child.pid!);
    const cpu0 = pids.map(cpuMs);
    const rate = await requestRate(cp, REST_SECONDS);
    const cpuPerS = pids.map((p, i) => (cpuMs(p) - cpu0[i]!) / REST_SECONDS);
    const rss = pids.map(rssMb);
    const pods = REDIS_COUNT * POD_SUFFIXES.length;
    log(
      `at rest: sidecar CPU ms/s ${cpuPerS.map((c) => c.toFixed(0)).join(', ')}; RSS MB ${rss.map((r) => r.toFixed(0)).join(', ')}; API requests/s ${rate.toFixed(1)}`,
    );

    // 4. Failover with the whole fleet managed.
    const atScale: number[] = [];
    for (let r = 0; r < FAILOVER_ROUNDS; r++) atScale.push(await failoverRound(fleet, first[0]!));

    const managed = Fleet.running(await fleet.pods(), names).length;

    // 5. The instance holding the most shards dies.
    const holders = await fleet.holders(LEASE, SHARDS);
    const counts = sidecars.map((s) => holders.filter((h) => h === s.name).length);
    const victim = sidecars[counts.indexOf(Math.max(...counts))]!;
    log(`shard holders: ${holders.join(', ')}; SIGKILL ${victim.name} (${Math.max(...counts)} shards)`);
    const k0 = performance.now();
    await stopSidecar(victim, 'SIGKILL');
    const survivors = new Set(sidecars.filter((s) => s !== victim).map((s) => s.name));
    await until(
      'the survivors hold every shard',
      async () => (await fleet.holders(LEASE, SHARDS)).every((h) => survivors.has(h)),
      60_000,
      20,
    );
    const takeoverMs = performance.now() - k0;

    figure('failover_ms_single', single.map(Math.round).join(','));
    figure('failover_ms_at_scale', atScale.map(Math.round).join(','));
    figure('failover_ms_p50_single', median(single));
    figure('api_requests_per_s_baseline', baselineRate);
    figure(
      'sidecar_cpu_ms_per_s',
      cpuPerS.reduce((a, b) => a + b, 0),
    );
    figure('redis_managed', managed);
    figure('failover_ms_p50_at_scale', median(atScale));
    figure('failover_at_scale_vs_single', median(atScale) / median(single));
    figure('sidecar_cpu_ms_per_s_per_pod', cpuPerS.reduce((a, b) => a + b, 0) / pods);
    figure('sidecar_rss_mb', Math.max(...rss));
    figure('api_requests_per_s_at_rest', rate - baselineRate);
    figure('all_running_s', allRunningS);
    figure('shard_takeover_ms', takeoverMs);
  } finally {
    await cleanup();
  }
}

await main();
