// One RedisCluster's worker: its round (probe the nodes, plan with decide/plan.ts, apply) on the
// core loop (core/worker.ts), over the parts beside it: credentials, the executor and slot mover,
// the node records, the reshard record and the autoscaler. Nothing is shared with another
// RedisCluster's worker.
// Invariants:
// - Only the holder of the RedisCluster's Lease acts, and only it probes: every Redis write,
//   label patch, Secret creation, Event and scale write is preceded by leader.isLeader(). A
//   worker that loses the Lease drops its memory (back-offs, the reshard episode, the autoscaling
//   window): the next holder starts from what the cluster and the records say.
// - Every round starts from fresh probes of every pod (a node whose last probe timed out is read
//   as still silent while its next one is in flight: probes.ts); a round that wrote to Redis is
//   followed by another at once (a few in a row at most), so the next decision never rests on facts older
//   than its own writes. Five such rounds in a row at most, then a rest: a quiet cluster rests
//   idleProbeIntervalMs, an unsettled one UNSETTLED_MS, a standby a minute; a wake ends any rest.
// - Time comes from options.now (monotonic), wallNow (records) and sleep, for tests.
import { engineField } from '../../../api/node-engine.ts';
import { performance } from 'node:perf_hooks';
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { REDIS_CLUSTER_KIND as CLUSTER_KIND, RESHARD_ANNOTATION } from '../../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../../api/rediscluster-schema.ts';
import { validateRedisClusterSpec as validateClusterSpec } from '../../../api/rediscluster-validate.ts';
import type { ManagerTiming } from '../../config.ts';
import { redisClusterSecretUses as clusterSecretUses, secretNeeds } from '../../../api/secret-report.ts';
import { SecretReporter } from '../../core/secret-report.ts';
import type { RedisClusterObject, RedisRef } from '../../adapters/kube/client.ts';
import { FailurePolicy, type FailurePolicyConfig } from '../../core/failure-policy.ts';
import { planRound, type RoundPlan } from '../decide/plan.ts';
import { clusterMemory } from '../decide/reshard.ts';
import { healthyMaster } from '../decide/topology.ts';
import type { ClusterSpecView, ClusterStep, PodObservation } from '../decide/types.ts';
import type { ClusterMetrics } from '../metrics.ts';
import { ClusterAdapter } from '../../adapters/redis/rediscluster.ts';
import { Autoscaler } from './autoscaler.ts';
import { HibernationView } from './hibernation.ts';
import { ClusterDay2 } from './day2.ts';
import { ExporterUser } from '../../core/exporter-user.ts';
import { RedisClusterCredentials } from './credentials.ts';
import { applyRedisClusterSteps, redisClusterStepKey } from './steps.ts';
import { NodeRecords } from './node-records.ts';
import { podObservation } from './pods.ts';
import { RedisClusterReporter } from './reporter.ts';
import { ReshardRecorder } from './reshard-record.ts';
import { RoundProbes } from './probes.ts';
import { Silences } from './silences.ts';
import type { EventToSend } from '../../core/events.ts';
import type { LeaderView } from '../../core/leader.ts';
import { Worker } from '../../core/worker.ts';
import { restoredLayout, type Layout } from '../decide/restored-layout.ts';
import type { RedisClusterHooks, ClusterKube } from './types.ts';

/** Slot moves a round may spend before it probes again (failures are noticed within this). */
export const MOVE_BUDGET_MS = 1000;
/**
 * Groups of slots moved at once: their round trips overlap. Not more: in a scale-up every group
 * goes to the one new master, and its replica, which every group waits for, sets the pace (six
 * groups doubled that wait in a bench run).
 */
export const MOVE_CONCURRENCY = 4;
/** Between rounds while something is not settled (a hold, a node not answering). */
export const UNSETTLED_MS = 200;
/** At most one StepFailed Event per this long (the log has every failure). */
export const STEP_FAILED_EVERY_MS = 30_000;
/** Rounds that wrote, run one after another at once before a rest. */
const MAX_AGAIN = 5;
/** Between rounds of an instance that does not act on this RedisCluster. */
const STANDBY_MS = 60_000;

