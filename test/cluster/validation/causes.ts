// The API server's wording for a refused write: field paths (`spec.ports[0].port`), the causes
// a 422 Invalid carries (FieldValueInvalid, FieldValueRequired, ...), and ajv's errors restated
// the way the server reports OpenAPI validation. Every other part of the validation builds its
// causes here, so a message reads the same whichever rule produced it.
// Invariant: pure functions; nothing here knows a kind.
import type { ErrorObject } from 'ajv';
import type { StatusCause } from '../../support/kube-api/errors.ts';
import { asRecord as rec, isRecord } from '../../support/records.ts';

export type Json = Record<string, unknown>;
export const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

// ------------------------------------------------------------------ field paths and wording

/** `spec.containers[0].name` from path segments (numbers are list indexes). */
export function fieldPath(parts: ReadonlyArray<string | number>): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? p : `.${p}`;
  }
  return out;
}

/** How the server prints a value in `Invalid value: ...`: Go's %#v-like for scalars, the type name for composites. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return 'null';
  return Array.isArray(value) ? '"array"' : '"object"';
}

export const invalid = (field: string, value: unknown, detail: string): StatusCause => ({
  reason: 'FieldValueInvalid',
  field,
  message: `Invalid value: ${shown(value)}: ${detail}`,
});
export const required = (field: string): StatusCause => ({ reason: 'FieldValueRequired', field, message: 'Required value' });
export const notFound = (field: string, value: unknown): StatusCause => ({ reason: 'FieldValueNotFound', field, message: `Not found: ${shown(value)}` });
export const duplicate = (field: string, value: unknown): StatusCause => ({
  reason: 'FieldValueDuplicate',
  field,
  message: `Duplicate value: ${shown(value)}`,
});
export const forbidden = (field: string, detail: string): StatusCause => ({ reason: 'FieldValueForbidden', field, message: `Forbidden: ${detail}` });
export const notSupported = (field: string, value: unknown, allowed: readonly unknown[]): StatusCause => ({
  reason: 'FieldValueNotSupported',
  field,
  message: `Unsupported value: ${shown(value)}: supported values: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`,
});

/** ajv instancePath (`/spec/ports/0/port`) as path segments, numbers where the data is a list. */
export function segments(instancePath: string, data: unknown): Array<string | number> {
  const out: Array<string | number> = [];
  let cur: unknown = data;
  for (const raw of instancePath.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      out.push(Number(part));
      cur = cur[Number(part)];
    } else {
      out.push(part);
      cur = isRecord(cur) ? cur[part] : undefined;
    }
  }
  return out;
}

export function valueAt(data: unknown, parts: ReadonlyArray<string | number>): unknown {
  let cur: unknown = data;
  for (const p of parts) {
    if (Array.isArray(cur) && typeof p === 'number') cur = cur[p];
    else if (isRecord(cur) && typeof p === 'string') cur = cur[p];
    else return undefined;
  }
  return cur;
}

export function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** An ajv error in the API server's wording for OpenAPI (CRD) validation. */
export function openApiCause(error: ErrorObject, data: unknown): StatusCause {
  const parts = segments(error.instancePath, data);
  const value = valueAt(data, parts);
  const p = error.params as Record<string, unknown>;
  if (error.keyword === 'required') {
    return required(fieldPath([...parts, String(p['missingProperty'])]));
  }
  const field = fieldPath(parts);
  switch (error.keyword) {
    case 'type':
      return {
        reason: 'FieldValueTypeInvalid',
        field,
        message: `Invalid value: ${shown(value)}: ${field} in body must be of type ${String(p['type'])}: ${JSON.stringify(jsonTypeOf(value))}`,
      };
    case 'enum':
      return notSupported(field, value, p['allowedValues'] as unknown[]);
    case 'maximum':
      return invalid(field, value, `${field} in body should be less than or equal to ${String(p['limit'])}`);
    case 'minimum':
      return invalid(field, value, `${field} in body should be greater than or equal to ${String(p['limit'])}`);
    case 'exclusiveMaximum':
      return invalid(field, value, `${field} in body should be less than ${String(p['limit'])}`);
    case 'exclusiveMinimum':
      return invalid(field, value, `${field} in body should be greater than ${String(p['limit'])}`);
    case 'pattern':
      return invalid(field, value, `${field} in body should match '${String(p['pattern'])}'`);
    case 'maxLength':
      return { reason: 'FieldValueTooLong', field, message: `Too long: may not be more than ${String(p['limit'])} bytes` };
    case 'minLength':
      return invalid(field, value, `${field} in body should be at least ${String(p['limit'])} chars long`);
    case 'maxItems':
    case 'maxProperties':
      return {
        reason: 'FieldValueTooMany',
        field,
        message: `Too many: ${Array.isArray(value) ? value.length : Object.keys(rec(value)).length}: must have at most ${String(p['limit'])} items`,
      };
    case 'minItems':
    case 'minProperties':
      return invalid(field, value, `${field} in body should have at least ${String(p['limit'])} ${error.keyword === 'minItems' ? 'items' : 'properties'}`);
    default:
      return invalid(field, value, error.message ?? 'is invalid');
  }
}
