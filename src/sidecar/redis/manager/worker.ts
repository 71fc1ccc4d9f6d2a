// One Redis resource's worker: its round (observe, plan, apply) on the core loop (core/worker.ts),
// over the parts that do the work: probes (probes.ts), the credentials (credentials.ts), the steps
// (steps.ts) and the failure policy (core/failure-policy.ts); worker-parts.ts builds the parts.
// Nothing here is shared with another Redis' worker, so a broken or slow Redis (pods that hang, a
// Secret that is missing) never stalls another.
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
// - Rounds that wrote follow each other at once, 3 in a row at most; then, or after a quiet
//   round, the next is due at nextRoundInMs (schedule.ts), sooner when woken.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { REDIS_PORT, ROLE_MASTER } from '../../../api/labels.ts';
import { backupEvents, type BackupMemory } from '../decide/backups.ts';
import { redisSecretUses, secretNeeds } from '../../../api/secret-report.ts';
import type { RedisObject } from '../../../api/schema.ts';
import { formatProblems, validateSpec } from '../../../api/validate.ts';
import { DEFAULT_DECIDE_CONFIG, currentFacts, decideMaster, planRound } from '../decide/index.ts';
import type {
  DecideConfig,
  DecideInput,
  RoundPlan,
  PodObservation,
  RedisTrack,
  SpecView,
  Step,
} from '../decide/index.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import type { ExporterUser } from '../../core/exporter-user.ts';
import { EventMemory, isFailover } from './events.ts';
import { applyRedisSteps, redisStepKey, type StepIO } from './steps.ts';
import { Worker } from '../../core/worker.ts';
import { sleep as timerSleep, type Sleep } from '../../core/sleep.ts';
import type { RedisWorkerOptions } from './types.ts';
import { FailurePolicy } from '../../core/failure-policy.ts';
import type { RedisCredentials } from './credentials.ts';
import { RedisPodSet } from './pod-set.ts';
import { decideConfig, observation, specView, type PodView } from './pods.ts';
import { ProbeScheduler } from './probes.ts';
import { RedisPace } from './pace.ts';
import { RedisReporter } from './reporter.ts';
import type { Day2 } from './day2-wiring.ts';
import type { SecretReporter } from '../../core/secret-report.ts';
import type { BootstrapWatch } from './bootstrap.ts';
import { createWorkerParts } from './worker-parts.ts';

/** Rounds that wrote, run one after another at once before a rest. */
const MAX_AGAIN = 3;

/**
 * After a pod closed our connection, every pod is probed at once and again at these delays: on a
 * loaded machine a replica may read the same close only after our first look, and its link still up
 * vetoes the crash path until it is probed again (at the loops' next turn without these).
 */
export const LOST_PROBES_AT_MS = [0, 100, 300, 1000] as const;

