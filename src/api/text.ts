// Which user strings may reach a file, a script or a command: none with a control character.
// Owns the one rule (U+0000-U+001F and U+007F refused), as a schema pattern the API server and
// the hook's ajv both run, as a message naming the character, and as the password rule the pod's
// start script and the sidecar apply to Secrets.
// Why TAB is refused too: redis.conf reads it as a separator like a space, so no value needs it,
// and one rule for every string (passwords included) leaves nothing to remember per field.
// Why: a NUL ends a redis.conf line early for Redis' reader and glues the next line (a password
// fed on stdin) onto it, which Redis then prints in its error; CR and LF start new directives.

/** A string with no control character: the schema pattern (RE2 for the API server, ECMAScript for ajv). */
export const NO_CONTROL_PATTERN = '^[^\\x00-\\x1f\\x7f]*$';
/** The same, and no space either, non-empty: image references. */
export const NO_CONTROL_OR_SPACE_PATTERN = '^[^\\x00-\\x20\\x7f]+$';
/** Kubernetes' rule for a Secret's data key (IsConfigMapKey). */
export const SECRET_KEY_PATTERN = '^[-._a-zA-Z0-9]+$';
/** Kubernetes' rule for an object name (a DNS subdomain). */
export const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/**
 * A spec.config value: words of letters, digits and `. _ % $ + -` separated by spaces, optionally
 * wrapped in one pair of quotes. Every allowed directive's values fit (numbers, memory sizes,
 * percentages, enums, keyspace-event letters, buffer-limit classes); quotes inside, backslashes,
 * `#` and control characters never reach redis.conf's tokenizer.
 */
const CONFIG_WORDS = '[-A-Za-z0-9 ._%$+]*';
export const CONFIG_VALUE_PATTERN = `^(${CONFIG_WORDS}|"${CONFIG_WORDS}"|'${CONFIG_WORDS}')$`;
export const CONFIG_VALUE_MESSAGE =
  'must be words of letters, digits and . _ % $ + - separated by spaces, optionally in one pair of quotes (no control characters, backslashes or quotes inside)';

/** What a refusal by NO_CONTROL_PATTERN means, in words (validate.ts prints it instead of the pattern). */
export const CONTROL_CHARACTER_MESSAGE =
  'must not contain control characters (U+0000-U+001F, U+007F: line breaks, NUL, TAB, ...)';

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f]/;
// eslint-disable-next-line no-control-regex -- as above
const CONTROL_ALL = /[\u0000-\u001f\u007f]/g;

/**
 * `text` with each control character shown as <U+XXXX>: a user's map key can be named in a message without carrying
 * one.
 */
export function printable(text: string): string {
  return text.replace(CONTROL_ALL, (c) => `<U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}>`);
}

/** The first control character of `value`, as U+XXXX with its position, or undefined. */
export function firstControlCharacter(value: string): string | undefined {
  const m = CONTROL.exec(value);
  if (!m) return undefined;
  return `U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at position ${m.index}`;
}

/** A field's problem with control characters, naming the first one (never echoing the value), or undefined. */
export function controlCharacterProblem(value: string): string | undefined {
  const found = firstControlCharacter(value);
  return found === undefined ? undefined : `${CONTROL_CHARACTER_MESSAGE}: found ${found}`;
}

/**
 * The writable-password rule, shared word for word with the pod's start script and the sidecar:
 * a password is writable iff it is non-empty and contains no control character (U+0000-U+001F,
 * U+007F).
 */
export function passwordWritable(password: string): boolean {
  return password.length > 0 && !CONTROL.test(password);
}
