// When an informer watches again after the API server closed its watch cleanly (the server's
// watch timeout, a proxy's idle close). client-node's ListWatch doubles its wait after every
// clean close, up to 30 s, so a quiet resource could go unwatched for half a minute: a pod that
// died then would not be seen. This paces reconnects by how long the last watch lived instead:
// a watch that lived at least minIntervalMs is renewed at once; one closed sooner waits out the
// rest of the interval, so a server that closes at once cannot make us hammer it. Pure apart
// from the clock and the timer it is given.
export interface ReconnectPacer {
  /** ListWatch's delayFn: resolves when the next watch may start (it is asked for `requestedMs`). */
  delay(requestedMs: number): Promise<void>;
  /** The wait the next call would decide, for tests and logs. */
  nextWaitMs(): number;
}

export function reconnectWaitMs(lastWatchStartedAt: number, now: number, minIntervalMs: number): number {
  return Math.max(0, Math.min(minIntervalMs, lastWatchStartedAt + minIntervalMs - now));
}

export function reconnectPacer(options: {
  minIntervalMs: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}): ReconnectPacer {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  // ListWatch calls delayFn only from its second watch on, right before starting the next one;
  // the first watch starts when the pacer is made (the informer starts at once after).
  let lastStart = now();
  return {
    nextWaitMs: () => reconnectWaitMs(lastStart, now(), options.minIntervalMs),
    async delay() {
      const wait = reconnectWaitMs(lastStart, now(), options.minIntervalMs);
      if (wait > 0) await sleep(wait);
      lastStart = now();
    },
  };
}
