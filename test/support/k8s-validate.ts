// Validates any Kubernetes object we produce (hook children, manifests) against Kubernetes' own
// schemas, the way `kubectl apply --validate=strict` and the API server would:
// 1. kubernetes-models' validators (the OpenAPI schema: types, enums, required fields);
// 2. unknown fields, using @kubernetes/client-node's generated models (their attribute maps are
//    the API's field lists), because the OpenAPI schemas do not forbid extra properties;
// 3. a few server-side rules that matter to us: object name formats, label keys and values, a
//    StatefulSet's selector matching its template and mounts naming declared volumes, a PDB
//    with exactly one of minAvailable/maxUnavailable.
// Generic by apiVersion/kind; unknown kinds THROW rather than pass.
import * as k8s from '@kubernetes/client-node';
import { StatefulSet, Deployment } from 'kubernetes-models/apps/v1';
import { CronJob, Job } from 'kubernetes-models/batch/v1';
import { ConfigMap, Event as CoreEvent, Namespace, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { Lease } from 'kubernetes-models/coordination.k8s.io/v1';
import { Event as EventsEvent } from 'kubernetes-models/events.k8s.io/v1';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1';
import { isRecord } from './records.ts';

interface Validatable {
  validate(): void;
}
type ModelCtor = new (data: never) => Validatable;

interface KindInfo {
  model: ModelCtor;
  /** client-node model class name, for the unknown-field check. */
  typeName: string;
  name: 'subdomain' | 'label1035' | 'label1123' | 'path';
  namespaced: boolean;
}

const KINDS: Record<string, KindInfo> = {
  'apps/v1/StatefulSet': { model: StatefulSet as unknown as ModelCtor, typeName: 'V1StatefulSet', name: 'subdomain', namespaced: true },
  'apps/v1/Deployment': { model: Deployment as unknown as ModelCtor, typeName: 'V1Deployment', name: 'subdomain', namespaced: true },
  'batch/v1/CronJob': { model: CronJob as unknown as ModelCtor, typeName: 'V1CronJob', name: 'subdomain', namespaced: true },
  'batch/v1/Job': { model: Job as unknown as ModelCtor, typeName: 'V1Job', name: 'subdomain', namespaced: true },
  'v1/Service': { model: Service as unknown as ModelCtor, typeName: 'V1Service', name: 'label1035', namespaced: true },
  'v1/ConfigMap': { model: ConfigMap as unknown as ModelCtor, typeName: 'V1ConfigMap', name: 'subdomain', namespaced: true },
  'v1/Secret': { model: Secret as unknown as ModelCtor, typeName: 'V1Secret', name: 'subdomain', namespaced: true },
  'v1/ServiceAccount': { model: ServiceAccount as unknown as ModelCtor, typeName: 'V1ServiceAccount', name: 'subdomain', namespaced: true },
  'v1/Namespace': { model: Namespace as unknown as ModelCtor, typeName: 'V1Namespace', name: 'label1123', namespaced: false },
  'v1/Pod': { model: Pod as unknown as ModelCtor, typeName: 'V1Pod', name: 'subdomain', namespaced: true },
  'v1/PersistentVolumeClaim': {
    model: PersistentVolumeClaim as unknown as ModelCtor,
    typeName: 'V1PersistentVolumeClaim',
    name: 'subdomain',
    namespaced: true,
  },
  'v1/Event': { model: CoreEvent as unknown as ModelCtor, typeName: 'CoreV1Event', name: 'subdomain', namespaced: true },
  'events.k8s.io/v1/Event': { model: EventsEvent as unknown as ModelCtor, typeName: 'EventsV1Event', name: 'subdomain', namespaced: true },
  'policy/v1/PodDisruptionBudget': {
    model: PodDisruptionBudget as unknown as ModelCtor,
    typeName: 'V1PodDisruptionBudget',
    name: 'subdomain',
    namespaced: true,
  },
  'rbac.authorization.k8s.io/v1/Role': { model: Role as unknown as ModelCtor, typeName: 'V1Role', name: 'path', namespaced: true },
  'rbac.authorization.k8s.io/v1/RoleBinding': { model: RoleBinding as unknown as ModelCtor, typeName: 'V1RoleBinding', name: 'path', namespaced: true },
  'rbac.authorization.k8s.io/v1/ClusterRole': { model: ClusterRole as unknown as ModelCtor, typeName: 'V1ClusterRole', name: 'path', namespaced: false },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': {
    model: ClusterRoleBinding as unknown as ModelCtor,
    typeName: 'V1ClusterRoleBinding',
    name: 'path',
    namespaced: false,
  },
  'coordination.k8s.io/v1/Lease': { model: Lease as unknown as ModelCtor, typeName: 'V1Lease', name: 'subdomain', namespaced: true },
  'apiextensions.k8s.io/v1/CustomResourceDefinition': {
    model: CustomResourceDefinition as unknown as ModelCtor,
    typeName: 'V1CustomResourceDefinition',
    name: 'subdomain',
    namespaced: false,
  },
};

