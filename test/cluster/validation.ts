// What a real API server does to a write between decoding and storage, plugged into the
// kube-api stand-in through addMutator/addValidator (`installValidation(store)`):
// - Built-in kinds: unknown fields are dropped (the server's default fieldValidation=Warn; or
//   refused with `unknownFields: 'strict'`), a JSON type that cannot decode is a 400 BadRequest,
//   the server's defaults are filled in (the subset that matters for a three-way merge: pod
//   template, StatefulSet, Service with an allocated clusterIP), then the object is checked
//   against Kubernetes' own schema (kubernetes-models) and the per-kind rules we depend on,
//   including immutable fields on update (StatefulSet spec, Service clusterIP, Pod spec).
// - Our Redis: pruned and defaulted by the CRD's structural schema (manifests/crd.yaml, the file
//   that gets installed), validated with ajv, and its x-kubernetes-validations CEL rules
//   evaluated (transition rules only on update, where the old value exists).
// Every refusal is the stand-in's KubeApiError: 422 Invalid with causes in the server's
// wording, or 400 for a decode error.
// Invariants: mutators and validators are pure functions of (object, oldObject) plus the
// clusterIP allocator; a write that changes nothing after defaulting stays a no-op (and does
// not bump metadata.generation), as on a real server.
import { readFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { StatefulSet } from 'kubernetes-models/apps/v1';
import { ConfigMap, Event as CoreEvent, Namespace, PersistentVolumeClaim, Pod, Secret, Service } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Lease } from 'kubernetes-models/coordination.k8s.io/v1';
import { Event as EventsEvent } from 'kubernetes-models/events.k8s.io/v1';
import { parse } from 'yaml';
import { applyDefaults, type JsonSchema } from '../../src/api/crd.ts';
import { GROUP, KIND, VERSION } from '../../src/api/labels.ts';
import { evaluateRule, isTransitionRule } from '../api/cel-env.ts';
import { errors, type StatusCause } from '../support/kube-api/errors.ts';
import { deepEqual } from '../support/kube-api/patch.ts';
import { apiVersionOf, type KubeObject, type ResourceDef, type StoredObject, type ValidationContext } from '../support/kube-api/resources.ts';
import type { ObjectStore } from '../support/kube-api/store.ts';
import { asRecord as rec, isRecord } from '../support/records.ts';

type Json = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export interface ValidationOptions {
  /** Unknown fields of built-in kinds: dropped (`prune`, the server default) or refused (`strict`, fieldValidation=Strict). */
  unknownFields?: 'prune' | 'strict';
  /** Fill the API server's defaults into built-in kinds (default true). */
  builtinDefaults?: boolean;
  /** The CRD file to enforce (default manifests/crd.yaml). */
  crdPath?: string | URL;
}

export interface InstalledValidation {
  /** Removes every hook this installed. */
  uninstall(): void;
}

// ------------------------------------------------------------------ field paths and wording

/** `spec.containers[0].name` from path segments (numbers are list indexes). */
export function fieldPath(parts: ReadonlyArray<string | number>): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? p : `.${p}`;
  }
  return out;
}

/** How the server prints a value in `Invalid value: ...`: Go's %#v-like for scalars, the type name for composites. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === null || value === undefined) return 'null';
  return Array.isArray(value) ? '"array"' : '"object"';
}

const invalid = (field: string, value: unknown, detail: string): StatusCause => ({
  reason: 'FieldValueInvalid',
  field,
  message: `Invalid value: ${shown(value)}: ${detail}`,
});
const required = (field: string): StatusCause => ({ reason: 'FieldValueRequired', field, message: 'Required value' });
const notFound = (field: string, value: unknown): StatusCause => ({ reason: 'FieldValueNotFound', field, message: `Not found: ${shown(value)}` });
const duplicate = (field: string, value: unknown): StatusCause => ({ reason: 'FieldValueDuplicate', field, message: `Duplicate value: ${shown(value)}` });
const forbidden = (field: string, detail: string): StatusCause => ({ reason: 'FieldValueForbidden', field, message: `Forbidden: ${detail}` });
const notSupported = (field: string, value: unknown, allowed: readonly unknown[]): StatusCause => ({
  reason: 'FieldValueNotSupported',
  field,
  message: `Unsupported value: ${shown(value)}: supported values: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`,
});

/** ajv instancePath (`/spec/ports/0/port`) as path segments, numbers where the data is a list. */
function segments(instancePath: string, data: unknown): Array<string | number> {
  const out: Array<string | number> = [];
  let cur: unknown = data;
  for (const raw of instancePath.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) {
      out.push(Number(part));
      cur = cur[Number(part)];
    } else {
      out.push(part);
      cur = isRecord(cur) ? cur[part] : undefined;
    }
  }
  return out;
}

