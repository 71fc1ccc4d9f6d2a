// Day-2 operations of one RedisCluster, run by its worker on quiet rounds only (no formation,
// repair or failover step to take, no slot moving): a switchover asked for on the RedisCluster
// (decide/switchover.ts) and the rolling update one pod at a time (decide/rollout.ts). The
// decisions are pure; the pod deletions, Events and the request's record are core/rollout.ts's,
// each pod's engine and a move between engines core/engines.ts's, shared with the Redis kind;
// this remembers what is in flight between rounds and sends the planned switchover (CLUSTER
// FAILOVER, no FORCE, to the chosen replica).
// Invariants:
// - Only the leader writes (isLeader right before each write), at most one day-2 action per
//   round, and none while a switchover is in flight: the old master's pod is deleted only once
//   the target is the shard's master in the cluster's view (a later round's decision).
// - A switchover request is recorded on the RedisCluster exactly once (Done or Refused, with why).
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { REVISION_LABEL, SWITCHOVER_ANNOTATION } from '../../../api/labels.ts';
import { redisClusterChildNames, SHARD_LABEL } from '../../../api/rediscluster-names.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import { parseRequest, type SwitchoverRequest } from '../../core/decide/switchover.ts';
import type { EventToSend } from '../../core/events.ts';
import { RolloutStepper, SwitchoverOutcomes } from '../../core/rollout.ts';
import { EngineWatch } from '../../core/engines.ts';
import { decideClusterRollout, nodeOf, type RolloutPod } from '../decide/rollout.ts';
import { shardMaster } from '../decide/shard-master.ts';
import { decideClusterRequest } from '../decide/switchover.ts';
import { healthyMaster, type Topology } from '../decide/topology.ts';
import type { RoundPlan } from '../decide/plan.ts';
import type { ClusterSpecView, PodObservation } from '../decide/types.ts';
import type { ClusterAdapter } from '../../adapters/redis/rediscluster.ts';
import type { ManagerTiming } from '../../config.ts';
import type { ClusterKube } from './types.ts';

/** A planned switchover that has not made its target the master within this is given up. */
export const SWITCHOVER_TIMEOUT_MS = 10_000;

export interface ClusterDay2Options {
  ref: RedisRef;
  log: Logger;
  isLeader: () => boolean;
  event: (e: EventToSend) => void;
  now: () => number;
  stallAfterMs: number;
  statefulSets: () => V1StatefulSet[];
  deletePod?: ((name: string, uid: string) => Promise<void>) | undefined;
  patchAnnotations?: ((annotations: Record<string, string | null>) => Promise<void>) | undefined;
  /** CLUSTER FAILOVER (no FORCE) sent to the node at `ip`; resolves with an error text or null. */
  failover: (ip: string) => Promise<string | null>;
  /** Reports each pod's engine and tells a move between engines (absent in harnesses that do not model it). */
  engines?: Pick<EngineWatch, 'observe' | 'reset'> | undefined;
}

interface InFlight {
  request: SwitchoverRequest | null;
  shard: number;
  target: string;
  from: string;
  since: number;
}

/** Values keyed by the shard label (pod labels, affinity selectors): what the shards' templates differ in. */
function withoutShard(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutShard);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, k === SHARD_LABEL ? '*' : withoutShard(v)]),
  );
}

/** A shard set's pod template with the shard left out: equal for every shard once the hook's change reached all. */
export const shardTemplateKey = (set: V1StatefulSet): string => JSON.stringify(withoutShard(set.spec?.template ?? {}));

const isReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export class ClusterDay2 {
  readonly #o: ClusterDay2Options;
  readonly #stepper: RolloutStepper;
  readonly #outcomes: SwitchoverOutcomes;
  #annotations: Record<string, string> = {};
  #inFlight: InFlight | null = null;

  constructor(options: ClusterDay2Options) {
    this.#o = options;
    const { log, isLeader, event } = options;
    this.#stepper = new RolloutStepper({
      log,
      event,
      isLeader,
      stallAfterMs: options.stallAfterMs,
      deletePod: options.deletePod,
    });
    this.#outcomes = new SwitchoverOutcomes({
      log,
      event,
      isLeader,
      kind: 'RedisCluster',
      patch: options.patchAnnotations,
    });
  }

  /** Wired from the worker's parts: its Kubernetes client, timing and Redis adapter. */
  static of(
    common: Pick<ClusterDay2Options, 'ref' | 'log' | 'isLeader' | 'event' | 'now'>,
    worker: { kube: ClusterKube; timing: ManagerTiming; statefulSets?: (() => V1StatefulSet[]) | undefined },
    redis: Pick<ClusterAdapter, 'failover'>,
  ): ClusterDay2 {
    const { kube } = worker;
    const ref = common.ref;
    return new ClusterDay2({
      ...common,
      stallAfterMs: worker.timing.rolloutStallMs,
      statefulSets: worker.statefulSets ?? (() => []),
      deletePod: kube.deletePod ? (pod, uid) => kube.deletePod!(ref.namespace, pod, uid) : undefined,
      patchAnnotations: (annotations) => kube.patchClusterAnnotations(ref, annotations),
      failover: async (ip) => {
        const r = await redis.failover(ip, null);
        return r.ok ? null : r.error.message;
      },
      engines: new EngineWatch({ ...common, kube, namespace: ref.namespace }),
    });
  }

  update(annotations: Record<string, string> | undefined): void {
    this.#annotations = { ...(annotations ?? {}) };
  }

  /** A planned switchover is in flight: the master change the reporter sees next is that one. */
  get switching(): boolean {
    return this.#inFlight !== null;
  }

  reset(): void {
    this.#inFlight = null;
    this.#stepper.reset();
    this.#o.engines?.reset();
  }

  /**
   * Each pod's readiness and whether it runs its shard StatefulSet's current template (null while
   * the set is missing or its controller has not processed its spec, and for every pod while the
   * shards' templates differ: the hook changes them all in one sync, and until the informer shows
   * every one, the pods of the sets seen first would look like the only stale ones, and a master
   * could be moved before the replicas of the other shards).
   */
  kubeView(pods: readonly V1Pod[], shardOf: (pod: V1Pod) => number | null): Map<string, RolloutPod> {
    const names = redisClusterChildNames(this.#o.ref.name);
    const sets = new Map(
      this.#o
        .statefulSets()
        .filter((s) => s.metadata?.namespace === this.#o.ref.namespace)
        .map((s) => [s.metadata?.name, s]),
    );
    const out = new Map<string, RolloutPod>();
    const shards = new Set(pods.map(shardOf).filter((s) => s !== null));
    const keys = new Set(
      [...shards].map((s) => sets.get(names.shardSet(s))).map((s) => (s ? shardTemplateKey(s) : '')),
    );
    const agreed = keys.size === 1 && !keys.has('');
    for (const pod of pods) {
      const shard = shardOf(pod);
      const set = shard === null ? undefined : sets.get(names.shardSet(shard));
      const settled = set?.status?.observedGeneration === set?.metadata?.generation;
      const revision = set && settled && agreed ? set.status?.updateRevision : undefined;
      const own = pod.metadata?.labels?.[REVISION_LABEL];
      out.set(pod.metadata?.name ?? '', {
        ready: isReady(pod),
        updated: revision === undefined || own === undefined ? null : own === revision,
      });
    }
    return out;
  }

  /** The worker's round reached its end with nothing else to do (busy says why it is not quiet). */
  round(
    plan: RoundPlan,
    pods: readonly PodObservation[],
    v1: readonly V1Pod[],
    spec: ClusterSpecView,
  ): Promise<boolean> {
    const d = plan.reshard;
    const busy =
      plan.holds[0]?.reason ??
      (d.kind === 'wait' ? `the reshard waits: ${d.reason}` : null) ??
      (plan.topology.allAnswered ? null : 'not every node answers');
    const shards = new Map(pods.map((p) => [p.name, p.shard]));
    const kube = this.kubeView(v1, (p) => shards.get(p.metadata?.name ?? '') ?? null);
    this.#engines(plan.topology, kube, v1, spec);
    return this.quiet(plan.topology, spec, kube, busy);
  }

  /** Each answering node's engine, for the pod annotation and the move's Events. */
  #engines(t: Topology, kube: ReadonlyMap<string, RolloutPod>, v1: readonly V1Pod[], spec: ClusterSpecView): void {
    if (!this.#o.engines) return;
    const byName = new Map(v1.map((p) => [p.metadata?.name ?? '', p]));
    const pods = t.pods.map((p) => {
      const info = nodeOf(t, p)?.info ?? null;
      return {
        name: p.name,
        uid: p.uid,
        annotations: byName.get(p.name)?.metadata?.annotations ?? {},
        engine: info?.engine ?? null,
        updated: kube.get(p.name)?.updated ?? null,
        master: info?.role === 'master',
      };
    });
    this.#o.engines.observe(pods, spec.engine, spec.shards * (1 + spec.replicasPerShard));
  }

  /**
   * A quiet round (`busy` says why it is not, or is null): at most one day-2 action. Returns true
   * when something is in flight or was done, so the worker looks again soon.
   */
  async quiet(
    t: Topology,
    spec: ClusterSpecView,
    kube: ReadonlyMap<string, RolloutPod>,
    busy: string | null,
  ): Promise<boolean> {
    if (!this.#o.isLeader()) return false;
    const now = this.#o.now();
    if (this.#inFlight) return this.#follow(t, this.#inFlight, now);
    const request = parseRequest(this.#annotations[SWITCHOVER_ANNOTATION]);
    const asked = decideClusterRequest(t, kube, busy, request, this.#outcomes.handled(request, this.#annotations));
    if (request && asked.kind === 'done')
      await this.#outcomes.record(request, 'Done', asked.message, 'Normal', 'SwitchoverDone');
    else if (request && asked.kind === 'refuse')
      await this.#outcomes.record(request, 'Refused', asked.message, 'Warning', 'SwitchoverRefused');
    else if (request && asked.kind === 'switchover') {
      this.#o.log.info({ request: request.raw, target: asked.target, reason: asked.reason }, 'switchover requested');
      return this.#start(t, { request, shard: asked.shard, target: asked.target, from: asked.master, since: now });
    }
    if (this.#stepper.settling(t.pods)) return true;
    const d = decideClusterRollout({ topology: t, spec, kube, busy });
    if (d.kind === 'idle') {
      this.#stepper.idle(now);
      return false;
    }
    if (d.kind === 'wait') {
      this.#stepper.waiting(d.blockedOn, d.reason, now);
      return false;
    }
    this.#stepper.stepping(now);
    if (d.kind === 'delete') {
      await this.#stepper.delete({ name: d.pod, uid: d.uid }, d.reason);
      return true;
    }
    this.#o.log.info({ target: d.target, reason: d.reason }, 'rollout: switchover before the master pod is replaced');
    return this.#start(t, { request: null, shard: d.shard, target: d.target, from: d.master, since: now });
  }

  async #start(t: Topology, f: InFlight): Promise<boolean> {
    const ip = t.pods.find((p) => p.name === f.target)?.ip;
    if (!ip || !this.#o.isLeader()) return false;
    const error = await this.#o.failover(ip);
    if (error !== null) {
      await this.#finish(f, `CLUSTER FAILOVER on ${f.target} failed: ${error}`, false);
      return false;
    }
    this.#inFlight = f;
    this.#o.event({
      type: 'Normal',
      reason: 'Switchover',
      message: `shard ${f.shard}: ${f.target} takes over from ${f.from} (CLUSTER FAILOVER: ${f.from} pauses writes until ${f.target} has them all)${f.request ? `, as asked by "${f.request.raw}"` : ' for the rollout'}`,
    });
    return true;
  }

  async #follow(t: Topology, f: InFlight, now: number): Promise<boolean> {
    const m = shardMaster(t, f.shard).node;
    if (m?.pod?.name === f.target && healthyMaster(m)) {
      this.#inFlight = null;
      await this.#finish(f, `${f.target} is the master of shard ${f.shard}`, true);
      return true;
    }
    if (now - f.since <= SWITCHOVER_TIMEOUT_MS) return true;
    this.#inFlight = null;
    const still = m?.pod?.name ?? 'unknown';
    await this.#finish(
      f,
      `the switchover to ${f.target} did not complete; the master of shard ${f.shard} is ${still}`,
      false,
    );
    return false;
  }

  async #finish(f: InFlight, why: string, ok: boolean): Promise<void> {
    if (f.request) {
      await this.#outcomes.record(
        f.request,
        ok ? 'Done' : 'Refused',
        why,
        ok ? 'Normal' : 'Warning',
        ok ? 'SwitchoverDone' : 'SwitchoverRefused',
      );
      return;
    }
    this.#o.log[ok ? 'info' : 'warn']({ shard: f.shard, target: f.target }, `rollout switchover: ${why}`);
    if (!ok) this.#o.event({ type: 'Warning', reason: 'SwitchoverFailed', message: `rollout: ${why}` });
  }
}
