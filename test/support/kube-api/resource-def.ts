// The shape of a kind entry (ResourceDef) and of the objects the stand-in stores, with the small
// helpers every part derives from an entry: its apiVersion, its storage key, dotted paths.
// Invariant: the storage key is group + plural (version-independent, as in etcd), so a kind
// served under two versions would share objects; today every kind has exactly one version.
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
