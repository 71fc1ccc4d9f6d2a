// One Redis resource's worker: the loop that plans and applies, over the parts that do the work:
// probes (probes.ts), the credentials (credentials.ts), the steps (steps.ts) and the failure policy
// (core/failure-policy.ts). Nothing here is shared with another Redis' worker, so a broken or slow
// Redis (pods that hang, a Secret that is missing) never stalls another.
// Invariants:
// - Only the leader writes: leader.isLeader() is checked right before every Redis write, every
//   label patch, every Secret creation and every Event. Standbys probe and plan (so a new leader
//   starts with warm tracks: the old master's history, the replicas' testimony) but never act.
// - After a Redis write the written pods are probed again before the next plan, so the plan never
//   acts twice on facts that predate its own write.
// - A step that keeps failing is told once per episode (a log line and a StepFailed Event), backs
//   off on its own, and its recovery is logged (core/failure-policy.ts).
// - Every I/O is bounded: Redis calls by the adapter's timeouts, API calls by the client's.
// - Time comes from options.now and options.sleep (performance.now and setTimeout by default),
//   so the timing logic runs under fake timers in tests.
import { performance } from 'node:perf_hooks';
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { compareCodeUnits } from '../../../api/order.ts';
import { REDIS_PORT, ROLE_MASTER } from '../../../api/labels.ts';
import { backupEvents, type BackupMemory } from '../decide/backups.ts';
import { redisSecretUses, secretNeeds } from '../../../api/secret-report.ts';
import type { RedisObject } from '../../../api/schema.ts';
import { formatProblems, validateSpec } from '../../../api/validate.ts';
import type { ManagerTiming } from '../../config.ts';
import { DEFAULT_DECIDE_CONFIG, currentFacts, decideMaster, planRound } from '../decide/index.ts';
import type { DecideConfig, DecideInput, RoundPlan, PodObservation, RedisTrack, SpecView, Step } from '../decide/index.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import type { SidecarMetrics } from '../../metrics.ts';
import { RedisAdapter } from '../../adapters/redis/index.ts';
import { ExporterUser } from '../../core/exporter-user.ts';
import { EventMemory, isFailover, type EventToSend } from './events.ts';
import { applyRedisSteps, redisStepKey, type StepIO } from './steps.ts';
import { PodLabels } from './labels.ts';
import type { KubeWriter, LeaderView, ManagerHooks } from './types.ts';
import { FailurePolicy, type FailurePolicyConfig } from '../../core/failure-policy.ts';
import { RedisCredentials } from './credentials.ts';
import { belongsTo, decideConfig, observation, podView, specView, type PodView } from './pods.ts';
import { ProbeScheduler } from './probes.ts';
import { atRest, nextRoundInMs } from './schedule.ts';
import { RedisReporter } from './reporter.ts';
import { createDay2, type Day2 } from './day2-wiring.ts';
import { SecretReporter } from '../../core/secret-report.ts';
import type { KubeClient } from '../../adapters/kube/client.ts';
import { BootstrapWatch, type BootstrapKube } from './bootstrap.ts';

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
  /** The StatefulSets the informer holds (any Redis): their update revision drives rollouts. */
  statefulSets?: (() => V1StatefulSet[]) | undefined;
  redisLocalAddress?: string | undefined;
  hooks?: ManagerHooks | undefined;
  failurePolicy?: FailurePolicyConfig | undefined;
  /** Monotonic ms (default performance.now). */
  now?: (() => number) | undefined;
  /** Waits ms (default setTimeout). */
  sleep?: ((ms: number) => Promise<void>) | undefined;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export type { KubeWriter, LeaderView, ManagerHooks } from './types.ts';

export class RedisWorker {
  readonly namespace: string;
  readonly name: string;
  readonly ref: RedisRef;
  /** The latest plan (for tests and debugging). */
  lastPlan: RoundPlan | null = null;
  readonly memory = new EventMemory();
  /** What status.backup said when last seen: its news become Events (decide/backups.ts). */
  #backups: BackupMemory | null = null;
  readonly failures: FailurePolicy<Step>;
  readonly #o: WorkerOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #sleepFor: (ms: number) => Promise<void>;
  readonly #views = new Map<string, PodView>();
  readonly #labels: PodLabels;
  readonly #pending = new Set<Promise<unknown>>();
  #lostProbe: Promise<void> | null = null;
  readonly #auth: RedisCredentials;
  readonly #probes: ProbeScheduler;
  readonly #report: RedisReporter;
  readonly #day2: Day2;
  readonly #exporterUser: ExporterUser;
  #exporterOn = false;
  readonly #secrets: SecretReporter;
  readonly #boot: BootstrapWatch;
  #specView: SpecView | null = null;
  #config: DecideConfig | null = null;
  #running = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #woken = false;
  #knownPodNames = new Set<string>();
  /** Last time something stirred this Redis (see atRest in schedule.ts). */
  #stirredAt = -Infinity;

