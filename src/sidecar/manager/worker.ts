// One Redis resource's worker: its own probe loop per pod, its own decide-and-apply loop, its own
// Redis connections and password. Nothing here is shared with another Redis' worker, so a broken
// or slow Redis (pods that hang, a Secret that is missing) never stalls another.
// Invariants:
// - Only the leader writes: leader.isLeader() is checked right before every Redis write, every
//   label patch, every Secret creation and every Event. Standbys probe and plan (so a new leader
//   starts with warm tracks: the old master's history, the replicas' testimony) but never act.
// - Steps are applied in the order plan() returns them (decide/plan.ts); a failed critical step
//   stops the round, and the next round plans again from fresh probes.
// - One track per pod UID: a pod recreated under the same name starts afresh. A probe that
//   started before the one already folded is discarded (it would put stale facts back).
// - After a Redis write the written pods are probed again before the next plan, so the plan never
//   acts twice on facts that predate its own write.
// - Every I/O is bounded: Redis calls by the adapter's timeouts, API calls by the client's.
import { performance } from 'node:perf_hooks';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ROLE_LABEL, ROLE_MASTER } from '../../api/labels.ts';
import type { RedisObject, RedisSpec } from '../../api/schema.ts';
import { formatProblems, validateSpec } from '../../api/validate.ts';
import type { ManagerTiming } from '../config.ts';
import { currentFacts, decideMaster, plan, track } from '../decide/index.ts';
import type { DecideConfig, DecideInput, MasterDecision, Plan, PodObservation, RedisTrack, SpecView, Step } from '../decide/index.ts';
import { isReplaced, kubeFailure, type GeneratedSecret, type RedisRef } from '../kube/client.ts';
import type { SidecarMetrics } from '../metrics.ts';
import { RedisAdapter, type ProbeResult, type RedisFacts } from '../redis/index.ts';
import { EventMemory, isFailover, type EventToSend } from './events.ts';
import { authSource, belongsTo, decideConfig, observation, podView, specView, type Overlay, type PodView } from './pods.ts';

/** The Kubernetes calls a worker makes (KubeClient implements them). */
export interface KubeWriter {
  patchPodMetadata(namespace: string, name: string, changes: { labels?: Record<string, string | null>; annotations?: Record<string, string | null>; uid?: string }): Promise<V1Pod>;
  emitEvent(redis: RedisRef, type: 'Normal' | 'Warning', reason: string, message: string): Promise<boolean>;
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  ensureAuthSecret(redis: RedisRef & { uid: string }): Promise<GeneratedSecret>;
}

export interface LeaderView {
  isLeader(): boolean;
}

/** Test seams: called around every step the leader applies (after its leader check). */
export interface ManagerHooks {
  beforeStep?(redis: RedisRef, step: Step): void | Promise<void>;
  afterStep?(redis: RedisRef, step: Step, ok: boolean): void | Promise<void>;
}

export interface WorkerOptions {
  namespace: string;
  name: string;
  kube: KubeWriter;
  leader: LeaderView;
  logger: Logger;
  metrics: SidecarMetrics;
  timing: ManagerTiming;
  /** The pods the informer holds (any Redis); the worker keeps its own. */
  pods: () => V1Pod[];
  redisLocalAddress?: string | undefined;
  hooks?: ManagerHooks | undefined;
}

interface ProbeLoop {
  stopped: boolean;
  done: Promise<void>;
}

