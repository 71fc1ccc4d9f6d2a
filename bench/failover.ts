// Failover benchmark (a benchmark, not a test): `npm run bench:failover`.
// Loopback addresses 127.0.30.x-127.0.39.x (the brief's allocation for this bench).
//
// A master and two replicas (real redis-server), a real kube-apiserver (test/k8s/api-server.ts:
// etcd, the CRDs, the operator's RBAC; no controllers), the real sidecar (src/sidecar/main.ts, its
// own process, as in the Deployment, a ServiceAccount of the operator's namespace with the
// sidecar's roles) managing them through it,
// a stand-in kubelet (readiness probe as the hook's template sets it: period 2 s, threshold 2;
// a dead container seen after ~1 s, as PLEG would; pods recreated at new addresses), and a writer
// doing SET then WAIT 1 through the master address the operator publishes (the pod labelled
// master -> its podIP, followed through a watch; requests stuck on the old address are dropped
// when the label moves). Every acknowledged key is recorded.
//
// Phases: KILL_ROUNDS x SIGKILL of the master (alternately: the container restarts in place, empty, same IP; the pod is
// recreated empty at a new address), so each round re-forms a three-node set; HUNG_ROUNDS x SIGSTOP of the master
// (resumed after the failover: it must be demoted); then the false-failover phase: only the sidecar's link to the
// master is cut (iptables) for FALSE_SECONDS; finally a baseline measured in the same run on three unmanaged servers: a
// bare REPLICAOF NO ONE + re-point + first acknowledged write (promote_only_ms). Then a second set with spec.tls
// (certificates from openssl; clients, replication, probes and the sidecar over TLS) runs TLS_KILL_ROUNDS kill rounds:
// tls_failover_ms beside failover_ms. Prints one figure per line on stdout; progress and per-round details go to
// stderr. Figures: failover_ms = SIGKILL -> first write acknowledged (WAIT 1) by the new master through the published
// address; hung_failover_ms the same for SIGSTOP; acked_writes_lost = acknowledged keys missing on the final master;
// false_failovers = failovers while only the sidecar was cut. Env: KILL_ROUNDS (10), HUNG_ROUNDS (10), FALSE_SECONDS
// (6), TLS_KILL_ROUNDS (KILL_ROUNDS), SIDECAR_LOG (file for the sidecar's JSON logs, default /dev/null). Cleanup: every
// redis-server dies with this process (pdeathsig), iptables rules are removed at exit (even on SIGINT), the sidecar
// child is SIGTERMed (SIGKILL after 5 s), the API server and etcd are stopped. A kubelet write that fails (the API
// server going away at the end) is logged, never an unhandled rejection.
// Engines: everything above runs on the default engine (Debian's redis-server 7.0.15, or the one
// REDIS_OPERATOR_TEST_ENGINE names: test/support/engines.ts); then ENGINE_KILL_ROUNDS (KILL_ROUNDS) kill rounds run on
// a fresh set of each engine, printed as failover_ms_p50_<engine> (redis_7_0, redis_7_2, valkey_8_0) and
// acked_writes_lost_<engine>; an engine whose binaries are absent prints `skipped` and says why on stderr.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { addr, cutLink, RedisServer, sweepRules, TEST_PASSWORD } from '../test/support/redis-server.ts';
import { ENGINES, engineMissing, selectedEngine, type TestEngine } from '../test/support/engines.ts';
import {
  Cluster,
  LEASE_NS,
  median,
  missingKeys,
  NS,
  redisClient,
  runningStatus,
  settle,
  sleep,
  until,
  Writer,
} from '../test/sidecar/redis/manager/harness.ts';
import { redisCommand } from '../test/sidecar/redis/manager/harness-redis.ts';
import { issue, makeCa, type Issued } from '../test/support/tls-certs.ts';

