// A controller work queue (client-go workqueue): keys are coalesced while waiting, handled one
// at a time, and a handler that throws is retried with a per-key exponential back-off
// (retryMs doubling up to maxRetryMs; reset by a success), like client-go's rate limiter.
// Invariant: handlers never run inside the caller's stack. Watch listeners of the in-process
// store are called synchronously during a write, and a write made from inside a listener would
// reach other watchers before the event that caused it; so listeners only ever add keys here.

export class WorkQueue {
  readonly #handler: (key: string) => void;
  readonly #onError: (key: string, error: unknown) => void;
  readonly #retryMs: number;
  readonly #maxRetryMs: number;
  readonly #failures = new Map<string, number>();
  readonly #pending = new Set<string>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #scheduled: NodeJS.Immediate | undefined;
  #stopped = false;

  constructor(handler: (key: string) => void, onError: (key: string, error: unknown) => void, retryMs = 50, maxRetryMs = 10_000) {
    this.#handler = handler;
    this.#onError = onError;
    this.#retryMs = retryMs;
    this.#maxRetryMs = maxRetryMs;
  }

  add(key: string): void {
    if (this.#stopped) return;
    this.#pending.add(key);
    this.#scheduled ??= setImmediate(() => this.#drain());
  }

  addAfter(key: string, ms: number): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.add(key);
    }, ms);
    this.#timers.add(timer);
  }

  stop(): void {
    this.#stopped = true;
    this.#pending.clear();
    if (this.#scheduled) clearImmediate(this.#scheduled);
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }

  #drain(): void {
    this.#scheduled = undefined;
    const keys = [...this.#pending];
    this.#pending.clear();
    for (const key of keys) {
      if (this.#stopped) return;
      try {
        this.#handler(key);
        this.#failures.delete(key);
      } catch (error) {
        const n = this.#failures.get(key) ?? 0;
        this.#failures.set(key, n + 1);
        this.#onError(key, error);
        this.addAfter(key, Math.min(this.#retryMs * 2 ** n, this.#maxRetryMs));
      }
    }
  }
}
