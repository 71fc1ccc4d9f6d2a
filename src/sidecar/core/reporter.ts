// Telling what the executor's steps did, for every kind: a failure episode's start (a log line and,
// at the kind's chosen failure, one StepFailed Warning), its end (one line), and the kind's own
// Events and metrics for a step that worked. No writes to Redis or to pods happen here.
// Invariants:
// - An episode is told once: the failure that opens it logs; later failures of the same step are
//   counted (the kind's count()) and said nothing of; its end is one info line.
// - StepFailed goes out once per episode, at failure number `stepFailedAt`: the first for Redis
//   (a replication step that fails matters at once), the third for RedisCluster (a transient
//   gossip delay is not worth a human's look; one that keeps failing is).
// - Events go through `emit`, the worker's, which sends only while this instance leads.
// - A deferred step (backing off, not attempted) is not told: its episode already was.
import type { Logger } from 'pino';
import type { StepOutcome } from './executor.ts';
import type { EventToSend } from './events.ts';
import type { Recovery } from './failure-policy.ts';

export interface StepReporterOptions<S, X extends object, C> {
  log: Logger;
  emit(e: EventToSend): void;
  /** The fields that name a step (and its episode key) in every line about it. */
  fields(step: S, key: string | undefined): Record<string, unknown>;
  /** Fields of the line that tells a failure, besides fields(). */
  failedFields(o: StepOutcome<S, X>): Record<string, unknown>;
  messages: {
    failed: string;
    recovered: string;
    /** An episode ended because its step is no longer planned; undefined: not logged. */
    dropped?: string;
  };
  /** The failure of an episode that sends StepFailed (1: its first). */
  stepFailedAt: number;
  stepFailedMessage(o: StepOutcome<S, X>): string;
  /** Metrics per attempted step (ok or failed). */
  count?(o: StepOutcome<S, X>): void;
  /** The kind's Events and metrics for a step that worked; `c` is the round's context (its plan). */
  succeeded?(o: StepOutcome<S, X>, c: C): void;
}

export class StepReporter<S, X extends object = object, C = void> {
  readonly #o: StepReporterOptions<S, X, C>;

  constructor(options: StepReporterOptions<S, X, C>) {
    this.#o = options;
  }

  /** One step's outcome, as soon as it is known. */
  step(o: StepOutcome<S, X>, c: C): void {
    if (o.result === 'deferred') return;
    this.#o.count?.(o);
    if (o.result === 'ok') {
      if (o.recovery) this.#ended(o.recovery, this.#o.messages.recovered);
      this.#o.succeeded?.(o, c);
      return;
    }
    if (o.verdict?.kind === 'continues' && o.verdict.episode.failures !== this.#o.stepFailedAt) return;
    if (o.verdict?.kind !== 'continues') {
      const fields = { ...this.#o.fields(o.step, o.verdict?.episode.key), ...this.#o.failedFields(o) };
      this.#o.log.warn(fields, this.#o.messages.failed);
    }
    const failures = o.verdict?.episode.failures ?? 1;
    if (o.failure && failures === this.#o.stepFailedAt) {
      this.#o.emit({ type: 'Warning', reason: 'StepFailed', message: this.#o.stepFailedMessage(o) });
    }
  }

  /** Episodes that ended because their steps are no longer planned (FailurePolicy.retain). */
  dropped(ended: Recovery<S>[]): void {
    const message = this.#o.messages.dropped;
    if (message === undefined) return;
    for (const r of ended) this.#ended(r, message);
  }

  #ended(r: Recovery<S>, message: string): void {
    const { episode } = r;
    const afterMs = Math.round(r.afterMs);
    const fields = { ...this.#o.fields(episode.step, episode.key), failures: episode.failures, afterMs };
    this.#o.log.info(fields, message);
  }
}
