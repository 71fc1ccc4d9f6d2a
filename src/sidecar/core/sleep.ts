// The sleep every sidecar loop rests with: a timer that its signal cancels. A loop that is woken
// or stopped aborts its rest, and the timer goes with it, so a stopped loop leaves nothing pending
// that would keep the process alive (or fire into a loop that ended).
// Invariants: the promise only ever resolves (at the end of ms, or at once on abort, or at once
// when the signal was already aborted); once it resolved, no timer and no abort listener remain.

/** Waits ms, or until `signal` aborts. Loops take it as an option so tests can drive time. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export const sleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * A rest that something may cut short: `promise` resolves when the rest is over, true when
 * `cut()` ended it early. The sleep is always given the signal `cut()` aborts.
 */
export function cuttableRest(wait: Sleep, ms: number): { promise: Promise<boolean>; cut: () => void } {
  const controller = new AbortController();
  let cutShort = false;
  let finish: (() => void) | null = null;
  const promise = new Promise<boolean>((resolve) => {
    let done = false;
    finish = () => {
      if (done) return;
      done = true;
      resolve(cutShort);
    };
    void wait(ms, controller.signal).then(finish);
  });
  return {
    promise,
    cut: () => {
      cutShort = true;
      controller.abort();
      // A sleep that ignores its signal (a test's) must not hold the loop.
      finish?.();
    },
  };
}
