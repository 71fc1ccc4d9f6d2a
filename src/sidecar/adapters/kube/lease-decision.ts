// Leader election decisions on a coordination.k8s.io/v1 Lease, as pure functions of (lease,
// identity, clock readings, settings). The adapter (leader.ts) does the I/O and the timing.
//
// Safety invariant (no two sidecars act at once): a leader acts only while
//   now < lastRenew + renewDeadline
// where lastRenew is the local time taken BEFORE sending the write that succeeded (it is also the
// renewTime written). Another instance takes over only when BOTH
//   now > renewTime + leaseDuration          (the holder's clock, from the lease) and
//   now > seenAt    + leaseDuration          (its own clock: when it first saw this version)
// and seenAt is taken after the read returned, so seenAt >= the holder's write. With
// renewDeadline < leaseDuration the leader has stopped (leaseDuration - renewDeadline) before anyone
// may take over; that margin absorbs timer lateness and clock skew up to that much. The second
// condition makes takeover independent of the holder's clock being behind ours.
// A takeover or a renewal is a PUT carrying the resourceVersion that was read: if anyone wrote
// in between, the server answers 409 and the write is lost (optimistic concurrency).
//
// Default timing (decided for a sub-2-second Redis failover budget; see DEFAULT_LEADER_SETTINGS):
// the leader renews every 500 ms, stops acting 2 s after its last successful renewal, and a
// crashed leader is replaced 3 to ~4 s after its last renewal (3 s lease + up to one poll and
// one observation lag). A leader that stops gracefully releases the lease and the next instance
// takes over at its next poll (<= 500 ms). A Redis failover already in flight is finished or
// repaired by the new leader from what the pods report.

export interface LeaderSettings {
  /**
   * Written into the Lease: how long others must wait after the last renewal before taking over. Whole seconds (the API
   * field is an integer).
   */
  leaseDurationSeconds: number;
  /** The leader stops acting when its last successful renewal is older than this (ms). Must be < leaseDuration. */
  renewDeadlineMs: number;
  /** How often the leader renews and the others poll (ms). */
  retryPeriodMs: number;
  /** Timeout of one Lease request (ms); a hung API call must not hold the loop past the deadline. */
  requestTimeoutMs: number;
}

export const DEFAULT_LEADER_SETTINGS: LeaderSettings = {
  leaseDurationSeconds: 3,
  renewDeadlineMs: 2000,
  retryPeriodMs: 500,
  requestTimeoutMs: 1000,
};

/** Problems with a settings combination (empty when usable): the safety invariant depends on them. */
export function settingsProblems(s: LeaderSettings): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(s.leaseDurationSeconds) || s.leaseDurationSeconds < 1)
    problems.push('leaseDurationSeconds must be a whole number >= 1');
  if (!(s.retryPeriodMs > 0)) problems.push('retryPeriodMs must be > 0');
  if (!(s.renewDeadlineMs > s.retryPeriodMs))
    problems.push('renewDeadlineMs must be greater than retryPeriodMs (at least one retry before giving up)');
  if (!(s.renewDeadlineMs < s.leaseDurationSeconds * 1000))
    problems.push(
      'renewDeadlineMs must be less than leaseDurationSeconds * 1000 (the leader must stop before others may take over)',
    );
  if (!(s.requestTimeoutMs > 0 && s.requestTimeoutMs <= s.renewDeadlineMs))
    problems.push('requestTimeoutMs must be > 0 and <= renewDeadlineMs');
  return problems;
}

/** The Lease as the decision needs it. Times are whatever the API returned (string or Date). */
export interface LeaseState {
  resourceVersion: string;
  holderIdentity?: string | null;
  leaseDurationSeconds?: number | null;
  acquireTime?: string | Date | null;
  renewTime?: string | Date | null;
  leaseTransitions?: number | null;
}

/** What to write into spec (times as ms since the epoch; the adapter formats them as MicroTime). */
export interface LeaseSpecPlan {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: number;
  renewTime: number;
  leaseTransitions: number;
}

/** When this instance first saw the current version of the Lease (its own clock). */
export interface Observation {
  resourceVersion: string;
  seenAt: number;
}