/** What one apply round did. */
interface Applied {
  /** UIDs of pods that received a Redis write, successful or not (probed again before the next plan). */
  wrote: Set<string>;
  /** Some Redis write succeeded: the next round runs at once (after the re-probe). */
  changed: boolean;
  lines: string[];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function digest(facts: RedisFacts | null): string {
  if (!facts) return 'none';
  const r = facts.replication;
  return `${r.role}|${r.masterHost}|${r.masterLinkStatus}|${facts.loading}`;
}

export class RedisWorker {
  readonly namespace: string;
  readonly name: string;
  readonly ref: RedisRef;
  /** The latest plan (for tests and debugging). */
  lastPlan: Plan | null = null;
  readonly memory = new EventMemory();
  readonly #o: WorkerOptions;
  readonly #log: Logger;
  readonly #tracks = new Map<string, RedisTrack>();
  readonly #foldedStart = new Map<string, number>();
  readonly #loops = new Map<string, ProbeLoop>();
  readonly #views = new Map<string, PodView>();
  readonly #overlays = new Map<string, Overlay>();
  readonly #pending = new Set<Promise<unknown>>();
  #object: RedisObject | null = null;
  #spec: RedisSpec | null = null;
  #specView: SpecView | null = null;
  #config: DecideConfig | null = null;
  #adapter: RedisAdapter;
  /** The previous password, kept after a Secret change to reach nodes still running with it. */
  #fallback: { password: string; adapter: RedisAdapter } | null = null;
  /** Pods that answered only the previous password: the leader moves them to the new one. */
  readonly #oldPassword = new Set<string>();
  #password: string | undefined;
  #passwordAt = -Infinity;
  #passwordAttemptAt = -Infinity;
  #passwordLoad: Promise<void> | null = null;
  #authFailed = false;
  #running = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #woken = false;
  #decisionKey = '';
  #knownPodNames = new Set<string>();

  constructor(options: WorkerOptions) {
    this.#o = options;
    this.namespace = options.namespace;
    this.name = options.name;
    this.ref = { namespace: options.namespace, name: options.name };
    this.#log = options.logger.child({ namespace: options.namespace, name: options.name });
    this.#adapter = this.#newAdapter(undefined);
  }

  #newAdapter(password: string | undefined): RedisAdapter {
    return new RedisAdapter({
      password,
      localAddress: this.#o.redisLocalAddress,
      timeouts: { connectTimeoutMs: this.#o.timing.redisConnectTimeoutMs, commandTimeoutMs: this.#o.timing.redisCommandTimeoutMs },
      connectionName: 'redis-operator-sidecar',
    });
  }

  /** The Redis object changed (or appeared): re-validate its spec. */
  update(object: RedisObject): void {
    const uid = object.metadata.uid;
    this.#object = object;
    if (uid) this.ref.uid = uid;
    const verdict = validateSpec(this.name, object.spec);
    if (!verdict.ok) {
      const text = formatProblems(verdict.problems);
      this.#spec = null;
      this.#specView = null;
      this.#config = null;
      this.#o.metrics.specValid.set({ namespace: this.namespace, redis: this.name }, 0);
      if (this.memory.specProblems !== text) {
        this.memory.specProblems = text;
        this.#log.warn({ problems: verdict.problems }, 'invalid spec: this Redis is left alone until it is fixed');
      }
      this.wake();
      return;
    }
    const before = this.#spec ? authSource(this.name, this.#spec) : null;
    this.#spec = verdict.spec;
    this.#specView = specView(verdict.spec);
    this.#config = decideConfig(verdict.spec, this.#o.timing);
    this.#o.metrics.specValid.set({ namespace: this.namespace, redis: this.name }, 1);
    if (this.memory.specProblems !== null) this.#log.info('spec is valid again');
    this.memory.specProblems = null;
    this.memory.specProblemsTold = null;
    const after = authSource(this.name, verdict.spec);
    if (before && (before.secretName !== after.secretName || before.key !== after.key)) this.#passwordAt = -Infinity;
    this.wake();
  }