const KILL_ROUNDS = Number(process.env['KILL_ROUNDS'] ?? 10);
const HUNG_ROUNDS = Number(process.env['HUNG_ROUNDS'] ?? 10);
const FALSE_SECONDS = Number(process.env['FALSE_SECONDS'] ?? 6);
const TLS_KILL_ROUNDS = Number(process.env['TLS_KILL_ROUNDS'] ?? KILL_ROUNDS);
const ENGINE_KILL_ROUNDS = Number(process.env['ENGINE_KILL_ROUNDS'] ?? KILL_ROUNDS);
const SHORT_PAUSE_ROUNDS = Number(process.env['SHORT_PAUSE_ROUNDS'] ?? 5);
const REPLICA_CUT_ROUNDS = Number(process.env['REPLICA_CUT_ROUNDS'] ?? 3);
const REPLICA_CUT_SECONDS = Number(process.env['REPLICA_CUT_SECONDS'] ?? 10);
const SIDECAR_IP = addr(30, 250);
const NAME = 'bench';
const DOWN_AFTER_MS = 1000;
const MAIN = fileURLToPath(new URL('../src/sidecar/main.ts', import.meta.url));
const extra = { 'repl-diskless-sync-delay': '0' };

const log = (msg: string) => process.stderr.write(`${msg}\n`);

// ---------------------------------------------------------------- addresses

let nextHost = 1;
let nextOctet = 30;
let lastOctet = 31;
/** A fresh address for every new pod (a recreated pod gets a new IP), within the phase's octets. */
function freshIp(): string {
  if (nextHost > 240) {
    nextOctet++;
    nextHost = 1;
  }
  if (nextOctet > lastOctet) throw new Error('out of bench addresses');
  return addr(nextOctet, nextHost++);
}

/** Pods of the next phase get addresses in 127.0.first.x .. 127.0.last.x. */
function useOctets(first: number, last: number): void {
  nextOctet = first;
  lastOctet = last;
  nextHost = 1;
}

// ---------------------------------------------------------------- a stand-in kubelet

/** One pod: its Redis process and the readiness state the kubelet reports. */
interface BenchPod {
  name: string;
  server: RedisServer;
  ready: boolean;
  failures: number;
}

class Kubelet {
  readonly pods = new Map<string, BenchPod>();
  readonly cluster: Cluster;
  #timer: NodeJS.Timeout | null = null;
  #probing = false;

  constructor(cluster: Cluster) {
    this.cluster = cluster;
  }

  async add(suffix: string, server: RedisServer): Promise<BenchPod> {
    const name = `${NAME}-${suffix}`;
    const pod: BenchPod = { name, server, ready: false, failures: 0 };
    this.pods.set(name, pod);
    if (this.cluster.pod(name)) await this.cluster.setPodStatus(name, server.ip, false);
    else await this.cluster.store.create('pods', podObject(suffix, server.ip));
    return pod;
  }

