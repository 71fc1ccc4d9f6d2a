// What counts as silence from a node: the failure detector's reading of a probe error. Pure.
// Invariant: a node that answered, even with a refusal (auth, loading, readonly), is not silent:
// only silence counts towards downAfterMilliseconds.
import type { RedisErrorKind } from '../../adapters/redis/types.ts';

/** The node did not answer at all (as opposed to answering with a refusal such as auth or loading). */
export function isSilence(kind: RedisErrorKind): boolean {
  return (
    kind === 'timeout' ||
    kind === 'refused' ||
    kind === 'unreachable' ||
    kind === 'closed' ||
    kind === 'busy' ||
    kind === 'other'
  );
}
