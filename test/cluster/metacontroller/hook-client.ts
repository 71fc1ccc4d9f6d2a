// Calling a CompositeController's webhooks over HTTP the way Metacontroller's webhook executor
// does: POST JSON, the hook's own timeout (default 10 s), HTTP 429 + Retry-After as "come back
// later" (no error), any other non-200, a body that is not JSON, or (hook version v2, strict
// unmarshalling) an unknown top-level field, as an error that aborts the sync with no change.
// Invariant: never throws for a hook's misbehaviour; returns a typed outcome instead.

import { isRecord } from '../../support/records.ts';

export interface HookSpec {
  version?: string;
  webhook?: { url?: string; path?: string; timeout?: string; service?: unknown };
}

export interface ResolvedHook {
  url: string;
  timeoutMs: number;
  version: 'v1' | 'v2';
}

export type HookOutcome<T> = { kind: 'ok'; response: T } | { kind: 'retryAfter'; seconds: number } | { kind: 'error'; message: string };

/** Go's time.ParseDuration for the units a webhook timeout uses. */
export function parseGoDuration(text: string): number | undefined {
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  if (text === '' || text === '0') return text === '0' ? 0 : undefined;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    total += Number(m[1]) * units[m[2]!]!;
    consumed = re.lastIndex;
  }
  return consumed === text.length ? total : undefined;
}

/** Where the hook is reached in this stand-in: the base URL plus the webhook's path (or its URL's path). */
export function resolveHook(hook: HookSpec | undefined, baseUrl: string): ResolvedHook | undefined {
  if (hook === undefined || hook === null) return undefined;
  const webhook = hook.webhook ?? {};
  const path = webhook.path ?? (webhook.url !== undefined ? new URL(webhook.url).pathname : undefined);
  if (path === undefined) throw new Error("invalid webhook config: must specify either full 'url', or both 'service' and 'path'");
  const parsed = webhook.timeout !== undefined ? parseGoDuration(webhook.timeout) : undefined;
  // As Metacontroller: no timeout, or a non-positive one, means 10 s.
  const timeoutMs = parsed !== undefined && parsed > 0 ? parsed : 10_000;
  const url = `${baseUrl.replace(/\/+$/, '')}${path.startsWith('/') ? path : `/${path}`}`;
  return { url, timeoutMs, version: hook.version === 'v2' ? 'v2' : 'v1' };
}

/** Retry-After as seconds: a number, or an HTTP date (rounded up). */
function retryAfterSeconds(header: string | null, now: number): number {
  if (header === null) return 0;
  const date = Date.parse(header);
  if (!/^\d+$/.test(header.trim()) && !Number.isNaN(date)) return Math.max(0, Math.ceil((date - now) / 1000));
  const n = Number.parseInt(header, 10);
  return Number.isFinite(n) ? n : 0;
}

export interface CallOptions {
  /** Top-level response keys a strict (v2) decoder accepts, with their JSON type check. */
  fields: Record<string, (value: unknown) => string | undefined>;
  /** Aborts the call when the stand-in stops. */
  signal?: AbortSignal;
  hookType: string;
}

/** POST `body` to the hook; decode the answer as Metacontroller would. */
export async function callHook<T>(hook: ResolvedHook, body: unknown, options: CallOptions): Promise<HookOutcome<T>> {
  const signals = [AbortSignal.timeout(hook.timeoutMs)];
  if (options.signal) signals.push(options.signal);
  let status: number;
  let text: string;
  let retryAfter: string | null;
  try {
    const response = await fetch(hook.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.any(signals),
    });
    status = response.status;
    retryAfter = response.headers.get('retry-after');
    text = await response.text();
  } catch (error) {
    const e = error as Error;
    const why = e.name === 'TimeoutError' ? `context deadline exceeded (Client.Timeout exceeded while awaiting headers) after ${hook.timeoutMs} ms` : e.message;
    return { kind: 'error', message: `${options.hookType} hook failed: http error: Post "${hook.url}": ${why}` };
  }
  if (status === 429) return { kind: 'retryAfter', seconds: retryAfterSeconds(retryAfter, Date.now()) };
  if (status !== 200) return { kind: 'error', message: `${options.hookType} hook failed: unsupported status code: ${status} body: ${text}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return {
      kind: 'error',
      message: `${options.hookType} hook failed: can't unmarshal webhookResponse (version: ${hook.version}, type: ${options.hookType}): ${(error as Error).message}`,
    };
  }
  if (parsed === null) parsed = {};
  if (!isRecord(parsed)) {
    return {
      kind: 'error',
      message: `${options.hookType} hook failed: can't unmarshal webhookResponse (version: ${hook.version}, type: ${options.hookType}): json: cannot unmarshal ${Array.isArray(parsed) ? 'array' : typeof parsed} into Go value of type struct`,
    };
  }
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(parsed)) {
    const check = options.fields[key];
    if (check === undefined) {
      unknown.push(`unknown field "${key}"`);
      continue;
    }
    const problem = check(value);
    if (problem !== undefined) {
      return {
        kind: 'error',
        message: `${options.hookType} hook failed: can't unmarshal webhookResponse (version: ${hook.version}, type: ${options.hookType}): ${key}: ${problem}`,
      };
    }
  }
  // v2 decodes strictly: an unknown (or wrongly cased) field fails the call; v1 ignores it.
  if (unknown.length > 0 && hook.version === 'v2') {
    return {
      kind: 'error',
      message: `${options.hookType} hook failed: strict validation failed for v2 webhookResponse (type: ${options.hookType}, mode: Strict): ${unknown.join(', ')}`,
    };
  }
  return { kind: 'ok', response: parsed as T };
}

// JSON type checks of the Go structs the responses decode into.
export const isObjectOrNull = (v: unknown) =>
  v === null || isRecord(v) ? undefined : `cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go value of type map[string]interface {}`;
export const isNumberOrNull = (v: unknown) => (v === null || typeof v === 'number' ? undefined : `cannot unmarshal ${typeof v} into Go value of type float64`);
/** map[string]*string (a decorator's labels and annotations): a null value is kept (it deletes the key). */
export function isStringMapOrNull(v: unknown): string | undefined {
  if (v === null) return undefined;
  if (!isRecord(v)) return `cannot unmarshal ${Array.isArray(v) ? 'array' : typeof v} into Go value of type map[string]*string`;
  for (const item of Object.values(v)) {
    if (item !== null && typeof item !== 'string') return `cannot unmarshal ${Array.isArray(item) ? 'array' : typeof item} into Go value of type string`;
  }
  return undefined;
}
export const isBoolOrNull = (v: unknown) => (v === null || typeof v === 'boolean' ? undefined : `cannot unmarshal ${typeof v} into Go value of type bool`);
export function isObjectList(v: unknown): string | undefined {
  if (v === null) return undefined;
  if (!Array.isArray(v)) return `cannot unmarshal ${typeof v} into Go value of type []*unstructured.Unstructured`;
  for (const item of v) {
    if (item === null) continue;
    if (!isRecord(item)) return `cannot unmarshal ${Array.isArray(item) ? 'array' : typeof item} into Go value of type unstructured.Unstructured`;
    if (typeof item['kind'] !== 'string' || item['kind'] === '') return `Object 'Kind' is missing in '${JSON.stringify(item).slice(0, 200)}'`;
    if (typeof item['apiVersion'] !== 'string' || item['apiVersion'] === '') return `Object 'apiVersion' is missing in '${JSON.stringify(item).slice(0, 200)}'`;
  }
  return undefined;
}