  constructor(options: WorkerOptions) {
    this.#o = options;
    this.namespace = options.namespace;
    this.name = options.name;
    this.ref = { namespace: options.namespace, name: options.name };
    this.#log = options.logger.child({ namespace: options.namespace, name: options.name });
    this.#now = options.now ?? (() => performance.now());
    this.#sleepFor = options.sleep ?? defaultSleep;
    this.failures = new FailurePolicy(redisStepKey, options.failurePolicy);
    this.#labels = new PodLabels(options.kube, options.namespace);
    this.#report = new RedisReporter({
      ref: this.ref,
      log: this.#log,
      metrics: options.metrics,
      memory: this.memory,
      isLeader: () => options.leader.isLeader(),
      emit: (e) => this.#event(e),
      now: this.#now,
    });
    this.#auth = new RedisCredentials({
      ref: this.ref,
      kube: options.kube,
      isLeader: () => options.leader.isLeader(),
      log: this.#log,
      memory: this.memory,
      event: (e) => this.#event(e),
      newAdapter: (username, password) =>
        new RedisAdapter({
          username,
          password,
          localAddress: options.redisLocalAddress,
          timeouts: { connectTimeoutMs: options.timing.redisConnectTimeoutMs, commandTimeoutMs: options.timing.redisCommandTimeoutMs },
          connectionName: 'redis-operator-sidecar',
          // The node closed our connection (its process died, most likely): look now.
          onLost: () => this.#lost(),
        }),
      secretRefreshMs: options.timing.secretRefreshMs,
      now: this.#now,
    });
    this.#day2 = createDay2({
      ref: this.ref,
      log: this.#log,
      kube: options.kube,
      statefulSets: options.statefulSets ?? (() => []),
      isLeader: () => options.leader.isLeader(),
      event: (e) => this.#event(e),
      now: this.#now,
      timing: options.timing,
      applyUsers: (endpoint, users, removed) => this.#auth.adapter.applyUsers(endpoint, users, removed),
      aclPasswords: (endpoint, users) => this.#auth.adapter.aclPasswords(endpoint, users),
      clientPassword: () => this.#auth.clientPassword,
      atRest: () => this.#idle(),
      tls: {
        certificate: () => this.#auth.certificate,
        served: (endpoint) => this.#auth.adapter.servedCertificate(endpoint),
        reload: (endpoint) => this.#auth.adapter.reloadTls(endpoint),
      },
      track: (p) => {
        this.#pending.add(p);
        void p.finally(() => this.#pending.delete(p));
      },
    });
    this.#exporterUser = new ExporterUser({
      log: this.#log,
      isLeader: () => options.leader.isLeader(),
      password: () => this.#auth.exporterPassword,
      setUser: (ip, user, args) => this.#auth.adapter.applyUsers({ host: ip, port: REDIS_PORT }, [{ name: user, args }], []),
    });
    // A KubeWriter without these calls (test fakes) reports nothing.
    const kube = options.kube as KubeWriter & Partial<Pick<KubeClient, 'getSecret' | 'patchRedisAnnotations'>>;
    this.#secrets = new SecretReporter({
      ref: this.ref,
      log: this.#log,
      isLeader: () => options.leader.isLeader(),
      now: this.#now,
      getSecret: kube.getSecret?.bind(kube),
      patch: kube.patchRedisAnnotations ? (annotations) => kube.patchRedisAnnotations!(this.ref, annotations) : undefined,
      everyMs: options.timing.secretRefreshMs,
    });
    this.#boot = new BootstrapWatch({
      ref: this.ref,
      log: this.#log,
      kube: options.kube as KubeWriter & BootstrapKube,
      isLeader: () => options.leader.isLeader(),
      event: (e) => this.#event(e),
      now: this.#now,
      track: (p) => {
        this.#pending.add(p);
        void p.finally(() => this.#pending.delete(p));
      },
    });
    this.#probes = new ProbeScheduler({
      probe: (uid, ip) => this.#auth.probe(uid, { host: ip, port: REDIS_PORT }, () => this.#running),
      active: () => this.#running && this.#auth.known,
      config: () => this.#config ?? DEFAULT_DECIDE_CONFIG,
      changed: () => this.wake(),
      intervalMs: () => (this.#idle() ? options.timing.idleProbeIntervalMs : options.timing.probeIntervalMs),
      now: this.#now,
      sleep: this.#sleepFor,
    });
  }

  /** The Redis object changed (or appeared): re-validate its spec. */
  update(object: RedisObject): void {
    const uid = object.metadata.uid;
    if (uid) this.ref.uid = uid;
    const labels = { namespace: this.namespace, redis: this.name };
    const told = backupEvents(this.#backups, object.status);
    this.#backups = told.memory;
    for (const e of told.events) this.#event(e);
    this.#secrets.observe(object.metadata.annotations);
    this.#boot.update(object.metadata.annotations);
    const verdict = validateSpec(this.name, object.spec);
    this.#secrets.setNeeds(verdict.ok ? secretNeeds(redisSecretUses(this.name, verdict.spec)) : undefined);
    if (!verdict.ok) {
      const text = formatProblems(verdict.problems);
      this.#specView = null;
      this.#config = null;
      this.#o.metrics.specValid.set(labels, 0);
      if (this.memory.specProblems !== text) {
        this.memory.specProblems = text;
        this.#log.warn({ problems: verdict.problems }, 'invalid spec: this Redis is left alone until it is fixed');
      }
      this.wake();
      return;
    }
    this.#auth.setSpec(verdict.spec);
    this.#exporterOn = verdict.spec.monitoring.enabled && verdict.spec.monitoring.exporter.enabled;
    this.#day2.update(object.metadata.annotations, verdict.spec);
    this.#specView = specView(verdict.spec);
    this.#config = decideConfig(verdict.spec, this.#o.timing);
    this.#o.metrics.specValid.set(labels, 1);
    if (this.memory.specProblems !== null) this.#log.info('spec is valid again');
    this.memory.specProblems = null;
    this.memory.specProblemsTold = null;
    this.wake();
  }

  /** Something changed (a pod event, leadership, a probe that shows a change): plan again now, probe at the fast rate. */
  wake(): void {
    this.#woken = true;
    this.#stir();
    this.#wake?.();
  }

  /**
   * A pod closed our connection: probe every pod of this Redis now, not at the loops' next turn
   * (up to a probe interval later, the largest share of a crash failover's time). The replicas saw
   * the same close, so their link is down by the time they answer. One such pass at a time.
   */
  #lost(): void {
    this.wake();
    if (this.#lostProbe || !this.#running) return;
    const p = this.#probes.probeNow([...this.#views.keys()]).finally(() => {
      this.#pending.delete(p);
      this.#lostProbe = null;
    });
    this.#lostProbe = p;
    this.#pending.add(p);
  }

  #stir(): void {
    const wasIdle = this.#idle();
    this.#stirredAt = this.#now();
    if (wasIdle) this.#probes.hurry();
  }

  #idle(): boolean {
    return atRest(this.#now(), this.#stirredAt, this.#probes.tracks).idle;
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
    await Promise.race([Promise.all([this.#loop, this.#probes.stop()]), defaultSleep(2000)]);
    await Promise.race([Promise.allSettled([...this.#pending]), defaultSleep(1000)]);
    this.#auth.close();
    for (const pod of this.#knownPodNames) this.#o.metrics.forgetPod(this.namespace, this.name, pod);
    this.#o.metrics.forgetRedis(this.namespace, this.name);
  }

  /** The track of a pod by name (tests). */
  trackOf(podName: string): RedisTrack | undefined {
    for (const [uid, v] of this.#views) if (v.name === podName) return this.#probes.track(uid);
    return undefined;
  }

  // ---------------------------------------------------------------- the loop

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
      if (!this.#woken || immediate > 3)
        await this.#sleep(
          nextRoundInMs(
            this.#now(),
            this.#idle() ? this.#o.timing.idleProbeIntervalMs : this.#o.timing.tickIntervalMs,
            this.#config,
            this.#probes.tracks,
            this.failures.open.map((e) => e.retryAt),
          ),
        );
      if (immediate > 3) immediate = 0;
    }
  }

  /** Sleeps ms, or less when wake() is called. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        if (this.#wake === finish) this.#wake = null;
        resolve();
      };
      this.#wake = finish;
      void this.#sleepFor(ms).then(finish);
    });
  }

  /** The pods of this Redis, by name; probe loops follow them. */
  #syncPods(): PodView[] {
    const views: PodView[] = [];
    for (const pod of this.#o.pods()) {
      if (!belongsTo(pod, this.namespace, this.name)) continue;
      const v = podView(pod);
      if (v) views.push(v);
    }
    views.sort((a, b) => compareCodeUnits(a.name, b.name));
    this.#views.clear();
    for (const v of views) this.#views.set(v.uid, v);
    for (const uid of this.#probes.sync(views)) {
      this.#labels.forget(uid);
      this.#auth.forgetPod(uid);
    }
    const names = new Set(views.map((v) => v.name));
    for (const old of this.#knownPodNames) {
      if (names.has(old)) continue;
      this.#o.metrics.forgetPod(this.namespace, this.name, old);
      this.memory.forgetPod(old);
    }
    this.#knownPodNames = names;
    // Connections to addresses no pod has any more (a pod got a new IP, or went away).
    this.#auth.retain(views.filter((v) => v.ip).map((v) => ({ host: v.ip!, port: REDIS_PORT })));
    return views;
  }

  // ---------------------------------------------------------------- one round

  /** Returns true when the next round should run at once (Redis writes were made). */
  async #tick(): Promise<boolean> {
    const views = this.#syncPods();
    if (!this.#specView || !this.#config) {
      this.#report.invalidSpec();
      return false;
    }
    // Before the credentials: a missing Secret is exactly what the report must tell.
    const look = this.#secrets.tick();
    if (look) {
      this.#pending.add(look);
      void look.finally(() => this.#pending.delete(look));
    }
    if (!(await this.#auth.ensure())) return false;
    const updated = this.#day2.revisions();
    const pods: PodObservation[] = views.map((v) => ({
      ...observation(v, this.#probes.track(v.uid) ?? null, this.#labels.overlay(v.uid)),
      updated: updated(v),
    }));
    // Claims matter only to a bootstrap: listed while no pod is labelled master and some pod
    // exists (a hibernated Redis has none: nothing to choose, no API call).
    const claims = await this.#boot.claims(pods.length > 0 && !pods.some((p) => p.roleLabel === ROLE_MASTER));
    const now = this.#now();
    const input: DecideInput = {
      name: this.name,
      spec: this.#specView,
      pods,
      now,
      config: this.#config,
      claims,
      bootstrapWithout: this.#boot.without,
    };
    let p = planRound(input);
    this.lastPlan = p;
    this.#report.podMetrics(input, p);
    this.#report.decision(p.decision);
    if (!this.#o.leader.isLeader()) return false;
    this.#boot.report(input, p.decision);

    const { health } = decideMaster(input);
    const blocked = this.memory.noteDecision(p.decision, health, this.#config);
    if (blocked) {
      this.#log.warn({ reason: p.decision.reason }, 'failover blocked');
      this.#event(blocked);
    }
    this.#report.dropped(this.failures.retain(p.steps, now));
    const adopted = await this.#auth.adopt(views);
    if (p.steps.length === 0 && adopted.size === 0) {
      const answering = views.flatMap((v, i) => (v.ip !== null && currentFacts(pods[i]!, now, input.config) ? [{ uid: v.uid, ip: v.ip }] : []));
      await this.#exporterUser.reconcile(this.#exporterOn, answering);
      // A steady round: a day-2 operation may ask for a planned switchover.
      const target = await this.#day2.steady(input, p.decision, views);
      if (target !== null) this.lastPlan = p = planRound({ ...input, switchoverTo: target });
    }
    if (p.steps.length === 0) {
      if (adopted.size === 0) return false;
      await this.#probes.probeNow(adopted);
      return true;
    }

    this.#stir();
    const d = p.decision;
    if (isFailover(d)) {
      const old = views.find((v) => v.name === d.previous);
      const t = old ? this.#probes.track(old.uid) : undefined;
      const started = this.memory.startFailover(d, now, t?.failingSince ?? null);
      if (started) {
        this.#log.warn({ from: d.previous, to: d.master, cause: d.cause, reason: d.reason }, 'failover started');
        this.#event(started);
      }
    }
    const applied = await applyRedisSteps(p, this.#io(views), {
      canAct: () => this.#o.leader.isLeader() && this.#running,
      before: (step) => this.#o.hooks?.beforeStep?.(this.ref, step),
      after: (step, ok) => this.#o.hooks?.afterStep?.(this.ref, step, ok),
      reporter: this.#report.forRound(p),
      policy: this.failures,
      now: this.#now,
    });
    this.#report.applied(p, applied);
    await this.#day2.applied(applied);
    const wrote = new Set([...views].filter((v) => applied.wrote.has(v.name)).map((v) => v.uid));
    for (const uid of adopted) wrote.add(uid);
    if (wrote.size === 0) return false;
    await this.#probes.probeNow(wrote);
    return applied.changed || adopted.size > 0;
  }

  /** The writes of this round's steps: Redis as the operator's user. */
  #io(views: PodView[]): StepIO {
    const redis = this.#auth.adapter;
    return {
      replicaOf: (endpoint, master) => redis.replicaOf(endpoint, master),
      switchover: (from, to) => redis.switchover(from, to),
      configSet: (endpoint, settings) => redis.configSet(endpoint, settings),
      label: (step) =>
        this.#labels.write(
          step,
          views.find((v) => v.name === step.pod),
        ),
    };
  }

  /** Sends an Event (leader only); stop() waits a moment for those in flight. */
  #event(e: EventToSend): void {
    if (!this.#o.leader.isLeader()) return;
    const p = this.#o.kube.emitEvent(this.ref, e.type, e.reason, e.message);
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }
}
