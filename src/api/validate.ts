// Validation of a Redis spec as the hook sees it: the same schema the API server enforces
// (ajv, with the schema's defaults filled in) plus the semantic checks the API server enforces
// with CEL, re-done here because a CRD may be installed without them or edited by hand.
// Invariant: never throws and never mutates its input; every failure names the field.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { parseCron } from './cron.ts';
import { MAX_SPEC_NESTING, nestingProblem, nestsDeeperThan } from './depth.ts';
import { parseQuantity } from './quantity.ts';
import { alertProblems } from './monitoring.ts';
import { RESERVED_USER_NAMES, ruleTokenProblem, ruleTokens } from './users.ts';
import { BackupStorage as BackupStorageSchema, type BackupStorage } from './backup-schema.ts';
import { backupLocationProblems } from './backup-validate.ts';
import { RedisSpec, SUPPORTED_VERSION, SUPPORTED_VERSION_MESSAGE, type RedisSpec as RedisSpecT } from './schema.ts';
import { isAllowedDirective, refusalMessage, type ConfigKind } from './config-allow.ts';
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

export interface SpecProblem {
  /** Dotted path from the resource root, for example `spec.persistence.size`. */
  field: string;
  message: string;
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

const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(|[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;

/** Kubernetes' qualified-name rule for label and annotation keys: `[prefix/]name`. */
function qualifiedNameProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return 'must have a DNS subdomain prefix before the /';
  if (!NAME_PART.test(name))
    return 'must be a qualified name (at most 63 characters: alphanumerics, -, _ and . between alphanumerics, optionally prefixed by a DNS subdomain and /)';
  return undefined;
}

function sortedEntries(map: Record<string, string> | undefined): Array<[string, string]> {
  return Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const CONFIG_VALUE = new RegExp(CONFIG_VALUE_PATTERN);

/**
 * The allow-list refusals of a spec the schema already refused: a directive off the list is named
 * as such even when its value (or another field) failed the schema first.
 */
export function directiveProblems(spec: unknown, kind: ConfigKind): SpecProblem[] {
  const config = (spec as { config?: unknown }).config;
  if (typeof config !== 'object' || config === null || Array.isArray(config)) return [];
  const keys = Object.keys(config).filter((k) => !isAllowedDirective(kind, k));
  return configProblems(Object.fromEntries(keys.map((k) => [k, ''])), kind);
}

/**
 * spec.config: directives on the allow-list of `kind` only (config-allow.ts), values of plain
 * words (the schema's pattern, re-checked). Each refusal names the directive and says why; the value is never echoed.
 */
export function configProblems(config: Record<string, string> | undefined, kind: ConfigKind): SpecProblem[] {
  const problems: SpecProblem[] = [];
  let listed = false;
  for (const [key, value] of sortedEntries(config)) {
    const field = `spec.config.${key}`;
    if (!isAllowedDirective(kind, key)) {
      problems.push({ field, message: refusalMessage(kind, key, !listed) });
      listed = true;
    }
    if (!CONFIG_VALUE.test(value)) problems.push({ field, message: CONFIG_VALUE_MESSAGE });
  }
  return problems;
}

/**
 * spec.networkPolicy.monitoringFrom: the selectors' labels are labels (the API server would refuse the NetworkPolicy on
 * every sync).
 */
export function monitoringFromProblems(
  peers: NonNullable<RedisSpecT['networkPolicy']>['monitoringFrom'] | undefined,
): SpecProblem[] {
  const problems: SpecProblem[] = [];
  for (const [index, peer] of (peers ?? []).entries()) {
    for (const selector of ['namespaceSelector', 'podSelector'] as const) {
      for (const [key, value] of sortedEntries(peer[selector]?.matchLabels)) {
        const field = `spec.networkPolicy.monitoringFrom[${index}].${selector}.matchLabels.${key}`;
        const keyProblem = qualifiedNameProblem(key);
        if (keyProblem) problems.push({ field, message: `key ${keyProblem}` });
        if (!LABEL_VALUE.test(value))
          problems.push({
            field,
            message:
              'value must be a valid label value (at most 63 characters: alphanumerics, -, _ and . between alphanumerics)',
          });
      }
    }
  }
  return problems;
}

/**
 * metadata.name: the API server takes only DNS subdomains, but the hook can be asked anything;
 * the name becomes child names, labels and a comment in redis.conf, so a name that is no DNS label
 * (dots included: a Service name takes none) is refused here too, before it reaches a file.
 */
export function nameProblems(name: string): SpecProblem[] {
  return DNS_LABEL.test(name)
    ? []
    : [
        {
          field: 'metadata.name',
          message: 'must be a DNS label (lower-case alphanumerics and -, starting and ending with an alphanumeric)',
        },
      ];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * spec.nodeSelector: the API server would refuse the StatefulSet on every sync for a bad key or
 * value here, so catch it in the spec where the user can see which field is wrong.
 */
export function nodeSelectorProblems(nodeSelector: Record<string, string> | undefined): SpecProblem[] {
  const problems: SpecProblem[] = [];
  for (const [key, value] of sortedEntries(nodeSelector)) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) problems.push({ field: `spec.nodeSelector.${key}`, message: `key ${keyProblem}` });
    if (!LABEL_VALUE.test(value))
      problems.push({
        field: `spec.nodeSelector.${key}`,
        message:
          'value must be a valid label value (at most 63 characters: alphanumerics, -, _ and . between alphanumerics)',
      });
  }
  return problems;
}

/** spec.monitoring: the alert overrides read in their units, and the Prometheus labels are labels. */
export function monitoringProblems(monitoring: RedisSpecT['monitoring']): SpecProblem[] {
  const problems: SpecProblem[] = [...alertProblems(monitoring.alerts)];
  for (const [key, value] of sortedEntries(monitoring.prometheus.labels)) {
    const field = `spec.monitoring.prometheus.labels.${key}`;
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) problems.push({ field, message: `key ${keyProblem}` });
    if (!LABEL_VALUE.test(value))
      problems.push({
        field,
        message:
          'value must be a valid label value (at most 63 characters: alphanumerics, -, _ and . between alphanumerics)',
      });
  }
  return problems;
}

/**
 * spec.podAnnotations keys, spec.tolerations and spec.resources: what the API server would refuse in the pod template.
 */
export function podTemplateProblems(
  spec: Pick<RedisSpecT, 'podAnnotations' | 'tolerations' | 'resources'>,
): SpecProblem[] {
  const problems: SpecProblem[] = [];
  // The API server refuses a container whose request exceeds its limit, so such a spec would make
  // every StatefulSet write fail: say so here, naming the field, and keep the children as they are.
  const { requests = {}, limits = {} } = spec.resources ?? {};
  for (const resource of Object.keys(requests).sort()) {
    const [request, limit] = [requests[resource], limits[resource]];
    const [r, l] = [parseQuantity(request), parseQuantity(limit)];
    if (limit !== undefined && r !== undefined && l !== undefined && r > l)
      problems.push({
        field: `spec.resources.requests.${resource}`,
        message: `must be at most its limit (${String(limit)})`,
      });
  }
  for (const [key] of sortedEntries(spec.podAnnotations)) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) problems.push({ field: `spec.podAnnotations.${key}`, message: `key ${keyProblem}` });
  }
  for (const [index, toleration] of (spec.tolerations ?? []).entries()) {
    if (toleration.key !== undefined && toleration.key !== '') {
      const keyProblem = qualifiedNameProblem(toleration.key);
      if (keyProblem) problems.push({ field: `spec.tolerations[${index}].key`, message: keyProblem });
    }
    if (toleration.operator === 'Exists' && toleration.value) {
      problems.push({ field: `spec.tolerations[${index}].value`, message: 'must be empty when operator is Exists' });
    }
  }
  return problems;
}