  /** Something changed (a pod event, leadership): plan again now. */
  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  /** Stops every loop and closes the Redis connections. A round stuck in a hook is abandoned after 2 s. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    const loops = [...this.#loops.values()];
    for (const l of loops) l.stopped = true;
    await Promise.race([Promise.all([this.#loop, ...loops.map((l) => l.done)]), sleep(2000)]);
    await Promise.race([Promise.allSettled([...this.#pending]), sleep(1000)]);
    this.#adapter.close();
    this.#fallback?.adapter.close();
    for (const pod of this.#knownPodNames) this.#o.metrics.forgetPod(this.namespace, this.name, pod);
    this.#o.metrics.forgetRedis(this.namespace, this.name);
  }

  /** The track of a pod by name (tests). */
  trackOf(podName: string): RedisTrack | undefined {
    for (const [uid, v] of this.#views) if (v.name === podName) return this.#tracks.get(uid);
    return undefined;
  }

  // ---------------------------------------------------------------- loops

  async #run(): Promise<void> {
    // Rounds that changed Redis follow each other at once (the next one acts on fresh probes),
    // but never more than a few in a row: a node that accepts a command and never shows its
    // effect must not turn this into a busy loop.
    let immediate = 0;
    while (this.#running) {
      let again = false;
      this.#woken = false;
      try {
        again = await this.#tick();
      } catch (err) {
        this.#log.error({ err: err instanceof Error ? err.stack : String(err) }, 'reconcile round failed');
      }
      if (!this.#running) break;
      immediate = again ? immediate + 1 : 0;
      if (again && immediate <= 3) continue;
      if (!this.#woken || immediate > 3) await this.#sleep(this.#nextRoundInMs(performance.now()));
      if (immediate > 3) immediate = 0;
    }
  }

  /**
   * The next round runs after tickIntervalMs, or just after the moment a threshold of the
   * decision is crossed if that comes sooner (a silent master reaching downAfterMilliseconds, a
   * replica's testimony reaching witnessConfirmMs), so the decision is not late by up to a tick.
   */
  #nextRoundInMs(now: number): number {
    let soonest = this.#o.timing.tickIntervalMs;
    const config = this.#config;
    if (!config) return soonest;
    const consider = (at: number) => {
      if (at > now) soonest = Math.min(soonest, at - now + 1);
    };
    for (const t of this.#tracks.values()) {
      if (t.failingSince !== null) consider((t.okAt ?? t.firstSeenAt) + config.downAfterMs);
      if (t.witnessDownSince !== null) consider(t.witnessDownSince + config.witnessConfirmMs);
    }
    return soonest;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.#wake === done) self.#wake = null;
        resolve();
      }
      this.#wake = done;
    });
  }

  /** Starts a probe loop for every pod with a UID, stops those of pods that are gone. */
  #syncPods(): PodView[] {
    const views: PodView[] = [];
    for (const pod of this.#o.pods()) {
      if (!belongsTo(pod, this.namespace, this.name)) continue;
      const v = podView(pod);
      if (v) views.push(v);
    }
    views.sort((a, b) => a.name.localeCompare(b.name));
    const uids = new Set(views.map((v) => v.uid));
    this.#views.clear();
    for (const v of views) this.#views.set(v.uid, v);
    for (const [uid, loop] of this.#loops) {
      if (uids.has(uid)) continue;
      loop.stopped = true;
      this.#loops.delete(uid);
      this.#tracks.delete(uid);
      this.#foldedStart.delete(uid);
      this.#overlays.delete(uid);
      this.#oldPassword.delete(uid);
    }
    for (const v of views) {
      if (this.#loops.has(v.uid)) continue;
      const loop: ProbeLoop = { stopped: false, done: Promise.resolve() };
      loop.done = this.#probeLoop(v.uid, loop);
      this.#loops.set(v.uid, loop);
    }
    const names = new Set(views.map((v) => v.name));
    for (const old of this.#knownPodNames) {
      if (names.has(old)) continue;
      this.#o.metrics.forgetPod(this.namespace, this.name, old);
      this.memory.forgetPod(old);
    }
    this.#knownPodNames = names;
    // Connections to addresses no pod has any more (a pod got a new IP, or went away).
    const endpoints = views.filter((v) => v.ip).map((v) => ({ host: v.ip!, port: 6379 }));
    this.#adapter.retain(endpoints);
    this.#fallback?.adapter.retain(endpoints);
    return views;
  }

  async #probeLoop(uid: string, loop: ProbeLoop): Promise<void> {
    while (this.#running && !loop.stopped) {
      const started = performance.now();
      if (this.#password !== undefined) await this.#probe(uid);
      const left = this.#o.timing.probeIntervalMs - (performance.now() - started);
      if (left > 0) await sleep(left);
    }
  }

  /** Probes the pod's Redis at its current IP and folds the result into its track. */
  async #probe(uid: string): Promise<void> {
    const view = this.#views.get(uid);
    // After stop() the pools are closed: a late probe must not open a new connection.
    if (!view?.ip || !this.#running) return;
    const ip = view.ip;
    const endpoint = { host: ip, port: 6379 };
    const started = performance.now();
    let result: ProbeResult = await this.#adapter.probe(endpoint);
    if (!result.ok && result.error.kind === 'auth') {
      // The password in the Secret changed and this node still runs with the previous one, or
      // the Secret changed and we have not read it yet.
      this.#authFailed = true;
      const fb = this.#fallback;
      if (fb && this.#running) {
        const old = await fb.adapter.probe(endpoint);
        if (old.ok) {
          result = old;
          this.#oldPassword.add(uid);
        }
      }
    } else if (result.ok) {
      this.#oldPassword.delete(uid);
    }
    this.#fold(uid, ip, result, started);
  }

  #fold(uid: string, ip: string, result: ProbeResult, started: number): void {
    if (!this.#loops.has(uid)) return;
    const last = this.#foldedStart.get(uid);
    if (last !== undefined && started < last) return;
    this.#foldedStart.set(uid, started);
    const prev = this.#tracks.get(uid);
    const config = this.#config ?? { silentAfterSeconds: 2 };
    const next = track(prev, ip, result, performance.now(), config);
    this.#tracks.set(uid, next);
    // A change that matters (answering or not, role, link): plan now rather than at the next tick.
    const changed = !prev || prev.ip !== ip || (prev.lastError === null) !== (next.lastError === null) || digest(prev.facts) !== digest(next.facts);
    if (changed) this.wake();
  }

  // ---------------------------------------------------------------- one round

  /** Returns true when the next round should run at once (Redis writes were made). */
  async #tick(): Promise<boolean> {
    const views = this.#syncPods();
    if (!this.#spec || !this.#specView || !this.#config) {
      // Told once per distinct problem list, by the leader (a standby's Event would be lost).
      const problems = this.memory.specProblems;
      if (problems !== null && this.memory.specProblemsTold !== problems && this.#o.leader.isLeader()) {
        this.memory.specProblemsTold = problems;
        this.#event({ type: 'Warning', reason: 'InvalidSpec', message: `the replication manager leaves this Redis alone until the spec is fixed: ${problems}` });
      }
      return false;
    }
    if (!(await this.#ensurePassword())) return false;
    const now = performance.now();
    const pods: PodObservation[] = views.map((v) => observation(v, this.#tracks.get(v.uid) ?? null, this.#overlays.get(v.uid)));
    const input: DecideInput = { name: this.name, spec: this.#specView, pods, now, config: this.#config };
    const p = plan(input);
    this.lastPlan = p;
    this.#metrics(input, p);
    this.#logDecision(p.decision);
    if (!this.#o.leader.isLeader()) return false;

    const { health } = decideMaster(input);
    const blocked = this.memory.noteDecision(p.decision, health, this.#config);
    if (blocked) {
      this.#log.warn({ reason: p.decision.reason }, 'failover blocked');
      this.#event(blocked);
    }
    const rotated = await this.#rotatePasswords(views);
    if (p.steps.length === 0) {
      if (rotated.size === 0) return false;
      await this.#reprobe(rotated);
      return true;
    }

    const d = p.decision;
    if (isFailover(d)) {
      const old = views.find((v) => v.name === d.previous);
      const t = old ? this.#tracks.get(old.uid) : undefined;
      const started = this.memory.startFailover(d, now, t?.failingSince ?? null);
      if (started) {
        this.#log.warn({ from: d.previous, to: d.master, cause: d.cause, reason: d.reason }, 'failover started');
        this.#event(started);
      }
    }
    const applied = await this.#apply(p, views);
    for (const uid of rotated) applied.wrote.add(uid);
    if (rotated.size > 0) applied.changed = true;
    if (applied.lines.length > 0) this.#log.info({ decision: p.decision.kind, master: p.master?.pod ?? null, steps: applied.lines }, 'applied');
    if (applied.wrote.size === 0) return false;
    await this.#reprobe(applied.wrote);
    return applied.changed;
  }

  async #reprobe(uids: Set<string>): Promise<void> {
    await Promise.all([...uids].map((uid) => this.#probe(uid)));
  }

  async #apply(p: Plan, views: PodView[]): Promise<Applied> {
    const applied: Applied = { wrote: new Set(), changed: false, lines: [] };
    const steps = p.steps;
    let i = 0;
    while (i < steps.length) {
      const step = steps[i]!;
      if (step.kind === 'replicaof' && !step.demote) {
        // Re-pointing replicas: independent of each other, so in parallel.
        const batch: Step[] = [];
        while (i < steps.length && steps[i]!.kind === 'replicaof' && !(steps[i] as Extract<Step, { kind: 'replicaof' }>).demote) batch.push(steps[i++]!);
        const results = await Promise.all(batch.map((s) => this.#step(s, p, views, applied)));
        if (results.includes('not-leader')) return applied;
        continue;
      }
      const outcome = await this.#step(step, p, views, applied);
      if (outcome === 'not-leader') return applied;
      if (outcome === 'failed' && step.critical) {
        this.#log.warn({ step: step.kind, pod: step.pod, reason: step.reason }, 'a critical step failed: stopping this round, planning again from fresh probes');
        return applied;
      }
      i++;
    }
    return applied;
  }

  async #step(step: Step, p: Plan, views: PodView[], applied: Applied): Promise<'ok' | 'failed' | 'not-leader'> {
    if (!this.#o.leader.isLeader()) return 'not-leader';
    await this.#o.hooks?.beforeStep?.(this.ref, step);
    // The hook may have waited: check again right before the write.
    if (!this.#o.leader.isLeader() || !this.#running) return 'not-leader';
    const view = views.find((v) => v.name === step.pod);
    const started = performance.now();
    let ok = false;
    let line = '';
    switch (step.kind) {
      case 'promote': {
        const r = await this.#adapter.replicaOf(step.endpoint, null);
        ok = r.ok;
        line = `promote ${step.pod}${r.ok ? '' : `: ${r.error.kind} ${r.error.message}`}`;
        if (view) applied.wrote.add(view.uid);
        break;
      }
      case 'switchover': {
        const r = await this.#adapter.switchover(step.from.endpoint, step.endpoint);
        ok = r.ok;
        line = `switchover ${step.from.pod} -> ${step.pod} (${Math.round(r.ms)} ms)${r.ok ? '' : `: ${r.phase}: ${r.error.message}`}`;
        if (view) applied.wrote.add(view.uid);
        const from = views.find((v) => v.name === step.from.pod);
        if (from) applied.wrote.add(from.uid);
        if (r.ok) this.#event({ type: 'Normal', reason: 'Switchover', message: `planned switchover from ${step.from.pod} to ${step.pod} in ${Math.round(r.ms)} ms, no write lost (offset ${r.offset}): ${step.reason}` });
        break;
      }
      case 'replicaof': {
        const r = await this.#adapter.replicaOf(step.endpoint, step.master);
        ok = r.ok;
        line = `${step.demote ? 'demote' : 'replicaof'} ${step.pod} -> ${step.master.host}${r.ok ? '' : `: ${r.error.kind} ${r.error.message}`}`;
        if (view) applied.wrote.add(view.uid);
        if (r.ok && p.master) {
          const e = this.memory.repoint(step.pod, p.master.pod, step.master.host, step.demote);
          if (e) this.#event(e);
        }
        break;
      }
      case 'config': {
        const r = await this.#adapter.configSet(step.endpoint, step.settings);
        ok = r.ok;
        line = `config ${step.pod} ${Object.entries(step.settings).map(([k, v]) => `${k}=${v}`).join(' ')}${r.ok ? '' : `: ${r.error.kind} ${r.error.message}`}`;
        if (view) applied.wrote.add(view.uid);
        break;
      }
      case 'label': {
        const r = await this.#label(step, view);
        ok = r.ok;
        line = `label ${step.pod} ${JSON.stringify(step.patch.metadata)}${r.ok ? (r.gone ? ' (pod gone)' : '') : `: ${r.message}`}`;
        if (ok && step.patch.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER) this.#masterLabelled(step.pod, p);
        break;
      }
    }
    if (ok && step.kind !== 'label') applied.changed = true;
    this.#o.metrics.steps.inc({ namespace: this.namespace, redis: this.name, kind: step.kind, outcome: ok ? 'ok' : 'failed' });
    line += ` [${Math.round(performance.now() - started)} ms]`;
    applied.lines.push(ok ? line : `FAILED ${line}`);
    if (!ok) this.#log.warn({ step: step.kind, pod: step.pod, detail: line, reason: step.reason }, 'step failed');
    await this.#o.hooks?.afterStep?.(this.ref, step, ok);
    return ok ? 'ok' : 'failed';
  }

  async #label(step: Extract<Step, { kind: 'label' }>, view: PodView | undefined): Promise<{ ok: boolean; gone?: boolean; message?: string }> {
    try {
      const changes = { ...step.patch.metadata, ...(view ? { uid: view.uid } : {}) };
      const updated = await this.#o.kube.patchPodMetadata(this.namespace, step.pod, changes);
      const uid = updated.metadata?.uid;
      if (uid) {
        this.#overlays.set(uid, {
          resourceVersion: updated.metadata?.resourceVersion ?? '',
          labels: { ...(updated.metadata?.labels ?? {}) },
          annotations: { ...(updated.metadata?.annotations ?? {}) },
        });
      }
      return { ok: true };
    } catch (err) {
      const f = kubeFailure(err);
      // The pod is gone (404), or recreated under its name (the uid precondition failed): nothing
      // carries the label any more, which is what taking it away wanted; giving it is replanned
      // from the next pod list.
      const replaced = isReplaced(err);
      if (f.code === 404 || replaced) return { ok: step.patch.metadata.labels?.[ROLE_LABEL] !== ROLE_MASTER, gone: true, message: replaced ? 'pod replaced' : 'pod gone' };
      return { ok: false, message: `${f.code ?? 'no answer'} ${f.reason ?? ''} ${f.message}`.trim() };
    }
  }

  /** The master label landed: the end of a bootstrap, a failover or a switchover. */
  #masterLabelled(pod: string, p: Plan): void {
    const now = performance.now();
    const done = this.memory.completeFailover(pod, now);
    if (done) {
      const labels = { namespace: this.namespace, redis: this.name };
      this.#o.metrics.failovers.inc(labels);
      this.#o.metrics.lastFailoverDuration.set(labels, done.durationMs / 1000);
      this.#log.warn({ from: done.episode.previous, to: pod, durationMs: done.durationMs }, 'failover completed');
      this.#event(done.event);
      return;
    }
    const d = p.decision;
    if (d.kind === 'promote' && d.previous === null) {
      this.#log.info({ master: pod, reason: d.reason }, 'bootstrap: master chosen');
      this.#event({ type: 'Normal', reason: 'Bootstrap', message: `${pod} is the master: ${d.reason}` });
    }
  }

  // ---------------------------------------------------------------- auth

  /** True when a password is known; loads it (or creates the generated Secret, as leader) when not. */
  async #ensurePassword(): Promise<boolean> {
    const now = performance.now();
    const due = now - this.#passwordAt > this.#o.timing.secretRefreshMs || (this.#authFailed && now - this.#passwordAttemptAt > 1000);
    if (this.#password !== undefined) {
      if (due && !this.#passwordLoad) this.#startPasswordLoad();
      return true;
    }
    if (!this.#passwordLoad && now - this.#passwordAttemptAt > 1000) this.#startPasswordLoad();
    if (this.#passwordLoad) await this.#passwordLoad;
    return this.#password !== undefined;
  }

  #startPasswordLoad(): void {
    this.#passwordAttemptAt = performance.now();
    this.#authFailed = false;
    this.#passwordLoad = this.#loadPassword()
      .catch((err: unknown) => {
        const f = kubeFailure(err);
        this.#log.warn({ code: f.code, err: f.message }, 'could not read the auth secret');
      })
      .finally(() => {
        this.#passwordLoad = null;
      });
  }

  async #loadPassword(): Promise<void> {
    const spec = this.#spec;
    if (!spec) return;
    const src = authSource(this.name, spec);
    let value: string | null;
    if (src.generated && this.#o.leader.isLeader() && this.ref.uid) {
      const r = await this.#o.kube.ensureAuthSecret({ namespace: this.namespace, name: this.name, uid: this.ref.uid });
      if (r.created) this.#log.info({ secret: src.secretName }, 'created the generated auth secret (random password, owned by the Redis)');
      value = r.password;
    } else {
      value = await this.#o.kube.readSecretValue(this.namespace, src.secretName, src.key);
    }
    if (value === null) {
      const problem = `secret ${src.secretName} (key ${src.key}) not found${src.generated ? ' (it is created by the leader)' : ''}`;
      if (this.memory.authProblem !== problem) {
        this.memory.authProblem = problem;
        this.#log.warn({ secret: src.secretName, key: src.key }, 'auth secret missing: waiting for it');
      }
      if (!src.generated && this.memory.authProblemTold !== problem && this.#o.leader.isLeader()) {
        this.memory.authProblemTold = problem;
        this.#event({ type: 'Warning', reason: 'AuthSecretMissing', message: `${problem}: the pods cannot start and the manager cannot reach Redis until it exists` });
      }
      return;
    }
    this.memory.authProblem = null;
    this.memory.authProblemTold = null;
    this.#passwordAt = performance.now();
    if (value === this.#password) return;
    const previous = this.#password;
    this.#password = value;
    if (previous !== undefined) {
      // Rotation: running nodes keep the password they started with (the pods read it from env);
      // keep reaching them with the previous one until the leader moved them to the new one.
      this.#fallback?.adapter.close();
      this.#fallback = { password: previous, adapter: this.#newAdapter(previous) };
      this.#log.warn('the auth secret changed: moving running nodes to the new password');
    }
    this.#adapter.setPassword(value);
  }

  /**
   * Nodes that still run with the previous password get the new one (requirepass for clients,
   * masterauth for their replication link), so replication survives the rotation and pods
   * started later (which read the new password from env) can follow them.
   */
  async #rotatePasswords(views: PodView[]): Promise<Set<string>> {
    const fb = this.#fallback;
    const wrote = new Set<string>();
    if (!fb || this.#oldPassword.size === 0 || this.#password === undefined) return wrote;
    const password = this.#password;
    await Promise.all(
      views
        .filter((v) => this.#oldPassword.has(v.uid) && v.ip)
        .map(async (v) => {
          if (!this.#o.leader.isLeader()) return;
          const r = await fb.adapter.configSet({ host: v.ip!, port: 6379 }, { masterauth: password, requirepass: password });
          if (r.ok) {
            wrote.add(v.uid);
            this.#oldPassword.delete(v.uid);
            this.#log.info({ pod: v.name }, 'moved a running node to the new password');
            this.#event({ type: 'Normal', reason: 'PasswordRotated', message: `${v.name} now uses the password from the auth secret (requirepass and masterauth set at runtime)` });
          } else {
            this.#log.warn({ pod: v.name, err: r.error.message }, 'could not move a node to the new password');
          }
        }),
    );
    return wrote;
  }

  // ---------------------------------------------------------------- telling

  #event(e: EventToSend): void {
    if (!this.#o.leader.isLeader()) return;
    const p = this.#o.kube.emitEvent(this.ref, e.type, e.reason, e.message);
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  #logDecision(d: MasterDecision): void {
    const key = d.kind === 'promote' ? `promote/${d.cause}/${d.master}/${d.previous}` : d.kind === 'switchover' ? `switchover/${d.from}/${d.master}` : `${d.kind}/${d.master}`;
    if (key === this.#decisionKey) return;
    this.#decisionKey = key;
    const fields = { decision: d.kind, master: d.master, reason: d.reason, leader: this.#o.leader.isLeader() };
    if (d.kind === 'keep') this.#log.info(fields, 'decision');
    else this.#log.warn(fields, 'decision');
  }

  #metrics(input: DecideInput, p: Plan): void {
    const m = this.#o.metrics;
    const masterIp = p.master?.endpoint.host ?? null;
    const masterPod = p.master ? input.pods.find((x) => x.name === p.master!.pod) : undefined;
    const masterFacts = masterPod ? currentFacts(masterPod, input.now, input.config) : null;
    const masterOffset = masterFacts?.replication.role === 'master' ? masterFacts.replication.masterReplOffset : null;
    for (const pod of input.pods) {
      const labels = { namespace: this.namespace, redis: this.name, pod: pod.name };
      const facts = currentFacts(pod, input.now, input.config);
      m.podUp.set(labels, facts ? 1 : 0);
      if (!facts) {
        m.podLinkUp.set(labels, 0);
        continue;
      }
      const r = facts.replication;
      m.podRole.set(labels, r.role === 'master' ? 1 : 0);
      const linked = r.role === 'replica' && r.masterHost === masterIp && r.masterLinkStatus === 'up';
      m.podLinkUp.set(labels, (r.role === 'master' && pod.name === p.master?.pod) || linked ? 1 : 0);
      if (linked && masterOffset !== null && r.slaveReplOffset !== null) m.replicationLag.set(labels, Math.max(0, masterOffset - r.slaveReplOffset));
      else m.replicationLag.remove(labels);
    }
  }
}
