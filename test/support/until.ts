// The one polling helper of the tests: wait for a condition, and when it does not come, say what
// was awaited (and, if asked, what the world looked like) instead of hanging or failing mutely.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';

/** What a check answers: anything but undefined, null or false means "there". */
export type Polled<T> = T | undefined | null | false;

export interface UntilOptions {
  /** Pause between two checks (default 10 ms). */
  everyMs?: number;
  /** Appended to the timeout message (a state dump, a log tail). */
  dump?: () => string;
}

/**
 * Calls `check` until it answers something other than undefined, null or false, and returns
 * that answer. After `timeoutMs` (default 10 s) it fails with an AssertionError
 * "timed out after <timeoutMs> ms waiting for <what>" (then `dump()`, if given). The check runs
 * at least once; an error it throws is not retried but fails the wait at once (wrap the check
 * to tolerate errors, as pollUntil does).
 */
export async function until<T>(
  what: string,
  check: () => Polled<T> | Promise<Polled<T>>,
  timeoutMs = 10_000,
  options: UntilOptions = {},
): Promise<T> {
  const { everyMs = 10, dump } = options;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value;
    if (performance.now() > deadline)
      assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}${dump ? `\n${dump()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
