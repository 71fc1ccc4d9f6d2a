// A controller work queue for async handlers, on top of WorkQueue (queue.ts which coalesces
// keys and never runs a handler inside the caller's stack): one run per key at a time (a key
// added while it runs is run once more afterwards), and a failed run is retried with a per-key
// back-off doubling from retryMs to maxRetryMs, like client-go's rate-limited queue.
import { WorkQueue } from './queue.ts';

export class AsyncQueue {
  readonly #queue: WorkQueue;
  readonly #handler: (key: string) => Promise<void>;
  readonly #onError: (key: string, err: unknown) => void;
  readonly #running = new Map<string, boolean>();
  readonly #failures = new Map<string, number>();
  readonly #retryMs: number;
  readonly #maxRetryMs: number;
  #stopped = false;

  constructor(handler: (key: string) => Promise<void>, onError: (key: string, err: unknown) => void, retryMs = 500, maxRetryMs = 10_000) {
    this.#handler = handler;
    this.#onError = onError;
    this.#retryMs = retryMs;
    this.#maxRetryMs = maxRetryMs;
    this.#queue = new WorkQueue((key) => this.#start(key), onError);
  }

  add(key: string): void {
    this.#queue.add(key);
  }

  stop(): void {
    this.#stopped = true;
    this.#queue.stop();
  }

  #start(key: string): void {
    if (this.#running.has(key)) {
      this.#running.set(key, true);
      return;
    }
    this.#running.set(key, false);
    void this.#run(key);
  }

  async #run(key: string): Promise<void> {
    try {
      await this.#handler(key);
      this.#failures.delete(key);
    } catch (err) {
      const n = this.#failures.get(key) ?? 0;
      this.#failures.set(key, n + 1);
      if (!this.#stopped) {
        this.#onError(key, err);
        this.#queue.addAfter(key, Math.min(this.#retryMs * 2 ** n, this.#maxRetryMs));
      }
    } finally {
      const again = this.#running.get(key) === true;
      this.#running.delete(key);
      if (again && !this.#stopped) this.#queue.add(key);
    }
  }
}
