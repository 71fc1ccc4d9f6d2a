// What to tell the user, and when: which master decisions deserve a Kubernetes Event, and the
// memory that keeps them to one per transition (a tick every 100 ms must never become an Event
// every 100 ms). Pure functions plus a small memory object; the worker sends the Events.
// Invariants: FailoverBlocked is emitted once per blocked episode (same master, same cause) and
// re-armed only when the decision leaves "wait"; a failover episode starts at the first promote
// decision the leader acts on and ends when the master label lands on the new master (that is
// when the master Service routes to it); ReplicaRepointed is emitted once per (pod, master address).
import type { DecideConfig, MasterDecision, MasterHealth } from '../decide/index.ts';
import type { EventToSend as CoreEventToSend } from '../../core/events.ts';
import type { EngineMoveReason } from '../../core/decide/engines.ts';

export type EventReason =
  | 'Bootstrap'
  | 'BootstrapWaiting'
  | 'BootstrapGaveUp'
  | 'BootstrapWithoutRemoved'
  | 'BootstrapWithoutInvalid'
  | 'FailoverStarted'
  | 'FailoverCompleted'
  | 'FailoverBlocked'
  | 'ReplicaRepointed'
  | 'Switchover'
  | 'InvalidSpec'
  | 'AuthSecretMissing'
  | 'OperatorUserAdded'
  | 'PasswordGraceStarted'
  | 'PasswordGraceEnded'
  | 'TLSCertificateLoaded'
  | 'StepFailed'
  | 'RolloutStep'
  | 'RolloutStalled'
  | 'RolloutCompleted'
  | EngineMoveReason
  | 'SwitchoverDone'
  | 'SwitchoverRefused'
  | 'VolumeExpansion'
  | 'VolumeExpansionRefused'
  | 'StatefulSetRecreated'
  | 'BackupCompleted'
  | 'BackupFailed'
  | 'UsersApplied'
  | 'UserSecretMissing'
  | 'PasswordUnwritable';

/** The core Event (core/events.ts), with a Redis's reasons. */
export type EventToSend = CoreEventToSend<EventReason>;

type BlockConfig = Pick<DecideConfig, 'downAfterMs' | 'silentAfterSeconds' | 'witnessConfirmMs'>;

/**
 * How long the master must have been silent before a held-back failover is worth a Warning: a
 * genuinely hung master keeps its replicas' links "up" until they miss pings for
 * silentAfterSeconds (+ witnessConfirmMs), so until then "the replicas still hear it" is the
 * normal first second of every hung-master failover, not a blocked one. One more second of margin.
 */
export function blockedAfterMs(config: BlockConfig): number {
  return Math.max(config.downAfterMs, config.silentAfterSeconds * 1000 + config.witnessConfirmMs) + 1000;
}

/**
 * A "wait" that means a failover is being held back although the master looks gone: the master
 * has been silent for blockedAfterMs but the evidence disagrees (a replica still hears it: only
 * the sidecar lost it), no replica can take over, or it answers only with errors. Plain
 * suspicion, partial views at bootstrap and "not probed yet" are not worth an Event.
 */
export function blockedFailover(
  decision: MasterDecision,
  health: MasterHealth | null,
  config: BlockConfig,
): { key: string; message: string } | null {
  if (decision.kind !== 'wait' || decision.master === null || health === null) return null;
  const threshold = blockedAfterMs(config);
  if (health.state === 'suspect' && health.silentMs !== null && health.silentMs >= threshold) {
    const cause = /still hears? it/.test(health.reason) ? 'replicas-hear-master' : 'no-agreeing-evidence';
    return { key: `${decision.master}/${cause}`, message: decision.reason };
  }
  if (health.state === 'failed' && health.silentMs >= threshold)
    return { key: `${decision.master}/no-candidate`, message: decision.reason };
  if (health.state === 'unreadable') return { key: `${decision.master}/unreadable`, message: decision.reason };
  return null;
}

/** Is this promote decision a failover (rather than a bootstrap of a set with no master)? */
export function isFailover(
  decision: MasterDecision,
): decision is Extract<MasterDecision, { kind: 'promote' }> & { previous: string } {
  return decision.kind === 'promote' && decision.previous !== null && decision.previous !== decision.master;
}

export interface FailoverEpisode {
  previous: string;
  master: string;
  cause: string;
  reason: string;
  /** When the leader first acted on it (monotonic ms). */
  decidedAt: number;
  /** When the old master was first seen failing (its first unanswered probe), monotonic ms. */
  failingSince: number;
}

export class EventMemory {
  failover: FailoverEpisode | null = null;
  blocked: string | null = null;
  readonly repointed = new Map<string, string>();
  /** The spec's problems as last seen, and as last told in an Event (by a leader). */
  specProblems: string | null = null;
  specProblemsTold: string | null = null;
  authProblem: string | null = null;
  authProblemTold: string | null = null;

  /** The decision of this tick; returns the FailoverBlocked Event to send, if any. */
  noteDecision(decision: MasterDecision, health: MasterHealth | null, config: BlockConfig): EventToSend | null {
    if (decision.kind !== 'wait') {
      this.blocked = null;
      return null;
    }
    const b = blockedFailover(decision, health, config);
    if (!b || b.key === this.blocked) return null;
    this.blocked = b.key;
    return { type: 'Warning', reason: 'FailoverBlocked', message: b.message };
  }

  /** A failover the leader starts acting on: FailoverStarted once per (previous, master). */
  startFailover(
    decision: Extract<MasterDecision, { kind: 'promote' }> & { previous: string },
    now: number,
    failingSince: number | null,
  ): EventToSend | null {
    const f = this.failover;
    if (f && f.previous === decision.previous && f.master === decision.master) return null;
    this.failover = {
      previous: decision.previous,
      master: decision.master,
      cause: decision.cause,
      reason: decision.reason,
      decidedAt: now,
      failingSince: failingSince !== null && failingSince <= now ? failingSince : now,
    };
    const adopted = decision.cause === 'adopt' ? ' (finishing a promotion an earlier leader started)' : '';
    return {
      type: 'Warning',
      reason: 'FailoverStarted',
      message: `failing over from ${decision.previous} to ${decision.master}${adopted}: ${decision.reason}`,
    };
  }

  /** The master label landed on `master`: FailoverCompleted for the episode it ends, if any. */
  completeFailover(
    master: string,
    now: number,
  ): { event: EventToSend; durationMs: number; episode: FailoverEpisode } | null {
    const f = this.failover;
    if (!f || f.master !== master) return null;
    this.failover = null;
    const durationMs = Math.max(0, Math.round(now - f.failingSince));
    const decidedMs = Math.max(0, Math.round(now - f.decidedAt));
    return {
      durationMs,
      episode: f,
      event: {
        type: 'Normal',
        reason: 'FailoverCompleted',
        message: `failover from ${f.previous} to ${master} completed in ${durationMs} ms (old master first unanswered probe -> master label moved; ${decidedMs} ms after the decision)`,
      },
    };
  }

  /** A replica re-pointed to masterIp: once per (pod, address). */
  repoint(pod: string, masterPod: string, masterIp: string, demote: boolean): EventToSend | null {
    if (this.repointed.get(pod) === masterIp) return null;
    this.repointed.set(pod, masterIp);
    return {
      type: 'Normal',
      reason: 'ReplicaRepointed',
      message: demote
        ? `${pod} claimed to be master; demoted to a replica of ${masterPod} (${masterIp}) before its label changed`
        : `${pod} now replicates from ${masterPod} (${masterIp})`,
    };
  }

  forgetPod(pod: string): void {
    this.repointed.delete(pod);
  }
}
