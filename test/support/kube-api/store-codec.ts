// The store's pure functions: what the API server's decoder does to a body (kind/apiVersion,
// namespace and name agreement, MicroTime parsing, per-kind normalisation), patch application with
// the server's error codes, the autoscaling/v1 Scale view, and the small object helpers every
// layer of the store shares.
// Invariant: nothing here touches stored state or changes its arguments (decode works on a clone
// of the body; the patch functions never mutate their inputs).
import { errors, KubeApiError } from './errors.ts';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch.ts';
import { apiVersionOf, getPath, type KubeObject, type ObjectMetaLike, type ResourceDef, type StoredObject } from './resources.ts';
import { labelSelectorToString } from './selectors.ts';
import type { PatchType } from './store-types.ts';
import { MICRO_TIME } from './validation.ts';
import { isRecord } from '../records.ts';

export const GENERATE_NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
export const SYSTEM_META = [
  'uid',
  'creationTimestamp',
  'generation',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'resourceVersion',
  'selfLink',
  'managedFields',
] as const;

export function clone<T>(v: T): T {
  return structuredClone(v);
}

export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function nsName(ns: string, name: string): string {
  return `${ns}/${name}`;
}

/** The object minus metadata and status: what a generation counts. */
export function specPart(obj: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

export function withoutRv(obj: StoredObject): StoredObject {
  const c = { ...obj, metadata: { ...obj.metadata } };
  delete (c.metadata as ObjectMetaLike).resourceVersion;
  return c;
}

export function applyPatch(type: PatchType, target: unknown, patch: unknown): unknown {
  try {
    if (type === 'json') return jsonPatch(target, patch);
    if (!isRecord(patch))
      throw new PatchError(
        `error decoding patch: json: cannot unmarshal ${Array.isArray(patch) ? 'array' : typeof patch} into Go value of type map[string]interface {}`,
        400,
      );
    return type === 'merge' ? mergePatch(target, patch) : strategicMergePatch(target, patch);
  } catch (e) {
    if (e instanceof PatchError) {
      if (e.code === 400) throw errors.badRequest(e.message);
      throw errorsInvalidPatch(e.message);
    }
    throw e;
  }
}

/** What the API server's decoder does: kind/apiVersion/namespace/name consistency and types it can parse. */
export function decode(def: ResourceDef, body: KubeObject, namespace: string | undefined, name: string | undefined): KubeObject & { metadata: ObjectMetaLike } {
  if (!isRecord(body)) throw errors.badRequest(`${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: the object is not a JSON object`);
  const obj = clone(body) as KubeObject & { metadata: ObjectMetaLike };
  const apiVersion = apiVersionOf(def);
  if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersion) {
    throw errors.badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersion})`);
  }
  if (obj.kind !== undefined && obj.kind !== def.kind) {
    throw errors.badRequest(`${obj.kind} in version "${def.version}" cannot be handled as a ${def.kind}: the kind in the data does not match`);
  }
  obj.apiVersion = apiVersion;
  obj.kind = def.kind;
  if (obj.metadata === undefined || obj.metadata === null) obj.metadata = {};
  if (!isRecord(obj.metadata))
    throw errors.badRequest(`${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: metadata must be an object`);
  if (def.namespaced) {
    const ns = namespace ?? obj.metadata.namespace;
    if (obj.metadata.namespace && ns && obj.metadata.namespace !== ns) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    if (ns) obj.metadata.namespace = ns;
  }
  if (name !== undefined && obj.metadata.name !== undefined && obj.metadata.name !== name) {
    throw errors.badRequest(`the name of the object (${String(obj.metadata.name)}) does not match the name on the URL (${name})`);
  }
  for (const path of def.microTimeFields ?? []) {
    const v = getPath(obj, path);
    if (v !== undefined && v !== null && (typeof v !== 'string' || !MICRO_TIME.test(v))) {
      throw errors.badRequest(
        `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: parsing time ${JSON.stringify(JSON.stringify(v))} as "\\"2006-01-02T15:04:05.000000Z07:00\\"": cannot parse as RFC3339Micro (${path})`,
      );
    }
  }
  const problem = def.normalize?.(obj);
  if (problem) throw errors.badRequest(problem);
  return obj;
}

export function scaleOf(def: ResourceDef, obj: StoredObject): KubeObject {
  const scale = def.scale!;
  const selector = scale.selectorFromSpec
    ? labelSelectorToString(getPath(obj, 'spec.selector') as Parameters<typeof labelSelectorToString>[0])
    : scale.labelSelectorPath
      ? getPath(obj, scale.labelSelectorPath)
      : undefined;
  const status: Record<string, unknown> = { replicas: getPath(obj, scale.statusReplicasPath) ?? 0 };
  if (typeof selector === 'string' && selector !== '') status['selector'] = selector;
  const m = obj.metadata;
  const metadata: ObjectMetaLike = { name: m.name, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp };
  if (m.namespace) metadata.namespace = m.namespace;
  return { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata, spec: { replicas: getPath(obj, scale.specReplicasPath) ?? 0 }, status };
}

export function failureInvalidScale(name: string, replicas: unknown): KubeApiError {
  return errors.invalid({ group: 'autoscaling', resource: 'scale', kind: 'Scale' }, name, [
    { reason: 'FieldValueInvalid', field: 'spec.replicas', message: `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0` },
  ]);
}

export function errorsInvalidPatch(message: string): KubeApiError {
  const e = errors.badRequest(message);
  e.status.code = 422;
  e.status.reason = 'Invalid';
  return e;
}