export type Decision =
  | { action: 'create'; reason: 'LeaseAbsent'; spec: LeaseSpecPlan }
  | { action: 'acquire'; reason: 'Released' | 'Expired'; spec: LeaseSpecPlan; previousHolder: string }
  | { action: 'renew'; reason: 'HeldBySelf'; spec: LeaseSpecPlan }
  | { action: 'wait'; reason: 'HeldByOther'; holder: string; expiresInMs: number };

export interface DecisionInput {
  lease: LeaseState | null;
  identity: string;
  now: number;
  /** When the current lease version was first seen; undefined means "just now". */
  observation?: Observation;
  settings: LeaderSettings;
}

export function parseTime(v: string | Date | null | undefined): number | undefined {
  if (v === null || v === undefined) return undefined;
  const ms = v instanceof Date ? v.getTime() : Date.parse(v);
  return Number.isFinite(ms) ? ms : undefined;
}

/** Keeps the first sighting of a version; a new version (any write) restarts the clock. */
export function observe(
  prev: Observation | undefined,
  lease: LeaseState | null,
  seenAt: number,
): Observation | undefined {
  if (!lease) return undefined;
  if (prev && prev.resourceVersion === lease.resourceVersion) return prev;
  return { resourceVersion: lease.resourceVersion, seenAt };
}

/**
 * The earlier of two sightings of the same version: another watcher of this instance (the Lease
 * informer) may have seen it first. Both readings come from this instance's clock and were taken
 * after the version was written, so the earlier one still never predates the holder's write.
 */
export function earliest(own: Observation | undefined, other: Observation | undefined): Observation | undefined {
  if (!own || !other || other.resourceVersion !== own.resourceVersion) return own;
  return other.seenAt < own.seenAt ? other : own;
}

/** ms until the holder's lease is expired for us (<= 0: expired). */
export function expiresInMs(
  lease: LeaseState,
  now: number,
  observation: Observation | undefined,
  settings: LeaderSettings,
): number {
  const durationMs =
    (lease.leaseDurationSeconds && lease.leaseDurationSeconds > 0
      ? lease.leaseDurationSeconds
      : settings.leaseDurationSeconds) * 1000;
  const seenAt = observation && observation.resourceVersion === lease.resourceVersion ? observation.seenAt : now;
  const byObservation = seenAt + durationMs - now;
  const renew = parseTime(lease.renewTime);
  const byLease = renew === undefined ? byObservation : renew + durationMs - now;
  // Expired only when both clocks agree: the later of the two expiries wins.
  return Math.max(byObservation, byLease);
}

export function decide({ lease, identity, now, observation, settings }: DecisionInput): Decision {
  const fresh = (transitions: number): LeaseSpecPlan => ({
    holderIdentity: identity,
    leaseDurationSeconds: settings.leaseDurationSeconds,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: transitions,
  });
  if (!lease) return { action: 'create', reason: 'LeaseAbsent', spec: fresh(0) };
  const holder = lease.holderIdentity ?? '';
  const transitions = lease.leaseTransitions ?? 0;
  if (holder === identity) {
    return {
      action: 'renew',
      reason: 'HeldBySelf',
      spec: { ...fresh(transitions), acquireTime: parseTime(lease.acquireTime) ?? now },
    };
  }
  if (holder === '') return { action: 'acquire', reason: 'Released', spec: fresh(transitions + 1), previousHolder: '' };
  const left = expiresInMs(lease, now, observation, settings);
  if (left < 0) return { action: 'acquire', reason: 'Expired', spec: fresh(transitions + 1), previousHolder: holder };
  return { action: 'wait', reason: 'HeldByOther', holder, expiresInMs: left };
}

/** The spec a leader writes when it steps down: no holder, so the next poll of anyone takes over. */
export function releaseSpec(lease: LeaseState, now: number): LeaseSpecPlan & { holderIdentity: '' } {
  return {
    holderIdentity: '',
    leaseDurationSeconds: 1,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: lease.leaseTransitions ?? 0,
  };
}

/** Whether a leader whose last successful renewal started at lastRenewAt may still act at now. */
export function mayAct(lastRenewAt: number | undefined, now: number, settings: LeaderSettings): boolean {
  return lastRenewAt !== undefined && now < lastRenewAt + settings.renewDeadlineMs;
}
