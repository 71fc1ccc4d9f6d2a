// A rolling update of a RedisCluster, one pod at a time across every shard. The StatefulSets use
// OnDelete, so nothing replaces a pod until this says so. Pure: the worker calls it on a quiet
// round (no step of formation, repair or failover to take, the reshard balanced) and carries out
// what it returns.
// Order and invariants:
// - The cluster's own duties come first: nothing happens while the round has steps, the slots are
//   not all served by healthy masters of their shards (a reshard running, a slot open, a shard
//   without a master), or a pod's revision is unknown, a pod is being deleted, or a pod of a shard
//   does not exist yet (the previous step is still settling).
// - A stale replica that is not Ready serves nothing: it goes first.
// - Otherwise a pod is replaced only when every OTHER pod is Ready and answers, each master the
//   shard's serving master, each replica linked to its shard's master and within CAUGHT_UP_BYTES
//   of it: one pod down at a time, and a replacement is linked and in sync before the next goes.
// - Stale replicas of every shard first (shard by shard, highest ordinal first), then the masters
//   shard by shard. A master's pod is never deleted while it is the master: first a planned
//   switchover (CLUSTER FAILOVER, no FORCE) to its most advanced updated replica (in a move
//   between engines, one whose node answers with the target engine); once that
//   replica is the master in the cluster's view, the old master is an ordinary stale replica.
//   With no such replica the rollout waits and says why.
import { targetEngine } from '../../../api/node-engine.ts';
import { CAUGHT_UP_BYTES, byFitness } from '../../core/decide/switchover.ts';
import { label, shardMaster } from './shard-master.ts';
import { healthyMaster, selfLine, type Topology } from './topology.ts';
import type { ClusterNode, ClusterSpecView, PodObservation } from './types.ts';

/** What Kubernetes says of a pod beside what its node answers. */
export interface RolloutPod {
  ready: boolean;
  /** Runs its StatefulSet's current template; null: not known (the set is not settled). */
  updated: boolean | null;
}

export interface RolloutInput {
  topology: Topology;
  spec: ClusterSpecView;
  /** By pod name. A pod missing here counts as not Ready and of unknown revision. */
  kube: ReadonlyMap<string, RolloutPod>;
  /** Why the cluster is not quiet this round (steps to take, a reshard to run), or null. */
  busy: string | null;
}

export type ClusterRolloutDecision =
  | { kind: 'idle'; reason: string }
  | { kind: 'wait'; blockedOn: string | null; reason: string }
  | { kind: 'delete'; pod: string; uid: string; reason: string }
  | { kind: 'switchover'; shard: number; target: string; master: string; reason: string };

export type ServingCheck = { ok: true; node: ClusterNode; lag: number } | { ok: false; reason: string };

/** The node a pod answered as this round. */
export function nodeOf(t: Topology, pod: PodObservation): ClusterNode | undefined {
  const self = selfLine(pod);
  return self ? t.nodes.get(self.id) : undefined;
}

/** Does `pod` serve its part now: Ready, a healthy master of its shard, or a replica linked to it and caught up? */
export function serving(t: Topology, kube: ReadonlyMap<string, RolloutPod>, pod: PodObservation): ServingCheck {
  if (pod.deleting) return { ok: false, reason: `${pod.name} is being deleted` };
  if (!kube.get(pod.name)?.ready) return { ok: false, reason: `${pod.name} is not Ready` };
  const node = nodeOf(t, pod);
  if (!node?.info) return { ok: false, reason: `${pod.name} does not answer` };
  const master = shardMaster(t, pod.shard);
  const m = master.node;
  if (!m || !master.serving || !healthyMaster(m) || !m.info?.clusterOk)
    return { ok: false, reason: `shard ${pod.shard} has no healthy master serving its slots` };
  if (m === node) return { ok: true, node, lag: 0 };
  const info = node.info;
  if (info.role !== 'replica' || node.masterId !== m.id || !info.linkUp || info.syncing)
    return { ok: false, reason: `${pod.name} is not a replica linked to its shard's master ${label(m)}` };
  const lag = m.info.offset - info.offset;
  if (lag > CAUGHT_UP_BYTES)
    return { ok: false, reason: `${pod.name} is ${lag} bytes behind ${label(m)} (at most ${CAUGHT_UP_BYTES})` };
  return { ok: true, node, lag: Math.max(0, lag) };
}

export type ClusterTarget =
  { ok: true; pod: PodObservation; master: PodObservation; reason: string } | { ok: false; reason: string };

