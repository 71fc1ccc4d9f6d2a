// A tiny stand-in for the replication manager, for integration tests of the Redis adapter and the
// pure decisions against real redis-server processes, without Kubernetes: pods are plain objects
// (name, IP, labels), each pod is probed in its own loop (a hung node must not slow the others),
// and a decide loop folds the probes, plans, and applies the steps in the documented order.
// It is what the real manager does minus the API server, leases, events and metrics.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { RedisAdapter } from '../../../src/sidecar/redis/index.ts';
import { applyPlan, type StepIO } from '../../../src/sidecar/manager/executor.ts';
import type { ProbeResult } from '../../../src/sidecar/redis/index.ts';
import { DEFAULT_DECIDE_CONFIG, plan, track } from '../../../src/sidecar/decide/index.ts';
import type { DecideConfig, Plan, PodObservation, RedisTrack, SpecView, Step } from '../../../src/sidecar/decide/index.ts';
import { LINK_ANNOTATION, ROLE_LABEL, ROLE_MASTER } from '../../../src/api/labels.ts';
import type { TestContext } from 'node:test';
import { TEST_PASSWORD, addr, startRedis, type RedisServer } from '../../support/redis-server.ts';
import { missingKeysOn } from '../../support/redis-keys.ts';
import { AckedWriter } from '../../support/acked-writer.ts';

export interface FakePod {
  name: string;
  component: 'master-set' | 'replica-set';
  server: RedisServer;
  /** null: the pod has no IP (being recreated). Defaults to the server's IP. */
  ip: string | null;
  phase: string;
  ready: boolean;
  deleting: boolean;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface Decision {
  at: number;
  plan: Plan;
  applied: string[];
}

export class MiniManager {
  readonly name: string;
  readonly pods: FakePod[] = [];
  readonly adapter: RedisAdapter;
  readonly tracks = new Map<string, RedisTrack>();
  readonly decisions: Decision[] = [];
  /** The latest plan (decisions only records changes). */
  lastPlan: Plan | null = null;
  spec: SpecView;
  config: DecideConfig;
  probeIntervalMs = 100;
  tickIntervalMs = 100;
  #running = false;
  #loops: Promise<void>[] = [];
  #probing = new Set<string>();

  constructor(options: { name: string; sidecarIp: string; spec?: Partial<SpecView>; config?: Partial<DecideConfig> }) {
    this.name = options.name;
    this.adapter = new RedisAdapter({ password: TEST_PASSWORD, localAddress: options.sidecarIp });
    this.spec = { replicas: 2, minReplicasToWrite: 1, minReplicasMaxLagSeconds: 5, persistence: false, runtimeConfig: {}, ...options.spec };
    this.config = { ...DEFAULT_DECIDE_CONFIG, ...options.config };
  }

