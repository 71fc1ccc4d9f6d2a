// The hook routes' response serializer: JSON text written without recursion. On an invalid spec,
// and while finalizing, the hook echoes every observed child as last applied, and a child's
// last-applied annotation or its own fields may nest thousands of levels deep (anything a field
// that keeps unknown fields allowed the API server to store). JSON.stringify, and the serializer
// fastify compiles from a schema, recurse and overflow the stack at about 5000 levels: every
// sync of that parent would be a 500, for ever. Here an explicit stack replaces the call stack
// when (and only when) the native call overflows.
// Invariants: for any JSON-compatible value the text is exactly JSON.stringify's (same key
// order, same escapes, undefined and functions skipped in objects and null in lists, non-finite
// numbers null, toJSON honoured); an object schema with `additionalProperties: false` writes
// only its declared properties, in declaration order, and throws when a required one is missing
// (a hook answer without `children` must become a 500, never a 200 that deletes every child).

type Step = { text: string } | { value: unknown; inList: boolean };

function skipped(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

/**
 * JSON.stringify(value) for JSON data, at any depth. The native call first (every answer of a
 * sync pays for this, and it is many times faster); the explicit-stack writer only when it
 * overflows the stack, which only a pathologically deep echoed object does.
 */
export function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value) as string | undefined;
  } catch (err) {
    if (err instanceof RangeError) return stackSafeJsonText(value);
    throw err;
  }
}

/**
 * JSON.stringify(value) for JSON data, written with an explicit stack. Undefined (as JSON.stringify) when `value`
 * itself is skipped.
 */
export function stackSafeJsonText(value: unknown): string | undefined {
  if (skipped(value)) return undefined;
  const out: string[] = [];
  const steps: Step[] = [{ value, inList: false }];
  for (let step = steps.pop(); step !== undefined; step = steps.pop()) {
    if ('text' in step) {
      out.push(step.text);
      continue;
    }
    let current = step.value;
    if (
      typeof current === 'object' &&
      current !== null &&
      typeof (current as { toJSON?: unknown }).toJSON === 'function'
    ) {
      current = (current as { toJSON: () => unknown }).toJSON();
    }
    if (skipped(current)) {
      // Only reached for list items and the root; object entries are filtered below.
      out.push('null');
    } else if (current === null || typeof current === 'boolean' || typeof current === 'string') {
      out.push(JSON.stringify(current));
    } else if (typeof current === 'number') {
      out.push(Number.isFinite(current) ? String(current) : 'null');
    } else if (typeof current === 'bigint') {
      throw new TypeError('Do not know how to serialize a BigInt');
    } else if (Array.isArray(current)) {
      const later: Step[] = [{ text: '[' }];
      current.forEach((item: unknown, index) => {
        if (index > 0) later.push({ text: ',' });
        later.push({ value: item, inList: true });
      });
      later.push({ text: ']' });
      for (let i = later.length - 1; i >= 0; i--) steps.push(later[i] as Step);
    } else {
      const later: Step[] = [{ text: '{' }];
      for (const [key, item] of Object.entries(current as object)) {
        if (skipped(item)) continue;
        if (later.length > 1) later.push({ text: ',' });
        later.push({ text: `${JSON.stringify(key)}:` }, { value: item, inList: false });
      }
      later.push({ text: '}' });
      for (let i = later.length - 1; i >= 0; i--) steps.push(later[i] as Step);
    }
  }
  return out.join('');
}

interface ClosedObjectSchema {
  type: 'object';
  properties: Record<string, unknown>;
  required?: string[];
  additionalProperties: false;
}

function isClosedObject(schema: unknown): schema is ClosedObjectSchema {
  const s = schema as Partial<ClosedObjectSchema> | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    s.type === 'object' &&
    typeof s.properties === 'object' &&
    s.additionalProperties === false
  );
}

/** A fastify serializer for one response schema (setSerializerCompiler). */
export function schemaSerializer(schema: unknown): (data: unknown) => string {
  if (!isClosedObject(schema)) return (data) => jsonText(data) ?? 'null';
  const declared = Object.keys(schema.properties);
  const required = schema.required ?? [];
  return (data) => {
    const record = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
    for (const key of required)
      if (!Object.hasOwn(record, key) || record[key] === undefined) throw new Error(`"${key}" is required!`);
    const kept: Record<string, unknown> = {};
    for (const key of declared) if (Object.hasOwn(record, key)) kept[key] = record[key];
    return jsonText(kept) ?? 'null';
  };
}
