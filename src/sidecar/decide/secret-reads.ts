// When the sidecar reads a Redis's Secrets again. Pure.
// The hook sees every Secret a Redis uses (the customize hook lists them, so Metacontroller
// watches them) and publishes their resourceVersions in status.secrets; the sidecar watches the
// Redis, so a changed Secret reaches it as a changed status. Invariants:
// - With versions published, no read is timed: one happens when the versions differ from those
//   of the last completed read (a rotation, a Secret created), and a failed read is retried
//   after RETRY_MS. Only a node refusing our password also forces one (at most once a RETRY_MS).
// - Without versions (a hook or CRD from before status.secrets, which the API server prunes),
//   the Secrets are polled every `everyMs` as before: never left unread.
import type { RedisStatus } from '../../api/schema.ts';

/** A failed read, or a node refusing our password, reads again after this long. */
export const SECRET_RETRY_MS = 1000;

export interface SecretReadState {
  /** The fingerprint of status.secrets now (secretVersions); undefined when the status has none. */
  versions: string | undefined;
  /** The fingerprint when the last read completed; undefined before any. */
  readVersions: string | undefined;
  /** When the last read completed with every value found (-Infinity: never). */
  loadedAt: number;
  /** When the last read started (-Infinity: never). */
  attemptAt: number;
  /** The last read threw (the API did not answer): its versions do not count. */
  failed: boolean;
  /** A node refused the password since the last read. */
  refused: boolean;
  /** The polling interval when no versions are published. */
  everyMs: number;
  now: number;
}

export interface SecretReadDecision {
  read: boolean;
  reason: string;
}

/** One string per set of Secret versions; undefined when the status publishes none. */
export function secretVersions(status: Pick<RedisStatus, 'secrets'> | undefined): string | undefined {
  const list = status?.secrets;
  if (!Array.isArray(list)) return undefined;
  return list
    .map((s) => `${s.name}@${s.resourceVersion}`)
    .sort()
    .join(',');
}

export function decideSecretRead(s: SecretReadState): SecretReadDecision {
  const retried = s.now - s.attemptAt > SECRET_RETRY_MS;
  if (s.refused && retried) return { read: true, reason: 'a node refused the password' };
  if (s.versions === undefined) {
    return s.now - s.loadedAt > s.everyMs && retried
      ? { read: true, reason: 'status publishes no Secret versions: polled' }
      : { read: false, reason: 'read less than the polling interval (or a second) ago' };
  }
  if (s.failed) return retried ? { read: true, reason: 'the last read failed' } : { read: false, reason: 'the last read failed less than a second ago' };
  if (s.readVersions !== s.versions) {
    return retried ? { read: true, reason: 'a Secret changed (status.secrets)' } : { read: false, reason: 'a Secret changed; read less than a second ago' };
  }
  return { read: false, reason: 'no Secret changed since the last read' };
}
