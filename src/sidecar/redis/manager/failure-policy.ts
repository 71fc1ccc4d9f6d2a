// The sidecar's failure policy for the steps it applies. Pure: time comes in as `now`.
// A step that keeps failing is one failure EPISODE: told once (one log line, one StepFailed
// Warning) when it starts, retried with a per-step back-off instead of every round, and closed
// with one recovery line when the step succeeds or is no longer planned.
// Invariants:
// - A step is keyed by what it does and to whom (kind, pod, target): a changed plan (a new master,
//   other settings) is a new step and runs at once, never waiting out another step's back-off.
// - Temporary failures (the node or the API did not answer, a conflict, a throttle) back off from
//   the tick interval up to maxTemporaryBackoffMs; permanent ones (refused: forbidden, invalid,
//   an unknown command) wait permanentBackoffMs, since retrying sooner cannot help and only
//   floods the log. Neither ever gives up: the world may change (RBAC fixed, node upgraded).
// - A temporary failure is retried at the next round the first time (a failover step that failed
//   once is retried as fast as before this policy existed), then after initialBackoffMs, doubling.
import type { RedisFailure } from '../../adapters/redis/index.ts';
import type { Step } from '../decide/index.ts';

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

/**
 * Permanent only when Redis refused the command itself (a version that lacks it, a parameter it
 * does not know): every other answer depends on state that changes (a replica not online yet, a
 * node loading, busy or unreachable). `auth` is temporary: the password source re-reads the
 * Secret when a node refuses it.
 */
export function classifyRedisFailure(failure: RedisFailure): FailureClass {
  const refused = /unknown command|unknown subcommand|wrong number of arguments|syntax error|unsupported config parameter|unknown option/i;
  return failure.kind === 'other' && refused.test(failure.message) ? 'permanent' : 'temporary';
}

/** HTTP status of a failed API call (undefined: no answer). */
export function classifyKubeFailure(code: number | undefined): FailureClass {
  if (code === undefined || code === 409 || code === 429 || code >= 500) return 'temporary';
  return code >= 400 ? 'permanent' : 'temporary';
}

/** What a step does and to whom: its identity across rounds. */
export function stepKey(step: Step): string {
  switch (step.kind) {
    case 'promote':
      return `promote/${step.pod}`;
    case 'switchover':
      return `switchover/${step.from.pod}/${step.pod}`;
    case 'replicaof':
      return `${step.demote ? 'demote' : 'replicaof'}/${step.pod}/${step.master.host}:${step.master.port}`;
    case 'config':
      return `config/${step.pod}/${Object.entries(step.settings)
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}`;
    case 'label':
      // The labels it sets, not its annotations: those carry human-readable context (how a role
      // was chosen) that may change between rounds while the step stays the same.
      return `label/${step.pod}/${JSON.stringify(step.patch.metadata.labels ?? {})}`;
  }
}

export interface Episode {
  key: string;
  step: Step;
  failures: number;
  firstAt: number;
  lastFailure: StepFailure;
  retryAt: number;
}

export type FailureVerdict =
  /** The first failure of an episode: log it and send StepFailed. */
  | { kind: 'started'; episode: Episode }
  /** Another failure of a known episode: count it, say nothing. */
  | { kind: 'continues'; episode: Episode };

export interface Recovery {
  episode: Episode;
  /** ms from the first failure to the end of the episode. */
  afterMs: number;
  how: 'succeeded' | 'no longer planned';
}

export class StepFailures {
  readonly #config: FailurePolicyConfig;
  readonly #episodes = new Map<string, Episode>();

  constructor(config: FailurePolicyConfig = DEFAULT_FAILURE_POLICY) {
    this.#config = config;
  }

  /** The open episode of this step, if its back-off has not run out at `now`. */
  deferred(step: Step, now: number): Episode | null {
    const e = this.#episodes.get(stepKey(step));
    return e && now < e.retryAt ? e : null;
  }

  failed(step: Step, failure: StepFailure, now: number): FailureVerdict {
    const key = stepKey(step);
    const known = this.#episodes.get(key);
    const failures = (known?.failures ?? 0) + 1;
    const backoff =
      failure.class === 'permanent'
        ? this.#config.permanentBackoffMs
        : failures === 1
          ? 0
          : Math.min(this.#config.maxTemporaryBackoffMs, this.#config.initialBackoffMs * 2 ** (failures - 2));
    const episode: Episode = { key, step, failures, firstAt: known?.firstAt ?? now, lastFailure: failure, retryAt: now + backoff };
    this.#episodes.set(key, episode);
    return { kind: known ? 'continues' : 'started', episode };
  }

  /** The step worked: its episode, if any, ends. */
  succeeded(step: Step, now: number): Recovery | null {
    const key = stepKey(step);
    const e = this.#episodes.get(key);
    if (!e) return null;
    this.#episodes.delete(key);
    return { episode: e, afterMs: Math.max(0, now - e.firstAt), how: 'succeeded' };
  }

  /** Ends the episodes of steps the plan no longer contains (the situation changed under them). */
  retain(planned: readonly Step[], now: number): Recovery[] {
    const keys = new Set(planned.map(stepKey));
    const ended: Recovery[] = [];
    for (const [key, e] of this.#episodes) {
      if (keys.has(key)) continue;
      this.#episodes.delete(key);
      ended.push({ episode: e, afterMs: Math.max(0, now - e.firstAt), how: 'no longer planned' });
    }
    return ended;
  }

  /**
   * Forgets every episode: called when this instance becomes leader again. A back-off earned in an
   * earlier term is about what it saw then; a new leader starts fresh (as another instance would).
   */
  reset(): void {
    this.#episodes.clear();
  }

  get open(): Episode[] {
    return [...this.#episodes.values()];
  }
}