  /** Readiness probe of the hook's template: period 2 s, timeout 2 s, failureThreshold 2, successThreshold 1. */
  start(): void {
    this.#timer = setInterval(() => void this.#probeAll(), 2000);
    void this.#probeAll();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  async #probeAll(): Promise<void> {
    if (this.#probing) return;
    this.#probing = true;
    try {
      await Promise.all([...this.pods.values()].map((p) => this.#probe(p)));
    } finally {
      this.#probing = false;
    }
  }

  async #probe(pod: BenchPod): Promise<void> {
    const ip = pod.server.ip;
    let ok = false;
    if (pod.server.running) {
      const c = redisClient(ip, TEST_PASSWORD, 2000);
      try {
        await c.connect();
        const info = String(await c.call('INFO', 'replication'));
        ok = /role:master/.test(info) || /master_link_status:up/.test(info);
      } catch {
        ok = false;
      } finally {
        c.disconnect();
      }
    }
    if (this.pods.get(pod.name) !== pod || pod.server.ip !== ip) return;
    pod.failures = ok ? 0 : pod.failures + 1;
    const ready = ok ? true : pod.failures >= 2 ? false : pod.ready;
    await this.#setReady(pod, ready);
  }

  /** Never throws: a status write that fails (the API server stopping at the end) is logged. */
  async #setReady(pod: BenchPod, ready: boolean): Promise<void> {
    if (pod.ready === ready) return;
    pod.ready = ready;
    if (!this.cluster.pod(pod.name)) return;
    await this.cluster.setPodStatus(pod.name, pod.server.ip, ready).catch((err: unknown) => {
      log(
        `kubelet: ${pod.name} ${ready ? 'Ready' : 'NotReady'} not written: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
  }

  /** The container died: the kubelet sees it about a second later (PLEG relist) and the pod turns NotReady. */
  async containerDied(pod: BenchPod): Promise<void> {
    await sleep(1000);
    if (this.pods.get(pod.name) === pod) await this.#setReady(pod, false);
  }

  /** restartPolicy Always: the same pod (UID, IP) runs a new container; no persistence, so empty. */
  async restartInPlace(pod: BenchPod): Promise<void> {
    await pod.server.wipe();
    pod.failures = 0;
  }

  /** The pod is deleted and the StatefulSet creates it again: new UID, new IP, no labels, empty. */
  async recreate(pod: BenchPod): Promise<BenchPod> {
    this.pods.delete(pod.name);
    await this.cluster.store.delete('pods', NS, pod.name);
    await pod.server.wipe({ ip: freshIp() });
    const suffix = pod.name.slice(NAME.length + 1);
    return this.add(suffix, pod.server);
  }
}

function podObject(suffix: string, ip: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${NAME}-${suffix}`,
      namespace: NS,
      labels: {
        'app.kubernetes.io/name': 'redis',
        'app.kubernetes.io/instance': NAME,
        'app.kubernetes.io/managed-by': 'redis-operator',
        'app.kubernetes.io/component': suffix.startsWith('master') ? 'master-set' : 'replica-set',
      },
    },
    spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] },
    status: runningStatus(ip, false),
  };
}

// ---------------------------------------------------------------- the sidecar process

/** The sidecar process, as the ServiceAccount `sidecar-bench` of the operator's namespace (through the fault proxy). */
async function startSidecar(cluster: Cluster, dir: string): Promise<ChildProcess> {
  const kubeconfig = path.join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, (await cluster.api.kubeConfig('sidecar-bench')).exportConfig(), { mode: 0o600 });
  const logFile = process.env['SIDECAR_LOG'] ?? '/dev/null';
  const out = openSync(logFile, 'a');
  return spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env['PATH'] ?? '',
      KUBECONFIG: kubeconfig,
      POD_NAME: 'sidecar-bench',
      // Its Lease lives here: manifests/rbac.yaml grants the Lease role in this namespace only.
      POD_NAMESPACE: LEASE_NS,
      METRICS_PORT: '0',
      METRICS_HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      REDIS_LOCAL_ADDRESS: SIDECAR_IP,
    },
    stdio: ['ignore', out, out],
  });
}

// ---------------------------------------------------------------- phases

interface Round {
  kind: 'kill' | 'hung';
  ms: number;
  from: string;
  to: string;
}

async function steady(cluster: Cluster, writer: Writer): Promise<string> {
  const ip = await until(
    'a steady three-node set',
    () => {
      const roles = Object.values(cluster.roles(NAME));
      return (
        roles.length === 3 &&
        roles.every((r) => r.endsWith('/up')) &&
        cluster.masters(NAME).length === 1 &&
        cluster.masterIp(NAME)
      );
    },
    30_000,
  );
  await settle(ip, 2, 10_000);
  const n = writer.acked.length;
  await until('acknowledged writes', () => writer.acked.length > n + 50 && writer.masterIp === ip, 10_000);
  return ip;
}

async function failoverRound(
  cluster: Cluster,
  kubelet: Kubelet,
  writer: Writer,
  kind: 'kill' | 'hung',
  index: number,
): Promise<Round> {
  const masterIp = await steady(cluster, writer);
  const oldName = cluster.masters(NAME)[0]!;
  const pod = kubelet.pods.get(oldName)!;
  const t0 = performance.now();
  if (kind === 'kill') {
    await pod.server.kill();
    void kubelet.containerDied(pod);
  } else {
    pod.server.stop();
  }
  const newName = await until(
    'the label on a new master',
    () => {
      const m = cluster.masters(NAME);
      return m.length === 1 && m[0] !== oldName && m[0];
    },
    20_000,
  );
  const newIp = cluster.pod(newName)!.status!.podIP!;
  const first = await until(
    'the first acknowledged write on the new master',
    () => writer.ackedAfter(t0, newIp),
    20_000,
  );
  const ms = first.at - t0;
  log(
    `${kind} #${index + 1}: ${oldName} (${masterIp}) -> ${newName} (${newIp}): first acknowledged write after ${Math.round(ms)} ms`,
  );
  // Re-form a three-node set.
  if (kind === 'kill') {
    await sleep(1100);
    if (index % 2 === 0) await kubelet.restartInPlace(pod);
    else await kubelet.recreate(pod);
  } else {
    pod.server.cont();
  }
  return { kind, ms, from: oldName, to: newName };
}

