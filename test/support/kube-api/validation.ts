// Object metadata validation as the real API server applies it to every kind (ValidateObjectMeta):
// names by the kind's rule, label keys and values, annotation keys and total size, owner
// references, finalizer names. Per-kind and registered validators run after this one.
// Invariant: returns causes with the field path and a message in the real server's wording.
import type { StatusCause } from './errors.ts';
import type { NameRule, StoredObject, ValidationContext } from './resources.ts';

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

export function isDnsSubdomain(v: string): boolean {
  return v.length > 0 && v.length <= 253 && SUBDOMAIN.test(v);
}

export function isDns1123Label(v: string): boolean {
  return v.length > 0 && v.length <= 63 && DNS1123_LABEL.test(v);
}

export function isDns1035Label(v: string): boolean {
  return v.length > 0 && v.length <= 63 && DNS1035_LABEL.test(v);
}

/** Returns problems with a qualified name (label/annotation key, finalizer): `[prefix/]name`. */
export function qualifiedNameProblems(v: string): string[] {
  const parts = v.split('/');
  if (parts.length > 2) {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  const problems: string[] = [];
  const name = parts[parts.length - 1]!;
  if (parts.length === 2) {
    const prefix = parts[0]!;
    if (prefix.length === 0) problems.push('prefix part must be non-empty');
    else if (!isDnsSubdomain(prefix))
      problems.push(
        "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
      );
  }
  if (name.length === 0) problems.push('name part must be non-empty');
  else if (name.length > 63) problems.push('name part must be no more than 63 characters');
  else if (!QUALIFIED_NAME.test(name)) {
    problems.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    );
  }
  return problems;
}

export function labelValueProblems(v: string): string[] {
  if (v.length > 63) return ['must be no more than 63 characters'];
  if (v.length > 0 && !QUALIFIED_NAME.test(v)) {
    return [
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ];
  }
  return [];
}

export function nameProblems(rule: NameRule, name: string): string[] {
  switch (rule) {
    case 'subdomain':
      return isDnsSubdomain(name)
        ? []
        : [
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
          ];
    case 'dns1123Label':
      return isDns1123Label(name)
        ? []
        : [
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
          ];
    case 'dns1035Label':
      return isDns1035Label(name)
        ? []
        : [
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
          ];
  }
}

function invalid(field: string, value: unknown, message: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(value)}: ${message}` };
}

function validateStringMap(field: string, v: unknown, causes: StatusCause[]): v is Record<string, unknown> {
  if (v === undefined) return false;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    causes.push(invalid(field, v, 'must be a map of string to string'));
    return false;
  }
  return true;
}

export function validateObjectMeta(obj: StoredObject, rule: NameRule, namespaced: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const m = obj.metadata;
  for (const p of nameProblems(rule, m.name)) causes.push(invalid('metadata.name', m.name, p));
  if (namespaced) {
    if (!m.namespace) causes.push({ reason: 'FieldValueRequired', field: 'metadata.namespace', message: 'Required value' });
    else for (const p of nameProblems('dns1123Label', m.namespace)) causes.push(invalid('metadata.namespace', m.namespace, p));
  } else if (m.namespace) {
    causes.push({ reason: 'FieldValueForbidden', field: 'metadata.namespace', message: 'Forbidden: not allowed on this type' });
  }
  if (validateStringMap('metadata.labels', m.labels, causes)) {
    for (const [k, v] of Object.entries(m.labels!)) {
      for (const p of qualifiedNameProblems(k)) causes.push(invalid('metadata.labels', k, p));
      if (typeof v !== 'string') causes.push(invalid(`metadata.labels`, v, 'must be a string'));
      else for (const p of labelValueProblems(v)) causes.push(invalid('metadata.labels', v, p));
    }
  }
  if (validateStringMap('metadata.annotations', m.annotations, causes)) {
    let size = 0;
    for (const [k, v] of Object.entries(m.annotations!)) {
      for (const p of qualifiedNameProblems(k.toLowerCase())) causes.push(invalid('metadata.annotations', k, p));
      if (typeof v !== 'string') causes.push(invalid('metadata.annotations', v, 'must be a string'));
      size += k.length + String(v).length;
    }
    if (size > TOTAL_ANNOTATION_SIZE_LIMIT) {
      causes.push({ reason: 'FieldValueTooLong', field: 'metadata.annotations', message: `Too long: must have at most ${TOTAL_ANNOTATION_SIZE_LIMIT} bytes` });
    }
  }
  if (m.finalizers !== undefined) {
    if (!Array.isArray(m.finalizers)) causes.push(invalid('metadata.finalizers', m.finalizers, 'must be a list of strings'));
    else
      m.finalizers.forEach((f, i) => {
        if (typeof f !== 'string') causes.push(invalid(`metadata.finalizers[${i}]`, f, 'must be a string'));
        else for (const p of qualifiedNameProblems(f)) causes.push(invalid(`metadata.finalizers[${i}]`, f, p));
      });
  }
  if (m.ownerReferences !== undefined) {
    if (!Array.isArray(m.ownerReferences)) causes.push(invalid('metadata.ownerReferences', m.ownerReferences, 'must be a list'));
    else {
      let controllers = 0;
      m.ownerReferences.forEach((ref, i) => {
        const f = `metadata.ownerReferences[${i}]`;
        for (const key of ['apiVersion', 'kind', 'name', 'uid'] as const) {
          if (!ref || typeof ref[key] !== 'string' || ref[key] === '') {
            causes.push({ reason: 'FieldValueRequired', field: `${f}.${key}`, message: 'Required value' });
          }
        }
        if (ref?.controller === true) controllers++;
      });
      if (controllers > 1) {
        causes.push(
          invalid(
            'metadata.ownerReferences',
            m.ownerReferences.map((r) => r?.name),
            'Only one reference can have Controller set to true',
          ),
        );
      }
    }
  }
  return causes;
}

/** Once deletion started, finalizers can only be removed (the real server refuses additions). */
export function validateFinalizersDuringDeletion(ctx: ValidationContext): StatusCause[] {
  const old = ctx.oldObject;
  if (!old?.metadata.deletionTimestamp) return [];
  const before = new Set(old.metadata.finalizers ?? []);
  const added = (ctx.object.metadata.finalizers ?? []).filter((f) => !before.has(f));
  return added.length === 0
    ? []
    : [
        {
          reason: 'FieldValueForbidden',
          field: 'metadata.finalizers',
          message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
        },
      ];
}

/** metav1.MicroTime only parses RFC 3339 with exactly six fractional digits (a JS Date's toISOString() has three). */
export const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;
/** metav1.Time: RFC 3339, any fraction. */
export const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