function valueAt(data: unknown, parts: ReadonlyArray<string | number>): unknown {
  let cur: unknown = data;
  for (const p of parts) {
    if (Array.isArray(cur) && typeof p === 'number') cur = cur[p];
    else if (isRecord(cur) && typeof p === 'string') cur = cur[p];
    else return undefined;
  }
  return cur;
}

function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** An ajv error in the API server's wording for OpenAPI (CRD) validation. */
export function openApiCause(error: ErrorObject, data: unknown): StatusCause {
  const parts = segments(error.instancePath, data);
  const value = valueAt(data, parts);
  const p = error.params as Record<string, unknown>;
  if (error.keyword === 'required') {
    return required(fieldPath([...parts, String(p['missingProperty'])]));
  }
  const field = fieldPath(parts);
  switch (error.keyword) {
    case 'type':
      return {
        reason: 'FieldValueTypeInvalid',
        field,
        message: `Invalid value: ${shown(value)}: ${field} in body must be of type ${String(p['type'])}: ${JSON.stringify(jsonTypeOf(value))}`,
      };
    case 'enum':
      return notSupported(field, value, p['allowedValues'] as unknown[]);
    case 'maximum':
      return invalid(field, value, `${field} in body should be less than or equal to ${String(p['limit'])}`);
    case 'minimum':
      return invalid(field, value, `${field} in body should be greater than or equal to ${String(p['limit'])}`);
    case 'exclusiveMaximum':
      return invalid(field, value, `${field} in body should be less than ${String(p['limit'])}`);
    case 'exclusiveMinimum':
      return invalid(field, value, `${field} in body should be greater than ${String(p['limit'])}`);
    case 'pattern':
      return invalid(field, value, `${field} in body should match '${String(p['pattern'])}'`);
    case 'maxLength':
      return { reason: 'FieldValueTooLong', field, message: `Too long: may not be more than ${String(p['limit'])} bytes` };
    case 'minLength':
      return invalid(field, value, `${field} in body should be at least ${String(p['limit'])} chars long`);
    case 'maxItems':
    case 'maxProperties':
      return {
        reason: 'FieldValueTooMany',
        field,
        message: `Too many: ${Array.isArray(value) ? value.length : Object.keys(rec(value)).length}: must have at most ${String(p['limit'])} items`,
      };
    case 'minItems':
    case 'minProperties':
      return invalid(field, value, `${field} in body should have at least ${String(p['limit'])} ${error.keyword === 'minItems' ? 'items' : 'properties'}`);
    default:
      return invalid(field, value, error.message ?? 'is invalid');
  }
}

// ------------------------------------------------------------------ built-in kinds

interface Validatable {
  validate(): void;
}
type ModelCtor = new (data: never) => Validatable;

interface BuiltinKind {
  model: ModelCtor;
  /** client-node model name: its attribute map is the API's field list (for pruning). */
  typeName: string;
}

const BUILTIN: Record<string, BuiltinKind> = {
  'apps/v1/StatefulSet': { model: StatefulSet as unknown as ModelCtor, typeName: 'V1StatefulSet' },
  'v1/Service': { model: Service as unknown as ModelCtor, typeName: 'V1Service' },
  'v1/ConfigMap': { model: ConfigMap as unknown as ModelCtor, typeName: 'V1ConfigMap' },
  'v1/Secret': { model: Secret as unknown as ModelCtor, typeName: 'V1Secret' },
  'v1/Namespace': { model: Namespace as unknown as ModelCtor, typeName: 'V1Namespace' },
  'v1/Pod': { model: Pod as unknown as ModelCtor, typeName: 'V1Pod' },
  'v1/PersistentVolumeClaim': { model: PersistentVolumeClaim as unknown as ModelCtor, typeName: 'V1PersistentVolumeClaim' },
  'v1/Event': { model: CoreEvent as unknown as ModelCtor, typeName: 'CoreV1Event' },
  'events.k8s.io/v1/Event': { model: EventsEvent as unknown as ModelCtor, typeName: 'EventsV1Event' },
  'policy/v1/PodDisruptionBudget': { model: PodDisruptionBudget as unknown as ModelCtor, typeName: 'V1PodDisruptionBudget' },
  'coordination.k8s.io/v1/Lease': { model: Lease as unknown as ModelCtor, typeName: 'V1Lease' },
};

interface AttributeType {
  baseName: string;
  type: string;
}
const models = k8s as unknown as Record<string, { getAttributeTypeMap?: () => AttributeType[] } | undefined>;
const attributeCache = new Map<string, Map<string, string> | undefined>();

function attributesOf(typeName: string): Map<string, string> | undefined {
  if (!attributeCache.has(typeName)) {
    const list = models[typeName]?.getAttributeTypeMap?.();
    attributeCache.set(typeName, list ? new Map(list.map((a) => [a.baseName, a.type])) : undefined);
  }
  return attributeCache.get(typeName);
}

/**
 * Drops (or lists) every field the API does not define, following client-node's generated
 * models (their attribute maps are the API's field lists). Returns the paths of what was unknown.
 */