/** Failovers since `before` FailoverStarted events were counted: started ones, or the label moved anyway. */
function failoversSince(
  cluster: Cluster,
  before: number,
  labelled: string | undefined,
): { started: number; moved: boolean } {
  const started = cluster.events(NAME).filter((e) => e.reason === 'FailoverStarted').length - before;
  return { started, moved: cluster.masters(NAME)[0] !== labelled };
}

const failoverCount = (cluster: Cluster) => cluster.events(NAME).filter((e) => e.reason === 'FailoverStarted').length;

async function falseFailoverPhase(cluster: Cluster, writer: Writer): Promise<number> {
  const masterIp = await steady(cluster, writer);
  const before = failoverCount(cluster);
  const labelled = cluster.masters(NAME)[0];
  const t0 = performance.now();
  const cut = cutLink(undefined, SIDECAR_IP, masterIp);
  await sleep(FALSE_SECONDS * 1000);
  cut.restore();
  await sleep(2000);
  const { started, moved: movedAtAll } = failoversSince(cluster, before, labelled);
  const moved = movedAtAll ? 1 : 0;
  const kept = writer.ackedAfter(t0 + FALSE_SECONDS * 1000 - 500, masterIp) !== undefined;
  const blocked = cluster.events(NAME).filter((e) => e.reason === 'FailoverBlocked').length;
  log(
    `false-failover phase: sidecar cut from the master for ${FALSE_SECONDS} s: ${started} failover(s) started, label moved: ${moved === 1}, writes went on: ${kept}, FailoverBlocked events so far: ${blocked}`,
  );
  return Math.max(started, moved);
}

/** SIGSTOP of the master for half of downAfterMilliseconds, then SIGCONT: must never fail over. */
async function shortPauseRound(cluster: Cluster, kubelet: Kubelet, writer: Writer, index: number): Promise<number> {
  await steady(cluster, writer);
  const labelled = cluster.masters(NAME)[0]!;
  const before = failoverCount(cluster);
  const pod = kubelet.pods.get(labelled)!;
  pod.server.stop();
  await sleep(DOWN_AFTER_MS / 2);
  pod.server.cont();
  await sleep(2000);
  const { started, moved } = failoversSince(cluster, before, labelled);
  log(
    `short pause #${index + 1}: ${labelled} stopped for ${DOWN_AFTER_MS / 2} ms: ${started} failover(s) started, label moved: ${moved}`,
  );
  return Math.max(started, moved ? 1 : 0);
}

/**
 * The master cut off from its replicas only (iptables, both directions) for REPLICA_CUT_SECONDS;
 * the sidecar and the writer still reach it. Returns how long writes were unavailable: the
 * longest gap between acknowledged writes (WAIT 1) from the cut until the first write
 * acknowledged by the new master (or, without a failover, after the cut healed); a write in
 * flight at the cut can still be acknowledged, so "the first acknowledged write" alone would
 * measure nothing. Also whether the master moved.
 */
