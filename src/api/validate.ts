// Validation of a Redis spec as the hook sees it: the same schema the API server enforces
// (ajv, with the schema's defaults filled in, and an unset version resolved by engine) plus the
// semantic checks the API server enforces with CEL, re-done here because a CRD may be installed
// without them or edited by hand.
// Invariant: never throws and never mutates its input; every failure names the field.
// The field checks it shares with the RedisCluster validator are validate-fields.ts's.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { MAX_SPEC_NESTING, nestingProblem, nestsDeeperThan } from './depth.ts';
import { RESERVED_USER_NAMES, ruleTokenProblem, ruleTokens } from './users.ts';
import { BackupStorage as BackupStorageSchema, type BackupStorage } from './backup-schema.ts';
import { combinationProblems, resolvedVersion } from './engine.ts';
import { RedisSpec, type RedisSpec as RedisSpecT } from './schema.ts';
import {
  backupProblems,
  configProblems,
  directiveProblems,
  labelMapProblems,
  monitoringFromProblems,
  monitoringProblems,
  nameProblems,
  nodeSelectorProblems,
  podTemplateProblems,
  type SpecProblem,
} from './validate-fields.ts';
import {
  CONFIG_VALUE_MESSAGE,
  CONFIG_VALUE_PATTERN,
  CONTROL_CHARACTER_MESSAGE,
  DNS_SUBDOMAIN_PATTERN,
  NO_CONTROL_OR_SPACE_PATTERN,
  NO_CONTROL_PATTERN,
  SECRET_KEY_PATTERN,
  printable,
} from './text.ts';

export type { SpecProblem } from './validate-fields.ts';

/** Longest Redis name whose StatefulSet pods keep every generated label value within 63 chars. */
export const MAX_NAME_LENGTH = 40;

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, coerceTypes: false });
for (const keyword of [
  'x-kubernetes-validations',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
]) {
  ajv.addKeyword({ keyword });
}
const validateSpecSchema = ajv.compile<RedisSpecT>(RedisSpec);
const validateStorageSchema = ajv.compile<BackupStorage>(BackupStorageSchema);

/**
 * A checker of one spec schema with this module's ajv (defaults filled in, Kubernetes keywords known): the RedisCluster
 * validator shares it.
 */
export function compileSpecSchema<T>(schema: object): ValidateFunction<T> {
  return ajv.compile<T>(schema);
}

export type SpecVerdict = { ok: true; spec: RedisSpecT } | { ok: false; problems: SpecProblem[] };