export interface RedisClusterWorkerOptions {
  namespace: string;
  name: string;
  kube: ClusterKube;
  leader: LeaderView;
  logger: Logger;
  metrics: ClusterMetrics;
  timing: ManagerTiming;
  /** The informer's pods of this RedisCluster (membership is checked again here). */
  pods: () => V1Pod[];
  /** The informer's StatefulSets of the namespace (their update revision drives rollouts); absent: no rollout. */
  statefulSets?: (() => V1StatefulSet[]) | undefined;
  redisLocalAddress?: string | undefined;
  hooks?: RedisClusterHooks | undefined;
  failurePolicy?: FailurePolicyConfig | undefined;
  now?: (() => number) | undefined;
  wallNow?: (() => number) | undefined;
  sleep?: ((ms: number) => Promise<void>) | undefined;
}

type Next = 'again' | 'unsettled' | 'rest' | 'standby';

export class RedisClusterWorker {
  readonly namespace: string;
  readonly name: string;
  readonly ref: RedisRef;
  /** The latest plan (tests, debugging). */
  lastPlan: RoundPlan | null = null;
  readonly #o: RedisClusterWorkerOptions;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #worker: Worker<Next>;
  readonly #wallNow: () => number;
  readonly #redis: ClusterAdapter;
  readonly #auth: RedisClusterCredentials;
  readonly #secrets: SecretReporter;
  readonly #policy: FailurePolicy<ClusterStep>;
  readonly #records: NodeRecords;
  readonly #news: RedisClusterReporter;
  readonly #reshard: ReshardRecorder;
  readonly #autoscaler: Autoscaler;
  readonly #exporterUser: ExporterUser;
  readonly #day2: ClusterDay2;
  #spec: RedisClusterSpec | null = null;
  /** spec.restore: the recorded slots per shard bring-up gives back (decide/restored-layout.ts). */
  #layout: Layout | null | undefined = undefined;
  #specProblem: string | null = null;
  #remembered = new Map<string, number>();
  #failingSince = new Map<string, number>();
  #forcedAt = new Map<string, number>();
  #lastKeys = new Map<string, number>();
  readonly #silences = new Silences();
  readonly #hibernation = new HibernationView();
  readonly #probes: RoundProbes;
  #acting = false;