async function replicaCutRound(
  cluster: Cluster,
  kubelet: Kubelet,
  writer: Writer,
  index: number,
): Promise<{ ms: number; moved: boolean }> {
  const masterIp = await steady(cluster, writer);
  const labelled = cluster.masters(NAME)[0]!;
  const others = [...kubelet.pods.values()].filter((p) => p.server.ip !== masterIp).map((p) => p.server.ip);
  const t0 = performance.now();
  const cuts = others.map((ip) => cutLink(undefined, masterIp, ip));
  let first: { at: number } | undefined;
  try {
    first = await until(
      'a write acknowledged by a new master during the cut',
      () => {
        const ip = cluster.masterIp(NAME);
        return ip && ip !== masterIp ? writer.ackedAfter(t0, ip) : undefined;
      },
      REPLICA_CUT_SECONDS * 1000,
    ).catch(() => undefined);
    const left = t0 + REPLICA_CUT_SECONDS * 1000 - performance.now();
    if (left > 0) await sleep(left);
  } finally {
    for (const c of cuts) c.restore();
  }
  // Without a failover, writes come back only when the cut heals.
  const healedAt = performance.now();
  first ??= await until(
    'the first acknowledged write after the cut healed',
    () => writer.ackedAfter(healedAt, cluster.masterIp(NAME) ?? ''),
    20_000,
  );
  const moved = cluster.masters(NAME)[0] !== labelled;
  const end = first.at;
  const times = [t0, ...writer.acked.filter((a) => a.at >= t0 && a.at <= end).map((a) => a.at)].sort((a, b) => a - b);
  const ms = Math.max(...times.slice(1).map((x, i) => x - times[i]!));
  log(
    `replica cut #${index + 1}: ${labelled} cut off from its replicas for ${REPLICA_CUT_SECONDS} s: first acknowledged write after ${Math.round(ms)} ms; master moved: ${moved}`,
  );
  return { ms, moved };
}

/** The floor: what promotion alone costs here (no detection), on three unmanaged servers. */
async function promoteOnlyBaseline(rounds: number): Promise<number[]> {
  const servers = await Promise.all(
    [1, 2, 3].map((i) => RedisServer.start({ ip: addr(32, i), minReplicasToWrite: 1, extra })),
  );
  const call = redisCommand;
  const info = async (ip: string) => String(await call(ip, 'INFO', 'replication'));
  const times: number[] = [];
  try {
    let master = servers[0]!;
    await call(master.ip, 'REPLICAOF', 'NO', 'ONE');
    for (const r of servers.slice(1)) await call(r.ip, 'REPLICAOF', master.ip, '6379');
    for (let i = 0; i < rounds; i++) {
      await until('linked', async () => {
        for (const r of servers) if (r !== master && !/master_link_status:up/.test(await info(r.ip))) return false;
        return true;
      });
      const w = redisClient(master.ip);
      await w.connect();
      for (let k = 0; k < 200; k++) await w.set(`b${i}-${k}`, 'x');
      await w.call('WAIT', '2', '1000');
      w.disconnect();
      const [next, other] = servers.filter((s) => s !== master);
      const old = master;
      const t0 = performance.now();
      await call(next!.ip, 'REPLICAOF', 'NO', 'ONE');
      await call(other!.ip, 'REPLICAOF', next!.ip, '6379');
      const c = redisClient(next!.ip);
      await c.connect();
      for (let k = 0; ; k++) {
        try {
          await c.set(`p${i}-${k}`, 'x');
          if (Number(await c.call('WAIT', '1', '500')) >= 1) break;
        } catch {
          await sleep(1);
        }
      }
      times.push(performance.now() - t0);
      c.disconnect();
      await call(old.ip, 'REPLICAOF', next!.ip, '6379');
      master = next!;
    }
  } finally {
    for (const s of servers) {
      await s.kill();
      s.cleanup();
    }
  }
  return times;
}

// ---------------------------------------------------------------- main

interface SetResult {
  kill: number[];
  hung: number[];
  falseFailovers: number;
  shortPauseFailovers: number;
  replicaCut: number[];
  lost: number;
  replicasMissing: number;
  acked: number;
  violations: number;
}

/**
 * One managed three-node set through its phases: kill rounds, hung rounds, the false-failover
 * phase (when falseSeconds > 0). With tls, every node serves TLS only (spec.tls) and every client
 * (the writer, the kubelet's probe, the sidecar) speaks TLS.
 */
