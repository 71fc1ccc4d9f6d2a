// Metacontroller's default child update: a kubectl-apply-style three-way merge done locally
// (observed object, the `metacontroller.k8s.io/last-applied-configuration` annotation, the
// hook's desired object), yielding the full object to PUT with its resourceVersion intact.
// Follows the documented behaviour of Metacontroller's pkg/dynamic/apply and ApplyUpdate:
// - objects merge key by key; a key that was in last-applied but is no longer desired is
//   removed; keys nobody applied (API defaults, other controllers' fields) are kept;
// - lists of objects that all share a conventional merge key (containerPort, port, mountPath,
//   name, uid, ip, path, in that precedence) merge item by item; any other list is replaced;
// - read-only system metadata and the whole status are reverted to the observed values, so
//   they never cause an update;
// - last-applied becomes the desired object (JSON with sorted keys, as Go marshals a map).
// Invariant: pure; inputs are never mutated.

import { isRecord } from '../../support/records.ts';

type Json = Record<string, unknown>;

export const LAST_APPLIED_ANNOTATION = 'metacontroller.k8s.io/last-applied-configuration';

const KNOWN_MERGE_KEYS = ['containerPort', 'port', 'mountPath', 'name', 'uid', 'ip', 'path'];

/** The ObjectMeta fields that are read-only and system-populated. */
const SYSTEM_METADATA = ['selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds'];

export class ApplyError extends Error {
  override name = 'ApplyError';
}

/** JSON with object keys sorted at every level: Go's encoding of map[string]interface{}. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function getLastApplied(obj: Json): Json | undefined {
  const annotations = isRecord(obj['metadata']) ? obj['metadata']['annotations'] : undefined;
  const text = isRecord(annotations) ? annotations[LAST_APPLIED_ANNOTATION] : undefined;
  if (typeof text !== 'string' || text === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ApplyError(`can't unmarshal "${LAST_APPLIED_ANNOTATION}" annotation: ${(error as Error).message}`);
  }
  if (!isRecord(parsed)) throw new ApplyError(`can't unmarshal "${LAST_APPLIED_ANNOTATION}" annotation: not an object`);
  return parsed;
}

/** A copy of `obj` whose last-applied annotation records `applied`. */
export function withLastApplied(obj: Json, applied: Json): Json {
  const out = structuredClone(obj);
  const metadata = isRecord(out['metadata']) ? out['metadata'] : {};
  const annotations = isRecord(metadata['annotations']) ? metadata['annotations'] : {};
  annotations[LAST_APPLIED_ANNOTATION] = canonicalJson(applied);
  metadata['annotations'] = annotations;
  out['metadata'] = metadata;
  return out;
}

function detectListMapKey(...lists: Array<unknown[] | undefined>): string | undefined {
  let common: Set<string> | undefined;
  for (const list of lists) {
    for (const item of list ?? []) {
      if (!isRecord(item)) return undefined;
      if (common === undefined) common = new Set(Object.keys(item));
      else for (const k of [...common]) if (!(k in item)) common.delete(k);
    }
  }
  return KNOWN_MERGE_KEYS.find((k) => common?.has(k));
}

function mergeKeyString(v: unknown): string {
  return typeof v === 'string' ? v : String(v);
}

function listAsMap(key: string, list: unknown[] | undefined): Json {
  const out: Json = {};
  for (const item of list ?? []) out[mergeKeyString((item as Json)[key])] = item;
  return out;
}

function mergeObject(path: string, destination: Json, lastApplied: Json | undefined, desired: Json): Json {
  for (const key of Object.keys(lastApplied ?? {})) if (!(key in desired)) delete destination[key];
  for (const [key, value] of Object.entries(desired)) {
    destination[key] = mergeValue(`${path}[${key}]`, destination[key], lastApplied?.[key], value);
  }
  return destination;
}

function mergeListMap(path: string, key: string, destination: unknown[], lastApplied: unknown[] | undefined, desired: unknown[]): unknown[] {
  const destMap = listAsMap(key, destination);
  mergeObject(path, destMap, listAsMap(key, lastApplied), listAsMap(key, desired));
  // Keep the observed order, then append what is new.
  const out: unknown[] = [];
  const added = new Set<string>();
  for (const item of destination) {
    const k = mergeKeyString((item as Json)[key]);
    if (k in destMap && !added.has(k)) {
      out.push(destMap[k]);
      added.add(k);
    }
  }
  for (const item of desired) {
    const k = mergeKeyString((item as Json)[key]);
    if (!added.has(k)) {
      out.push(destMap[k]);
      added.add(k);
    }
  }
  return out;
}

function mergeValue(path: string, destination: unknown, lastApplied: unknown, desired: unknown): unknown {
  if (isRecord(destination)) {
    if (lastApplied !== undefined && lastApplied !== null && !isRecord(lastApplied))
      throw new ApplyError(`lastApplied${path}: expecting an object, got ${typeof lastApplied}`);
    if (desired !== undefined && desired !== null && !isRecord(desired))
      throw new ApplyError(`desired${path}: expecting an object, got ${Array.isArray(desired) ? 'array' : typeof desired}`);
    return mergeObject(path, destination, isRecord(lastApplied) ? lastApplied : undefined, isRecord(desired) ? structuredClone(desired) : {});
  }
  if (Array.isArray(destination)) {
    if (lastApplied !== undefined && lastApplied !== null && !Array.isArray(lastApplied))
      throw new ApplyError(`lastApplied${path}: expecting a list, got ${typeof lastApplied}`);
    if (desired !== undefined && desired !== null && !Array.isArray(desired)) throw new ApplyError(`desired${path}: expecting a list, got ${typeof desired}`);
    const last = Array.isArray(lastApplied) ? lastApplied : undefined;
    const want = Array.isArray(desired) ? structuredClone(desired) : [];
    const key = detectListMapKey(destination, last, want);
    return key === undefined ? want : mergeListMap(path, key, destination, last, want);
  }
  return structuredClone(desired);
}

/** The three-way merge alone: `observed` updated with the change from `lastApplied` to `desired`. */
export function merge(observed: Json, lastApplied: Json | undefined, desired: Json): Json {
  return mergeObject('', structuredClone(observed), lastApplied, structuredClone(desired));
}

function revert(next: Json, orig: Json, path: string[]): void {
  let src: unknown = orig;
  for (const p of path) src = isRecord(src) ? src[p] : undefined;
  let dst: Json = next;
  for (const p of path.slice(0, -1)) {
    if (!isRecord(dst[p])) {
      if (src === undefined) return;
      dst[p] = {};
    }
    dst = dst[p] as Json;
  }
  const last = path[path.length - 1]!;
  if (src === undefined) delete dst[last];
  else dst[last] = structuredClone(src);
}

/** ApplyUpdate: the object to PUT so that `observed` takes on `desired` (with last-applied recorded). */
export function applyUpdate(observed: Json, desired: Json): Json {
  const merged = merge(observed, getLastApplied(observed), desired);
  for (const field of SYSTEM_METADATA) revert(merged, observed, ['metadata', field]);
  revert(merged, observed, ['status']);
  return withLastApplied(merged, desired);
}
