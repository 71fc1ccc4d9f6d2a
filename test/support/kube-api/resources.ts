// The kinds the stand-in serves, one table entry per kind. Adding a kind is adding an entry to
// DEFAULT_RESOURCES (or passing `resources` to startKubeApi); everything else (routing, discovery,
// storage, watch, selectors, subresources) is derived from the entry.
// Invariant: the storage key is group + plural (version-independent, as in etcd), so a kind
// served under two versions would share objects; today every kind has exactly one version.
import { GROUP, KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION } from '../../../src/api/labels.ts';
import type { StatusCause } from './errors.ts';

export interface ObjectMetaLike {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Any Kubernetes object as JSON. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMetaLike;
  [key: string]: unknown;
}

/** A stored object: the store always fills metadata. */
export interface StoredObject extends KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMetaLike & { name: string; uid: string; resourceVersion: string; creationTimestamp: string };
}

export type Operation = 'CREATE' | 'UPDATE';

export interface ValidationContext {
  operation: Operation;
  resource: ResourceDef;
  /** The object as it would be stored (system fields filled). */
  object: StoredObject;
  oldObject?: StoredObject;
  /** `status` or `scale` when the write came through a subresource. */
  subresource?: string;
}

/** Returns the problems found (empty when valid); the store answers 422 Invalid with them. */
export type Validator = (ctx: ValidationContext) => StatusCause[];
/** Runs before validation, like a mutating admission webhook or defaulting; may change ctx.object. */
export type Mutator = (ctx: ValidationContext) => void;

export interface ScaleDef {
  /** Dotted path of the desired replicas in the object, e.g. `spec.replicas`. */
  specReplicasPath: string;
  /** Dotted path of the observed replicas, e.g. `status.replicas`. */
  statusReplicasPath: string;
  /** Dotted path of a label selector string (CRDs), e.g. `status.selector`. */
  labelSelectorPath?: string;
  /** Built-in workloads: the selector comes from spec.selector (a LabelSelector object). */
  selectorFromSpec?: boolean;
}

export type NameRule = 'subdomain' | 'dns1123Label' | 'dns1035Label';

export interface ResourceDef {
  /** '' for the core group. */
  group: string;
  version: string;
  /** Plural, lower case: the URL segment. */
  resource: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames?: string[];
  /** A CustomResourceDefinition: strategic merge patch is refused (415), list items carry kind/apiVersion, PUT needs a resourceVersion. */
  custom?: boolean;
  /** PUT/PATCH on .../status change status only; writes to the main resource keep the stored status. */
  statusSubresource?: boolean;
  scale?: ScaleDef;
  /** metadata.generation starts at 1 and bumps when anything outside metadata and status changes. */
  generation?: boolean;
  nameRule?: NameRule;
  /** Field selector keys beyond metadata.name and metadata.namespace (dotted paths into the object). */
  fieldSelectors?: string[];
  /** Dotted paths of metav1.MicroTime fields: the real server only parses exactly six fractional digits. */
  microTimeFields?: string[];
  /** DELETE answers with the object (true) or a Status Success (false), as the real registries do. */
  deleteReturnsObject?: boolean;
  /** Decode-time normalisation (400 on the returned problems), e.g. Secret stringData -> data. */
  normalize?: (obj: KubeObject) => string | undefined;
  /** Fills server-set fields on create through the API (e.g. a new pod's status.phase Pending). */
  prepareForCreate?: (obj: KubeObject) => void;
  /** Built-in validation for this kind, in addition to metadata validation and registered validators. */
  validate?: Validator;
}

export type ResourceInput = Omit<ResourceDef, 'singular' | 'listKind'> & { singular?: string; listKind?: string };

export function defineResource(input: ResourceInput): ResourceDef {
  return { ...input, singular: input.singular ?? input.kind.toLowerCase(), listKind: input.listKind ?? `${input.kind}List` };
}

export function apiVersionOf(def: ResourceDef): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}

/** Storage key and the short name tests use: `pods`, `leases.coordination.k8s.io`. */
export function keyOf(def: ResourceDef): string {
  return def.group ? `${def.resource}.${def.group}` : def.resource;
}

export function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