async function runSet(options: {
  tls?: Issued;
  engine?: TestEngine;
  killRounds: number;
  hungRounds: number;
  falseSeconds: number;
  shortPauseRounds?: number;
  replicaCutRounds?: number;
}): Promise<SetResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-failover-'));
  const cluster = await Cluster.start();
  await cluster.createAuthSecret(NAME);
  if (options.tls) {
    const data = {
      'tls.crt': options.tls['tls.crt'],
      'tls.key': options.tls['tls.key'],
      'ca.crt': options.tls['ca.crt'],
    };
    await cluster.store.create('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `${NAME}-tls`, namespace: NS },
      type: 'kubernetes.io/tls',
      stringData: data,
    });
  }
  await cluster.createRedis(NAME, {
    replicas: 2,
    failover: { downAfterMilliseconds: DOWN_AFTER_MS, minReplicasToWrite: 1, minReplicasMaxLagSeconds: 5 },
    ...(options.tls ? { tls: { secretName: `${NAME}-tls` } } : {}),
  });
  const kubelet = new Kubelet(cluster);
  const servers = await Promise.all(
    [0, 1, 2].map(() =>
      RedisServer.start({
        ip: freshIp(),
        extra,
        ...(options.tls ? { tls: options.tls } : {}),
        ...(options.engine ? { engine: options.engine } : {}),
      }),
    ),
  );
  for (const [i, s] of ['master-0', 'replica-0', 'replica-1'].entries()) await kubelet.add(s, servers[i]!);
  kubelet.start();
  const masters = cluster.watchMasters(NAME);
  const sidecar = await startSidecar(cluster, dir);
  const sidecarExit = new Promise<number | null>((resolve) => sidecar.once('exit', (code) => resolve(code)));
  const writer = new Writer(cluster, NAME, { prefix: 'k' });
  try {
    await until('bootstrap', () => cluster.masters(NAME).length === 1, 30_000);
    writer.start();
    const rounds: Round[] = [];
    for (let i = 0; i < options.killRounds; i++) rounds.push(await failoverRound(cluster, kubelet, writer, 'kill', i));
    for (let i = 0; i < options.hungRounds; i++) rounds.push(await failoverRound(cluster, kubelet, writer, 'hung', i));
    const falseFailovers = options.falseSeconds > 0 ? await falseFailoverPhase(cluster, writer) : 0;
    let shortPauseFailovers = 0;
    for (let i = 0; i < (options.shortPauseRounds ?? 0); i++)
      shortPauseFailovers += await shortPauseRound(cluster, kubelet, writer, i);
    const replicaCut: number[] = [];
    for (let i = 0; i < (options.replicaCutRounds ?? 0); i++)
      replicaCut.push((await replicaCutRound(cluster, kubelet, writer, i)).ms);

    const finalIp = await steady(cluster, writer);
    await writer.stop();
    await settle(finalIp, 2, 10_000);
    const keys = writer.acked.map((a) => a.key);
    const lost = await missingKeys(finalIp, keys);
    let replicasMissing = 0;
    for (const p of kubelet.pods.values())
      if (p.server.ip !== finalIp) replicasMissing += (await missingKeys(p.server.ip, keys)).length;
    const events = cluster.events(NAME);
    log(
      `${options.tls ? '[tls] ' : ''}acknowledged writes: ${keys.length}; missing on the final master: ${lost.length}; missing on its replicas: ${replicasMissing}`,
    );
    log(
      `events: ${Object.entries(
        events.reduce<Record<string, number>>((m, e) => ((m[e.reason] = (m[e.reason] ?? 0) + 1), m), {}),
      )
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
    log(`two pods labelled master at once (store watch): ${masters.violations.length} time(s)`);
    return {
      kill: rounds.filter((r) => r.kind === 'kill').map((r) => r.ms),
      hung: rounds.filter((r) => r.kind === 'hung').map((r) => r.ms),
      falseFailovers,
      shortPauseFailovers,
      replicaCut,
      lost: lost.length,
      replicasMissing,
      acked: keys.length,
      violations: masters.violations.length,
    };
  } finally {
    kubelet.stop();
    await writer.stop().catch(() => undefined);
    if (sidecar.exitCode === null) {
      sidecar.kill('SIGTERM');
      const killer = setTimeout(() => sidecar.kill('SIGKILL'), 5000);
      await sidecarExit;
      clearTimeout(killer);
    }
    for (const p of kubelet.pods.values()) {
      await p.server.kill();
      p.server.cleanup();
    }
    await cluster.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The kill rounds on a fresh set of each engine (the default engine's figures are the plain set's),
 * two octets each within the bench's 30-39.
 */
async function engineSets(plain: SetResult): Promise<{ lines: string[]; violations: number }> {
  const lines: string[] = [];
  let violations = 0;
  const first = selectedEngine();
  const others = Object.values(ENGINES).filter((e) => e.id !== first.id);
  lines.push(
    `failover_ms_p50_${first.label}=${Math.round(median(plain.kill))}`,
    `acked_writes_lost_${first.label}=${plain.lost}`,
  );
  for (const [i, engine] of others.entries()) {
    const missing = engineMissing(engine);
    if (missing !== undefined) {
      log(`${engine.id} skipped: ${missing}`);
      lines.push(`failover_ms_p50_${engine.label}=skipped`, `acked_writes_lost_${engine.label}=skipped`);
      continue;
    }
    useOctets(35 + 2 * i, 36 + 2 * i);
    const r = await runSet({ engine, killRounds: ENGINE_KILL_ROUNDS, hungRounds: 0, falseSeconds: 0 });
    log(`[${engine.id}] kill rounds (ms): ${r.kill.map(Math.round).join(' ')}`);
    violations += r.violations;
    lines.push(
      `failover_ms_p50_${engine.label}=${Math.round(median(r.kill))}`,
      `acked_writes_lost_${engine.label}=${r.lost}`,
    );
  }
  return { lines, violations };
}

async function main(): Promise<void> {
  sweepRules(30);
  const started = performance.now();
  useOctets(30, 31);
  const plain = await runSet({
    killRounds: KILL_ROUNDS,
    hungRounds: HUNG_ROUNDS,
    falseSeconds: FALSE_SECONDS,
    shortPauseRounds: SHORT_PAUSE_ROUNDS,
    replicaCutRounds: REPLICA_CUT_ROUNDS,
  });
  // The same kill rounds with spec.tls: every connection (clients, replication, probes, the sidecar) over TLS.
  useOctets(33, 34);
  const tls = await runSet({
    tls: issue(makeCa(), { dnsNames: [`*.${NAME}-headless.${NS}.svc`] }),
    killRounds: TLS_KILL_ROUNDS,
    hungRounds: 0,
    falseSeconds: 0,
  });
  const baseline = await promoteOnlyBaseline(5);
  const perEngine = await engineSets(plain);
  log(`kill rounds (ms): ${plain.kill.map(Math.round).join(' ')}`);
  log(`hung rounds (ms): ${plain.hung.map(Math.round).join(' ')}`);
  log(`replica cut rounds (ms to the first acknowledged write): ${plain.replicaCut.map(Math.round).join(' ')}`);
  log(`TLS kill rounds (ms): ${tls.kill.map(Math.round).join(' ')}`);
  log(`baseline REPLICAOF NO ONE + re-point + first WAIT 1 ack (ms): ${baseline.map((x) => x.toFixed(1)).join(' ')}`);
  log(`took ${Math.round((performance.now() - started) / 1000)} s`);
  const lines = [
    `failover_ms_p50=${Math.round(median(plain.kill))}`,
    `failover_ms_max=${Math.round(Math.max(...plain.kill))}`,
    `acked_writes_lost=${plain.lost}`,
    `hung_failover_ms_p50=${Math.round(median(plain.hung))}`,
    `hung_failover_ms_max=${Math.round(Math.max(...plain.hung))}`,
    `false_failovers=${plain.falseFailovers}`,
    `short_pause_failovers=${plain.shortPauseFailovers}`,
    `replica_cut_unavailable_ms_p50=${plain.replicaCut.length > 0 ? Math.round(median(plain.replicaCut)) : 'none'}`,
    `split_brain_moments=${plain.violations + tls.violations + perEngine.violations}`,
    `acked_writes_total=${plain.acked}`,
    `tls_failover_ms_p50=${Math.round(median(tls.kill))}`,
    `tls_failover_ms_max=${Math.round(Math.max(...tls.kill))}`,
    `tls_acked_writes_lost=${tls.lost}`,
    `detection_floor_ms=${DOWN_AFTER_MS}`,
    `promote_only_ms_p50=${median(baseline).toFixed(1)}`,
    ...perEngine.lines,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);