/** `apiVersion/kind` pairs this validator knows. */
export const SUPPORTED_KINDS: readonly string[] = Object.keys(KINDS);

export class K8sValidationError extends Error {
  readonly problems: string[];
  constructor(what: string, problems: string[]) {
    super(`${what} is not a valid Kubernetes object:\n  - ${problems.join('\n  - ')}`);
    this.name = 'K8sValidationError';
    this.problems = problems;
  }
}

type Json = Record<string, unknown>;

interface AttributeType {
  baseName: string;
  type: string;
}
const models = k8s as unknown as Record<string, { getAttributeTypeMap?: () => AttributeType[] } | undefined>;

/** Reports fields the API does not define (what kubectl --validate=strict refuses). */
function unknownFields(value: unknown, typeName: string, path: string, problems: string[]): void {
  if (value === null || value === undefined) return;
  const arrayOf = /^Array<(.+)>$/.exec(typeName);
  if (arrayOf) {
    if (Array.isArray(value)) value.forEach((item, i) => unknownFields(item, arrayOf[1] as string, `${path}[${i}]`, problems));
    return;
  }
  const mapOf = /^\{ \[key: string\]: (.+); \}$/.exec(typeName);
  if (mapOf) {
    if (isRecord(value)) for (const [k, v] of Object.entries(value)) unknownFields(v, mapOf[1] as string, `${path}[${JSON.stringify(k)}]`, problems);
    return;
  }
  const attributes = models[typeName]?.getAttributeTypeMap?.();
  if (attributes === undefined || !isRecord(value)) return; // scalars, IntOrString, Date, any: kubernetes-models checks types
  const known = new Map(attributes.map((a) => [a.baseName, a.type]));
  for (const [key, child] of Object.entries(value)) {
    const type = known.get(key);
    if (type === undefined) problems.push(`${path}.${key}: unknown field`);
    else unknownFields(child, type, `${path}.${key}`, problems);
  }
}

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

function nameProblem(name: string, rule: KindInfo['name']): string | undefined {
  switch (rule) {
    case 'subdomain':
      return name.length <= 253 && SUBDOMAIN.test(name) ? undefined : 'must be a lowercase RFC 1123 subdomain of at most 253 characters';
    case 'label1123':
      return name.length <= 63 && LABEL_1123.test(name) ? undefined : 'must be a lowercase RFC 1123 label of at most 63 characters';
    case 'label1035':
      return name.length <= 63 && LABEL_1035.test(name) ? undefined : 'must be an RFC 1035 label of at most 63 characters (start with a letter)';
    case 'path':
      return name !== '' && name !== '.' && name !== '..' && !/[/%]/.test(name) ? undefined : 'may not be ".", ".." or contain "/" or "%"';
  }
}

function keyProblem(key: string): string | undefined {
  const parts = key.split('/');
  if (parts.length > 2) return 'has more than one "/"';
  const name = parts[parts.length - 1] as string;
  if (parts.length === 2) {
    const prefix = parts[0] as string;
    if (prefix.length === 0 || prefix.length > 253 || !SUBDOMAIN.test(prefix)) return 'prefix must be a DNS subdomain';
  }
  if (name.length === 0 || name.length > 63 || !QUALIFIED.test(name))
    return 'name part must be 1-63 alphanumerics, "-", "_" or ".", starting and ending alphanumeric';
  return undefined;
}

function labelProblems(labels: unknown, path: string, problems: string[]): void {
  if (!isRecord(labels)) return;
  for (const [key, value] of Object.entries(labels)) {
    const kp = keyProblem(key);
    if (kp) problems.push(`${path}[${JSON.stringify(key)}]: key ${kp}`);
    if (typeof value !== 'string') problems.push(`${path}[${JSON.stringify(key)}]: value must be a string`);
    else if (value.length > 63 || (value !== '' && !QUALIFIED.test(value))) {
      problems.push(
        `${path}[${JSON.stringify(key)}]: value ${JSON.stringify(value)} must be at most 63 alphanumerics, "-", "_" or ".", starting and ending alphanumeric`,
      );
    }
  }
}

