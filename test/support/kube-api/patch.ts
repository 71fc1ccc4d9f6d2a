// The three patch formats the API server accepts, applied to plain JSON.
// - JSON merge patch (RFC 7386): objects merge, null deletes, arrays and scalars replace.
// - JSON patch (RFC 6902): add/remove/replace/move/copy/test with JSON pointers.
// - Strategic merge patch, simplified (documented): like merge patch, except that lists named in
//   MERGE_KEYS merge element-wise by their key (containers by name, ports by containerPort or port,
//   conditions by type, ownerReferences by uid, ...), `finalizers` merges as a set, and the
//   directives `$patch: replace|delete` (on a map or a keyed list element) and
//   `$deleteFromPrimitiveList/<field>` work. `$setElementOrder` and `$retainKeys` are ignored.
//   Any other list is replaced, as for fields without a patch strategy.
// Invariant: inputs are never mutated; errors are PatchError (the caller maps them to 4xx).

import { isRecord } from '../records.ts';

export class PatchError extends Error {
  readonly code: number;
  constructor(message: string, code = 422) {
    super(message);
    this.code = code;
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function clone<T>(v: T): T {
  return v === undefined ? v : (structuredClone(v) as T);
}

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return clone(patch);
  const out: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

interface JsonPatchOp {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError(`invalid JSON pointer ${JSON.stringify(pointer)}`);
  return pointer
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: unknown, parts: string[], pointer: string): { parent: Record<string, unknown> | unknown[]; key: string } {
  let cur: unknown = doc;
  for (const part of parts.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(part)];
    else if (isRecord(cur)) cur = cur[part];
    else cur = undefined;
    if (cur === undefined) throw new PatchError(`jsonpatch: path ${pointer}: missing value`);
  }
  if (!Array.isArray(cur) && !isRecord(cur)) throw new PatchError(`jsonpatch: path ${pointer}: parent is not a container`);
  return { parent: cur, key: parts[parts.length - 1]! };
}

function arrayIndex(arr: unknown[], key: string, pointer: string, forInsert: boolean): number {
  if (forInsert && key === '-') return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(key)) throw new PatchError(`jsonpatch: path ${pointer}: invalid array index`);
  const idx = Number(key);
  if (idx > arr.length || (!forInsert && idx === arr.length)) throw new PatchError(`jsonpatch: path ${pointer}: index out of range`);
  return idx;
}

function getAt(doc: unknown, pointer: string): unknown {
  let cur: unknown = doc;
  for (const part of parsePointer(pointer)) {
    if (Array.isArray(cur)) cur = cur[Number(part)];
    else if (isRecord(cur)) cur = Object.hasOwn(cur, part) ? cur[part] : undefined;
    else cur = undefined;
    if (cur === undefined) throw new PatchError(`jsonpatch: path ${pointer}: missing value`);
  }
  return cur;
}

function removeAt(doc: unknown, pointer: string): unknown {
  const parts = parsePointer(pointer);
  if (parts.length === 0) throw new PatchError('jsonpatch: cannot remove the whole document');
  const { parent, key } = parentOf(doc, parts, pointer);
  if (Array.isArray(parent)) {
    const idx = arrayIndex(parent, key, pointer, false);
    return parent.splice(idx, 1)[0];
  }
  if (!Object.hasOwn(parent, key)) throw new PatchError(`jsonpatch: path ${pointer}: missing value`);
  const old = parent[key];
  delete parent[key];
  return old;
}

function addAt(doc: unknown, pointer: string, value: unknown): unknown {
  const parts = parsePointer(pointer);
  if (parts.length === 0) return value;
  const { parent, key } = parentOf(doc, parts, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, pointer, true), 0, value);
  else parent[key] = value;
  return doc;
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isRecord(a) && isRecord(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) {
    throw new PatchError('error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp', 400);
  }
  let doc = clone(target);
  for (const raw of ops as JsonPatchOp[]) {
    if (!isRecord(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string') {
      throw new PatchError('jsonpatch: every operation needs "op" and "path"', 400);
    }
    switch (raw.op) {
      case 'add':
        doc = addAt(doc, raw.path, clone(raw.value));
        break;
      case 'remove':
        removeAt(doc, raw.path);
        break;
      case 'replace':
        getAt(doc, raw.path);
        if (parsePointer(raw.path).length === 0) doc = clone(raw.value);
        else {
          removeAt(doc, raw.path);
          doc = addAt(doc, raw.path, clone(raw.value));
        }
        break;
      case 'move': {
        if (typeof raw.from !== 'string') throw new PatchError('jsonpatch: move needs "from"', 400);
        const v = removeAt(doc, raw.from);
        doc = addAt(doc, raw.path, v);
        break;
      }
      case 'copy': {
        if (typeof raw.from !== 'string') throw new PatchError('jsonpatch: copy needs "from"', 400);
        doc = addAt(doc, raw.path, clone(getAt(doc, raw.from)));
        break;
      }
      case 'test':
        if (!deepEqual(getAt(doc, raw.path), raw.value)) {
          throw new PatchError(`jsonpatch: test operation for path ${raw.path} failed`);
        }
        break;
      default:
        throw new PatchError(`jsonpatch: unexpected operation ${JSON.stringify(raw.op)}`, 400);
    }
  }
  return doc;
}

/** Lists that merge by key in a strategic merge patch (by field name; `ports` picks its key from the elements). */
export const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  volumes: 'name',
  env: 'name',
  imagePullSecrets: 'name',
  volumeMounts: 'mountPath',
  volumeDevices: 'devicePath',
  conditions: 'type',
  ownerReferences: 'uid',
  hostAliases: 'ip',
  topologySpreadConstraints: 'topologyKey',
};
/** Primitive lists that merge as sets. */
export const SET_LISTS = new Set(['finalizers']);

function mergeKeyFor(field: string, items: unknown[]): string | undefined {
  if (field === 'ports') {
    return items.some((i) => isRecord(i) && 'containerPort' in i) ? 'containerPort' : 'port';
  }
  return MERGE_KEYS[field];
}

function strategicList(field: string, target: unknown, patch: unknown[]): unknown {
  const base = Array.isArray(target) ? target : [];
  if (SET_LISTS.has(field)) {
    const out = [...base];
    for (const v of patch) if (!out.some((x) => deepEqual(x, v))) out.push(clone(v));
    return out;
  }
  const key = mergeKeyFor(field, patch);
  if (!key || !patch.every(isRecord)) return clone(patch);
  if (patch.some((p) => isRecord(p) && p['$patch'] === 'replace')) {
    return patch.filter((p) => !(isRecord(p) && p['$patch'] === 'replace')).map(clone);
  }
  const out = base.map(clone);
  for (const item of patch as Record<string, unknown>[]) {
    const idx = out.findIndex((x) => isRecord(x) && deepEqual(x[key], item[key]));
    if (item['$patch'] === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) out[idx] = strategicMergePatch(out[idx], item);
    else out.push(strategicMergePatch({}, item));
  }
  return out;
}

export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return clone(patch);
  if (patch['$patch'] === 'replace') {
    const { $patch: _drop, ...rest } = patch;
    return clone(rest);
  }
  if (patch['$patch'] === 'delete') return undefined;
  const out: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys' || k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.some((d) => deepEqual(d, x)));
      continue;
    }
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = strategicList(k, out[k], v);
    else if (isRecord(v)) {
      const merged = strategicMergePatch(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = v;
  }
  return out;
}

export type { Json };
export { deepEqual };