export function pruneUnknown(value: unknown, typeName: string, path: Array<string | number> = [], found: string[] = []): string[] {
  if (value === null || value === undefined) return found;
  const arrayOf = /^Array<(.+)>$/.exec(typeName);
  if (arrayOf) {
    if (Array.isArray(value)) value.forEach((item, i) => pruneUnknown(item, arrayOf[1]!, [...path, i], found));
    return found;
  }
  const mapOf = /^\{ \[key: string\]: (.+); \}$/.exec(typeName);
  if (mapOf) {
    if (isRecord(value)) for (const [k, v] of Object.entries(value)) pruneUnknown(v, mapOf[1]!, [...path, k], found);
    return found;
  }
  const attributes = attributesOf(typeName);
  if (attributes === undefined || !isRecord(value)) return found;
  for (const key of Object.keys(value)) {
    const type = attributes.get(key);
    if (type === undefined) {
      found.push(fieldPath([...path, key]));
      delete value[key];
    } else pruneUnknown(value[key], type, [...path, key], found);
  }
  return found;
}

/** Go decoding of the JSON into the typed struct: a wrong JSON type is a 400, not a 422. */
function decodeProblems(obj: StoredObject, info: BuiltinKind): ErrorObject[] {
  try {
    new info.model(obj as never).validate();
    return [];
  } catch (error) {
    const list = (error as { errors?: ErrorObject[] }).errors;
    return Array.isArray(list) ? list : [];
  }
}

// ---- defaults (the subset of the server's defaulting a three-way merge must preserve)

function setIfAbsent(obj: Json, key: string, value: unknown): void {
  if (obj[key] === undefined || obj[key] === null || obj[key] === '') obj[key] = value;
}

function defaultProbe(probe: unknown): void {
  if (!isRecord(probe)) return;
  setIfAbsent(probe, 'timeoutSeconds', 1);
  setIfAbsent(probe, 'periodSeconds', 10);
  setIfAbsent(probe, 'successThreshold', 1);
  setIfAbsent(probe, 'failureThreshold', 3);
  if (isRecord(probe['httpGet'])) setIfAbsent(probe['httpGet'], 'scheme', 'HTTP');
}

function defaultContainer(c: unknown): void {
  if (!isRecord(c)) return;
  setIfAbsent(c, 'terminationMessagePath', '/dev/termination-log');
  setIfAbsent(c, 'terminationMessagePolicy', 'File');
  const image = typeof c['image'] === 'string' ? c['image'] : '';
  const tag = image.includes('@') ? 'digest' : (/:([^/:]+)$/.exec(image)?.[1] ?? 'latest');
  setIfAbsent(c, 'imagePullPolicy', tag === 'latest' ? 'Always' : 'IfNotPresent');
  for (const port of arr(c['ports'])) if (isRecord(port)) setIfAbsent(port, 'protocol', 'TCP');
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) defaultProbe(c[probe]);
  for (const env of arr(c['env'])) {
    const fieldRef = rec(rec(rec(env)['valueFrom'])['fieldRef']);
    if (isRecord(rec(rec(env)['valueFrom'])['fieldRef'])) setIfAbsent(fieldRef, 'apiVersion', 'v1');
  }
}

/** SetDefaults_PodSpec and what it reaches (containers, probes, volumes). */
export function defaultPodSpec(spec: unknown): void {
  if (!isRecord(spec)) return;
  // PodSpec.nodeSelector is `omitempty`: the server stores an empty map as no map at all (so
  // `nodeSelector: {}` never changes a StatefulSet's template revision).
  if (isRecord(spec['nodeSelector']) && Object.keys(spec['nodeSelector']).length === 0) delete spec['nodeSelector'];
  setIfAbsent(spec, 'dnsPolicy', 'ClusterFirst');
  setIfAbsent(spec, 'restartPolicy', 'Always');
  setIfAbsent(spec, 'terminationGracePeriodSeconds', 30);
  setIfAbsent(spec, 'schedulerName', 'default-scheduler');
  if (spec['securityContext'] === undefined) spec['securityContext'] = {};
  for (const c of [...arr(spec['containers']), ...arr(spec['initContainers'])]) defaultContainer(c);
  for (const v of arr(spec['volumes'])) {
    if (!isRecord(v)) continue;
    for (const source of ['configMap', 'secret', 'downwardAPI', 'projected']) {
      if (isRecord(v[source])) setIfAbsent(v[source], 'defaultMode', 420);
    }
  }
}

