// When a Redis's (or RedisCluster's) Secrets are read again. Pure.
// The sidecar reads Secrets by GET (its RBAC has get, never list or watch) and nothing tells it
// when one changes: the hook no longer watches Secrets (their values would cross plain HTTP on
// every sync), so it polls. Invariants:
// - Once every value was found, the Secrets are read again every `everyMs` (SECRET_REFRESH_MS,
//   10 s by default for the acting instance; a rotation takes up to that long, plus the spread).
// - While a value is missing, or after a failed read, they are read again after RETRY_MS: a
//   Secret the user creates is picked up within about a second.
// - A node refusing our password forces a read (at most once a RETRY_MS).

/** A failed read, a missing value, or a node refusing our password, reads again after this long. */
export const SECRET_RETRY_MS = 1000;

export interface SecretReadState {
  /** When the last read completed with every value found (-Infinity: never). */
  loadedAt: number;
  /** When the last read started (-Infinity: never). */
  attemptAt: number;
  /** A node refused the password since the last read. */
  refused: boolean;
  /** The polling interval. */
  everyMs: number;
  now: number;
}

export interface SecretReadDecision {
  read: boolean;
  reason: string;
}

export function decideSecretRead(s: SecretReadState): SecretReadDecision {
  const retried = s.now - s.attemptAt > SECRET_RETRY_MS;
  if (!retried) return { read: false, reason: 'read less than a second ago' };
  if (s.refused) return { read: true, reason: 'a node refused the password' };
  if (s.now - s.loadedAt > s.everyMs)
    return { read: true, reason: s.loadedAt === -Infinity ? 'a value is missing (or never read)' : 'polled' };
  return { read: false, reason: 'read less than the polling interval ago' };
}
