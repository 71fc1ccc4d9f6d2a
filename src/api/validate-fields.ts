// The field checks a Redis and a RedisCluster spec share, beyond their schemas: what the API
// server would refuse in the children (label keys and values, tolerations, requests over limits),
// the config allow-list, the name, and backup/restore as the CEL rules say. validate.ts and
// rediscluster-validate.ts compose them.
// Invariants: pure; never throws and never mutates its input; every problem names its field, in
// a stable order (map entries sorted by key).
import { parseCron } from './cron.ts';
import { parseQuantity } from './quantity.ts';
import { alertProblems } from './monitoring.ts';
import { backupLocationProblems } from './backup-validate.ts';
import type { RedisSpec as RedisSpecT } from './schema.ts';
import { isAllowedDirective, refusalMessage, type ConfigKind } from './config-allow.ts';
import { CONFIG_VALUE_MESSAGE, CONFIG_VALUE_PATTERN } from './text.ts';

export interface SpecProblem {
  /** Dotted path from the resource root, for example `spec.persistence.size`. */
  field: string;
  message: string;
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

/**
 * A map of label keys to label values (selectors, extra labels): each bad key or value named as
 * `<prefix>.<key>`, in key order.
 */
export function labelMapProblems(prefix: string, labels: Record<string, string> | undefined): SpecProblem[] {
  const problems: SpecProblem[] = [];
  for (const [key, value] of sortedEntries(labels)) {
    const field = `${prefix}.${key}`;
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
      const prefix = `spec.networkPolicy.monitoringFrom[${index}].${selector}.matchLabels`;
      problems.push(...labelMapProblems(prefix, peer[selector]?.matchLabels));
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
  return labelMapProblems('spec.nodeSelector', nodeSelector);
}

/** spec.monitoring: the alert overrides read in their units, and the Prometheus labels are labels. */
export function monitoringProblems(monitoring: RedisSpecT['monitoring']): SpecProblem[] {
  return [
    ...alertProblems(monitoring.alerts),
    ...labelMapProblems('spec.monitoring.prometheus.labels', monitoring.prometheus.labels),
  ];
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