export type { KubeWriter, LeaderView, RedisHooks, RedisWorkerOptions } from './types.ts';

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
  readonly #o: RedisWorkerOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #worker: Worker<boolean>;
  readonly #pace: RedisPace;
  readonly #pods: RedisPodSet;
  #lostProbe: Promise<void> | null = null;
  readonly #sleep: Sleep;
  /** Aborted by stop(): cancels the lost-connection probes' waits. */
  readonly #stopping = new AbortController();
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

  constructor(options: RedisWorkerOptions) {
    this.#o = options;
    this.namespace = options.namespace;
    this.name = options.name;
    this.ref = { namespace: options.namespace, name: options.name };
    this.#log = options.logger.child({ namespace: options.namespace, name: options.name });
    this.#now = options.now ?? (() => performance.now());
    const sleep = options.sleep ?? timerSleep;
    this.#sleep = sleep;
    this.#worker = new Worker<boolean>({
      ref: this.ref,
      log: this.#log,
      leader: options.leader,
      events: options.kube,
      now: this.#now,
      sleep: options.sleep,
      round: () => this.#tick(),
      failed: false,
      failedMessage: 'reconcile round failed',
      again: (wrote) => wrote,
      restMs: () =>
        this.#pace.restMs(
          this.#config,
          this.failures.open.map((e) => e.retryAt),
        ),
      maxAgain: MAX_AGAIN,
      burstRestIgnoresWake: true,
    });
    this.failures = new FailurePolicy(redisStepKey, options.failurePolicy);
    this.#pace = new RedisPace({
      now: this.#now,
      timing: options.timing,
      tracks: () => this.#probes.tracks,
      hurry: () => this.#probes.hurry(),
    });
    const { metrics, pods } = options;
    this.#pods = new RedisPodSet({ ref: this.ref, kube: options.kube, metrics, memory: this.memory, pods });
    this.#report = new RedisReporter({
      ref: this.ref,
      log: this.#log,
      metrics: options.metrics,
      memory: this.memory,
      isLeader: () => options.leader.isLeader(),
      emit: (e) => this.#worker.event(e),
      now: this.#now,
    });
    const parts = createWorkerParts({
      ref: this.ref,
      log: this.#log,
      options,
      memory: this.memory,
      now: this.#now,
      event: (e) => this.#worker.event(e),
      track: (p) => this.#worker.track(p),
      lost: () => this.#lost(),
      atRest: () => this.#pace.idle(),
    });
    this.#auth = parts.auth;
    this.#day2 = parts.day2;
    this.#exporterUser = parts.exporterUser;
    this.#secrets = parts.secrets;
    this.#boot = parts.boot;
    this.#probes = new ProbeScheduler({
      probe: (uid, ip) => this.#auth.probe(uid, { host: ip, port: REDIS_PORT }, () => this.#worker.running),
      active: () => this.#worker.running && this.#auth.known,
      config: () => this.#config ?? DEFAULT_DECIDE_CONFIG,
      changed: () => this.wake(),
      intervalMs: () => this.#pace.probeIntervalMs(),
      now: this.#now,
      sleep,
    });
  }

  /** The Redis object changed (or appeared): re-validate its spec. */
  update(object: RedisObject): void {
    const uid = object.metadata.uid;
    if (uid) this.ref.uid = uid;
    const labels = { namespace: this.namespace, redis: this.name };
    const told = backupEvents(this.#backups, object.status);
    this.#backups = told.memory;
    for (const e of told.events) this.#worker.event(e);
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

  /**
   * Something changed (a pod event, leadership, a probe that shows a change): plan again now, probe at the fast rate.
   */
  wake(): void {
    this.#pace.stir();
    this.#worker.wake();
  }

  /**
   * A pod closed our connection: probe every pod of this Redis now, not at the loops' next turn
   * (up to a probe interval later, the largest share of a crash failover's time), and a few times
   * more within a second (LOST_PROBES_AT_MS): the replicas saw the same close, and one that reads
   * it late must still be heard. A probe that shows a change wakes the round. One such sequence at
   * a time.
   */
  #lost(): void {
    this.wake();
    if (this.#lostProbe || !this.#worker.running) return;
    const passes = async () => {
      let at = 0;
      for (const delay of LOST_PROBES_AT_MS) {
        if (delay > at) await this.#sleep(delay - at, this.#stopping.signal);
        at = delay;
        if (!this.#worker.running) return;
        await this.#probes.probeNow(this.#pods.uids);
      }
    };
    const p = passes().finally(() => {
      this.#lostProbe = null;
    });
    this.#lostProbe = p;
    this.#worker.track(p);
  }

  start(): void {
    this.#worker.start();
  }

  /** Stops every loop and closes the Redis connections. A round stuck in a hook is abandoned after 2 s. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#worker.stop(() => this.#probes.stop());
    this.#auth.close();
    this.#pods.forgetAll();
    this.#o.metrics.forgetRedis(this.namespace, this.name);
  }

  /** The track of a pod by name (tests). */
  trackOf(podName: string): RedisTrack | undefined {
    const uid = this.#pods.uidOf(podName);
    return uid === undefined ? undefined : this.#probes.track(uid);
  }

  /** The pods of this Redis, by name; probe loops follow them. */
  #syncPods(): PodView[] {
    const views = this.#pods.read();
    for (const uid of this.#probes.sync(views)) {
      this.#pods.forget(uid);
      this.#auth.forgetPod(uid);
    }
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
    if (look) this.#worker.track(look);
    if (!(await this.#auth.ensure())) return false;
    const updated = this.#day2.revisions();
    const pods: PodObservation[] = views.map((v) => ({
      ...observation(v, this.#probes.track(v.uid) ?? null, this.#pods.overlay(v.uid)),
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
    if (!this.#worker.isLeader()) return false;
    this.#boot.report(input, p.decision);

    const { health } = decideMaster(input);
    const blocked = this.memory.noteDecision(p.decision, health, this.#config);
    if (blocked) {
      this.#log.warn({ reason: p.decision.reason }, 'failover blocked');
      this.#worker.event(blocked);
    }
    this.#report.dropped(this.failures.retain(p.steps, now));
    const adopted = await this.#auth.adopt(views);
    if (p.steps.length === 0 && adopted.size === 0) {
      const answering = views.flatMap((v, i) =>
        v.ip !== null && currentFacts(pods[i]!, now, input.config) ? [{ uid: v.uid, ip: v.ip }] : [],
      );
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

    this.#pace.stir();
    const d = p.decision;
    if (isFailover(d)) {
      const old = views.find((v) => v.name === d.previous);
      const t = old ? this.#probes.track(old.uid) : undefined;
      const started = this.memory.startFailover(d, now, t?.failingSince ?? null);
      if (started) {
        this.#log.warn({ from: d.previous, to: d.master, cause: d.cause, reason: d.reason }, 'failover started');
        this.#worker.event(started);
      }
    }
    const applied = await applyRedisSteps(p, this.#io(views), {
      canAct: () => this.#worker.isLeader() && this.#worker.running,
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
      label: (step) => this.#pods.label(step, views),
    };
  }
}
