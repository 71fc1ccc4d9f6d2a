// Checking JSON against the wire schemas (wire.ts), and saying what is wrong in one sentence that
// names the field the way a person would write it: `children["Service.v1"]["default/x"].kind`.
// The fastify routes check each body once with it (src/server/hook-scope.ts); parse.ts runs the
// same compiled checker for callers outside the server, so a body gets the same verdict and
// message from either.
// Invariants: checking never throws and never changes the value (no coercion, no defaults); a
// value that passes `is` has the schema's Static type; `problem` is undefined exactly when `is`
// holds; the message describes the first problem only (required keys first, then properties in
// schema order), which is enough for a client to fix and cheap to compute.
import { KindGuard, type TSchema, type Static } from '@sinclair/typebox';
import { TypeCompiler, ValueErrorType, type ValueError } from '@sinclair/typebox/compiler';

export interface WireProblem {
  /** JSON pointer of the offending value, for example `/parent/metadata/name`. */
  pointer: string;
  /** The same path as a person writes it, for example `parent.metadata.name`; `request body` at the root. */
  field: string;
  /** `<field> <what it must be>`. */
  message: string;
}

export interface WireChecker<T extends TSchema> {
  readonly schema: T;
  is(value: unknown): value is Static<T>;
  /** Why `value` does not match; undefined when it does. */
  problem(value: unknown): WireProblem | undefined;
}

const checkers = new WeakMap<TSchema, WireChecker<TSchema>>();

/** The checker of a schema, compiled once per schema object and shared by every caller. */
export function wireChecker<T extends TSchema>(schema: T): WireChecker<T> {
  const known = checkers.get(schema);
  if (known !== undefined) return known as WireChecker<T>;
  const compiled = TypeCompiler.Compile(schema);
  const checker: WireChecker<T> = {
    schema,
    is: (value: unknown): value is Static<T> => compiled.Check(value),
    problem(value: unknown): WireProblem | undefined {
      if (compiled.Check(value)) return undefined;
      const first = compiled.Errors(value).First();
      // Check and Errors come from the same schema; a disagreement would be a TypeBox bug, and
      // the value is still refused.
      if (first === undefined)
        return { pointer: '', field: 'request body', message: 'request body does not match the hook request schema' };
      const error = leaf(first);
      const field = fieldName(schema, error.path);
      return { pointer: error.path, field, message: `${field} ${expectation(error.schema)}` };
    },
  };
  checkers.set(schema, checker as WireChecker<TSchema>);
  return checker;
}

/** A union error (a nullable map) reported as the first problem of its non-null alternative. */
function leaf(error: ValueError): ValueError {
  if (error.type !== ValueErrorType.Union || !KindGuard.IsUnion(error.schema)) return error;
  for (const [index, variant] of error.schema.anyOf.entries()) {
    if (KindGuard.IsNull(variant)) continue;
    const inner = error.errors[index]?.First();
    if (inner !== undefined) return leaf(inner);
  }
  return error;
}

/**
 * What a value must be, from its schema. For a missing required property TypeBox reports the
 * property's own schema, so a missing field and a wrong one read the same.
 */
function expectation(schema: TSchema): string {
  const custom: unknown = schema['errorMessage'];
  if (typeof custom === 'string') return custom;
  if (KindGuard.IsUnion(schema)) {
    const variant = schema.anyOf.find((s) => !KindGuard.IsNull(s));
    return variant === undefined ? 'must be null' : `${expectation(variant)} or null`;
  }
  if (KindGuard.IsObject(schema)) return 'must be an object';
  if (KindGuard.IsString(schema))
    return (schema.minLength ?? 0) > 0 ? 'must be a non-empty string' : 'must be a string';
  if (KindGuard.IsBoolean(schema)) return 'must be a boolean';
  if (KindGuard.IsNumber(schema) || KindGuard.IsInteger(schema)) return 'must be a number';
  if (KindGuard.IsArray(schema)) return 'must be a list';
  if (KindGuard.IsNull(schema)) return 'must be null';
  return 'is not valid here';
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * The schema one key further down, and whether the key is a map key (shown in brackets) or a
 * property. Below what the schema describes, a key that reads as a property is shown as one.
 */
function step(schema: TSchema | undefined, key: string): { schema: TSchema | undefined; mapKey: boolean } {
  const unknown = { schema: undefined, mapKey: !IDENTIFIER.test(key) };
  if (schema === undefined) return unknown;
  if (KindGuard.IsUnion(schema)) {
    for (const variant of schema.anyOf) {
      if (KindGuard.IsNull(variant)) continue;
      const next = step(variant, key);
      if (next.schema !== undefined) return next;
    }
    return unknown;
  }
  if (KindGuard.IsObject(schema) && Object.hasOwn(schema.properties, key))
    return { schema: schema.properties[key], mapKey: false };
  if (KindGuard.IsRecord(schema)) return { schema: Object.values(schema.patternProperties)[0], mapKey: true };
  if (KindGuard.IsArray(schema)) return { schema: schema.items, mapKey: true };
  return unknown;
}

/** `parent.metadata.name`, `children["StatefulSet.apps/v1"]["default/x"]`, `request body` at the root. */
export function fieldName(root: TSchema, pointer: string): string {
  if (pointer === '') return 'request body';
  let schema: TSchema | undefined = root;
  let name = '';
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const next = step(schema, key);
    const index = /^(0|[1-9][0-9]*)$/.test(key) && schema !== undefined && KindGuard.IsArray(schema);
    name += next.mapKey ? `[${index ? key : JSON.stringify(key)}]` : `${name === '' ? '' : '.'}${key}`;
    schema = next.schema;
  }
  return name;
}
