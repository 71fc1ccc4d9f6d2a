// Planned switchovers a day-2 operation asks for: the checks a target must pass, the best target
// when none is named, and what to do with a request written on the Redis
// (redis.example.com/switchover). Pure.
// Invariants: a target is only ever a pod that is not the master, not being deleted, Ready, a
// replica whose link to the master is up, of the master's replication history, and within
// CAUGHT_UP_BYTES of the master's offset (so the write pause of pause-and-promote stays short).
// A request equal to the one already handled is never run again; a request is refused with a
// reason naming what failed, never half-done.
import type { RedisFacts } from '../../adapters/redis/types.ts';
import { byFitness, CAUGHT_UP_BYTES, parseRequest, type SwitchoverRequest } from '../../core/decide/switchover.ts';
import { currentFacts } from './observe.ts';
import type { DecideInput, PodObservation } from './types.ts';

export { CAUGHT_UP_BYTES, parseRequest, type SwitchoverRequest };

export type TargetCheck = { ok: true; facts: RedisFacts; reason: string } | { ok: false; reason: string };

/** Is `target` fit to take over from the healthy master `master` now? */
export function checkTarget(input: DecideInput, master: PodObservation, target: PodObservation): TargetCheck {
  if (target === master) return { ok: false, reason: `${target.name} is already the master` };
  if (target.deleting) return { ok: false, reason: `${target.name} is being deleted` };
  if (!target.ready) return { ok: false, reason: `${target.name} is not Ready` };
  const mf = currentFacts(master, input.now, input.config);
  const tf = currentFacts(target, input.now, input.config);
  if (!mf || mf.replication.role !== 'master')
    return { ok: false, reason: `the master ${master.name} does not answer as master now` };
  if (!tf) return { ok: false, reason: `${target.name} does not answer now` };
  const r = tf.replication;
  if (tf.loading || r.role !== 'replica' || r.masterLinkStatus !== 'up' || r.masterSyncInProgress) {
    return { ok: false, reason: `${target.name} is not a replica linked to the master` };
  }
  if (r.masterHost !== master.ip)
    return {
      ok: false,
      reason: `${target.name} replicates from ${String(r.masterHost)}, not from the master ${master.name}`,
    };
  if (r.masterReplid !== mf.replication.masterReplid) {
    return {
      ok: false,
      reason: `${target.name} is of another replication history (${r.masterReplid.slice(0, 8)}, master ${mf.replication.masterReplid.slice(0, 8)})`,
    };
  }
  if (tf.replicaPriority === 0) return { ok: false, reason: `${target.name} has replica-priority 0` };
  const lag = mf.replication.masterReplOffset - r.masterReplOffset;
  if (lag > CAUGHT_UP_BYTES)
    return { ok: false, reason: `${target.name} is ${lag} bytes behind the master (at most ${CAUGHT_UP_BYTES})` };
  return { ok: true, facts: tf, reason: `${target.name} is linked, ${Math.max(0, lag)} bytes behind` };
}

export type TargetChoice = { ok: true; pod: PodObservation; reason: string } | { ok: false; reason: string };

/** The fittest target among the pods `allowed` lets through: highest offset, then lowest priority number, then name. */
export function bestTarget(
  input: DecideInput,
  master: PodObservation,
  allowed: (pod: PodObservation) => boolean = () => true,
): TargetChoice {
  const fit: Array<{ pod: PodObservation; facts: RedisFacts }> = [];
  const unfit: string[] = [];
  for (const pod of input.pods) {
    if (pod === master || !allowed(pod)) continue;
    const check = checkTarget(input, master, pod);
    if (check.ok) fit.push({ pod, facts: check.facts });
    else unfit.push(check.reason);
  }
  const best = byFitness(
    fit.map((f) => ({
      ...f,
      name: f.pod.name,
      offset: f.facts.replication.masterReplOffset,
      priority: f.facts.replicaPriority,
    })),
  )[0];
  if (!best)
    return {
      ok: false,
      reason: unfit.length > 0 ? `no replica can take over: ${unfit.join('; ')}` : 'no replica to switch over to',
    };
  return {
    ok: true,
    pod: best.pod,
    reason: `${best.pod.name} is the most advanced linked replica (offset ${best.facts.replication.masterReplOffset})`,
  };
}

export type RequestDecision =
  | { kind: 'none' }
  | { kind: 'done'; message: string }
  | { kind: 'refuse'; message: string }
  | { kind: 'switchover'; target: string; reason: string };

/**
 * What to do with `request` now. `handled` is the request the sidecar last recorded as done or
 * refused; `master` the kept, healthy master (null when the master is not settled).
 */
export function decideRequest(
  input: DecideInput,
  master: string | null,
  request: SwitchoverRequest | null,
  handled: string | null,
): RequestDecision {
  if (request === null || request.raw === handled) return { kind: 'none' };
  const masterPod = master === null ? undefined : input.pods.find((p) => p.name === master);
  if (!masterPod)
    return {
      kind: 'refuse',
      message:
        'the master is not healthy and settled now; no switchover while it is not (a failover handles a failed master)',
    };
  if (request.target === null) {
    const best = bestTarget(input, masterPod);
    return best.ok
      ? { kind: 'switchover', target: best.pod.name, reason: best.reason }
      : { kind: 'refuse', message: best.reason };
  }
  if (request.target === masterPod.name)
    return { kind: 'done', message: `${masterPod.name} is already the master: nothing to do` };
  const target = input.pods.find((p) => p.name === request.target);
  if (!target) return { kind: 'refuse', message: `no pod ${request.target} belongs to this Redis` };
  const check = checkTarget(input, masterPod, target);
  return check.ok
    ? { kind: 'switchover', target: target.name, reason: check.reason }
    : { kind: 'refuse', message: check.reason };
}
