// The per-resource loop both kinds run on: one round at a time (the kind's observe -> decide ->
// act), then a rest until the next round is due or something wakes it; start, stop and drain;
// the work left in flight (Events, reports, record writes); Events gated on leadership. What a
// round does and how long the rest lasts are the kind's; when to run, rest, stop is decided here.
// Invariants:
// - Rounds never overlap, and a round that throws is logged and followed by the rest its
//   `failed` outcome asks for: one broken round never ends the loop.
// - A round that wrote (`again`) is followed by the next at once, but at most `maxAgain` in a
//   row, then a rest: a node that accepts a command and never shows its effect must not turn the
//   loop into a busy one.
// - A wake() during a round cuts the rest that follows it (the round may have missed the news);
//   a wake() during a rest ends it. With burstRestIgnoresWake, the rest after maxAgain rounds in
//   a row is kept when the wake came during the round (a wake during that rest still ends it).
// - stop() waits at most 2 s for a round stuck in a hook (then abandons it) and 1 s more for the
//   work in flight; a stopped loop keeps no timer: its rest's sleep is cancelled (its signal
//   aborted), and so are stop()'s own bounds once what they bound is over.
// - Time comes from `now` and `sleep` (core/sleep.ts by default), so the timing logic runs under
//   fake timers in tests.
import type { Logger } from 'pino';
import type { RedisRef } from '../adapters/kube/client.ts';
import { EventSender, type EventSink, type EventToSend } from './events.ts';
import type { LeaderView } from './leader.ts';
import { cuttableRest, sleep as timerSleep, type Sleep } from './sleep.ts';

export interface WorkerOptions<Outcome> {
  ref: RedisRef;
  log: Logger;
  leader: LeaderView;
  /** Where Events go (the kube client). */
  events: EventSink;
  /** The Events' involved kind, when not a Redis. */
  eventKind?: string | undefined;
  /** See EventSenderOptions.stepFailedEveryMs. */
  stepFailedEveryMs?: number | undefined;
  now: () => number;
  /** Waits ms (default core/sleep.ts); its signal aborts when the rest is cut (a wake, stop()). */
  sleep?: Sleep | undefined;
  /** One round: observe, decide, act. */
  round: () => Promise<Outcome>;
  /** The outcome of a round that threw. */
  failed: Outcome;
  /** The log line of a round that threw. */
  failedMessage: string;
  /** The round wrote: the next one runs at once (up to maxAgain in a row). */
  again: (outcome: Outcome) => boolean;
  /** How long to rest after a round with this outcome (asked when the rest starts). */
  restMs: (outcome: Outcome) => number;
  maxAgain: number;
  /** The rest after maxAgain rounds in a row is kept even when woken during the round (Redis). */
  burstRestIgnoresWake: boolean;
}

/** `work`, or `ms` if that comes first; the bound's timer goes once either is over. */
async function bounded(work: Promise<unknown>, ms: number): Promise<void> {
  const bound = new AbortController();
  try {
    await Promise.race([work, timerSleep(ms, bound.signal)]);
  } finally {
    bound.abort();
  }
}

export class Worker<Outcome> {
  readonly #o: WorkerOptions<Outcome>;
  readonly #events: EventSender;
  readonly #pending = new Set<Promise<unknown>>();
  #running = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #woken = false;

  constructor(options: WorkerOptions<Outcome>) {
    this.#o = options;
    this.#events = new EventSender({
      ref: options.ref,
      kube: options.events,
      leader: options.leader,
      now: options.now,
      track: (p) => this.track(p),
      kind: options.eventKind,
      stepFailedEveryMs: options.stepFailedEveryMs,
    });
  }

  /** Started and not stopped: rounds may act. */
  get running(): boolean {
    return this.#running;
  }

  isLeader(): boolean {
    return this.#o.leader.isLeader();
  }

  /** Sends an Event (leader only); stop() waits a moment for those in flight. */
  event(e: EventToSend): void {
    this.#events.send(e);
  }

  /** Keeps work in flight (not awaited by the round) for stop() to wait on. */
  track(p: Promise<unknown>): void {
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  /** Something changed: run a round now (or right after the one running). */
  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  /**
   * Stops the loop and waits for it (2 s at most) with what `alsoStop` returns (other loops of
   * the kind, stopped once this one no longer runs), then for the work in flight (1 s at most).
   */
  async stop(alsoStop?: () => Promise<unknown>): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await bounded(Promise.all([this.#loop, alsoStop?.()]), 2000);
    await bounded(Promise.allSettled([...this.#pending]), 1000);
  }

  async #run(): Promise<void> {
    const o = this.#o;
    let inARow = 0;
    while (this.#running) {
      this.#woken = false;
      let outcome = o.failed;
      try {
        outcome = await o.round();
      } catch (err) {
        o.log.error({ err: err instanceof Error ? err.stack : String(err) }, o.failedMessage);
      }
      if (!this.#running) break;
      const again = o.again(outcome);
      inARow = again ? inARow + 1 : 0;
      if (again && inARow <= o.maxAgain) continue;
      const capped = inARow > o.maxAgain;
      if (this.#woken && !(capped && o.burstRestIgnoresWake)) continue;
      await this.#sleep(o.restMs(outcome));
      if (capped) inARow = 0;
    }
  }

  /** Sleeps ms, or less when woken (the sleep is then cancelled). */
  async #sleep(ms: number): Promise<void> {
    const rest = cuttableRest(this.#o.sleep ?? timerSleep, ms);
    this.#wake = rest.cut;
    try {
      await rest.promise;
    } finally {
      if (this.#wake === rest.cut) this.#wake = null;
    }
  }
}