  addPod(name: string, server: RedisServer): FakePod {
    const pod: FakePod = {
      name: `${this.name}-${name}`,
      component: name.startsWith('master') ? 'master-set' : 'replica-set',
      server,
      ip: server.ip,
      phase: 'Running',
      ready: true,
      deleting: false,
      labels: {},
      annotations: {},
    };
    this.pods.push(pod);
    if (this.#running) this.#loops.push(this.#probeLoop(pod));
    return pod;
  }

  pod(name: string): FakePod {
    const p = this.pods.find((x) => x.name === `${this.name}-${name}` || x.name === name);
    if (!p) throw new Error(`no pod ${name}`);
    return p;
  }

  /** "The pod was recreated": new IP (the server's current one), labels gone, as a new pod would be. */
  recreated(pod: FakePod): void {
    pod.ip = pod.server.ip;
    pod.labels = {};
    pod.annotations = {};
  }

  /** The pod labelled master (what the master Service selects), or null. */
  publishedMaster(): FakePod | null {
    const masters = this.pods.filter((p) => p.labels[ROLE_LABEL] === ROLE_MASTER);
    if (masters.length > 1) throw new Error(`two pods labelled master: ${masters.map((p) => p.name).join(', ')}`);
    return masters[0] ?? null;
  }

  observations(): PodObservation[] {
    return this.pods.map((p) => ({
      name: p.name,
      component: p.component,
      ip: p.ip,
      phase: p.phase,
      ready: p.ready,
      deleting: p.deleting,
      roleLabel: p.labels[ROLE_LABEL] ?? null,
      linkAnnotation: p.annotations[LINK_ANNOTATION] ?? null,
      redis: this.tracks.get(p.name) ?? null,
    }));
  }

  async probe(pod: FakePod): Promise<void> {
    if (!pod.ip) return;
    const ip = pod.ip;
    const result: ProbeResult = await this.adapter.probe({ host: ip, port: 6379 });
    if (pod.ip !== ip) return;
    this.tracks.set(pod.name, track(this.tracks.get(pod.name), ip, result, performance.now(), this.config));
  }

  /** One decide-and-apply round (probes come from the probe loops, or call probeAll first). */
  async tick(): Promise<Plan> {
    const p = plan({ name: this.name, spec: this.spec, pods: this.observations(), now: performance.now(), config: this.config });
    this.lastPlan = p;
    const applied = await this.apply(p.steps);
    if (p.steps.length > 0 || this.decisions.at(-1)?.plan.decision.kind !== p.decision.kind) {
      this.decisions.push({ at: performance.now(), plan: p, applied });
    }
    return p;
  }

  async probeAll(): Promise<void> {
    await Promise.all(this.pods.map((p) => this.probe(p)));
  }

  /** Probe everything, then decide; repeated until `done` or the deadline (for synchronous tests). */
  async converge(done: (p: Plan) => boolean, timeoutMs = 15000): Promise<Plan> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      await this.probeAll();
      const p = await this.tick();
      if (done(p)) return p;
      if (performance.now() > deadline) throw new Error(`did not converge: last decision ${p.decision.kind}: ${p.decision.reason}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Applies the plan's steps with the manager's own executor (src/sidecar/manager/executor.ts):
   * the same order, batching and stop rules; only the label writes differ (this fake pod list
   * instead of the API). Returns one line per step, `FAILED ` before the failed ones.
   */
  async apply(steps: Step[]): Promise<string[]> {
    const io: StepIO = {
      replicaOf: (endpoint, master) => this.adapter.replicaOf(endpoint, master),
      switchover: (from, to) => this.adapter.switchover(from, to),
      configSet: (endpoint, settings) => this.adapter.configSet(endpoint, settings),
      label: async (step) => {
        const pod = this.pods.find((p) => p.name === step.pod);
        if (!pod) return { ok: false, gone: true, message: 'pod gone' };
        for (const [k, v] of Object.entries(step.patch.metadata.labels ?? {})) {
          if (v === null) delete pod.labels[k];
          else pod.labels[k] = v;
        }
        for (const [k, v] of Object.entries(step.patch.metadata.annotations ?? {})) {
          if (v === null) delete pod.annotations[k];
          else pod.annotations[k] = v;
        }
        this.publishedMaster(); // throws on two masters
        return { ok: true };
      },
    };
    const applied = await applyPlan({ steps } as Pick<Plan, 'steps'> as Plan, io, { canAct: () => true, now: () => performance.now() });
    return applied.outcomes.map((o) => (o.result === 'ok' ? o.line : `FAILED ${o.line}`));
  }

  /** Background probe loops (one per pod) and a decide loop, like the real manager. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    for (const pod of this.pods) this.#loops.push(this.#probeLoop(pod));
    this.#loops.push(this.#decideLoop());
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
    this.#loops = [];
  }

  close(): void {
    this.adapter.close();
  }

  async #probeLoop(pod: FakePod): Promise<void> {
    if (this.#probing.has(pod.name)) return;
    this.#probing.add(pod.name);
    try {
      while (this.#running && this.pods.includes(pod)) {
        const started = performance.now();
        await this.probe(pod);
        const left = this.probeIntervalMs - (performance.now() - started);
        if (left > 0) await new Promise((r) => setTimeout(r, left));
      }
    } finally {
      this.#probing.delete(pod.name);
    }
  }

  async #decideLoop(): Promise<void> {
    while (this.#running) {
      await this.tick();
      await new Promise((r) => setTimeout(r, this.tickIntervalMs));
    }
  }

  /** First decision at or after `since` matching `pred`. */
  firstDecision(since: number, pred: (d: Decision) => boolean): Decision | undefined {
    return this.decisions.find((d) => d.at >= since && pred(d));
  }
}

export async function waitUntil<T>(
  what: string,
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  timeoutMs = 15000,
  everyMs = 20,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== null && v !== false) return v;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function redisClient(ip: string): Redis {
  const c = new Redis({
    host: ip,
    port: 6379,
    password: TEST_PASSWORD,
    lazyConnect: true,
    enableReadyCheck: false,
    disableClientInfo: true,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
    connectTimeout: 500,
    commandTimeout: 1500,
    // Closing a connection to a hung node: do not wait for its FIN (ioredis' default is 2 s).
    disconnectTimeout: 1,
  });
  c.on('error', () => {});
  return c;
}

/**
 * A client writing SET + WAIT 1 through the address the manager publishes (the pod labelled
 * master), as an application behind the master Service would.
 */
export class Writer extends AckedWriter {
  readonly manager: MiniManager;

  constructor(manager: MiniManager, prefix = 'w') {
    super({
      target: () => {
        const ip = manager.publishedMaster()?.ip ?? null;
        return ip ? { ip, via: ip } : null;
      },
      connect: (ip) => redisClient(ip),
      prefix,
      followEveryMs: 10,
    });
    this.manager = manager;
  }
}

/** Keys among `keys` missing on the node at ip. */
export async function missingKeys(ip: string, keys: string[]): Promise<string[]> {
  const c = redisClient(ip);
  await c.connect();
  try {
    return await missingKeysOn(c, keys);
  } finally {
    c.disconnect();
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Asserts every node holds every key, after giving replication up to `graceMs` to deliver: a
 * node reports its link up while it may still be loading its full sync, so an immediate read
 * can miss keys it receives a moment later. A key still missing after that is a lost write.
 */
export async function assertAllHold(pods: ReadonlyArray<{ name: string; ip: string | null }>, keys: string[], graceMs = 10000): Promise<void> {
  await waitUntil(
    'every node caught up',
    async () => {
      for (const p of pods) if ((await missingKeys(p.ip!, keys)).length > 0) return false;
      return true;
    },
    graceMs,
    200,
  ).catch(() => undefined);
  for (const p of pods) assert.deepEqual(await missingKeys(p.ip!, keys), [], `${p.name} holds every acknowledged write (${keys.length})`);
}

/**
 * The three-node set most tests start from: master-0, replica-0, replica-1 as real redis-server
 * processes on 127.0.<octet>.<first..first+2>, registered with a MiniManager (not yet started).
 * Full syncs start at once (no diskless delay) so rejoins do not dominate the figures.
 */
export async function threeNodeSet(
  t: TestContext,
  octet: number,
  first: number,
  options: Omit<ConstructorParameters<typeof MiniManager>[0], 'name'> & { name?: string },
): Promise<{ m: MiniManager; servers: RedisServer[] }> {
  const m = new MiniManager({ name: 'cache', ...options });
  t.after(() => m.close());
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(octet, first + i), extra: { 'repl-diskless-sync-delay': '0' } })));
  m.addPod('master-0', servers[0]!);
  m.addPod('replica-0', servers[1]!);
  m.addPod('replica-1', servers[2]!);
  return { m, servers };
}