/** The fittest replica of `shard` to take over from its master, among the pods `allowed` lets through. */
export function bestClusterTarget(
  t: Topology,
  kube: ReadonlyMap<string, RolloutPod>,
  shard: number,
  allowed: (pod: PodObservation) => boolean = () => true,
): ClusterTarget {
  const m = shardMaster(t, shard).node;
  if (!m?.pod || !healthyMaster(m)) return { ok: false, reason: `shard ${shard} has no healthy master` };
  const fit: Array<{ name: string; offset: number; priority: number; pod: PodObservation; lag: number }> = [];
  const unfit: string[] = [];
  for (const pod of t.pods) {
    if (pod.shard !== shard || pod === m.pod || !allowed(pod)) continue;
    const check = serving(t, kube, pod);
    if (check.ok) fit.push({ name: pod.name, offset: check.node.info!.offset, priority: 0, pod, lag: check.lag });
    else unfit.push(check.reason);
  }
  const best = byFitness(fit)[0];
  if (!best)
    return {
      ok: false,
      reason:
        unfit.length > 0 ? `no replica can take over: ${unfit.join('; ')}` : `shard ${shard} has no replica to move to`,
    };
  return {
    ok: true,
    pod: best.pod,
    master: m.pod,
    reason: `${best.name} is the most advanced linked replica of shard ${shard} (offset ${best.offset}, ${best.lag} bytes behind)`,
  };
}

/** The engine the pods should run (api/node-engine.ts targetEngine), null when neither spec nor pods say. */
export function clusterRolloutEngine(input: RolloutInput): string | null {
  return targetEngine(
    input.spec.engine,
    input.topology.pods.map((p) => ({
      pod: p.name,
      engine: nodeOf(input.topology, p)?.info?.engine ?? null,
      updated: input.kube.get(p.name)?.updated ?? null,
    })),
  );
}

/** Replicas shard by shard, highest ordinal first. */
const order = (a: PodObservation, b: PodObservation) => a.shard - b.shard || b.ordinal - a.ordinal;

export function decideClusterRollout(input: RolloutInput): ClusterRolloutDecision {
  const { topology: t, kube, spec } = input;
  const pods = t.pods;
  const stale = pods.filter((p) => kube.get(p.name)?.updated === false);
  if (stale.length === 0 && pods.every((p) => kube.get(p.name)?.updated === true))
    return { kind: 'idle', reason: 'every pod runs the current template' };
  if (input.busy !== null) return { kind: 'wait', blockedOn: null, reason: `the cluster comes first: ${input.busy}` };
  const unknown = pods.filter((p) => (kube.get(p.name)?.updated ?? null) === null);
  if (unknown.length > 0) {
    return {
      kind: 'wait',
      blockedOn: null,
      reason: `the template revision of ${unknown.map((p) => p.name).join(', ')} is not known yet`,
    };
  }
  const leaving = pods.find((p) => p.deleting);
  if (leaving) return { kind: 'wait', blockedOn: leaving.name, reason: `${leaving.name} is being replaced` };
  for (let shard = 0; shard < spec.shards; shard++) {
    const count = pods.filter((p) => p.shard === shard).length;
    if (count < 1 + spec.replicasPerShard)
      return {
        kind: 'wait',
        blockedOn: null,
        reason: `shard ${shard} has ${count} of ${1 + spec.replicasPerShard} pods`,
      };
  }
  const masterIds = new Set<string>();
  for (let shard = 0; shard < spec.shards; shard++) {
    const m = shardMaster(t, shard).node;
    if (m) masterIds.add(m.id);
  }
  const isMaster = (p: PodObservation) => {
    const id = nodeOf(t, p)?.id;
    return id !== undefined && masterIds.has(id);
  };
  const staleReplicas = stale.filter((p) => !isMaster(p)).sort(order);
  const idle = staleReplicas.find((p) => !kube.get(p.name)?.ready);
  if (idle)
    return {
      kind: 'delete',
      pod: idle.name,
      uid: idle.uid,
      reason: `${idle.name} runs an old template and is not Ready: replaced first, it serves nothing`,
    };
  const progress = `${pods.length - stale.length} of ${pods.length} pods updated`;
  const next = staleReplicas[0] ?? stale.filter(isMaster).sort(order)[0]!;
  for (const pod of pods) {
    if (pod === next) continue;
    const check = serving(t, kube, pod);
    if (!check.ok)
      return { kind: 'wait', blockedOn: pod.name, reason: `${progress}; ${next.name} waits: ${check.reason}` };
  }
  if (!isMaster(next)) {
    return {
      kind: 'delete',
      pod: next.name,
      uid: next.uid,
      reason: `${progress}; ${next.name} runs an old template and every other pod is linked and caught up`,
    };
  }
  // During a move between engines the master goes onto a replica that already runs the target engine.
  const engine = clusterRolloutEngine(input);
  const onEngine = (p: PodObservation) => engine === null || nodeOf(t, p)?.info?.engine?.engine === engine;
  const target = bestClusterTarget(t, kube, next.shard, (p) => kube.get(p.name)?.updated === true && onEngine(p));
  if (!target.ok) {
    const none = spec.replicasPerShard === 0 ? ' (spec.replicas is 0: scale to 1 for the rollout)' : '';
    const onto = engine === null ? '' : ` onto a replica running ${engine}`;
    return {
      kind: 'wait',
      blockedOn: next.name,
      reason: `${progress}; the master ${next.name} of shard ${next.shard} runs an old template and cannot be moved${onto}: ${target.reason}${none}`,
    };
  }
  return {
    kind: 'switchover',
    shard: next.shard,
    target: target.pod.name,
    master: next.name,
    reason: `${progress}; the master ${next.name} of shard ${next.shard} runs an old template: ${target.reason}`,
  };
}
