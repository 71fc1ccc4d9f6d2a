// A CEL environment close to the one the API server gives x-kubernetes-validations rules:
// `self` and `oldSelf` as dynamic values, CEL's standard and string functions (from
// @marcbachmann/cel-js) and the quantity library through the test stand-in in k8s-quantity.ts.
// Also collects every rule the emitted CRD declares, so tests can prove each one is exercised.
import { Environment } from '@marcbachmann/cel-js';
import type { JsonSchema } from '../../src/api/crd.ts';
import { compareQuantities, parseQuantity, Quantity } from './k8s-quantity.ts';

export const cel = new Environment()
  .registerType('Quantity', Quantity)
  .registerVariable('self', 'dyn')
  .registerVariable('oldSelf', 'dyn')
  .registerFunction('quantity(string): Quantity', (text: string) => parseQuantity(text))
  .registerFunction('Quantity.compareTo(Quantity): int', (a: Quantity, b: Quantity) => BigInt(compareQuantities(a, b)));

/** JSON numbers that are integers become CEL ints (BigInt), as the API server types them from the schema. */
export function toCel(value: unknown): unknown {
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (Array.isArray(value)) return value.map(toCel);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toCel(v)]));
  }
  return value;
}

/** Whether the rule uses oldSelf: the API server evaluates such rules on updates only. */
export function isTransitionRule(rule: string): boolean {
  return /\boldSelf\b/.test(rule);
}

/** Evaluates one rule; a CEL runtime error is thrown (the API server reports it as a failure). */
export function evaluateRule(rule: string, self: unknown, oldSelf?: unknown): boolean {
  const result: unknown = cel.evaluate(rule, { self: toCel(self), oldSelf: toCel(oldSelf) });
  if (typeof result !== 'boolean') throw new Error(`rule ${rule} returned ${String(result)}, not a bool`);
  return result;
}

export interface EmittedRule {
  /** Dotted path of the node carrying the rule, `[*]` for map values, `[]` for list items. */
  path: string;
  rule: string;
  message: string | undefined;
}

function isObject(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every x-kubernetes-validations rule in a schema, with the path of the node that carries it. */
export function collectRules(node: unknown, path = ''): EmittedRule[] {
  if (!isObject(node)) return [];
  const rules: EmittedRule[] = [];
  const validations = node['x-kubernetes-validations'];
  if (Array.isArray(validations)) {
    for (const v of validations as Array<{ rule: string; message?: string }>) rules.push({ path, rule: v.rule, message: v.message });
  }
  const properties = node['properties'];
  if (isObject(properties)) for (const [name, child] of Object.entries(properties)) rules.push(...collectRules(child, path ? `${path}.${name}` : name));
  rules.push(...collectRules(node['additionalProperties'], `${path}[*]`));
  rules.push(...collectRules(node['items'], `${path}[]`));
  return rules;
}

/**
 * What the API server's CEL validation reports for an object (create when `oldSelf` is
 * undefined, update otherwise): every rule of every node present in `self`, with transition
 * rules evaluated only where the old value exists (correlated by property name / map key).
 */
export function ruleViolations(schema: unknown, self: unknown, oldSelf?: unknown, path = ''): string[] {
  if (!isObject(schema) || self === undefined) return [];
  const violations: string[] = [];
  const validations = schema['x-kubernetes-validations'];
  for (const v of Array.isArray(validations) ? (validations as Array<{ rule: string; message?: string }>) : []) {
    if (isTransitionRule(v.rule) && oldSelf === undefined) continue;
    let ok: boolean;
    try {
      ok = evaluateRule(v.rule, self, oldSelf);
    } catch {
      ok = false;
    }
    if (!ok) violations.push(`${path || '<root>'}: ${v.message ?? v.rule}`);
  }
  if (isObject(self)) {
    const properties = isObject(schema['properties']) ? schema['properties'] : {};
    const additional = schema['additionalProperties'];
    const old = isObject(oldSelf) ? oldSelf : undefined;
    for (const [key, value] of Object.entries(self)) {
      violations.push(...ruleViolations(properties[key] ?? additional, value, old?.[key], path ? `${path}.${key}` : key));
    }
  } else if (Array.isArray(self)) {
    // Plain lists do not correlate: items are checked as on create.
    self.forEach((item, i) => violations.push(...ruleViolations(schema['items'], item, undefined, `${path}[${i}]`)));
  }
  return violations;
}
