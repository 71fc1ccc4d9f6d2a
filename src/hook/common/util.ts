// Defensive readers for JSON we did not produce (observed children, related pods, old status)
// and canonical orderings. Invariants: nothing here throws on any JSON value, and every ordering
// is a plain code-unit comparison (never locale-dependent), so output order is reproducible.
// Keys are data, never properties of Object.prototype: a lookup reads own keys only (a label
// named `constructor` is a label, an absent one is absent), and a map built here never takes a
// `__proto__` key, which would replace its prototype instead of adding an entry (the server's
// parser already drops that key from every request, so this only guards direct callers).
import { compareCodeUnits as compare } from '../../api/order.ts';

export type Json = Record<string, unknown>;

/** The one key an assignment cannot add to a plain object. */
const PROTO = '__proto__';

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function record(value: unknown): Json | undefined {
  return isRecord(value) ? value : undefined;
}

export function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function int(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

export function array(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Follows a path of object keys; undefined as soon as a step is not an object. */
export function at(value: unknown, ...path: string[]): unknown {
  let current: unknown = value;
  for (const key of path) {
    if (!isRecord(current) || !Object.hasOwn(current, key)) return undefined;
    current = current[key];
  }
  return current;
}

/** The string-valued entries of a map (labels, annotations), anything else dropped. */
export function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isRecord(value)) return out;
  for (const [k, v] of Object.entries(value)) if (typeof v === 'string' && k !== PROTO) out[k] = v;
  return out;
}

export { compare };

/** A copy of a map with its keys in code-unit order. */
export function sortedMap<T>(map: Record<string, T>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const key of Object.keys(map).sort(compare)) if (key !== PROTO) out[key] = map[key] as T;
  return out;
}

/** `k=v,k=v` in key order: the string form of an equality selector (scale subresource, HPAs). */
export function selectorString(labels: Record<string, string>): string {
  return Object.keys(labels)
    .sort(compare)
    .map((k) => `${k}=${labels[k]}`)
    .join(',');
}
