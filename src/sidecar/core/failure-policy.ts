// The failure policy of the steps a manager applies, for every kind. Pure: time comes in as `now`.
// A step that keeps failing is one failure EPISODE: told once when it starts, retried with a
// per-step back-off instead of every round, and closed once when the step succeeds or is no
// longer planned.
// Invariants:
// - A step is keyed by what it does and to whom (each kind supplies its key function): a changed
//   plan (a new master, another target) is a new step and runs at once, never waiting out another
//   step's back-off.
// - Temporary failures (the node or the API did not answer, a conflict, a throttle) back off from
//   the tick interval up to maxTemporaryBackoffMs; permanent ones (refused: forbidden, invalid,
//   an unknown command) wait permanentBackoffMs, since retrying sooner cannot help and only
//   floods the log. Neither ever gives up: the world may change (RBAC fixed, node upgraded).
// - A temporary failure is retried at the next round the first time (a failover step that failed
//   once is retried as fast as without this policy), then after initialBackoffMs, doubling.
export type FailureClass = 'temporary' | 'permanent';

export interface StepFailure {
  class: FailureClass;
  /** One line, for the log and the Event. */
  detail: string;
}

export interface FailurePolicyConfig {
  /** Back-off after the second temporary failure in a row; doubles per further failure. */
  initialBackoffMs: number;
  maxTemporaryBackoffMs: number;
  permanentBackoffMs: number;
}

export const DEFAULT_FAILURE_POLICY: FailurePolicyConfig = {
  initialBackoffMs: 100,
  maxTemporaryBackoffMs: 2000,
  permanentBackoffMs: 30_000,
};

const REFUSED = [
  // A version that lacks the command.
  /unknown (command|subcommand|option)/i,
  // A parameter or a form it does not take.
  /wrong number of arguments|syntax error|unsupported config parameter/i,
];

/**
 * Permanent only when Redis refused the command itself (a version that lacks it, a parameter it
 * does not know): every other answer depends on state that changes (a replica not online yet, a
 * node loading, busy or unreachable). `auth` is temporary: the password source re-reads the
 * Secret when a node refuses it.
 * Takes a RedisFailure, or any failure with a Redis error kind and message (a slot move's).
 */
export function classifyRedisFailure(failure: { kind: string; message: string }): FailureClass {
  return failure.kind === 'other' && REFUSED.some((r) => r.test(failure.message)) ? 'permanent' : 'temporary';
}

/** HTTP status of a failed API call (undefined: no answer). */
export function classifyKubeFailure(code: number | undefined): FailureClass {
  if (code === undefined || code === 409 || code === 429 || code >= 500) return 'temporary';
  return code >= 400 ? 'permanent' : 'temporary';
}

export interface Episode<S> {
  key: string;
  step: S;
  failures: number;
  firstAt: number;
  lastFailure: StepFailure;
  retryAt: number;
}

export type FailureVerdict<S> =
  /** The first failure of an episode: tell it. */
  | { kind: 'started'; episode: Episode<S> }
  /** Another failure of a known episode: count it, say nothing. */
  | { kind: 'continues'; episode: Episode<S> };

export interface Recovery<S> {
  episode: Episode<S>;
  /** ms from the first failure to the end of the episode. */
  afterMs: number;
  how: 'succeeded' | 'no longer planned';
}

export class FailurePolicy<S> {
  readonly #keyOf: (step: S) => string;
  readonly #config: FailurePolicyConfig;
  readonly #episodes = new Map<string, Episode<S>>();

  /** `keyOf`: the kind's step identity (what a step does and to whom). */
  constructor(keyOf: (step: S) => string, config: FailurePolicyConfig = DEFAULT_FAILURE_POLICY) {
    this.#keyOf = keyOf;
    this.#config = config;
  }

  keyOf(step: S): string {
    return this.#keyOf(step);
  }

  /** The open episode of this step, if its back-off has not run out at `now`. */
  deferred(step: S, now: number): Episode<S> | null {
    const e = this.#episodes.get(this.#keyOf(step));
    return e && now < e.retryAt ? e : null;
  }

  failed(step: S, failure: StepFailure, now: number): FailureVerdict<S> {
    const key = this.#keyOf(step);
    const known = this.#episodes.get(key);
    const failures = (known?.failures ?? 0) + 1;
    const { permanentBackoffMs, maxTemporaryBackoffMs, initialBackoffMs } = this.#config;
    const doubled = Math.min(maxTemporaryBackoffMs, initialBackoffMs * 2 ** (failures - 2));
    const backoff = failure.class === 'permanent' ? permanentBackoffMs : failures === 1 ? 0 : doubled;
    const firstAt = known?.firstAt ?? now;
    const episode: Episode<S> = { key, step, failures, firstAt, lastFailure: failure, retryAt: now + backoff };
    this.#episodes.set(key, episode);
    return { kind: known ? 'continues' : 'started', episode };
  }

  /** The step worked: its episode, if any, ends. */
  succeeded(step: S, now: number): Recovery<S> | null {
    const key = this.#keyOf(step);
    const e = this.#episodes.get(key);
    if (!e) return null;
    this.#episodes.delete(key);
    return { episode: e, afterMs: Math.max(0, now - e.firstAt), how: 'succeeded' };
  }

  /** Ends the episodes of steps the plan no longer contains (the situation changed under them). */
  retain(planned: readonly S[], now: number): Recovery<S>[] {
    const keys = new Set(planned.map(this.#keyOf));
    const ended: Recovery<S>[] = [];
    for (const [key, e] of this.#episodes) {
      if (keys.has(key)) continue;
      this.#episodes.delete(key);
      ended.push({ episode: e, afterMs: Math.max(0, now - e.firstAt), how: 'no longer planned' });
    }
    return ended;
  }

  /**
   * Forgets every episode: called when this instance becomes leader again (or stops acting). A
   * back-off earned in an earlier term is about what it saw then; a new leader starts fresh.
   */
  reset(): void {
    this.#episodes.clear();
  }

  get open(): Episode<S>[] {
    return [...this.#episodes.values()];
  }
}
