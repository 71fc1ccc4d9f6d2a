// A work queue with client-go's semantics, per key: a key is processed by one worker at a time
// (serialised per parent, parallel across parents); adding a key that is being processed marks
// it dirty so it runs once more afterwards; adding a queued key does nothing; failures requeue
// with per-key exponential backoff (Metacontroller: 5 ms doubling up to 1000 s; configurable
// here so tests see retries within seconds); success forgets the failure count.
// Invariants: `add` never runs the handler synchronously (store watch listeners call it from
// inside a write); after stop() nothing runs and every timer is cleared.

export interface BackoffOptions {
  /** First retry delay (default 5 ms, as client-go's DefaultControllerRateLimiter). */
  initialMs?: number;
  /** Upper bound of the delay (default 2000 ms here; 1000 s in Metacontroller). */
  maxMs?: number;
}

export type Handler = (key: string) => Promise<void>;

export class WorkQueue {
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly idleWaiters: Array<() => void> = [];
  private readonly inFlight = new Set<Promise<void>>();
  private stopped = false;
  private readonly handler: Handler;
  private readonly initialMs: number;
  private readonly maxMs: number;

  constructor(handler: Handler, backoff: BackoffOptions = {}) {
    this.handler = handler;
    this.initialMs = backoff.initialMs ?? 5;
    this.maxMs = backoff.maxMs ?? 2000;
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    setImmediate(() => this.run(key));
  }

  /** Adds the key after `ms`; an earlier pending add for the same key wins (client-go keeps the soonest). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const existing = this.timers.get(key);
    if (existing !== undefined && existing.at <= at) return;
    if (existing !== undefined) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    // A pending resync must not keep a finished test process alive.
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** Requeue after the key's next backoff delay; returns that delay. */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.maxMs, this.initialMs * 2 ** n);
    this.addAfter(key, delay);
    return delay;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Failures since the last success. */
  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** True when nothing is queued or running (delayed adds do not count). */
  get idle(): boolean {
    return this.queued.size === 0 && this.processing.size === 0;
  }

  whenIdle(): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.queued.clear();
    this.dirty.clear();
    await Promise.allSettled([...this.inFlight]);
    this.notifyIdle();
  }

  private run(key: string): void {
    if (this.stopped || !this.queued.has(key)) return;
    this.queued.delete(key);
    this.processing.add(key);
    const done = this.handler(key)
      .catch(() => undefined)
      .finally(() => {
        this.processing.delete(key);
        this.inFlight.delete(done);
        if (this.dirty.delete(key)) this.add(key);
        this.notifyIdle();
      });
    this.inFlight.add(done);
  }

  private notifyIdle(): void {
    if (!this.idle && !this.stopped) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
