// Validating objects against a CRD's openAPIV3Schema with ajv, stricter than the API server in
// one way on purpose: the API server silently prunes unknown fields, and for a manifest (or an
// object our hook builds) a pruned field is a typo that does nothing. So every object schema
// without preserve-unknown-fields is closed. Kubernetes' own formats are taught to ajv.
import { Ajv } from 'ajv';

type Obj = Record<string, unknown>;

/** The schema with additionalProperties: false wherever the API server would prune. */
export function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (typeof schema !== 'object' || schema === null) return schema;
  const node = Object.fromEntries(
    Object.entries(schema).map(([k, v]) => [k, k === 'default' || k === 'enum' ? v : closed(v)]),
  ) as Obj;
  if (
    node['properties'] !== undefined &&
    node['additionalProperties'] === undefined &&
    node['x-kubernetes-preserve-unknown-fields'] !== true
  ) {
    node['additionalProperties'] = false;
  }
  return node;
}

/**
 * A CRD pattern is Go's RE2: a leading `(?i)` (case-insensitive) is the one construct the CRDs we
 * check use that JavaScript does not take; it becomes the `i` flag.
 */
function re2(pattern: string, flags: string): RegExp {
  const m = /^(\^?)\(\?i\)/.exec(pattern);
  return m ? new RegExp(m[1] + pattern.slice(m[0].length), `${flags}i`) : new RegExp(pattern, flags);
}

export function kubernetesAjv(): Ajv {
  const ajv = new Ajv({ strict: false, allErrors: true, code: { regExp: re2 as never } });
  ajv.addFormat('date-time', { type: 'string', validate: (s: string) => !Number.isNaN(Date.parse(s)) });
  ajv.addFormat('int32', {
    type: 'number',
    validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  // Kubernetes' "duration" is a Go duration (10s, 1m30s), not ISO 8601.
  ajv.addFormat('duration', /^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/);
  return ajv;
}
