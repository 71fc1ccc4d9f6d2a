// A rolling update, one step at a time. The StatefulSets use OnDelete, so nothing replaces a pod
// until this says so. Pure: the manager calls it on a steady round (the master kept and healthy,
// no replication step to take) and carries out what it returns.
// Order and invariants:
// - Nothing happens while any pod's revision is unknown, a pod is being deleted, or a pod the
//   Redis should have does not exist yet: the previous step is still settling.
// - A stale replica that is not Ready serves nothing: it goes first (a crash-looping old pod
//   never blocks the rollout, and replacing it takes nothing down).
// - Otherwise a pod is replaced only when every OTHER pod is Ready and, for replicas, linked to
//   the master and within CAUGHT_UP_BYTES of it: one pod down at a time, and each new pod is
//   linked again before the next goes. An updated pod that never becomes Ready therefore stops the
//   rollout there (that pod is named in the reason).
// - Stale replicas before the master; the master's pod is never deleted while it is the master:
//   first a planned switchover to the most advanced updated replica (in a move between engines,
//   one whose node answers with the target engine), then its pod is an ordinary stale replica.
//   With no replica to move to, the rollout waits and says so (restarting the only node would
//   take the Redis down, and without persistence lose its data).
import { compareCodeUnits } from '../../../api/order.ts';
import { targetEngine } from '../../../api/node-engine.ts';
import { currentFacts, expectedPodNames } from './observe.ts';
import { bestTarget, checkTarget } from './switchover.ts';
import type { DecideInput, PodObservation } from './types.ts';

export type RolloutDecision =
  | { kind: 'idle'; reason: string }
  | { kind: 'wait'; blockedOn: string | null; reason: string }
  | { kind: 'delete'; pod: string; reason: string }
  | { kind: 'switchover'; target: string; reason: string };

/** Replica-set pods from the highest ordinal down, then the master set's: names in reverse. */
const deletionOrder = (a: PodObservation, b: PodObservation) =>
  (a.component === 'replica-set' ? 0 : 1) - (b.component === 'replica-set' ? 0 : 1) || compareCodeUnits(b.name, a.name);

/** Why `pod` cannot stay up while another pod is replaced, or null when it can. */
function notServing(input: DecideInput, master: PodObservation, pod: PodObservation): string | null {
  if (pod === master) return pod.ready ? null : `the master ${pod.name} is not Ready`;
  const check = checkTarget(input, master, pod);
  return check.ok ? null : check.reason;
}

/** The engine the pods should run (api/node-engine.ts targetEngine), null when neither spec nor pods say. */
export function rolloutEngine(input: DecideInput): string | null {
  return targetEngine(
    input.spec.engine,
    input.pods.map((p) => ({
      pod: p.name,
      engine: currentFacts(p, input.now, input.config)?.engine ?? null,
      updated: p.updated ?? null,
    })),
  );
}

export function decideRollout(input: DecideInput, masterName: string): RolloutDecision {
  const master = input.pods.find((p) => p.name === masterName);
  if (!master) return { kind: 'wait', blockedOn: masterName, reason: `the master ${masterName} is not visible` };
  const stale = input.pods.filter((p) => p.updated === false);
  if (stale.length === 0 && input.pods.every((p) => p.updated === true))
    return { kind: 'idle', reason: 'every pod runs the current template' };
  const unknown = input.pods.filter((p) => p.updated === undefined || p.updated === null);
  if (unknown.length > 0) {
    return {
      kind: 'wait',
      blockedOn: null,
      reason: `the template revision of ${unknown.map((p) => p.name).join(', ')} is not known yet`,
    };
  }
  const leaving = input.pods.find((p) => p.deleting);
  if (leaving) return { kind: 'wait', blockedOn: leaving.name, reason: `${leaving.name} is being replaced` };
  const present = new Set(input.pods.map((p) => p.name));
  const missing = expectedPodNames(input.name, input.spec.replicas).find((n) => !present.has(n));
  if (missing !== undefined) return { kind: 'wait', blockedOn: missing, reason: `${missing} does not exist yet` };

  const staleReplicas = stale.filter((p) => p !== master).sort(deletionOrder);
  const idle = staleReplicas.find((p) => !p.ready);
  if (idle) {
    return {
      kind: 'delete',
      pod: idle.name,
      reason: `${idle.name} runs an old template and is not Ready: replaced first, it serves nothing`,
    };
  }
  const progress = `${input.pods.length - stale.length} of ${input.pods.length} pods updated`;
  const next = staleReplicas[0];
  if (next) {
    for (const pod of input.pods) {
      if (pod === next) continue;
      const why = notServing(input, master, pod);
      if (why !== null) return { kind: 'wait', blockedOn: pod.name, reason: `${progress}; ${next.name} waits: ${why}` };
    }
    return {
      kind: 'delete',
      pod: next.name,
      reason: `${progress}; ${next.name} runs an old template and every other pod is linked and caught up`,
    };
  }
  // Only the master is stale.
  for (const pod of input.pods) {
    const why = notServing(input, master, pod);
    if (why !== null)
      return { kind: 'wait', blockedOn: pod.name, reason: `${progress}; the master moves last: ${why}` };
  }
  // During a move between engines the master goes onto a replica that already runs the target engine.
  const engine = rolloutEngine(input);
  const target = bestTarget(
    input,
    master,
    (p) =>
      p.updated === true && (engine === null || currentFacts(p, input.now, input.config)?.engine?.engine === engine),
  );
  if (!target.ok) {
    return {
      kind: 'wait',
      blockedOn: master.name,
      reason: `${progress}; the master ${master.name} runs an old template and cannot be moved${engine === null ? '' : ` onto a replica running ${engine}`}: ${target.reason}${input.spec.replicas === 0 ? ' (spec.replicas is 0: scale to 1 for the rollout, or delete the pod to restart it in place)' : ''}`,
    };
  }
  return {
    kind: 'switchover',
    target: target.pod.name,
    reason: `${progress}; the master ${master.name} runs an old template: ${target.reason}`,
  };
}
