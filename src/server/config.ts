// Configuration of the hook service, read from the environment once at start-up.
// Invariants: loadConfig is a pure function of the env object it is given (no process.env
// access), never throws, and reports EVERY bad variable at once, each error naming the
// variable and the value it refused, so one restart of a broken Deployment shows all of them.
// An empty or blank variable counts as unset (Kubernetes renders an unset ConfigMap key as "").
import { isIP } from 'node:net';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = '0.0.0.0';
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';
export const DEFAULT_BODY_LIMIT_BYTES = 4 * 1024 * 1024;
/** Below this a real sync request (parent + StatefulSets + pods) cannot fit. */
export const MIN_BODY_LIMIT_BYTES = 1024;
/** Far above any sync request (etcd caps one object at ~1.5 MiB); guards against typos like an extra digit group. */
export const MAX_BODY_LIMIT_BYTES = 1024 * 1024 * 1024;

export interface ServerConfig {
  port: number;
  host: string;
  logLevel: LogLevel;
  bodyLimitBytes: number;
}

export type ConfigResult = { ok: true; config: ServerConfig } | { ok: false; errors: string[] };

export type Env = Readonly<Record<string, string | undefined>>;

type Field<T> = { ok: true; value: T } | { ok: false; error: string };

function present(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

function refuse(name: string, raw: string, why: string): { ok: false; error: string } {
  return { ok: false, error: `${name}=${JSON.stringify(raw)} is invalid: ${why}` };
}

/** Decimal digits only: "8080" yes; "8080abc", "1e3", "0x1f", "-1", "80.0" no. */
function integerIn(env: Env, name: string, fallback: number, min: number, max: number): Field<number> {
  const raw = present(env, name);
  if (raw === undefined) return { ok: true, value: fallback };
  const why = `must be a whole number from ${min} to ${max}`;
  if (!/^\d{1,16}$/.test(raw)) return refuse(name, raw, why);
  const value = Number(raw);
  return value >= min && value <= max ? { ok: true, value } : refuse(name, raw, why);
}

// RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i;

function host(env: Env): Field<string> {
  const raw = present(env, 'HOST');
  if (raw === undefined) return { ok: true, value: DEFAULT_HOST };
  if (isIP(raw) !== 0 || HOSTNAME.test(raw)) return { ok: true, value: raw };
  return refuse('HOST', raw, 'must be an IP address (for example 0.0.0.0 or ::) or a host name');
}

function logLevel(env: Env): Field<LogLevel> {
  const raw = present(env, 'LOG_LEVEL');
  if (raw === undefined) return { ok: true, value: DEFAULT_LOG_LEVEL };
  const level = LOG_LEVELS.find((l) => l === raw.toLowerCase());
  return level !== undefined ? { ok: true, value: level } : refuse('LOG_LEVEL', raw, `must be one of ${LOG_LEVELS.join(', ')}`);
}

export function loadConfig(env: Env): ConfigResult {
  const port = integerIn(env, 'PORT', DEFAULT_PORT, 1, 65535);
  const hostField = host(env);
  const level = logLevel(env);
  const bodyLimit = integerIn(env, 'BODY_LIMIT_BYTES', DEFAULT_BODY_LIMIT_BYTES, MIN_BODY_LIMIT_BYTES, MAX_BODY_LIMIT_BYTES);
  if (port.ok && hostField.ok && level.ok && bodyLimit.ok) {
    return { ok: true, config: { port: port.value, host: hostField.value, logLevel: level.value, bodyLimitBytes: bodyLimit.value } };
  }
  const errors: string[] = [];
  for (const field of [port, hostField, level, bodyLimit]) if (!field.ok) errors.push(field.error);
  return { ok: false, errors };
}
