// The mutating half for built-in kinds: what the API server does to a body before validating it.
// Unknown fields are found (and dropped) by client-node's generated models, whose attribute maps
// are the API's field lists; a JSON type that cannot decode is found by kubernetes-models; and the
// server's defaults are filled in (only the subset a three-way merge must preserve, so an applied
// object stays equal to what was stored).
// Invariant: defaulting is idempotent: it fills what is missing (keeping an allocated clusterIP on
// update) and stores what the server stores differently (an empty nodeSelector is none), so a
// second pass changes nothing and an unchanged write stays a no-op.
import * as k8s from '@kubernetes/client-node';
import type { ErrorObject } from 'ajv';
import { StatefulSet } from 'kubernetes-models/apps/v1';
import { ConfigMap, Event as CoreEvent, Namespace, PersistentVolumeClaim, Pod, Secret, Service } from 'kubernetes-models/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { Lease } from 'kubernetes-models/coordination.k8s.io/v1';
import { Event as EventsEvent } from 'kubernetes-models/events.k8s.io/v1';
import type { StoredObject } from '../../support/kube-api/resources.ts';
import { asRecord as rec, isRecord } from '../../support/records.ts';
import { arr, fieldPath, type Json } from './causes.ts';

// ------------------------------------------------------------------ built-in kinds

interface Validatable {
  validate(): void;
}
type ModelCtor = new (data: never) => Validatable;

export interface BuiltinKind {
  model: ModelCtor;
  /** client-node model name: its attribute map is the API's field list (for pruning). */
  typeName: string;
}

export const BUILTIN: Record<string, BuiltinKind> = {
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
export function decodeProblems(obj: StoredObject, info: BuiltinKind): ErrorObject[] {
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

export function defaultStatefulSet(obj: Json): void {
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
export class ClusterIpAllocator {
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

export function defaultService(obj: Json, old: Json | undefined, ips: ClusterIpAllocator): void {
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

export function defaultPod(obj: Json): void {
  defaultPodSpec(obj['spec']);
  const spec = rec(obj['spec']);
  if (isRecord(obj['spec'])) setIfAbsent(spec, 'enableServiceLinks', true);
}

export function defaultPvc(obj: Json): void {
  if (isRecord(obj['spec'])) setIfAbsent(obj['spec'], 'volumeMode', 'Filesystem');
}