function defaultStatefulSet(obj: Json): void {
  const spec = rec(obj['spec']);
  if (!isRecord(obj['spec'])) return;
  setIfAbsent(spec, 'replicas', 1);
  setIfAbsent(spec, 'podManagementPolicy', 'OrderedReady');
  setIfAbsent(spec, 'revisionHistoryLimit', 10);
  if (!isRecord(spec['updateStrategy'])) spec['updateStrategy'] = {};
  const strategy = rec(spec['updateStrategy']);
  setIfAbsent(strategy, 'type', 'RollingUpdate');
  if (strategy['type'] === 'RollingUpdate') {
    if (!isRecord(strategy['rollingUpdate'])) strategy['rollingUpdate'] = {};
    setIfAbsent(rec(strategy['rollingUpdate']), 'partition', 0);
  }
  if (!isRecord(spec['persistentVolumeClaimRetentionPolicy'])) spec['persistentVolumeClaimRetentionPolicy'] = {};
  const retention = rec(spec['persistentVolumeClaimRetentionPolicy']);
  setIfAbsent(retention, 'whenDeleted', 'Retain');
  setIfAbsent(retention, 'whenScaled', 'Retain');
  defaultPodSpec(rec(spec['template'])['spec']);
  for (const t of arr(spec['volumeClaimTemplates'])) {
    if (!isRecord(t)) continue;
    if (isRecord(t['spec'])) setIfAbsent(t['spec'], 'volumeMode', 'Filesystem');
    if (!isRecord(t['status'])) t['status'] = {};
    setIfAbsent(rec(t['status']), 'phase', 'Pending');
  }
}

/** Service ClusterIPs come from a private allocator: never routable, never contacted (tests use the stand-in's endpoint view). */
class ClusterIpAllocator {
  private next = 10;
  private readonly used = new Set<string>();
  allocate(): string {
    for (;;) {
      const n = this.next++;
      const ip = `10.96.${Math.floor(n / 250)}.${(n % 250) + 1}`;
      if (!this.used.has(ip)) {
        this.used.add(ip);
        return ip;
      }
    }
  }
  reserve(ip: string): void {
    this.used.add(ip);
  }
}

function defaultService(obj: Json, old: Json | undefined, ips: ClusterIpAllocator): void {
  if (!isRecord(obj['spec'])) obj['spec'] = {};
  const spec = rec(obj['spec']);
  const oldSpec = rec(old?.['spec']);
  setIfAbsent(spec, 'type', 'ClusterIP');
  setIfAbsent(spec, 'sessionAffinity', 'None');
  for (const port of arr(spec['ports'])) {
    if (!isRecord(port)) continue;
    setIfAbsent(port, 'protocol', 'TCP');
    if (port['targetPort'] === undefined || port['targetPort'] === 0 || port['targetPort'] === '') port['targetPort'] = port['port'];
  }
  if (spec['type'] === 'ExternalName') return;
  setIfAbsent(spec, 'internalTrafficPolicy', 'Cluster');
  // On update an omitted clusterIP keeps the allocated one (the registry's patchAllocatedValues):
  // that is why a client that never set it may apply its object again.
  if ((spec['clusterIP'] === undefined || spec['clusterIP'] === '') && typeof oldSpec['clusterIP'] === 'string' && oldSpec['clusterIP'] !== '') {
    spec['clusterIP'] = oldSpec['clusterIP'];
    if (spec['clusterIPs'] === undefined && Array.isArray(oldSpec['clusterIPs'])) spec['clusterIPs'] = [...(oldSpec['clusterIPs'] as unknown[])];
  }
  if (spec['clusterIP'] === undefined || spec['clusterIP'] === '') spec['clusterIP'] = ips.allocate();
  else if (typeof spec['clusterIP'] === 'string' && spec['clusterIP'] !== 'None') ips.reserve(spec['clusterIP']);
  if (!Array.isArray(spec['clusterIPs'])) spec['clusterIPs'] = [spec['clusterIP']];
  if (!Array.isArray(spec['ipFamilies'])) spec['ipFamilies'] = Array.isArray(oldSpec['ipFamilies']) ? [...(oldSpec['ipFamilies'] as unknown[])] : ['IPv4'];
  setIfAbsent(spec, 'ipFamilyPolicy', typeof oldSpec['ipFamilyPolicy'] === 'string' ? oldSpec['ipFamilyPolicy'] : 'SingleStack');
}

function defaultPod(obj: Json): void {
  defaultPodSpec(obj['spec']);
  const spec = rec(obj['spec']);
  if (isRecord(obj['spec'])) setIfAbsent(spec, 'enableServiceLinks', true);
}

function defaultPvc(obj: Json): void {
  if (isRecord(obj['spec'])) setIfAbsent(obj['spec'], 'volumeMode', 'Filesystem');
}

// ---- per-kind validation (the rules of pkg/apis/*/validation we depend on)

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

function portProblems(field: string, port: unknown): StatusCause[] {
  return typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535
    ? []
    : [invalid(field, port, 'must be between 1 and 65535, inclusive')];
}

