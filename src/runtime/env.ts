// Reading process configuration from an environment object: the field parsers both entry points
// (hook service and sidecar) share. Invariants: pure functions of the env object they are given
// (never process.env), never throw; an empty or blank variable counts as unset (Kubernetes
// renders an unset ConfigMap key as ""); every refusal names the variable and the value.
import { isIP } from 'node:net';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type Env = Readonly<Record<string, string | undefined>>;

export type Field<T> = { ok: true; value: T } | { ok: false; error: string };

export function present(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

export function refuse(name: string, raw: string, why: string): { ok: false; error: string } {
  return { ok: false, error: `${name}=${JSON.stringify(raw)} is invalid: ${why}` };
}

/** Decimal digits only: "8080" yes; "8080abc", "1e3", "0x1f", "-1", "80.0" no. */
export function integerIn(env: Env, name: string, fallback: number, min: number, max: number): Field<number> {
  const raw = present(env, name);
  if (raw === undefined) return { ok: true, value: fallback };
  const why = `must be a whole number from ${min} to ${max}`;
  if (!/^\d{1,16}$/.test(raw)) return refuse(name, raw, why);
  const value = Number(raw);
  return value >= min && value <= max ? { ok: true, value } : refuse(name, raw, why);
}

/** A pino level, any letter case. */
export function logLevel(env: Env, name = 'LOG_LEVEL', fallback: LogLevel = 'info'): Field<LogLevel> {
  const raw = present(env, name);
  if (raw === undefined) return { ok: true, value: fallback };
  const level = LOG_LEVELS.find((l) => l === raw.toLowerCase());
  return level !== undefined
    ? { ok: true, value: level }
    : refuse(name, raw, `must be one of ${LOG_LEVELS.join(', ')}`);
}

export function ipField(env: Env, name: string, fallback: string | undefined): Field<string | undefined> {
  const raw = present(env, name);
  if (raw === undefined) return { ok: true, value: fallback };
  return isIP(raw) !== 0 ? { ok: true, value: raw } : refuse(name, raw, 'must be an IP address');
}