export function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) {
    const next = cur[part];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

const CORE_EVENT_FIELDS = [
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'type',
];

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

function required(obj: KubeObject, path: string): StatusCause[] {
  const v = getPath(obj, path);
  return v === undefined || v === null || v === '' ? [{ reason: 'FieldValueRequired', field: path, message: 'Required value' }] : [];
}

/** core/v1 Event validation as the real server does it (legacyValidateEvent, request version v1). */
function validateCoreEvent({ object }: ValidationContext): StatusCause[] {
  const causes: StatusCause[] = [];
  const ns = object.metadata.namespace ?? '';
  const involvedNs = (getPath(object, 'involvedObject.namespace') as string | undefined) ?? '';
  if (!object['eventTime']) {
    if (involvedNs === '' ? ns !== '' && ns !== 'default' : ns !== involvedNs) {
      causes.push({
        reason: 'FieldValueInvalid',
        field: 'involvedObject.namespace',
        message: `Invalid value: "${involvedNs}": does not match event.namespace`,
      });
    }
    return causes;
  }
  if (involvedNs === '' && ns !== 'default' && ns !== 'kube-system') {
    causes.push({ reason: 'FieldValueInvalid', field: 'involvedObject.namespace', message: `Invalid value: "${involvedNs}": does not match event.namespace` });
  }
  if (involvedNs !== '' && ns !== involvedNs) {
    causes.push({ reason: 'FieldValueInvalid', field: 'involvedObject.namespace', message: `Invalid value: "${involvedNs}": does not match event.namespace` });
  }
  causes.push(...required(object, 'reportingComponent').map((c) => ({ ...c, field: 'reportingComponent' })));
  const rc = object['reportingComponent'];
  if (typeof rc === 'string' && rc !== '' && !isQualified(rc)) {
    causes.push({ reason: 'FieldValueInvalid', field: 'reportingComponent', message: `Invalid value: "${rc}": must be a qualified name` });
  }
  causes.push(...required(object, 'reportingInstance'), ...required(object, 'action'), ...required(object, 'reason'));
  return causes;
}

/** events.k8s.io/v1 Event validation (ValidateEventCreate): the new-style fields are all required. */
function validateEventsV1({ object, operation }: ValidationContext): StatusCause[] {
  if (operation !== 'CREATE') return [];
  const causes = [
    ...required(object, 'eventTime'),
    ...required(object, 'reportingController'),
    ...required(object, 'reportingInstance'),
    ...required(object, 'action'),
    ...required(object, 'reason'),
  ];
  const type = object['type'];
  if (type !== undefined && type !== 'Normal' && type !== 'Warning') {
    causes.push({ reason: 'FieldValueNotSupported', field: 'type', message: `Unsupported value: "${String(type)}": supported values: "Normal", "Warning"` });
  }
  return causes;
}

function isQualified(name: string): boolean {
  const slash = name.lastIndexOf('/');
  const local = slash >= 0 ? name.slice(slash + 1) : name;
  return local.length > 0 && local.length <= 63 && QUALIFIED_NAME.test(local);
}

function validateLease({ object }: ValidationContext): StatusCause[] {
  const causes: StatusCause[] = [];
  const duration = getPath(object, 'spec.leaseDurationSeconds');
  if (duration !== undefined && (typeof duration !== 'number' || !Number.isInteger(duration) || duration <= 0)) {
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'spec.leaseDurationSeconds',
      message: `Invalid value: ${JSON.stringify(duration)}: must be greater than 0`,
    });
  }
  const transitions = getPath(object, 'spec.leaseTransitions');
  if (transitions !== undefined && (typeof transitions !== 'number' || !Number.isInteger(transitions) || transitions < 0)) {
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'spec.leaseTransitions',
      message: `Invalid value: ${JSON.stringify(transitions)}: must be greater than or equal to 0`,
    });
  }
  return causes;
}

/** Secrets: stringData is write-only and merged into data (base64); data must be valid base64. */
function normalizeSecret(obj: KubeObject): string | undefined {
  const data = (obj['data'] ?? {}) as Record<string, unknown>;
  if (typeof data !== 'object' || Array.isArray(data)) return 'Secret.data must be a map of strings';
  for (const [k, v] of Object.entries(data)) {
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v) || v.length % 4 !== 0) {
      return `Secret in version "v1" cannot be handled as a Secret: illegal base64 data in data["${k}"]`;
    }
  }
  const stringData = obj['stringData'];
  if (stringData !== undefined) {
    if (typeof stringData !== 'object' || stringData === null) return 'Secret.stringData must be a map of strings';
    for (const [k, v] of Object.entries(stringData as Record<string, unknown>)) {
      if (typeof v !== 'string') return `Secret in version "v1" cannot be handled as a Secret: stringData["${k}"] must be a string`;
      data[k] = Buffer.from(v, 'utf8').toString('base64');
    }
    delete obj['stringData'];
    obj['data'] = data;
  }
  if (obj['type'] === undefined) obj['type'] = 'Opaque';
  return undefined;
}