/** ajv's errors as problems naming the field (`spec.<path>`), each once. */
export function schemaProblems(errors: readonly ErrorObject[] | null | undefined): SpecProblem[] {
  const seen = new Set<string>();
  const problems: SpecProblem[] = [];
  for (const error of errors ?? []) {
    const problem = { field: fieldOf(error), message: describe(error) };
    const key = `${problem.field}\u0000${problem.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      problems.push(problem);
    }
  }
  return problems;
}

/** The shared patterns in words: a control character is named as such, not as a regular expression. */
const PATTERN_MESSAGES: Record<string, string> = {
  [NO_CONTROL_PATTERN]: CONTROL_CHARACTER_MESSAGE,
  [CONFIG_VALUE_PATTERN]: CONFIG_VALUE_MESSAGE,
  [NO_CONTROL_OR_SPACE_PATTERN]: `must be non-empty and ${CONTROL_CHARACTER_MESSAGE.replace('must not contain', 'contain no spaces nor')}`,
  [SECRET_KEY_PATTERN]: 'must be a Secret key (alphanumerics, -, _ and .)',
  [DNS_SUBDOMAIN_PATTERN]: 'must be a Kubernetes object name (lower-case alphanumerics, - and .)',
};

function fieldOf(error: ErrorObject): string {
  const parts = error.instancePath
    .split('/')
    .filter(Boolean)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') parts.push(String(error.params['missingProperty']));
  if (error.keyword === 'additionalProperties') parts.push(String(error.params['additionalProperty']));
  return ['spec', ...parts].join('.');
}

function describe(error: ErrorObject): string {
  switch (error.keyword) {
    case 'additionalProperties':
      return 'is not a field of this API';
    case 'required':
      return 'is required';
    case 'pattern':
      return PATTERN_MESSAGES[String(error.params['pattern'])] ?? `must match ${String(error.params['pattern'])}`;
    case 'enum':
      return `must be one of ${(error.params['allowedValues'] as unknown[]).join(', ')}`;
    default:
      return error.message ?? 'is invalid';
  }
}

function semanticProblems(name: string, spec: RedisSpecT, givenVersion: string | undefined): SpecProblem[] {
  const problems: SpecProblem[] = [];
  problems.push(...nameProblems(name));
  if (name.length > MAX_NAME_LENGTH) {
    problems.push({
      field: 'metadata.name',
      message: `must be at most ${MAX_NAME_LENGTH} characters so pod names and their labels stay within Kubernetes limits`,
    });
  }
  // The version as written: an unset one is the engine's default, named by the engine field.
  problems.push(...combinationProblems(spec.engine, givenVersion));
  problems.push(...configProblems(spec.config, 'Redis'));
  problems.push(...nodeSelectorProblems(spec.nodeSelector));
  if (spec.tls && spec.tls.secretName === undefined && spec.tls.certManager === undefined)
    problems.push({
      field: 'spec.tls',
      message: 'needs secretName (a Secret with tls.crt, tls.key and ca.crt) or certManager',
    });
  const seen = new Set<string>();
  for (const [index, user] of (spec.users ?? []).entries()) {
    const field = `spec.users[${index}]`;
    if ((RESERVED_USER_NAMES as readonly string[]).includes(user.name))
      problems.push({ field: `${field}.name`, message: `"${user.name}" is the operator's own` });
    if (seen.has(user.name)) problems.push({ field: `${field}.name`, message: `"${user.name}" is listed twice` });
    seen.add(user.name);
    for (const token of ruleTokens(user.rules)) {
      const problem = ruleTokenProblem(token);
      if (problem) problems.push({ field: `${field}.rules`, message: problem });
    }
  }
  problems.push(...labelMapProblems('spec.networkPolicy.allowFrom', spec.networkPolicy?.allowFrom));
  problems.push(...monitoringFromProblems(spec.networkPolicy?.monitoringFrom));
  const operatorNamespace = spec.networkPolicy?.operatorNamespace;
  if (operatorNamespace !== undefined && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(operatorNamespace)) {
    problems.push({
      field: 'spec.networkPolicy.operatorNamespace',
      message: 'must be a namespace name (lower-case alphanumerics and -)',
    });
  }
  problems.push(...backupProblems(spec));
  problems.push(...monitoringProblems(spec.monitoring));
  problems.push(...podTemplateProblems(spec));
  return problems;
}

/**
 * Validates `spec` of the Redis called `name`. On success returns a defaulted deep copy; the
 * input is left untouched so the caller can still echo what it observed.
 */
export function validateSpec(name: string, spec: unknown): SpecVerdict {
  if (spec === undefined || spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    return { ok: false, problems: [{ field: 'spec', message: 'must be an object' }] };
  }
  const tooDeep = nestingProblem(spec); // before anything recursive walks it
  if (tooDeep !== undefined) return { ok: false, problems: [tooDeep] };
  const copy = structuredClone(spec) as unknown;
  if (!validateSpecSchema(copy))
    return {
      ok: false,
      problems: printableFields([...schemaProblems(validateSpecSchema.errors), ...directiveProblems(copy, 'Redis')]),
    };
  const given = copy as Omit<RedisSpecT, 'version'> & { version?: string };
  const resolved: RedisSpecT = { ...given, version: resolvedVersion(given.engine, given.version) };
  const problems = semanticProblems(name, resolved, given.version);
  return problems.length > 0 ? { ok: false, problems: printableFields(problems) } : { ok: true, spec: resolved };
}

/** Problems whose field names (map keys are the user's) show control characters as <U+XXXX>, never raw. */
export function printableFields(problems: readonly SpecProblem[]): SpecProblem[] {
  return problems.map((p) => ({ field: printable(p.field), message: p.message }));
}

/** One line naming every problem, for a condition message. */
export function formatProblems(problems: readonly SpecProblem[]): string {
  return problems.map((p) => `${p.field}: ${p.message}`).join('; ');
}

/**
 * A storage another object recorded (a RedisBackup's status.storage), read as a spec's would be:
 * checked against the same schema (exactly one of s3 or pvc, as the CEL rule says) and defaulted
 * from it. A defaulted copy, or undefined when it is not a valid storage.
 */
export function readStorage(value: unknown): BackupStorage | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || nestsDeeperThan(value, MAX_SPEC_NESTING))
    return undefined;
  const copy = structuredClone(value) as unknown;
  if (!validateStorageSchema(copy)) return undefined;
  return (copy.s3 === undefined) !== (copy.pvc === undefined) ? copy : undefined;
}
