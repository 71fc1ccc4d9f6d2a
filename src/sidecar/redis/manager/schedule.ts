// When a worker's next round runs, and whether its Redis is at rest. Pure. Invariant: never later
// than tickIntervalMs, and just after the moment a threshold of the decision is crossed if that
// comes sooner (a silent master reaching downAfterMilliseconds, a replica's testimony reaching
// witnessConfirmMs, a failing step's back-off running out), so no decision is late by up to a tick.
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

/** How long nothing must stir a Redis before its pods are probed at the idle rate. */
export const IDLE_AFTER_MS = 5000;

/**
 * Whether a Redis is at rest: nothing stirred it for IDLE_AFTER_MS and every pod's latest probe
 * answered (a pod that fails, or was never probed, keeps it at the fast rate).
 */
export function atRest(
  now: number,
  stirredAt: number,
  tracks: Iterable<RedisTrack>,
): { idle: boolean; reason: string } {
  if (now - stirredAt < IDLE_AFTER_MS) return { idle: false, reason: `stirred ${Math.round(now - stirredAt)} ms ago` };
  for (const t of tracks)
    if (t.lastError !== null || t.failingSince !== null) return { idle: false, reason: `a probe of ${t.ip} fails` };
  return { idle: true, reason: `nothing changed for ${Math.round(now - stirredAt)} ms` };
}