function statefulSetProblems(obj: Json, problems: string[]): void {
  const spec = isRecord(obj['spec']) ? obj['spec'] : {};
  const template = isRecord(spec['template']) ? spec['template'] : {};
  const meta = isRecord(template['metadata']) ? template['metadata'] : {};
  labelProblems(meta['labels'], '.spec.template.metadata.labels', problems);
  const templateLabels = isRecord(meta['labels']) ? meta['labels'] : {};
  const selector = isRecord(spec['selector']) ? spec['selector'] : {};
  const matchLabels = isRecord(selector['matchLabels']) ? selector['matchLabels'] : {};
  if (Object.keys(matchLabels).length === 0 && !Array.isArray(selector['matchExpressions']))
    problems.push('.spec.selector: empty selector is invalid for a StatefulSet');
  for (const [k, v] of Object.entries(matchLabels)) {
    if (templateLabels[k] !== v) problems.push(`.spec.template.metadata.labels: does not match selector ${k}=${String(v)}`);
  }
  const podSpec = isRecord(template['spec']) ? template['spec'] : {};
  const volumes = new Set<string>();
  for (const v of Array.isArray(podSpec['volumes']) ? podSpec['volumes'] : []) if (isRecord(v) && typeof v['name'] === 'string') volumes.add(v['name']);
  const claims = new Set<string>();
  for (const t of Array.isArray(spec['volumeClaimTemplates']) ? spec['volumeClaimTemplates'] : []) {
    const name = isRecord(t) && isRecord(t['metadata']) ? t['metadata']['name'] : undefined;
    if (typeof name === 'string') {
      if (volumes.has(name)) problems.push(`.spec.volumeClaimTemplates: ${name} is also a pod volume`);
      claims.add(name);
    }
  }
  const containers = [
    ...(Array.isArray(podSpec['containers']) ? podSpec['containers'] : []),
    ...(Array.isArray(podSpec['initContainers']) ? podSpec['initContainers'] : []),
  ];
  if (!Array.isArray(podSpec['containers']) || podSpec['containers'].length === 0)
    problems.push('.spec.template.spec.containers: at least one container is required');
  for (const c of containers) {
    if (!isRecord(c)) continue;
    for (const m of Array.isArray(c['volumeMounts']) ? c['volumeMounts'] : []) {
      const name = isRecord(m) ? m['name'] : undefined;
      if (typeof name === 'string' && !volumes.has(name) && !claims.has(name)) {
        problems.push(`.spec.template.spec.containers[${String(c['name'])}].volumeMounts: ${name} is neither a volume nor a claim template`);
      }
    }
  }
}

function pdbProblems(obj: Json, problems: string[]): void {
  const spec = isRecord(obj['spec']) ? obj['spec'] : {};
  if ('minAvailable' in spec === 'maxUnavailable' in spec) problems.push('.spec: exactly one of minAvailable and maxUnavailable must be set');
}

/** Throws K8sValidationError listing every problem; returns nothing when the object is valid. */
export function validateK8sObject(obj: unknown): void {
  if (!isRecord(obj)) throw new K8sValidationError('value', ['must be an object']);
  const apiVersion = obj['apiVersion'];
  const kind = obj['kind'];
  const key = `${String(apiVersion)}/${String(kind)}`;
  const info = KINDS[key];
  const metadata = isRecord(obj['metadata']) ? obj['metadata'] : undefined;
  const what = `${key} ${String(metadata?.['name'])}`;
  if (info === undefined) throw new K8sValidationError(what, [`unsupported apiVersion/kind ${key} (add it to test/support/k8s-validate.ts)`]);
  const problems: string[] = [];
  try {
    new info.model(obj as never).validate();
  } catch (error) {
    problems.push(`schema: ${error instanceof Error ? error.message : String(error)}`);
  }
  unknownFields(obj, info.typeName, '', problems);
  if (metadata === undefined) problems.push('.metadata: required');
  else {
    const name = metadata['name'];
    if (typeof name !== 'string' || name === '') {
      if (typeof metadata['generateName'] !== 'string') problems.push('.metadata.name: required');
    } else {
      const np = nameProblem(name, info.name);
      if (np) problems.push(`.metadata.name ${JSON.stringify(name)}: ${np}`);
    }
    if (info.namespaced && metadata['namespace'] !== undefined && (typeof metadata['namespace'] !== 'string' || !LABEL_1123.test(metadata['namespace']))) {
      problems.push('.metadata.namespace: must be an RFC 1123 label');
    }
    if (!info.namespaced && metadata['namespace'] !== undefined) problems.push('.metadata.namespace: cluster-scoped objects have no namespace');
    labelProblems(metadata['labels'], '.metadata.labels', problems);
    if (metadata['annotations'] !== undefined) {
      if (!isRecord(metadata['annotations'])) problems.push('.metadata.annotations: must be a map');
      else
        for (const [k, v] of Object.entries(metadata['annotations'])) {
          const kp = keyProblem(k);
          if (kp) problems.push(`.metadata.annotations[${JSON.stringify(k)}]: key ${kp}`);
          if (typeof v !== 'string') problems.push(`.metadata.annotations[${JSON.stringify(k)}]: value must be a string`);
        }
    }
  }
  if (key === 'apps/v1/StatefulSet') statefulSetProblems(obj, problems);
  if (key === 'policy/v1/PodDisruptionBudget') pdbProblems(obj, problems);
  if (problems.length > 0) throw new K8sValidationError(what, problems);
}