export const DEFAULT_RESOURCES: ResourceDef[] = [
  defineResource({
    group: '',
    version: 'v1',
    resource: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    nameRule: 'dns1123Label',
    statusSubresource: true,
    fieldSelectors: ['status.phase'],
  }),
  defineResource({
    group: '',
    version: 'v1',
    resource: 'pods',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    statusSubresource: true,
    fieldSelectors: [
      'spec.nodeName',
      'spec.restartPolicy',
      'spec.schedulerName',
      'spec.serviceAccountName',
      'status.phase',
      'status.podIP',
      'status.nominatedNodeName',
    ],
    deleteReturnsObject: true,
    prepareForCreate: (obj) => {
      obj['status'] = { phase: 'Pending' };
    },
  }),
  defineResource({ group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true, fieldSelectors: ['type'], normalize: normalizeSecret }),
  defineResource({ group: '', version: 'v1', resource: 'configmaps', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'] }),
  defineResource({
    group: '',
    version: 'v1',
    resource: 'services',
    kind: 'Service',
    namespaced: true,
    shortNames: ['svc'],
    statusSubresource: true,
    nameRule: 'dns1035Label',
    deleteReturnsObject: true,
  }),
  defineResource({
    group: '',
    version: 'v1',
    resource: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
    shortNames: ['pvc'],
    statusSubresource: true,
    deleteReturnsObject: true,
  }),
  defineResource({
    group: '',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    fieldSelectors: CORE_EVENT_FIELDS,
    microTimeFields: ['eventTime', 'series.lastObservedTime'],
    validate: validateCoreEvent,
  }),
  defineResource({
    group: 'events.k8s.io',
    version: 'v1',
    resource: 'events',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
    fieldSelectors: ['regarding.kind', 'regarding.namespace', 'regarding.name', 'regarding.uid', 'reason', 'reportingController', 'type'],
    microTimeFields: ['eventTime', 'series.lastObservedTime'],
    validate: validateEventsV1,
  }),
  defineResource({
    group: 'coordination.k8s.io',
    version: 'v1',
    resource: 'leases',
    kind: 'Lease',
    namespaced: true,
    microTimeFields: ['spec.acquireTime', 'spec.renewTime'],
    validate: validateLease,
  }),
  defineResource({
    group: 'apps',
    version: 'v1',
    resource: 'statefulsets',
    kind: 'StatefulSet',
    namespaced: true,
    shortNames: ['sts'],
    statusSubresource: true,
    generation: true,
    scale: { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', selectorFromSpec: true },
  }),
  defineResource({
    group: 'policy',
    version: 'v1',
    resource: 'poddisruptionbudgets',
    kind: 'PodDisruptionBudget',
    namespaced: true,
    shortNames: ['pdb'],
    statusSubresource: true,
    generation: true,
  }),
  defineResource({
    group: GROUP,
    version: VERSION,
    resource: PLURAL,
    singular: SINGULAR,
    kind: KIND,
    namespaced: true,
    shortNames: [...SHORT_NAMES],
    custom: true,
    statusSubresource: true,
    generation: true,
    deleteReturnsObject: true,
    scale: { specReplicasPath: 'spec.replicas', statusReplicasPath: 'status.replicas', labelSelectorPath: 'status.selector' },
  }),
];

/** Lookup by URL (group, version, plural) or by the short ids tests use. */
export class ResourceTable {
  readonly all: ResourceDef[];
  constructor(defs: ResourceDef[]) {
    this.all = defs;
  }
  byUrl(group: string, version: string, resource: string): ResourceDef | undefined {
    return this.all.find((d) => d.group === group && d.version === version && d.resource === resource);
  }
  /**
   * `pods`, `redises`, `leases.coordination.k8s.io`, `events.events.k8s.io`, a kind (`Pod`) or a short name (`po`).
   * A bare plural prefers the core group, as kubectl does (`events` is core/v1 Event).
   */
  resolve(id: string | ResourceDef): ResourceDef {
    if (typeof id !== 'string') return id;
    const found =
      this.all.find((d) => keyOf(d) === id) ??
      this.all.find((d) => d.resource === id && d.group === '') ??
      this.all.find((d) => d.resource === id) ??
      this.all.find((d) => d.kind === id || d.singular === id || d.shortNames?.includes(id));
    if (!found) throw new Error(`kube-api stand-in: unknown resource ${JSON.stringify(id)}`);
    return found;
  }
  groupVersions(): Array<{ group: string; version: string }> {
    const seen = new Map<string, { group: string; version: string }>();
    for (const d of this.all) seen.set(`${d.group}/${d.version}`, { group: d.group, version: d.version });
    return [...seen.values()];
  }
}
