// When a worker's next round runs. Pure. Invariant: never later than tickIntervalMs, and just
// after the moment a threshold of the decision is crossed if that comes sooner (a silent master
// reaching downAfterMilliseconds, a replica's testimony reaching witnessConfirmMs, a failing
// step's back-off running out), so no decision is late by up to a tick.
import type { DecideConfig, RedisTrack } from '../decide/index.ts';

export function nextRoundInMs(
  now: number,
  tickIntervalMs: number,
  config: Pick<DecideConfig, 'downAfterMs' | 'witnessConfirmMs'> | null,
  tracks: Iterable<RedisTrack>,
  retryAts: Iterable<number>,
): number {
  let soonest = tickIntervalMs;
  const consider = (at: number) => {
    if (at > now) soonest = Math.min(soonest, at - now + 1);
  };
  if (config) {
    for (const t of tracks) {
      if (t.failingSince !== null) consider((t.okAt ?? t.firstSeenAt) + config.downAfterMs);
      if (t.witnessDownSince !== null) consider(t.witnessDownSince + config.witnessConfirmMs);
    }
  }
  for (const at of retryAts) consider(at);
  return soonest;
}