/** ValidatePodSpec, the parts our children use. `claims` are the StatefulSet's volumeClaimTemplates names. */
export function podSpecProblems(spec: unknown, path: string, claims: ReadonlySet<string> = new Set()): StatusCause[] {
  const causes: StatusCause[] = [];
  const s = rec(spec);
  const volumes = new Set<string>();
  arr(s['volumes']).forEach((v, i) => {
    const name = rec(v)['name'];
    const f = `${path}.volumes[${i}].name`;
    if (typeof name !== 'string' || name === '') causes.push(required(f));
    else if (!DNS1123_LABEL.test(name) || name.length > 63)
      causes.push(
        invalid(
          f,
          name,
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
        ),
      );
    else if (volumes.has(name)) causes.push(duplicate(f, name));
    else volumes.add(name);
  });
  const containers = arr(s['containers']);
  if (containers.length === 0) causes.push(required(`${path}.containers`));
  const names = new Set<string>();
  for (const [list, key] of [
    [arr(s['initContainers']), 'initContainers'],
    [containers, 'containers'],
  ] as const) {
    list.forEach((c, i) => {
      const cf = `${path}.${key}[${i}]`;
      const container = rec(c);
      const name = container['name'];
      if (typeof name !== 'string' || name === '') causes.push(required(`${cf}.name`));
      else if (!DNS1123_LABEL.test(name))
        causes.push(
          invalid(
            `${cf}.name`,
            name,
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
          ),
        );
      else if (names.has(name)) causes.push(duplicate(`${cf}.name`, name));
      else names.add(name);
      if (typeof container['image'] !== 'string' || container['image'].trim() === '') causes.push(required(`${cf}.image`));
      arr(container['ports']).forEach((p, j) => causes.push(...portProblems(`${cf}.ports[${j}].containerPort`, rec(p)['containerPort'])));
      arr(container['env']).forEach((e, j) => {
        const n = rec(e)['name'];
        if (typeof n !== 'string' || n === '') causes.push(required(`${cf}.env[${j}].name`));
        else if (!ENV_NAME.test(n))
          causes.push(
            invalid(
              `${cf}.env[${j}].name`,
              n,
              "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
            ),
          );
      });
      const mountPaths = new Set<string>();
      arr(container['volumeMounts']).forEach((m, j) => {
        const mount = rec(m);
        const mf = `${cf}.volumeMounts[${j}]`;
        const n = mount['name'];
        if (typeof n !== 'string' || n === '') causes.push(required(`${mf}.name`));
        else if (!volumes.has(n) && !claims.has(n)) causes.push(notFound(`${mf}.name`, n));
        const mp = mount['mountPath'];
        if (typeof mp !== 'string' || mp === '') causes.push(required(`${mf}.mountPath`));
        else if (mountPaths.has(mp)) causes.push(invalid(`${mf}.mountPath`, mp, 'must be unique'));
        else mountPaths.add(mp);
      });
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        if (!isRecord(container[probe])) continue;
        const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter((h) => rec(container[probe])[h] !== undefined);
        if (handlers.length === 0)
          causes.push({ reason: 'FieldValueRequired', field: `${cf}.${probe}`, message: 'Required value: must specify a handler type' });
        else if (handlers.length > 1) causes.push(forbidden(`${cf}.${probe}.${handlers[1]!}`, 'may not specify more than 1 handler type'));
      }
    });
  }
  return causes;
}

