// Error taxonomy: every failure of a Redis call becomes one RedisErrorKind, so decisions can tell
// "the node is gone" (refused), "the node or the path to it hangs" (timeout), "it answered but
// refused us" (auth; a TLS certificate we refuse counts here too: something answers, and it is
// not silence) and "it is busy loading" (loading) apart. Pure.
import type { RedisErrorKind, RedisFailure } from './types.ts';

const BY_CODE: Record<string, RedisErrorKind> = {
  ECONNREFUSED: 'refused',
  ETIMEDOUT: 'timeout',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable',
  EADDRNOTAVAIL: 'unreachable',
  EPERM: 'unreachable',
  EACCES: 'unreachable',
  ECONNRESET: 'closed',
  EPIPE: 'closed',
  ECONNABORTED: 'closed',
};

/** Node's codes for a certificate it does not accept (chain, names, dates) or a failed handshake. */
const TLS_REFUSAL = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|CERT_)/;

/** Redis reply prefixes (the first word of an error reply). */
const BY_PREFIX: Array<[RegExp, RedisErrorKind]> = [
  [/^(WRONGPASS|NOAUTH|NOPERM)\b/, 'auth'],
  [/^ERR (invalid password|AUTH <password> called without any password|Client sent AUTH)/i, 'auth'],
  [/^LOADING\b/, 'loading'],
  [/^BUSY\b/, 'busy'],
  [/^READONLY\b/, 'readonly'],
  [/^NOREPLICAS\b/, 'noreplicas'],
];

// isSilence lives with the decisions that read it (decide/silence.ts); re-exported for the adapter's users.
export { isSilence } from '../../redis/decide/silence.ts';

export function classifyError(err: unknown): RedisFailure {
  const e = err as { code?: unknown; message?: unknown; name?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (code && BY_CODE[code]) return { kind: BY_CODE[code], message };
  if (code && TLS_REFUSAL.test(code)) return { kind: 'auth', message: `TLS: ${message}` };
  for (const [re, kind] of BY_PREFIX) if (re.test(message)) return { kind, message };
  if (/Command timed out|connect ETIMEDOUT|timed out/i.test(message)) return { kind: 'timeout', message };
  if (
    /Connection is closed|Stream isn't writeable|Command aborted due to connection close|socket hang up/i.test(message)
  ) {
    return { kind: 'closed', message };
  }
  if (/ECONNREFUSED/.test(message)) return { kind: 'refused', message };
  return { kind: 'other', message };
}

/** Kinds after which the connection is not worth keeping (a later reply could arrive out of step). */
export function breaksConnection(kind: RedisErrorKind): boolean {
  return kind === 'timeout' || kind === 'closed' || kind === 'refused' || kind === 'unreachable' || kind === 'auth';
}