  constructor(options: RedisClusterWorkerOptions) {
    this.#o = options;
    this.namespace = options.namespace;
    this.name = options.name;
    this.ref = { namespace: options.namespace, name: options.name };
    this.#log = options.logger.child({ namespace: options.namespace, name: options.name, kind: CLUSTER_KIND });
    this.#now = options.now ?? (() => performance.now());
    this.#wallNow = options.wallNow ?? Date.now;
    const timing = options.timing;
    this.#worker = new Worker<Next>({
      ref: this.ref,
      log: this.#log,
      leader: options.leader,
      events: options.kube,
      eventKind: CLUSTER_KIND,
      stepFailedEveryMs: STEP_FAILED_EVERY_MS,
      now: this.#now,
      sleep: options.sleep,
      round: () => this.#tick(),
      failed: 'unsettled',
      failedMessage: 'cluster round failed',
      again: (next) => next === 'again',
      restMs: (next) => {
        if (next === 'standby') return STANDBY_MS;
        if (next === 'rest') return timing.idleProbeIntervalMs;
        return next === 'again' ? timing.tickIntervalMs : UNSETTLED_MS;
      },
      maxAgain: MAX_AGAIN,
      burstRestIgnoresWake: false,
    });
    this.#redis = new ClusterAdapter({
      username: 'redis-operator',
      localAddress: options.redisLocalAddress,
      timeouts: {
        connectTimeoutMs: options.timing.redisConnectTimeoutMs,
        commandTimeoutMs: options.timing.redisCommandTimeoutMs,
      },
      connectionName: 'redis-operator-sidecar',
      onLost: () => this.wake(),
    });
    this.#probes = new RoundProbes((ip) => this.#redis.probe(ip));
    this.#policy = new FailurePolicy(redisClusterStepKey, options.failurePolicy);
    this.#auth = new RedisClusterCredentials({
      ref: this.ref,
      kube: options.kube,
      isLeader: () => options.leader.isLeader(),
      log: this.#log,
      onPassword: (p) => this.#redis.setPassword(p),
      onMissing: (text, reason) =>
        this.#worker.event({
          type: 'Warning',
          reason,
          message: `${text}: the pods cannot start and the operator cannot reach the nodes until it exists`,
        }),
      pollMs: options.timing.secretRefreshMs,
      now: this.#now,
    });
    const kube = options.kube;
    this.#secrets = new SecretReporter({
      ref: this.ref,
      log: this.#log,
      isLeader: () => options.leader.isLeader(),
      now: this.#now,
      getSecret: kube.getSecret?.bind(kube),
      patch: (annotations) => kube.patchClusterAnnotations(this.ref, annotations),
      everyMs: options.timing.secretRefreshMs,
    });
    const event = (e: EventToSend) => this.#worker.event(e);
    const common = { ref: this.ref, kube: options.kube, log: this.#log, event, now: this.#now };
    this.#records = new NodeRecords({ ...common, isLeader: () => options.leader.isLeader() });
    this.#news = new RedisClusterReporter({
      ...common,
      // A planned switchover (day2.ts) is no failover: it must not count towards FrequentFailovers.
      masterChanged: () => {
        if (!this.#day2.switching) options.metrics.failover(options.namespace, options.name);
      },
    });
    this.#reshard = new ReshardRecorder({ ...common, wallNow: this.#wallNow });
    this.#autoscaler = new Autoscaler(common);
    this.#exporterUser = new ExporterUser({
      log: this.#log,
      isLeader: () => options.leader.isLeader(),
      password: () => this.#auth.exporterPassword,
      setUser: (ip, user, args) => this.#redis.setUser(ip, user, args),
    });
    this.#day2 = ClusterDay2.of({ ...common, isLeader: () => options.leader.isLeader() }, options, this.#redis);
    options.metrics.started(options.namespace, options.name);
  }

  /** The RedisCluster changed (or appeared). */
  update(object: RedisClusterObject): void {
    if (object.metadata.uid) this.ref.uid = object.metadata.uid;
    this.#secrets.observe(object.metadata.annotations);
    this.#reshard.observe(object.metadata.annotations?.[RESHARD_ANNOTATION], object.metadata.resourceVersion);
    this.#day2.update(object.metadata.annotations);
    this.#hibernation.observe(object);
    const verdict = validateClusterSpec(this.name, object.spec ?? {});
    if (!verdict.ok) {
      const text = verdict.problems.map((p) => `${p.field}: ${p.message}`).join('; ');
      this.#spec = null;
      this.#secrets.setNeeds(undefined);
      if (this.#specProblem !== text) {
        this.#specProblem = text;
        this.#log.warn({ problems: verdict.problems }, 'invalid RedisCluster spec: left alone until it is fixed');
      }
    } else {
      if (this.#specProblem !== null) this.#log.info('RedisCluster spec is valid again');
      this.#specProblem = null;
      this.#spec = verdict.spec;
      this.#layout = verdict.spec.restore
        ? restoredLayout(object.status?.restore, verdict.spec.master.replicas)
        : undefined;
      this.#auth.setSpec(verdict.spec);
      this.#secrets.setNeeds(secretNeeds(clusterSecretUses(this.name, verdict.spec)));
    }
    this.wake();
  }

  wake(): void {
    this.#worker.wake();
  }

  start(): void {
    this.#worker.start();
  }

  async stop(): Promise<void> {
    await this.#worker.stop();
    this.#redis.close();
  }

  /** This instance stopped acting: forget what only the acting one may rely on. */
  #standDown(): void {
    if (!this.#acting) return;
    this.#acting = false;
    this.#policy.reset();
    this.#reshard.forget();
    this.#autoscaler.reset();
    this.#failingSince.clear();
    this.#forcedAt.clear();
    this.#day2.reset();
    this.#silences.clear();
    this.#probes.clear();
    this.#redis.close();
    this.#log.info('no longer acting on this RedisCluster');
  }

  async #tick(): Promise<Next> {
    if (!this.#worker.isLeader()) {
      this.#standDown();
      return 'standby';
    }
    this.#acting = true;
    const spec = this.#spec;
    if (!spec) return 'standby';
    // Before the credentials: a missing Secret is exactly what the report must tell.
    const look = this.#secrets.tick();
    if (look) this.#worker.track(look);
    if (!(await this.#auth.ensure())) return 'unsettled';
    const view: ClusterSpecView = {
      shards: spec.master.replicas,
      replicasPerShard: spec.replicas,
      failoverTimeoutMs: spec.sentinel.failoverTimeout,
      layout: this.#layout,
      ...engineField(spec),
    };

    const pods: PodObservation[] = [];
    for (const pod of this.#o.pods()) {
      const o = podObservation(pod, this.ref, this.#records.overlay(pod.metadata?.uid ?? ''));
      if (o) pods.push({ ...o, probe: null });
    }
    const probedAt = this.#now();
    await Promise.all(
      pods.map(async (p) => {
        if (p.ip) p.probe = await this.#probes.get(p.ip);
        if (p.probe && !p.probe.ok && p.probe.kind === 'auth') this.#auth.refused();
      }),
    );
    this.#redis.retain(pods.flatMap((p) => (p.ip ? [p.ip] : [])));
    this.#probes.retain(pods.flatMap((p) => (p.ip ? [p.ip] : [])));
    this.#silences.observe(pods, probedAt);
    if (this.#hibernation.asleep(spec, pods)) return 'rest'; // the pods stop on purpose: nothing to fix
    const now = this.#now();
    const plan = planRound({
      pods,
      spec: view,
      remembered: this.#remembered,
      failover: { failingSince: this.#failingSince, forcedAt: this.#forcedAt, lastKeys: this.#lastKeys },
      now,
      crashConfirmMs: this.#o.timing.crashConfirmMs,
    });
    this.lastPlan = this.#hibernation.hold(plan);
    this.#remember(plan);
    this.#report(plan);
    if (!this.#worker.isLeader()) return 'standby';
    await this.#records.write(plan.topology, this.#wallNow());
    this.#news.round(plan);

    // Waking: only the steps hibernation.ts lets through; no reshard, rollout or autoscaling until Ready again.
    if (plan.steps.length > 0 || this.#hibernation.waking) {
      this.#policy.retain(plan.steps, this.#now());
      const applied = await applyRedisClusterSteps(this.#ctx(plan), plan.steps);
      for (const step of applied.done) this.#news.applied(step);
      return applied.done.length > 0 ? 'again' : 'unsettled';
    }
    const exporterOn = spec.monitoring.enabled && spec.monitoring.exporter.enabled;
    await this.#exporterUser.reconcile(
      exporterOn,
      pods.flatMap((p) => (p.ip !== null && p.probe?.ok ? [{ uid: p.uid, ip: p.ip }] : [])),
    );
    const d = plan.reshard;
    const mayMove = await this.#reshard.decided(d);
    if (d.kind === 'move') {
      // The hook lets a leaving shard go only on a Done record: no slot moves without its record.
      if (!mayMove) return 'unsettled';
      this.#policy.retain(d.moves, this.#now());
      const applied = await applyRedisClusterSteps(this.#ctx(plan), d.moves, MOVE_BUDGET_MS, MOVE_CONCURRENCY);
      await this.#reshard.progress(applied.done.length);
      return applied.done.length > 0 ? 'again' : 'unsettled';
    }
    if (await this.#day2.round(plan, pods, this.#o.pods(), view)) return 'unsettled';
    // Quiet (nothing moves: balanced, or a count refused): memory use may ask for another count.
    if ((d.kind === 'balanced' || d.kind === 'refuse') && plan.topology.allAnswered && spec.autoscaling.enabled) {
      await this.#autoscaler.sample(spec.autoscaling, spec.master.replicas, clusterMemory(plan.topology));
    } else if (!spec.autoscaling.enabled) this.#autoscaler.reset();
    return plan.holds.length > 0 || !plan.topology.allAnswered || d.kind !== 'balanced' ? 'unsettled' : 'rest';
  }

  #ctx(plan: RoundPlan) {
    return {
      redis: this.#redis,
      topology: plan.topology,
      policy: this.#policy,
      log: this.#log,
      canAct: () => this.#worker.running && this.#worker.isLeader(),
      event: (e: EventToSend) => this.#worker.event(e),
      now: this.#now,
      beforeStep: this.#o.hooks?.beforeStep
        ? (s: Parameters<NonNullable<RedisClusterHooks['beforeStep']>>[1]) => this.#o.hooks!.beforeStep!(this.ref, s)
        : undefined,
      afterBatch: this.#o.hooks?.afterBatch
        ? (slot: number, keys: number) => this.#o.hooks!.afterBatch!(this.ref, slot, keys)
        : undefined,
      onMoved: () => this.#o.metrics.slotsMoved.inc({ namespace: this.namespace, rediscluster: this.name }),
      onForcedFailover: () => {
        this.#o.metrics.forcedFailovers.inc({ namespace: this.namespace, rediscluster: this.name });
      },
    };
  }

  /** What later rounds need: each node's shard, when a failed master was first seen, key counts, forced elections. */
  #remember(plan: RoundPlan): void {
    const t = plan.topology;
    for (const n of t.nodes.values()) {
      if (n.pod) this.#remembered.set(n.id, n.pod.shard);
      if (n.info) this.#lastKeys.set(n.id, n.info.keys);
    }
    for (const p of t.pods)
      if (p.record && !this.#lastKeys.has(p.record.id)) this.#lastKeys.set(p.record.id, p.record.keys);
    for (const id of [...this.#remembered.keys()]) if (!t.nodes.has(id)) this.#remembered.delete(id);
    for (const id of [...this.#lastKeys.keys()]) if (!t.nodes.has(id)) this.#lastKeys.delete(id);
    this.#failingSince = plan.failingSince;
    const now = this.#now();
    for (const step of plan.steps) if (step.kind === 'failover') this.#forcedAt.set(step.failedId, now);
    const timeout = this.#spec?.sentinel.failoverTimeout ?? 0;
    for (const [id, at] of [...this.#forcedAt]) if (now - at > 2 * timeout) this.#forcedAt.delete(id);
  }

  #report(plan: RoundPlan): void {
    const t = plan.topology;
    const labels = { namespace: this.namespace, rediscluster: this.name };
    let covered = 0;
    for (const id of t.owner) if (id !== null && healthyMaster(t.nodes.get(id))) covered++;
    this.#o.metrics.slotsCovered.set(labels, covered);
    const up = t.pods.filter((p) => p.probe?.ok).length;
    const pending = t.pods.filter((p) => !p.ip).length;
    this.#o.metrics.nodes.set({ ...labels, state: 'up' }, up);
    this.#o.metrics.nodes.set({ ...labels, state: 'pending' }, pending);
    this.#o.metrics.nodes.set({ ...labels, state: 'down' }, t.pods.length - up - pending);
  }
}