function labelSelectorMatches(selector: Json, labels: Json): boolean {
  for (const [k, v] of Object.entries(rec(selector['matchLabels']))) if (labels[k] !== v) return false;
  for (const e of arr(selector['matchExpressions'])) {
    const { key, operator, values } = rec(e) as { key?: string; operator?: string; values?: string[] };
    const has = typeof key === 'string' && key in labels;
    const val = typeof key === 'string' ? labels[key] : undefined;
    if (operator === 'In' && !(has && (values ?? []).includes(String(val)))) return false;
    if (operator === 'NotIn' && has && (values ?? []).includes(String(val))) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

function statefulSetProblems(obj: StoredObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = rec(obj['spec']);
  const replicas = spec['replicas'];
  if (typeof replicas === 'number' && replicas < 0) causes.push(invalid('spec.replicas', replicas, 'must be greater than or equal to 0'));
  const ppm = spec['podManagementPolicy'];
  if (ppm !== undefined && ppm !== 'OrderedReady' && ppm !== 'Parallel')
    causes.push(notSupported('spec.podManagementPolicy', ppm, ['OrderedReady', 'Parallel']));
  const strategy = rec(spec['updateStrategy'])['type'];
  if (strategy !== undefined && strategy !== 'RollingUpdate' && strategy !== 'OnDelete')
    causes.push(notSupported('spec.updateStrategy.type', strategy, ['OnDelete', 'RollingUpdate']));
  const retention = rec(spec['persistentVolumeClaimRetentionPolicy']);
  for (const k of ['whenDeleted', 'whenScaled']) {
    if (retention[k] !== undefined && retention[k] !== 'Retain' && retention[k] !== 'Delete')
      causes.push(notSupported(`spec.persistentVolumeClaimRetentionPolicy.${k}`, retention[k], ['Retain', 'Delete']));
  }
  const selector = rec(spec['selector']);
  const template = rec(spec['template']);
  const templateLabels = rec(rec(template['metadata'])['labels']);
  if (Object.keys(rec(selector['matchLabels'])).length === 0 && arr(selector['matchExpressions']).length === 0) {
    causes.push(invalid('spec.selector', selector, 'empty selector is invalid for statefulset'));
  } else if (!labelSelectorMatches(selector, templateLabels)) {
    causes.push(invalid('spec.template.metadata.labels', templateLabels, '`selector` does not match template `labels`'));
  }
  const restart = rec(template['spec'])['restartPolicy'];
  if (restart !== undefined && restart !== 'Always') causes.push(notSupported('spec.template.spec.restartPolicy', restart, ['Always']));
  const claims = new Set<string>();
  arr(spec['volumeClaimTemplates']).forEach((t, i) => {
    const name = rec(rec(t)['metadata'])['name'];
    if (typeof name !== 'string' || name === '') causes.push(required(`spec.volumeClaimTemplates[${i}].metadata.name`));
    else claims.add(name);
  });
  causes.push(...podSpecProblems(template['spec'], 'spec.template.spec', claims));
  return causes;
}

/** ValidateStatefulSetUpdate: everything in spec but these fields is immutable. */
const STS_MUTABLE = ['replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy', 'minReadySeconds'];

export function statefulSetUpdateProblems(next: KubeObject, old: KubeObject): StatusCause[] {
  const strip = (o: KubeObject) => Object.fromEntries(Object.entries(rec(o['spec'])).filter(([k]) => !STS_MUTABLE.includes(k)));
  return deepEqual(strip(next), strip(old))
    ? []
    : [
        forbidden(
          'spec',
          "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ),
      ];
}

function serviceProblems(obj: StoredObject, old: StoredObject | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = rec(obj['spec']);
  const headless = spec['clusterIP'] === 'None';
  const ports = arr(spec['ports']);
  if (ports.length === 0 && !headless && spec['type'] !== 'ExternalName') causes.push(required('spec.ports'));
  const names = new Set<string>();
  ports.forEach((p, i) => {
    const port = rec(p);
    const name = port['name'];
    if (ports.length > 1 && (typeof name !== 'string' || name === '')) causes.push(required(`spec.ports[${i}].name`));
    if (typeof name === 'string' && name !== '') {
      if (names.has(name)) causes.push(duplicate(`spec.ports[${i}].name`, name));
      names.add(name);
    }
    causes.push(...portProblems(`spec.ports[${i}].port`, port['port']));
  });
  if (old !== undefined) {
    const before = rec(old['spec'])['clusterIPs'];
    const after = spec['clusterIPs'];
    if (Array.isArray(before) && before.length > 0 && !deepEqual(before[0], arr(after)[0])) {
      causes.push(invalid('spec.clusterIPs[0]', arr(after)[0] ?? '', 'may not change once set'));
    }
  }
  return causes;
}

/** ValidatePodUpdate: a pod's spec is immutable but for images, activeDeadlineSeconds, tolerations and the grace period. */
function podUpdateProblems(next: KubeObject, old: KubeObject): StatusCause[] {
  const strip = (o: KubeObject): Json => {
    const spec = structuredClone(rec(o['spec']));
    for (const key of ['containers', 'initContainers', 'ephemeralContainers']) {
      spec[key] = arr(spec[key]).map((c) => ({ ...rec(c), image: undefined }));
    }
    delete spec['activeDeadlineSeconds'];
    delete spec['tolerations'];
    delete spec['terminationGracePeriodSeconds'];
    // Binding sets nodeName once: an unset one may be filled in.
    if (!rec(old['spec'])['nodeName']) delete spec['nodeName'];
    return spec;
  };
  const before = strip(old);
  const after = strip(next);
  return deepEqual(before, after)
    ? []
    : [
        forbidden(
          'spec',
          'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
        ),
      ];
}

function pdbProblems(obj: StoredObject): StatusCause[] {
  const spec = rec(obj['spec']);
  return 'minAvailable' in spec && 'maxUnavailable' in spec ? [invalid('spec', spec, 'minAvailable and maxUnavailable cannot be both set')] : [];
}

function configMapProblems(obj: StoredObject): StatusCause[] {
  const causes: StatusCause[] = [];
  let size = 0;
  for (const field of ['data', 'binaryData']) {
    for (const [k, v] of Object.entries(rec(obj[field]))) {
      if (!CONFIG_KEY.test(k) || k.length > 253)
        causes.push(invalid(`${field}[${k}]`, k, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"));
      size += String(v).length;
    }
  }
  if (size > 1024 * 1024) causes.push({ reason: 'FieldValueTooLong', field: '', message: 'Too long: must have at most 1048576 bytes' });
  return causes;
}

/** kubernetes-models (the API's OpenAPI schema): required fields, enums, formats. Types are checked at decode. */
function schemaProblems(obj: StoredObject, info: BuiltinKind): StatusCause[] {
  return decodeProblems(obj, info)
    .filter((e) => e.keyword !== 'type')
    .map((e) => openApiCause(e, obj));
}

// ------------------------------------------------------------------ the Redis CRD

interface CrdVersion {
  schema: JsonSchema;
  validate: ValidateFunction;
}

const KUBE_KEYWORDS = [
  'x-kubernetes-validations',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-embedded-resource',
];

/** The openAPIV3Schema of our CRD's served version, from the manifest that gets installed. */
export function loadCrdSchema(path: string | URL = new URL('../../manifests/crd.yaml', import.meta.url)): JsonSchema {
  const crd = parse(readFileSync(path, 'utf8')) as Json;
  const spec = rec(crd['spec']);
  if (spec['group'] !== GROUP || rec(spec['names'])['kind'] !== KIND) throw new Error(`${String(path)} is not the ${KIND}.${GROUP} CRD`);
  const version = arr(spec['versions'])
    .map(rec)
    .find((v) => v['name'] === VERSION);
  const schema = rec(rec(version?.['schema'])['openAPIV3Schema']);
  if (Object.keys(schema).length === 0) throw new Error(`${String(path)} has no openAPIV3Schema for ${VERSION}`);
  return schema;
}

function compileCrd(schema: JsonSchema): CrdVersion {
  const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
  for (const keyword of KUBE_KEYWORDS) ajv.addKeyword({ keyword });
  return { schema, validate: ajv.compile(schema) };
}

/**
 * Structural pruning: drops every field the schema does not specify (unless
 * x-kubernetes-preserve-unknown-fields); the root's metadata keeps ObjectMeta's fields only.
 */
export function pruneBySchema(schema: JsonSchema, value: unknown, path: Array<string | number> = [], found: string[] = []): string[] {
  if (Array.isArray(value)) {
    const items = schema['items'];
    if (isRecord(items)) value.forEach((item, i) => pruneBySchema(items, item, [...path, i], found));
    return found;
  }
  if (!isRecord(value)) return found;
  if (path.length === 1 && path[0] === 'metadata') return pruneUnknown(value, 'V1ObjectMeta', path, found);
  const properties = schema['properties'];
  const additional = schema['additionalProperties'];
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  for (const key of Object.keys(value)) {
    const child = isRecord(properties) ? properties[key] : undefined;
    if (isRecord(child)) pruneBySchema(child, value[key], [...path, key], found);
    else if (isRecord(additional)) pruneBySchema(additional, value[key], [...path, key], found);
    else if (!preserve && !(path.length === 0 && (key === 'apiVersion' || key === 'kind' || key === 'metadata'))) {
      found.push(fieldPath([...path, key]));
      delete value[key];
    }
  }
  return found;
}

/** The CEL type name the server prints for a failing rule's value. */
function celTypeName(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (isRecord(value)) return 'object';
  return typeof value === 'number' ? (Number.isInteger(value) ? 'integer' : 'number') : typeof value;
}

/**
 * x-kubernetes-validations over an object: every rule of every node present, transition rules
 * (those using oldSelf) only where the old value exists (properties and map keys correlate;
 * list-type=map items by their keys; other lists do not).
 */
export function celCauses(schema: unknown, self: unknown, oldSelf: unknown, path: Array<string | number> = []): StatusCause[] {
  if (!isRecord(schema) || self === undefined) return [];
  const causes: StatusCause[] = [];
  for (const v of arr(schema['x-kubernetes-validations']).map(rec)) {
    const rule = String(v['rule']);
    if (isTransitionRule(rule) && oldSelf === undefined) continue;
    let ok: boolean;
    try {
      ok = evaluateRule(rule, self, oldSelf);
    } catch {
      ok = false;
    }
    if (!ok) {
      const message = typeof v['message'] === 'string' ? v['message'] : `failed rule: ${rule}`;
      causes.push({ reason: 'FieldValueInvalid', field: fieldPath(path), message: `Invalid value: ${JSON.stringify(celTypeName(self))}: ${message}` });
    }
  }
  if (isRecord(self)) {
    const properties = rec(schema['properties']);
    const additional = schema['additionalProperties'];
    const old = isRecord(oldSelf) ? oldSelf : undefined;
    for (const [key, value] of Object.entries(self)) {
      causes.push(...celCauses(properties[key] ?? additional, value, old?.[key], [...path, key]));
    }
  } else if (Array.isArray(self)) {
    const keys = schema['x-kubernetes-list-type'] === 'map' ? arr(schema['x-kubernetes-list-map-keys']).map(String) : [];
    const olds = arr(oldSelf);
    self.forEach((item, i) => {
      const match = keys.length > 0 ? olds.find((o) => keys.every((k) => deepEqual(rec(o)[k], rec(item)[k]))) : undefined;
      causes.push(...celCauses(schema['items'], item, match, [...path, i]));
    });
  }
  return causes;
}

// ------------------------------------------------------------------ wiring

function builtinKey(def: ResourceDef): string {
  return `${apiVersionOf(def)}/${def.kind}`;
}

/** What a decode error says for a JSON value of the wrong type. */
function decodeError(def: ResourceDef, obj: StoredObject, problem: ErrorObject) {
  const parts = segments(problem.instancePath, obj);
  const value = valueAt(obj, parts);
  return errors.badRequest(
    `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: json: cannot unmarshal ${jsonTypeOf(value) === 'integer' ? 'number' : jsonTypeOf(value)} into Go struct field ${def.kind}.${fieldPath(parts)} of type ${String((problem.params as Json)['type'])}`,
  );
}

/** metadata.generation counts spec changes after defaulting (the store counted before our mutators ran). */
function fixGeneration(ctx: ValidationContext): void {
  const old = ctx.oldObject;
  if (!ctx.resource.generation || old === undefined) return;
  const specOf = (o: KubeObject) => {
    const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = o;
    return rest;
  };
  const meta = ctx.object.metadata;
  if (deepEqual(specOf(old), specOf(ctx.object))) {
    if (old.metadata.generation === undefined) delete meta.generation;
    else meta.generation = old.metadata.generation;
  } else meta.generation = (old.metadata.generation ?? 0) + 1;
}

export function installValidation(store: ObjectStore, options: ValidationOptions = {}): InstalledValidation {
  const removers: Array<() => void> = [];
  const strict = options.unknownFields === 'strict';
  const withDefaults = options.builtinDefaults ?? true;
  const ips = new ClusterIpAllocator();
  const crd = compileCrd(loadCrdSchema(options.crdPath));
  const crdKey = `${GROUP}/${VERSION}/${KIND}`;

  for (const def of store.resources.all) {
    const key = builtinKey(def);
    if (key === crdKey) {
      removers.push(
        store.addMutator(def, (ctx) => {
          pruneBySchema(crd.schema, ctx.object);
          // Structural defaulting of the whole object (it only adds missing fields).
          const defaulted = applyDefaults(crd.schema, ctx.object) as StoredObject;
          for (const k of Object.keys(ctx.object)) delete (ctx.object as Json)[k];
          Object.assign(ctx.object, defaulted);
          fixGeneration(ctx);
        }),
        store.addValidator(def, (ctx) => {
          const causes: StatusCause[] = [];
          if (!crd.validate(ctx.object)) causes.push(...(crd.validate.errors ?? []).map((e) => openApiCause(e, ctx.object)));
          causes.push(...celCauses(crd.schema, ctx.object, ctx.operation === 'UPDATE' ? ctx.oldObject : undefined));
          return causes;
        }),
      );
      continue;
    }
    const info = BUILTIN[key];
    if (info === undefined) continue;
    removers.push(
      store.addMutator(def, (ctx) => {
        const unknown = pruneUnknown(ctx.object, info.typeName);
        if (strict && unknown.length > 0) {
          throw errors.badRequest(
            `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`,
          );
        }
        const typeError = decodeProblems(ctx.object, info).find((e) => e.keyword === 'type');
        if (typeError !== undefined) throw decodeError(def, ctx.object, typeError);
        if (withDefaults) {
          const o = ctx.object as Json;
          if (key === 'apps/v1/StatefulSet') defaultStatefulSet(o);
          else if (key === 'v1/Service') defaultService(o, ctx.oldObject, ips);
          else if (key === 'v1/Pod') defaultPod(o);
          else if (key === 'v1/PersistentVolumeClaim') defaultPvc(o);
        }
        fixGeneration(ctx);
      }),
      store.addValidator(def, (ctx) => {
        const causes = schemaProblems(ctx.object, info);
        const old = ctx.operation === 'UPDATE' ? ctx.oldObject : undefined;
        switch (key) {
          case 'apps/v1/StatefulSet':
            causes.push(...statefulSetProblems(ctx.object));
            if (old !== undefined && ctx.subresource !== 'status') causes.push(...statefulSetUpdateProblems(ctx.object, old));
            break;
          case 'v1/Service':
            causes.push(...serviceProblems(ctx.object, old));
            break;
          case 'v1/Pod':
            causes.push(...podSpecProblems(ctx.object['spec'], 'spec'));
            if (old !== undefined && ctx.subresource !== 'status') causes.push(...podUpdateProblems(ctx.object, old));
            break;
          case 'policy/v1/PodDisruptionBudget':
            causes.push(...pdbProblems(ctx.object));
            break;
          case 'v1/ConfigMap':
            causes.push(...configMapProblems(ctx.object));
            break;
        }
        return causes;
      }),
    );
  }
  return {
    uninstall: () => {
      for (const remove of removers.splice(0)) remove();
    },
  };
}
