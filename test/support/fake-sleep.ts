// A fake clock for loops that take an injected `Sleep` (src/sidecar/core/sleep.ts): every sleep is
// a pending timer until its time comes (tick) or its signal aborts, so a test can ask how many
// timers a loop left behind. It honours the same contract as the real sleep.
import type { Sleep } from '../../src/sidecar/core/sleep.ts';

interface Pending {
  at: number;
  resolve: () => void;
}

export class FakeSleep {
  now = 0;
  readonly #pending = new Set<Pending>();
  /** Every sleep asked for, with the signal it was given (undefined: none). */
  readonly asked: Array<{ ms: number; signal: AbortSignal | undefined }> = [];

  readonly sleep: Sleep = (ms, signal) =>
    new Promise<void>((resolve) => {
      this.asked.push({ ms, signal });
      if (signal?.aborted) return resolve();
      const p: Pending = {
        at: this.now + ms,
        resolve: () => {
          this.#pending.delete(p);
          signal?.removeEventListener('abort', p.resolve);
          resolve();
        },
      };
      this.#pending.add(p);
      signal?.addEventListener('abort', p.resolve, { once: true });
    });

  /** Timers not yet fired nor cancelled. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Advances the clock, firing the timers that are due (in order). */
  tick(ms: number): void {
    this.now += ms;
    for (const p of [...this.#pending].sort((a, b) => a.at - b.at)) if (p.at <= this.now) p.resolve();
  }
}
