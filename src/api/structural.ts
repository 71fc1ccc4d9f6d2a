// From a TypeBox/JSON Schema to a Kubernetes structural schema (a CRD's openAPIV3Schema), for any
// schema: knows nothing of Redis. Owns the translation from what TypeBox/ajv emit to what a
// Kubernetes API server accepts: every node typed, no $ref, no const, no patternProperties,
// nothing but bare types inside an int-or-string anyOf, and defaults that are complete values.
// Invariants: pure and deterministic (generated manifests are compared byte for byte);
// constructs that cannot be made structural make it throw rather than emit a CRD the API
// server would reject or, worse, silently prune to something weaker.
import { compareCodeUnits } from './order.ts';

export type JsonSchema = { [key: string]: unknown };

/**
 * The JSONSchemaProps fields a v1 CRD may use. The API server drops any other key (so it would
 * validate nothing) and refuses $ref, id, $schema, definitions, dependencies, patternProperties
 * and additionalItems.
 */
const SUPPORTED_FIELDS = new Set([
  'description',
  'type',
  'format',
  'title',
  'default',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'uniqueItems',
  'multipleOf',
  'enum',
  'maxProperties',
  'minProperties',
  'required',
  'items',
  'allOf',
  'oneOf',
  'anyOf',
  'not',
  'properties',
  'additionalProperties',
  'externalDocs',
  'example',
  'nullable',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-list-type',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
]);

/** Annotations of JSON Schema that carry no validation; safe to drop. */
const DROPPABLE = new Set(['$id', '$schema', '$comment', 'examples', 'readOnly', 'writeOnly']);

/**
 * Keywords that only ever constrain one JSON type, so hoisting them out of an int-or-string anyOf keeps their meaning.
 */
const STRING_ONLY = ['pattern', 'minLength', 'maxLength', 'format'];
const NUMBER_ONLY = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];

/** TypeBox's Record(String, T) key pattern: matches every key, so it is a plain map. */
const MATCH_ALL_PATTERNS = new Set(['^(.*)$', '^.*$', '.*', '^(.*)']);

export class NotStructuralError extends Error {
  override name = 'NotStructuralError';
}

