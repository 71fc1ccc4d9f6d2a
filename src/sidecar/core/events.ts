// Kubernetes Events of both kinds: one Event type and one sender, the only place a worker emits
// them.
// Invariants:
// - An Event is sent only while this instance leads: a standby tells nothing, even when it
//   notices the same things.
// - A send never blocks the round: it is handed to `track` so stop() waits a moment for it.
// - With stepFailedEveryMs set, StepFailed Events are at most one per that long; those left out
//   are counted into the next one's message (the log has every failure).
import type { RedisRef } from '../adapters/kube/client.ts';
import type { LeaderView } from './leader.ts';

/** What an Event says; each kind narrows `reason` to its own list. */
export interface EventToSend<Reason extends string = string> {
  type: 'Normal' | 'Warning';
  reason: Reason;
  message: string;
}

/** The Kubernetes call (KubeClient implements it). */
export interface EventSink {
  emitEvent(ref: RedisRef, type: EventToSend['type'], reason: string, message: string, kind?: string): Promise<boolean>;
}

export interface EventSenderOptions {
  ref: RedisRef;
  kube: EventSink;
  leader: LeaderView;
  now: () => number;
  /** Keeps the send in flight for stop() to wait on. */
  track: (p: Promise<unknown>) => void;
  /** The involved object's kind when it is not a Redis (the sink's default). */
  kind?: string | undefined;
  /** At most one StepFailed Event per this long (unset: each one is sent). */
  stepFailedEveryMs?: number | undefined;
}

export class EventSender {
  readonly #o: EventSenderOptions;
  #stepFailedAt = -Infinity;
  #stepFailedSuppressed = 0;

  constructor(options: EventSenderOptions) {
    this.#o = options;
  }

  send(e: EventToSend): void {
    if (!this.#o.leader.isLeader()) return;
    const every = this.#o.stepFailedEveryMs;
    if (every !== undefined && e.reason === 'StepFailed') {
      const now = this.#o.now();
      if (now - this.#stepFailedAt < every) {
        this.#stepFailedSuppressed++;
        return;
      }
      const left = this.#stepFailedSuppressed;
      if (left > 0) e = { ...e, message: `${e.message} (and ${left} more failing steps since the last such Event)` };
      this.#stepFailedAt = now;
      this.#stepFailedSuppressed = 0;
    }
    const { ref, kube, kind } = this.#o;
    const { type, reason, message } = e;
    // A Redis is the sink's default kind: called as before, without one.
    if (kind === undefined) this.#o.track(kube.emitEvent(ref, type, reason, message));
    else this.#o.track(kube.emitEvent(ref, type, reason, message, kind));
  }
}