function semanticProblems(name: string, spec: RedisSpecT): SpecProblem[] {
  const problems: SpecProblem[] = [];
  problems.push(...nameProblems(name));
  if (name.length > MAX_NAME_LENGTH) {
    problems.push({
      field: 'metadata.name',
      message: `must be at most ${MAX_NAME_LENGTH} characters so pod names and their labels stay within Kubernetes limits`,
    });
  }
  if (!SUPPORTED_VERSION.test(spec.version))
    problems.push({ field: 'spec.version', message: SUPPORTED_VERSION_MESSAGE });
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
  for (const [key, value] of sortedEntries(spec.networkPolicy?.allowFrom)) {
    const field = `spec.networkPolicy.allowFrom.${key}`;
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem) problems.push({ field, message: `key ${keyProblem}` });
    if (!LABEL_VALUE.test(value))
      problems.push({
        field,
        message:
          'value must be a valid label value (at most 63 characters: alphanumerics, -, _ and . between alphanumerics)',
      });
  }
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

/** spec.backup and spec.restore: what the schema's CEL rules say, and the schedule's fields. */
export function backupProblems(spec: Pick<RedisSpecT, 'backup' | 'restore'>): SpecProblem[] {
  const problems: SpecProblem[] = [];
  const storage = (field: string, s: { s3?: unknown; pvc?: unknown } | undefined) => {
    if (s !== undefined && (s.s3 === undefined) === (s.pvc === undefined))
      problems.push({ field, message: 'needs exactly one of s3 or pvc' });
  };
  if (spec.backup) {
    const cron = spec.backup.schedule !== undefined ? parseCron(spec.backup.schedule) : undefined;
    if (cron !== undefined && !cron.ok)
      problems.push({ field: 'spec.backup.schedule', message: `is not a CronJob schedule: ${cron.message}` });
    storage('spec.backup.storage', spec.backup.storage);
  }
  if (spec.restore) {
    const r = spec.restore;
    if ((r.backup === undefined) === (r.location === undefined))
      problems.push({ field: 'spec.restore', message: 'needs exactly one of backup or location' });
    storage('spec.restore.storage', r.storage);
    const store = r.storage ?? spec.backup?.storage;
    if (r.location !== undefined) {
      const kind = r.location.startsWith('pvc://') ? 'pvc' : 's3';
      if (store === undefined)
        problems.push({
          field: 'spec.restore.storage',
          message: `is needed to reach ${r.location} (or set spec.backup.storage)`,
        });
      else if (store[kind] === undefined)
        problems.push({ field: 'spec.restore.storage', message: `has no ${kind} block for a ${kind}:// location` });
    }
  }
  problems.push(...backupLocationProblems(spec));
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
  const problems = semanticProblems(name, copy as RedisSpecT);
  return problems.length > 0
    ? { ok: false, problems: printableFields(problems) }
    : { ok: true, spec: copy as RedisSpecT };
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