function isObject(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function fail(path: string, message: string): never {
  throw new NotStructuralError(`${path || '<root>'}: ${message}`);
}

/** `{const: x}` / `{type, const: x}` / `{type, enum}`: the shapes TypeBox emits for literals. */
function literalValues(branch: unknown): unknown[] | undefined {
  if (!isObject(branch)) return undefined;
  const keys = Object.keys(branch).filter((k) => k !== 'type' && k !== 'description');
  if (keys.length !== 1) return undefined;
  if (keys[0] === 'const') return [branch['const']];
  if (keys[0] === 'enum' && Array.isArray(branch['enum'])) return branch['enum'] as unknown[];
  return undefined;
}

/** An anyOf of literals of one JSON type is an enum; TypeBox emits it for Union([Literal, ...]). */
function anyOfLiteralsToEnum(node: JsonSchema, path: string): void {
  const branches = node['anyOf'];
  if (!Array.isArray(branches) || branches.length === 0) return;
  const values: unknown[] = [];
  for (const branch of branches) {
    const literal = literalValues(branch);
    if (literal === undefined) return;
    values.push(...literal);
  }
  const types = new Set(values.map(jsonType).map((t) => (t === 'integer' ? 'number' : t)));
  if (types.size !== 1) fail(path, 'anyOf of literals of different types cannot be an enum');
  delete node['anyOf'];
  node['enum'] = values;
  if (node['type'] === undefined)
    node['type'] = values.every((v) => jsonType(v) === 'integer') ? 'integer' : jsonType(values[0]);
}

/**
 * x-kubernetes-int-or-string: the API server allows only `anyOf: [{type: integer}, {type: string}]`
 * (deep-equal). Constraints placed on a branch are hoisted onto the node: each of them applies to
 * one JSON type only, so the meaning is unchanged.
 */
function normalizeIntOrString(node: JsonSchema, path: string): void {
  delete node['type'];
  const branches = node['anyOf'];
  if (branches === undefined) return;
  if (!Array.isArray(branches) || branches.length !== 2)
    fail(path, 'int-or-string anyOf must have an integer and a string branch');
  const byType = new Map<string, JsonSchema>();
  for (const branch of branches) {
    if (!isObject(branch) || typeof branch['type'] !== 'string')
      fail(path, 'int-or-string anyOf branches must each have a type');
    byType.set(branch['type'], branch);
  }
  const integer = byType.get('integer');
  const string = byType.get('string');
  if (integer === undefined || string === undefined) fail(path, 'int-or-string anyOf must be integer and string');
  for (const [branch, allowed] of [
    [integer, NUMBER_ONLY],
    [string, STRING_ONLY],
  ] as const) {
    for (const [key, value] of Object.entries(branch)) {
      if (key === 'type') continue;
      if (!allowed.includes(key)) fail(path, `int-or-string branch keyword ${key} cannot be hoisted`);
      if (node[key] !== undefined && JSON.stringify(node[key]) !== JSON.stringify(value))
        fail(path, `int-or-string ${key} conflicts`);
      node[key] = value;
    }
  }
  node['anyOf'] = [{ type: 'integer' }, { type: 'string' }];
}

/** Inside anyOf/allOf/oneOf/not only value validations may appear; a Union of types has no structural form. */
function rejectTypedJunctors(node: JsonSchema, path: string): void {
  const branches = [
    ...(['anyOf', 'allOf', 'oneOf'] as const).flatMap((j) => (Array.isArray(node[j]) ? (node[j] as unknown[]) : [])),
    node['not'],
  ];
  for (const branch of branches) {
    if (!isObject(branch)) continue;
    for (const key of ['type', 'description', 'default', 'additionalProperties', 'nullable']) {
      if (key in branch)
        fail(
          path,
          `${key} inside anyOf/allOf/oneOf/not is not structural (a union of types has no CRD form; use x-kubernetes-int-or-string or one type with CEL rules)`,
        );
    }
  }
}

/** Draft 2019 numeric exclusive bounds become the OpenAPI v3.0 boolean form Kubernetes expects. */
function exclusiveBounds(node: JsonSchema): void {
  for (const [exclusive, bound] of [
    ['exclusiveMaximum', 'maximum'],
    ['exclusiveMinimum', 'minimum'],
  ] as const) {
    const value = node[exclusive];
    if (typeof value === 'number') {
      node[bound] = value;
      node[exclusive] = true;
    }
  }
}

function structuralNode(input: unknown, path: string): JsonSchema {
  if (!isObject(input)) fail(path, 'schema node must be an object');
  const node: JsonSchema = { ...input };
  for (const key of Object.keys(node)) if (DROPPABLE.has(key)) delete node[key];

  if (node['$ref'] !== undefined) fail(path, '$ref is not supported in a CRD: inline the schema');
  if (node['definitions'] !== undefined || node['$defs'] !== undefined)
    fail(path, 'definitions are not supported in a CRD');
  if (Array.isArray(node['items'])) fail(path, 'tuple items are not supported in a CRD');
  if (Array.isArray(node['type'])) fail(path, 'a list of types is not structural');
  if (
    node['type'] !== undefined &&
    !['array', 'boolean', 'integer', 'number', 'object', 'string'].includes(String(node['type']))
  ) {
    fail(path, `type ${String(node['type'])} does not exist in a CRD schema`);
  }

  if ('const' in node) {
    const value = node['const'];
    delete node['const'];
    node['enum'] = [value];
    if (node['type'] === undefined) node['type'] = jsonType(value);
  }
  anyOfLiteralsToEnum(node, path);
  exclusiveBounds(node);

  const patternProperties = node['patternProperties'];
  if (patternProperties !== undefined) {
    const entries = isObject(patternProperties) ? Object.entries(patternProperties) : [];
    const [entry] = entries;
    if (entries.length !== 1 || entry === undefined || !MATCH_ALL_PATTERNS.has(entry[0])) {
      fail(path, 'patternProperties are not supported in a CRD: use additionalProperties and a CEL rule on the keys');
    }
    if (node['properties'] !== undefined) fail(path, 'a map cannot also have properties');
    delete node['patternProperties'];
    node['additionalProperties'] = entry[1];
    node['type'] ??= 'object';
  }

  // Pruning already drops unknown fields; the API server refuses `additionalProperties: false`.
  if (node['additionalProperties'] === false) delete node['additionalProperties'];
  if (node['additionalProperties'] === true) {
    delete node['additionalProperties'];
    if (node['properties'] === undefined) node['x-kubernetes-preserve-unknown-fields'] = true;
  }

  if (node['x-kubernetes-int-or-string'] === true) normalizeIntOrString(node, path);
  else rejectTypedJunctors(node, path);

  for (const key of Object.keys(node)) {
    if (!SUPPORTED_FIELDS.has(key)) fail(path, `keyword ${key} is not supported in a CRD schema`);
  }
  if (node['uniqueItems'] === true)
    fail(path, 'uniqueItems: true is refused by the API server (quadratic validation cost)');

  if (isObject(node['properties'])) {
    const properties: JsonSchema = {};
    for (const [name, child] of Object.entries(node['properties']))
      properties[name] = structuralNode(child, `${path}.${name}`);
    node['properties'] = properties;
  }
  if (isObject(node['additionalProperties']))
    node['additionalProperties'] = structuralNode(node['additionalProperties'], `${path}[*]`);
  if (isObject(node['items'])) node['items'] = structuralNode(node['items'], `${path}[]`);
  if (isObject(node['not'])) node['not'] = structuralNode(node['not'], `${path}(not)`);
  for (const junctor of ['anyOf', 'allOf', 'oneOf'] as const) {
    const branches = node[junctor];
    if (Array.isArray(branches)) node[junctor] = branches.map((b, i) => structuralNode(b, `${path}(${junctor}[${i}])`));
  }
  // Keywords in alphabetical order (as controller-gen writes them) so the generated file reads
  // the same whatever order TypeBox's options came in; property order stays as declared.
  return Object.fromEntries(Object.entries(node).sort(([a], [b]) => compareCodeUnits(a, b)));
}

/**
 * What the API server's defaulting does to `value` (a copy is returned): missing properties get
 * their default, then defaulting recurses into properties, map values and list items.
 */
export function applyDefaults(schema: JsonSchema, value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = schema['items'];
    return isObject(items) ? value.map((item) => applyDefaults(items, item)) : structuredClone(value);
  }
  if (!isObject(value)) return structuredClone(value);
  const result: JsonSchema = structuredClone(value);
  const properties = schema['properties'];
  if (isObject(properties)) {
    for (const [name, child] of Object.entries(properties)) {
      if (!isObject(child)) continue;
      if (result[name] === undefined && child['default'] !== undefined)
        result[name] = structuredClone(child['default']);
      if (result[name] !== undefined) result[name] = applyDefaults(child, result[name]);
    }
  }
  const additional = schema['additionalProperties'];
  if (isObject(additional)) {
    for (const key of Object.keys(result)) result[key] = applyDefaults(additional, result[key]);
  }
  return result;
}

/**
 * The API server validates a `default` as written, without defaulting inside it first, and runs
 * the node's CEL rules on it. So a `default: {}` on an object whose fields are required (or read
 * by a rule) would make the CRD invalid: every default is expanded to the value defaulting yields.
 */
function expandDefaults(node: JsonSchema): void {
  const properties = node['properties'];
  if (isObject(properties)) for (const child of Object.values(properties)) if (isObject(child)) expandDefaults(child);
  if (isObject(node['items'])) expandDefaults(node['items']);
  if (isObject(node['additionalProperties'])) expandDefaults(node['additionalProperties']);
  if (node['default'] !== undefined) node['default'] = applyDefaults(node, node['default']);
}

/**
 * Turns a TypeBox/JSON Schema into a Kubernetes structural schema: strips TypeBox's symbol keys
 * (JSON round trip), rewrites what has a structural equivalent and throws NotStructuralError on
 * what has none.
 */
export function toStructural(schema: unknown): JsonSchema {
  const plain: unknown = JSON.parse(JSON.stringify(schema));
  const node = structuralNode(plain, '');
  expandDefaults(node);
  return node;
}
