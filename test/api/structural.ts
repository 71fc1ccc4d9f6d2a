// An independent checker for what the Kubernetes API server enforces on a CRD's
// openAPIV3Schema (apiextensions.k8s.io/v1): the structural-schema rules, the v1 restrictions
// ($ref, patternProperties, uniqueItems, additionalProperties false, ...), defaults that are
// pruned and valid as written (the server validates a default WITHOUT defaulting inside it, and
// runs CEL rules on it), list-map keys, and the CEL rule constraints (transition rules only where
// old values correlate; iteration only over bounded lists/maps, or the cost estimate is refused).
// Written from the Kubernetes documentation and apiextensions-apiserver's validation, not from
// src/api/crd.ts, so that it can catch crd.ts.
import { Ajv } from 'ajv';
import { parse as parseCel } from '@marcbachmann/cel-js';
import { evaluateRule, isTransitionRule } from './cel-env.ts';

type Node = { [key: string]: unknown };

export interface Problem {
  path: string;
  message: string;
}

const JSON_SCHEMA_PROPS = new Set([
  'id',
  '$schema',
  '$ref',
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
  'patternProperties',
  'dependencies',
  'additionalItems',
  'definitions',
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
const FORBIDDEN_IN_V1: Record<string, string> = {
  $ref: '$ref is not supported',
  id: 'id is not supported',
  $schema: '$schema is not supported',
  definitions: 'definitions is not supported',
  dependencies: 'dependencies is not supported',
  patternProperties: 'patternProperties is not supported',
  additionalItems: 'additionalItems is not supported',
};
const TYPES = new Set(['array', 'boolean', 'integer', 'number', 'object', 'string']);
const SCALARS = new Set(['boolean', 'integer', 'number', 'string']);
const FORBIDDEN_IN_JUNCTORS = ['type', 'description', 'default', 'additionalProperties', 'nullable'];
const VALIDATION_FIELDS = new Set(['rule', 'message', 'messageExpression', 'reason', 'fieldPath', 'optionalOldSelf']);
const REASONS = new Set(['FieldValueInvalid', 'FieldValueForbidden', 'FieldValueRequired', 'FieldValueDuplicate']);
const INT_OR_STRING_ANY_OF = JSON.stringify([{ type: 'integer' }, { type: 'string' }]);
const ITERATING_MACROS = /\.\s*(all|exists|exists_one|map|filter)\s*\(/;

function isObject(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function matchesType(value: unknown, type: unknown): boolean {
  const actual = typeOf(value);
  return type === undefined || actual === type || (type === 'number' && actual === 'integer');
}

function isIntOrStringAnyOf(node: Node): boolean {
  const allOf = node['allOf'];
  const firstAllOf = Array.isArray(allOf) && isObject(allOf[0]) ? allOf[0]['anyOf'] : undefined;
  return JSON.stringify(node['anyOf']) === INT_OR_STRING_ANY_OF || JSON.stringify(firstAllOf) === INT_OR_STRING_ANY_OF;
}

interface Context {
  path: string;
  /** false once below a list that is not list-type map: oldSelf cannot be correlated there. */
  correlatable: boolean;
  /** Below additionalProperties, where defaults are forbidden. */
  inMap: boolean;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });

/** Prunes like the API server: drops object keys the schema does not know. Returns the dropped paths. */
function unknownFields(schema: Node, value: unknown, path: string): string[] {
  if (Array.isArray(value)) return isObject(schema['items']) ? value.flatMap((v, i) => unknownFields(schema['items'] as Node, v, `${path}[${i}]`)) : [];
  if (!isObject(value) || schema['x-kubernetes-preserve-unknown-fields'] === true) return [];
  const properties = isObject(schema['properties']) ? schema['properties'] : undefined;
  const additional = isObject(schema['additionalProperties']) ? schema['additionalProperties'] : undefined;
  return Object.entries(value).flatMap(([key, v]) => {
    const child = properties?.[key] ?? additional;
    return isObject(child) ? unknownFields(child, v, `${path}.${key}`) : [`${path}.${key}`];
  });
}

/** Every rule of `schema` and of its descendants present in `value`, evaluated with self = oldSelf = value. */
function failingRulesOn(schema: Node, value: unknown, path: string): string[] {
  const failures: string[] = [];
  const validations = schema['x-kubernetes-validations'];
  if (Array.isArray(validations)) {
    for (const v of validations) {
      if (!isObject(v) || typeof v['rule'] !== 'string') continue;
      try {
        if (!evaluateRule(v['rule'], value, value)) failures.push(`${path}: ${v['rule']} is false`);
      } catch (error) {
        failures.push(`${path}: ${v['rule']} fails: ${(error as Error).message.split('\n')[0]}`);
      }
    }
  }
  if (isObject(value)) {
    const properties = isObject(schema['properties']) ? schema['properties'] : {};
    const additional = isObject(schema['additionalProperties']) ? schema['additionalProperties'] : undefined;
    for (const [key, v] of Object.entries(value)) {
      const child = properties[key] ?? additional;
      if (isObject(child)) failures.push(...failingRulesOn(child, v, `${path}.${key}`));
    }
  } else if (Array.isArray(value) && isObject(schema['items'])) {
    const items = schema['items'];
    value.forEach((v, i) => failures.push(...failingRulesOn(items, v, `${path}[${i}]`)));
  }
  return failures;
}

function checkDefault(node: Node, ctx: Context, problems: Problem[]): void {
  const value = node['default'];
  if (value === undefined) return;
  const add = (message: string): void => {
    problems.push({ path: ctx.path, message });
  };
  if (ctx.inMap) add('default is not allowed below additionalProperties');
  const unknown = unknownFields(node, value, 'default');
  if (unknown.length > 0) add(`default must be pruned: unknown ${unknown.join(', ')}`);
  const validate = ajv.compile(node);
  if (!validate(structuredClone(value))) {
    add(`default ${JSON.stringify(value)} is invalid as written (no defaulting is applied inside a default): ${ajv.errorsText(validate.errors)}`);
  }
  for (const failure of failingRulesOn(node, value, 'default')) add(`default fails its CEL rules: ${failure}`);
}

function checkListType(node: Node, ctx: Context, problems: Problem[]): void {
  const add = (message: string): void => {
    problems.push({ path: ctx.path, message });
  };
  const listType = node['x-kubernetes-list-type'];
  const keys = node['x-kubernetes-list-map-keys'];
  if (listType !== undefined && !['atomic', 'set', 'map'].includes(String(listType)))
    add(`x-kubernetes-list-type ${String(listType)} is not atomic, set or map`);
  if (listType !== undefined && node['type'] !== 'array') add('x-kubernetes-list-type is only for arrays');
  if (keys !== undefined && listType !== 'map') add('x-kubernetes-list-map-keys needs x-kubernetes-list-type: map');
  const items = isObject(node['items']) ? node['items'] : undefined;
  if (listType === 'map') {
    if (!Array.isArray(keys) || keys.length === 0) add('x-kubernetes-list-type map needs x-kubernetes-list-map-keys');
    if (items?.['type'] !== 'object') add('x-kubernetes-list-type map needs object items');
    const required = Array.isArray(items?.['required']) ? (items['required'] as unknown[]) : [];
    const properties = isObject(items?.['properties']) ? items['properties'] : {};
    for (const key of Array.isArray(keys) ? keys : []) {
      const field = properties[String(key)];
      if (!isObject(field)) add(`list map key ${String(key)} is not a property of the items`);
      else {
        if (!SCALARS.has(String(field['type']))) add(`list map key ${String(key)} must be a scalar`);
        if (!required.includes(key) && field['default'] === undefined) add(`list map key ${String(key)} must be required or have a default`);
      }
    }
  }
  if (listType === 'set' && items !== undefined && !SCALARS.has(String(items['type'])) && items['x-kubernetes-map-type'] !== 'atomic') {
    add('x-kubernetes-list-type set needs scalar (or atomic) items');
  }
  const mapType = node['x-kubernetes-map-type'];
  if (mapType !== undefined && !['granular', 'atomic'].includes(String(mapType))) add(`x-kubernetes-map-type ${String(mapType)} is not granular or atomic`);
}

function checkValidations(node: Node, ctx: Context, problems: Problem[]): void {
  const validations = node['x-kubernetes-validations'];
  if (validations === undefined) return;
  const add = (message: string): void => {
    problems.push({ path: ctx.path, message });
  };
  if (!Array.isArray(validations)) return add('x-kubernetes-validations must be a list');
  for (const v of validations) {
    if (!isObject(v) || typeof v['rule'] !== 'string' || v['rule'].trim() === '') {
      add('every x-kubernetes-validations entry needs a rule');
      continue;
    }
    const rule = v['rule'];
    for (const key of Object.keys(v)) if (!VALIDATION_FIELDS.has(key)) add(`x-kubernetes-validations has no field ${key}`);
    const message = v['message'];
    if (message !== undefined && (typeof message !== 'string' || message.trim() === '' || /[\r\n]/.test(message))) {
      add(`rule ${rule}: message must be a non-empty single line`);
    }
    if (v['reason'] !== undefined && !REASONS.has(String(v['reason']))) add(`rule ${rule}: reason ${String(v['reason'])} is not allowed`);
    try {
      parseCel(rule);
    } catch (error) {
      add(`rule ${rule} does not compile: ${(error as Error).message.split('\n')[0]}`);
    }
    if (isTransitionRule(rule) && !ctx.correlatable)
      add(`transition rule ${rule} is below a list that is not x-kubernetes-list-type: map (oldSelf cannot be correlated)`);
    if (ITERATING_MACROS.test(rule)) {
      // The API server estimates a rule's worst-case cost from maxItems/maxProperties/maxLength
      // and refuses the CRD when it is over budget; unbounded collections estimate from the 3 MB
      // request size and are refused for any per-element work.
      const element = isObject(node['items']) ? node['items'] : isObject(node['additionalProperties']) ? node['additionalProperties'] : undefined;
      if (node['type'] === 'array' && node['maxItems'] === undefined) add(`rule ${rule} iterates a list without maxItems`);
      if (node['type'] === 'object' && element !== undefined && node['maxProperties'] === undefined) add(`rule ${rule} iterates a map without maxProperties`);
      if (element?.['type'] === 'string' && element['maxLength'] === undefined && element['enum'] === undefined)
        add(`rule ${rule} iterates strings without maxLength`);
    }
  }
}

function checkMetadata(node: Node, path: string, problems: Problem[]): void {
  const add = (message: string): void => {
    problems.push({ path, message });
  };
  for (const key of Object.keys(node)) {
    if (key !== 'type' && key !== 'properties') add(`metadata must not specify anything other than name and generateName (found ${key})`);
  }
  if (node['type'] !== 'object') add('metadata must be type: object');
  const properties = isObject(node['properties']) ? node['properties'] : {};
  for (const [name, child] of Object.entries(properties)) {
    if (name !== 'name' && name !== 'generateName') add(`metadata.${name}: only name and generateName may be restricted`);
    else if (isObject(child)) {
      for (const key of Object.keys(child)) {
        if (!['type', 'pattern', 'maxLength', 'minLength', 'x-kubernetes-validations'].includes(key)) add(`metadata.${name}: ${key} is not allowed`);
      }
    }
  }
}

function walk(node: unknown, ctx: Context, inJunctor: boolean, problems: Problem[]): void {
  const add = (message: string): void => {
    problems.push({ path: ctx.path, message });
  };
  if (!isObject(node)) return add('a schema node must be an object');

  for (const key of Object.keys(node)) {
    if (!JSON_SCHEMA_PROPS.has(key)) add(`${key} is not a field of JSONSchemaProps: the API server drops it, so it validates nothing`);
    const forbidden = FORBIDDEN_IN_V1[key];
    if (forbidden !== undefined) add(forbidden);
  }
  const type = node['type'];
  const intOrString = node['x-kubernetes-int-or-string'] === true;
  const preserve = node['x-kubernetes-preserve-unknown-fields'] === true;

  if (type !== undefined && (typeof type !== 'string' || !TYPES.has(type))) add(`type ${JSON.stringify(type)} is not one of ${[...TYPES].join(', ')}`);
  if (!inJunctor && type === undefined && !intOrString && !preserve)
    add('must have a type (or x-kubernetes-int-or-string / x-kubernetes-preserve-unknown-fields)');
  if (intOrString && type !== undefined) add('type must be empty when x-kubernetes-int-or-string is true');
  if (inJunctor) {
    for (const key of Object.keys(node)) {
      if (FORBIDDEN_IN_JUNCTORS.includes(key) || key.startsWith('x-kubernetes-')) add(`${key} must not be set inside anyOf/allOf/oneOf/not`);
    }
  }
  if (node['uniqueItems'] === true) add('uniqueItems cannot be true');
  // The API server compiles patterns with Go's RE2: no lookaround, no backreferences.
  if (typeof node['pattern'] === 'string' && /\(\?<?[=!]|\\[1-9]/.test(node['pattern']))
    add(`pattern ${node['pattern']} is not RE2 (lookaround or backreference)`);
  if (Array.isArray(node['items'])) add('items must be a schema, not a list (tuples are not supported)');
  if (type === 'array' && node['items'] === undefined && !inJunctor) add('an array must specify items');
  if (node['additionalProperties'] === false) add('additionalProperties cannot be false');
  if (node['additionalProperties'] !== undefined && node['properties'] !== undefined) add('additionalProperties and properties are mutually exclusive');
  for (const key of ['exclusiveMaximum', 'exclusiveMinimum']) {
    if (node[key] !== undefined && typeof node[key] !== 'boolean') add(`${key} must be a boolean in OpenAPI v3.0`);
  }
  if (Array.isArray(node['enum'])) {
    for (const value of node['enum']) if (!matchesType(value, type)) add(`enum value ${JSON.stringify(value)} is not a ${String(type)}`);
  }
  if (node['required'] !== undefined) {
    const properties = isObject(node['properties']) ? node['properties'] : {};
    for (const name of Array.isArray(node['required']) ? node['required'] : []) {
      if (!(String(name) in properties)) add(`required field ${String(name)} is not a property`);
    }
  }

  // Junctors: only value validations, nothing they specify may be missing outside them.
  const junctorBranches = [
    ...(['anyOf', 'allOf', 'oneOf'] as const).flatMap((j) => (Array.isArray(node[j]) ? (node[j] as unknown[]).map((b, i) => [`${j}[${i}]`, b] as const) : [])),
    ...(node['not'] !== undefined ? [['not', node['not']] as const] : []),
  ];
  const skipIntOrString = intOrString && isIntOrStringAnyOf(node);
  for (const [name, branch] of junctorBranches) {
    if (skipIntOrString && (name === 'anyOf[0]' || name === 'anyOf[1]' || name === 'allOf[0]')) continue;
    walk(branch, { ...ctx, path: `${ctx.path}(${name})` }, true, problems);
    if (isObject(branch)) {
      const outside = isObject(node['properties']) ? node['properties'] : {};
      for (const key of Object.keys(isObject(branch['properties']) ? branch['properties'] : {})) {
        if (!(key in outside)) add(`${name} specifies property ${key} that is not specified outside the junctor`);
      }
      if (branch['items'] !== undefined && node['items'] === undefined) add(`${name} specifies items that are not specified outside the junctor`);
    }
  }

  checkListType(node, ctx, problems);
  checkValidations(node, ctx, problems);
  if (!inJunctor) checkDefault(node, ctx, problems);

  if (isObject(node['properties'])) {
    for (const [name, child] of Object.entries(node['properties'])) {
      const childPath = ctx.path ? `${ctx.path}.${name}` : name;
      if (ctx.path === '' && name === 'metadata' && isObject(child)) {
        checkMetadata(child, childPath, problems);
        continue;
      }
      walk(child, { ...ctx, path: childPath }, inJunctor, problems);
    }
  }
  if (isObject(node['additionalProperties'])) walk(node['additionalProperties'], { ...ctx, path: `${ctx.path}[*]`, inMap: true }, inJunctor, problems);
  if (isObject(node['items'])) {
    const correlatable = ctx.correlatable && node['x-kubernetes-list-type'] === 'map';
    walk(node['items'], { ...ctx, path: `${ctx.path}[]`, correlatable }, inJunctor, problems);
  }
}

/** Everything in `root` (a CRD version's openAPIV3Schema) that a v1 API server would refuse or silently drop. */
export function structuralProblems(root: unknown): Problem[] {
  const problems: Problem[] = [];
  if (!isObject(root)) return [{ path: '', message: 'openAPIV3Schema must be an object' }];
  if (root['type'] !== 'object') problems.push({ path: '', message: 'the root must be type: object' });
  for (const name of ['apiVersion', 'kind']) {
    const field = isObject(root['properties']) ? root['properties'][name] : undefined;
    if (isObject(field) && field['type'] !== 'string') problems.push({ path: name, message: `${name} must be type: string` });
  }
  walk(root, { path: '', correlatable: true, inMap: false }, false, problems);
  return problems;
}
