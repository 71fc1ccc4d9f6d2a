// Our Redis CRD as a real API server enforces it: the structural schema of the manifest that gets
// installed (manifests/crd.yaml), pruning of unspecified fields, ajv validation, and the
// x-kubernetes-validations CEL rules (transition rules only where an old value exists).
// Invariant: the schema is read from the manifest, never restated here, so a CRD change is tested
// as shipped.
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import type { JsonSchema } from '../../../src/api/crd.ts';
import { GROUP, KIND, VERSION } from '../../../src/api/labels.ts';
import { evaluateRule, isTransitionRule } from '../../api/cel-env.ts';
import type { StatusCause } from '../../support/kube-api/errors.ts';
import { deepEqual } from '../../support/kube-api/patch.ts';
import { asRecord as rec, isRecord } from '../../support/records.ts';
import { pruneUnknown } from './builtin-decode.ts';
import { arr, fieldPath, type Json } from './causes.ts';

// ------------------------------------------------------------------ the Redis CRD

interface CrdVersion {
  schema: JsonSchema;
  validate: ValidateFunction;
}

const KUBE_KEYWORDS = [
  'x-kubernetes-validations',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-embedded-resource',
];

/** The openAPIV3Schema of our CRD's served version, from the manifest that gets installed. */
export function loadCrdSchema(path: string | URL = new URL('../../../manifests/crd.yaml', import.meta.url), kind: string = KIND): JsonSchema {
  const crd = parse(readFileSync(path, 'utf8')) as Json;
  const spec = rec(crd['spec']);
  if (spec['group'] !== GROUP || rec(spec['names'])['kind'] !== kind) throw new Error(`${String(path)} is not the ${kind}.${GROUP} CRD`);
  const version = arr(spec['versions'])
    .map(rec)
    .find((v) => v['name'] === VERSION);
  const schema = rec(rec(version?.['schema'])['openAPIV3Schema']);
  if (Object.keys(schema).length === 0) throw new Error(`${String(path)} has no openAPIV3Schema for ${VERSION}`);
  return schema;
}

export function compileCrd(schema: JsonSchema): CrdVersion {
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  for (const keyword of KUBE_KEYWORDS) ajv.addKeyword({ keyword });
  return { schema, validate: ajv.compile(schema) };
}

/**
 * Structural pruning: drops every field the schema does not specify (unless
 * x-kubernetes-preserve-unknown-fields); the root's metadata keeps ObjectMeta's fields only.
 */
export function pruneBySchema(schema: JsonSchema, value: unknown, path: Array<string | number> = [], found: string[] = []): string[] {
  if (Array.isArray(value)) {
    const items = schema['items'];
    if (isRecord(items)) value.forEach((item, i) => pruneBySchema(items, item, [...path, i], found));
    return found;
  }
  if (!isRecord(value)) return found;
  if (path.length === 1 && path[0] === 'metadata') return pruneUnknown(value, 'V1ObjectMeta', path, found);
  const properties = schema['properties'];
  const additional = schema['additionalProperties'];
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  for (const key of Object.keys(value)) {
    const child = isRecord(properties) ? properties[key] : undefined;
    if (isRecord(child)) pruneBySchema(child, value[key], [...path, key], found);
    else if (isRecord(additional)) pruneBySchema(additional, value[key], [...path, key], found);
    else if (!preserve && !(path.length === 0 && (key === 'apiVersion' || key === 'kind' || key === 'metadata'))) {
      found.push(fieldPath([...path, key]));
      delete value[key];
    }
  }
  return found;
}

/** The CEL type name the server prints for a failing rule's value. */
function celTypeName(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (isRecord(value)) return 'object';
  return typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'number') : typeof value;
}

/**
 * x-kubernetes-validations over an object: every rule of every node present, transition rules
 * (those using oldSelf) only where the old value exists (properties and map keys correlate;
 * list-type=map items by their keys; other lists do not).
 */
export function celCauses(schema: unknown, self: unknown, oldSelf: unknown, path: Array<string | number> = []): StatusCause[] {
  if (!isRecord(schema) || self === undefined) return [];
  const causes: StatusCause[] = [];
  for (const v of arr(schema['x-kubernetes-validations']).map(rec)) {
    const rule = String(v['rule']);
    if (isTransitionRule(rule) && oldSelf === undefined) continue;
    let ok: boolean;
    try {
      ok = evaluateRule(rule, self, oldSelf);
    } catch {
      ok = false;
    }
    if (!ok) {
      const message = typeof v['message'] === 'string' ? v['message'] : `failed rule: ${rule}`;
      causes.push({ reason: 'FieldValueInvalid', field: fieldPath(path), message: `Invalid value: ${JSON.stringify(celTypeName(self))}: ${message}` });
    }
  }
  if (isRecord(self)) {
    const properties = rec(schema['properties']);
    const additional = schema['additionalProperties'];
    const old = isRecord(oldSelf) ? oldSelf : undefined;
    for (const [key, value] of Object.entries(self)) {
      causes.push(...celCauses(properties[key] ?? additional, value, old?.[key], [...path, key]));
    }
  } else if (Array.isArray(self)) {
    const keys = schema['x-kubernetes-list-type'] === 'map' ? arr(schema['x-kubernetes-list-map-keys']).map(String) : [];
    const olds = arr(oldSelf);
    self.forEach((item, i) => {
      const match = keys.length > 0 ? olds.find((o) => keys.every((k) => deepEqual(rec(o)[k], rec(item)[k]))) : undefined;
      causes.push(...celCauses(schema['items'], item, match, [...path, i]));
    });
  }
  return causes;
}
