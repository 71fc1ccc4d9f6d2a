// The first lines of every Redis pod's start script (a Redis pod's and a RedisCluster node's):
// each password the script feeds redis-server must be writable, or the container stops before
// Redis reads a line. Owns that check and the env that tells it where each password came from.
// Invariants:
// - The rule is text.ts' passwordWritable, word for word: non-empty and no control character
//   (U+0000-U+001F, U+007F). The sidecar reports the same rule as a status condition.
// - On failure: one line on stderr naming the env var and the Secret and key it came from, then
//   exit 78 (EX_CONFIG); no part of the value is ever printed. The value reaches `tr` on a pipe
//   from the printf builtin, never on a command line.
// - Locale-free: tr's octal ranges are bytes, whatever LANG says. A NUL cannot get this far
//   (an environment string ends at it), and the runtime refuses to start such a container.
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';

/** The env vars holding the passwords the start script writes, and where each says its source is. */
export const CHECKED_PASSWORDS = [
  { env: 'REDIS_PASSWORD', source: 'REDIS_PASSWORD_SOURCE' },
  { env: 'OPERATOR_PASSWORD', source: 'OPERATOR_PASSWORD_SOURCE' },
] as const;

/** The exit status of a start refused for an unwritable password (sysexits' EX_CONFIG). */
export const UNWRITABLE_PASSWORD_EXIT = 78;

/** Where a password env var came from, for the message: no secret in it, only names. */
export function passwordSourceEnv(
  env: (typeof CHECKED_PASSWORDS)[number]['env'],
  secretName: string,
  key: string,
): IEnvVar {
  const entry = CHECKED_PASSWORDS.find((p) => p.env === env);
  return { name: entry?.source ?? `${env}_SOURCE`, value: `Secret ${secretName}, key ${key}` };
}

export const PASSWORD_CHECK_SCRIPT = [
  // $1: the env var's name, $2: its value, $3: its source. The value is compared, never printed.
  'check_password() {',
  `  if [ -z "$2" ] || [ "$(printf '%s' "$2" | tr -d '\\000-\\037\\177')" != "$2" ]; then`,
  '    echo "$1 (from ${3:-an unnamed Secret}) cannot be given to Redis: a password must be non-empty and hold no control character (U+0000-U+001F, U+007F: line breaks, TAB, ...); fix the Secret (its value is not shown)" >&2',
  `    exit ${UNWRITABLE_PASSWORD_EXIT}`,
  '  fi',
  '}',
  ...CHECKED_PASSWORDS.map((p) => `check_password ${p.env} "$${p.env}" "$${p.source}"`),
].join('\n');
