// The in-memory object store behind the stand-in: what etcd plus the generic registry do.
// Owns: one global resourceVersion counter; per-object uid, creationTimestamp, generation;
// create/update/patch/delete with the real preconditions (AlreadyExists, Conflict on a stale
// resourceVersion, NotFound); status and scale subresources; deletionTimestamp + finalizers;
// ownerReference garbage collection; the event history that watches replay from; validators.
// Invariants:
// - Objects never leak by reference: everything going in or out is cloned.
// - Every committed change gets a fresh resourceVersion and exactly one watch event; a write that
//   changes nothing (ignoring resourceVersion) is a no-op, as on a real server.
// - Garbage collection is synchronous: when an owner is removed, dependents whose owners are all
//   gone are deleted before the call returns (the real GC is asynchronous; tests here want
//   determinism). Dependents whose owners never existed are collected right after they are written.
import { randomUUID } from 'node:crypto';
import { errors, KubeApiError, type Status, type StatusCause } from './errors.ts';
import { deepEqual, jsonPatch, mergePatch, PatchError, strategicMergePatch } from './patch.ts';
import {
  apiVersionOf,
  DEFAULT_RESOURCES,
  getPath,
  keyOf,
  ResourceTable,
  setPath,
  type KubeObject,
  type Mutator,
  type ObjectMetaLike,
  type OwnerReference,
  type ResourceDef,
  type StoredObject,
  type ValidationContext,
  type Validator,
} from './resources.ts';
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
  labelSelectorToString,
  SelectorError,
  type FieldRequirement,
  type LabelRequirement,
} from './selectors.ts';
import { MICRO_TIME, validateFinalizersDuringDeletion, validateObjectMeta } from './validation.ts';
import { isRecord } from '../records.ts';

export type ResourceId = string | ResourceDef;
export type PatchType = 'json' | 'merge' | 'strategic';
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface WatchEvent {
  type: WatchEventType | 'BOOKMARK' | 'ERROR';
  object: StoredObject | Status | KubeObject;
}

export interface SelectorOptions {
  /** Omit (or '') for all namespaces. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface ListOptions extends SelectorOptions {
  limit?: number;
  continue?: string;
}

export interface ListResult {
  items: StoredObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface WatchOptions extends SelectorOptions {
  /** Replay events after this version; '' / '0' / omitted sends the current state as ADDED first. */
  resourceVersion?: string;
}

export interface WriteOptions {
  /** `status`: only status changes. Through the main resource, kinds with a status subresource keep their stored status unless keepStatus. */
  subresource?: 'status';
  /**
   * Keep the status given on create/update of the main resource. The in-process API defaults to
   * true (tests set pod status freely); the HTTP API always passes false, as a real server does.
   */
  keepStatus?: boolean;
  /** Run metadata, built-in and registered validation (default true). */
  validate?: boolean;
  dryRun?: boolean;
  /** The namespace from the request URL (HTTP); must agree with metadata.namespace when both are set. */
  namespace?: string;
  /** The name from the request URL (HTTP update); must agree with metadata.name. */
  name?: string;
}

export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
}

export interface DeleteResult {
  /** The object as last stored (with deletionTimestamp if finalizers keep it). */
  object: StoredObject;
  /** True when the object is gone; false when finalizers keep it (deletionTimestamp set). */
  deleted: boolean;
}

export interface StoreOptions {
  resources?: ResourceDef[];
  /** Watch events kept for replay; older resourceVersions answer 410 Expired. */
  historyLimit?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  /** Collect objects written with ownerReferences none of which exist (the real GC does). Default true. */
  collectDanglingDependents?: boolean;
}

interface HistoryEntry {
  rv: number;
  key: string;
  type: WatchEventType;
  object: StoredObject;
  old?: StoredObject;
}

interface Watcher {
  key: string;
  namespace: string;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  def: ResourceDef;
  listener: (ev: WatchEvent) => void;
}

export interface WatchHandle {
  stop(): void;
}

const GENERATE_NAME_CHARS = 'bcdfghjklmnpqrstvwxz2456789';
const SYSTEM_META = [
  'uid',
  'creationTimestamp',
  'generation',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'resourceVersion',
  'selfLink',
  'managedFields',
] as const;

function clone<T>(v: T): T {
  return structuredClone(v);
}

function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function nsName(ns: string, name: string): string {
  return `${ns}/${name}`;
}

/** The object minus metadata and status: what a generation counts. */
function specPart(obj: KubeObject): Record<string, unknown> {
  const { metadata: _m, status: _s, apiVersion: _a, kind: _k, ...rest } = obj;
  return rest;
}

function withoutRv(obj: StoredObject): StoredObject {
  const c = { ...obj, metadata: { ...obj.metadata } };
  delete (c.metadata as ObjectMetaLike).resourceVersion;
  return c;
}

export class ObjectStore {
  readonly resources: ResourceTable;
  private readonly objects = new Map<string, Map<string, StoredObject>>();
  private readonly uids = new Map<string, { key: string; id: string }>();
  private readonly history: HistoryEntry[] = [];
  private readonly historyLimit: number;
  private compactedRv = 0;
  private rv = 1;
  private readonly watchers = new Set<Watcher>();
  private readonly validators = new Map<string, Validator[]>();
  private readonly mutators = new Map<string, Mutator[]>();
  private readonly now: () => number;
  private readonly collectDangling: boolean;

  constructor(options: StoreOptions = {}) {
    this.resources = new ResourceTable(options.resources ?? DEFAULT_RESOURCES);
    this.historyLimit = options.historyLimit ?? 10_000;
    this.now = options.now ?? Date.now;
    this.collectDangling = options.collectDanglingDependents ?? true;
    for (const def of this.resources.all) this.objects.set(keyOf(def), new Map());
  }

  /** The current (latest) resourceVersion, as a list would report it. */
  get resourceVersion(): string {
    return String(this.rv);
  }

  def(res: ResourceId): ResourceDef {
    return this.resources.resolve(res);
  }

  // ---------------------------------------------------------------- hooks

  /** Validation hook (e.g. Kubernetes schemas, the CRD schema). Returns a function that removes it. */
  addValidator(res: ResourceId, validator: Validator): () => void {
    return this.addHook(this.validators, res, validator);
  }

  /** Mutation/defaulting hook, run before validation. Returns a function that removes it. */
  addMutator(res: ResourceId, mutator: Mutator): () => void {
    return this.addHook(this.mutators, res, mutator);
  }

  private addHook<T>(map: Map<string, T[]>, res: ResourceId, fn: T): () => void {
    const key = keyOf(this.def(res));
    const list = map.get(key) ?? [];
    list.push(fn);
    map.set(key, list);
    return () => {
      const i = list.indexOf(fn);
      if (i >= 0) list.splice(i, 1);
    };
  }

  // ---------------------------------------------------------------- reads

  get(res: ResourceId, namespace: string | undefined, name: string): StoredObject | undefined {
    const def = this.def(res);
    const obj = this.bucket(def).get(nsName(def.namespaced ? (namespace ?? '') : '', name));
    return obj ? clone(obj) : undefined;
  }

  /** Like get, but a missing object is a NotFound KubeApiError. */
  read(res: ResourceId, namespace: string | undefined, name: string): StoredObject {
    const def = this.def(res);
    const obj = this.get(def, namespace, name);
    if (!obj) throw errors.notFound(def, name);
    return obj;
  }

  list(res: ResourceId, options: SelectorOptions = {}): StoredObject[] {
    return this.listPage(res, options).items;
  }

  listPage(res: ResourceId, options: ListOptions = {}): ListResult {
    const def = this.def(res);
    const { labels, fields } = this.parseSelectors(def, options);
    let start = '';
    if (options.continue) {
      let token: { rv: number; start: string };
      try {
        token = JSON.parse(Buffer.from(options.continue, 'base64url').toString('utf8')) as { rv: number; start: string };
      } catch {
        throw errors.badRequest('continue key is not valid: illegal base64 data');
      }
      if (token.rv < this.compactedRv)
        throw errors.gone(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      start = token.start;
    }
    const all = [...this.bucket(def).entries()]
      .filter(([id, obj]) => id > start && this.matches(def, obj, options.namespace ?? '', labels, fields))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const limit = options.limit && options.limit > 0 ? options.limit : all.length;
    const page = all.slice(0, limit);
    const result: ListResult = { items: page.map(([, o]) => clone(o)), resourceVersion: this.resourceVersion };
    if (all.length > limit) {
      result.continue = Buffer.from(JSON.stringify({ rv: this.rv, start: page[page.length - 1]![0] })).toString('base64url');
      result.remainingItemCount = all.length - limit;
    }
    return result;
  }

  // ---------------------------------------------------------------- writes

  create(res: ResourceId, body: KubeObject, options: WriteOptions = {}): StoredObject {
    const def = this.def(res);
    const keepStatus = options.keepStatus ?? true;
    const obj = this.decode(def, body, options.namespace ?? body.metadata?.namespace, undefined);
    const meta = obj.metadata as ObjectMetaLike;
    if (meta.resourceVersion) throw errors.internal('resourceVersion should not be set on objects to be created');
    if (!meta.name) {
      if (meta.generateName) {
        let suffix = '';
        for (let i = 0; i < 5; i++) suffix += GENERATE_NAME_CHARS[Math.floor(Math.random() * GENERATE_NAME_CHARS.length)];
        meta.name = `${meta.generateName}${suffix}`;
      } else {
        throw errors.invalid(def, '', [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }]);
      }
    }
    for (const k of SYSTEM_META) delete meta[k];
    meta.uid = randomUUID();
    meta.creationTimestamp = rfc3339(this.now());
    if (def.generation) meta.generation = 1;
    if (def.statusSubresource && !keepStatus) delete obj['status'];
    if (obj['status'] === undefined) def.prepareForCreate?.(obj);
    const stored = obj as StoredObject;
    stored.metadata.resourceVersion = '0';
    this.admit(def, { operation: 'CREATE', resource: def, object: stored }, options);
    const id = nsName(stored.metadata.namespace ?? '', stored.metadata.name);
    if (this.bucket(def).has(id)) throw errors.alreadyExists(def, stored.metadata.name);
    if (options.dryRun) return clone(stored);
    this.commit(def, id, 'ADDED', stored);
    const out = clone(stored);
    this.collectIfDangling(def, stored);
    return out;
  }

  /** PUT: replaces the object (or its status); a set metadata.resourceVersion must match the stored one. */
  update(res: ResourceId, body: KubeObject, options: WriteOptions = {}): StoredObject {
    const def = this.def(res);
    const name = options.name ?? body.metadata?.name;
    if (!name) throw errors.badRequest('name is required in metadata');
    const obj = this.decode(def, body, options.namespace ?? body.metadata?.namespace, name);
    const old = this.bucket(def).get(nsName(obj.metadata?.namespace ?? '', name));
    if (!old) throw errors.notFound(def, name);
    const rv = obj.metadata?.resourceVersion;
    if (rv) {
      if (rv !== old.metadata.resourceVersion) throw errors.conflict(def, name);
    } else if (def.custom) {
      throw errors.invalid(def, name, [
        { reason: 'FieldValueInvalid', field: 'metadata.resourceVersion', message: 'Invalid value: 0x0: must be specified for an update' },
      ]);
    }
    return this.replace(def, old, obj, options);
  }

  patch(res: ResourceId, namespace: string | undefined, name: string, patch: unknown, options: WriteOptions & { type?: PatchType } = {}): StoredObject {
    const def = this.def(res);
    const type = options.type ?? 'merge';
    if (type === 'strategic' && def.custom) {
      throw errors.unsupportedMediaType(
        'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
      );
    }
    const old = this.bucket(def).get(nsName(def.namespaced ? (namespace ?? '') : '', name));
    if (!old) throw errors.notFound(def, name);
    const patched = this.applyPatch(type, old, patch);
    if (!isRecord(patched)) throw errors.badRequest('the patch produced something that is not an object');
    const patchedRv = (patched['metadata'] as ObjectMetaLike | undefined)?.resourceVersion;
    if (patchedRv !== undefined && patchedRv !== old.metadata.resourceVersion) throw errors.conflict(def, name);
    const body = patched as KubeObject;
    body.metadata = { ...(body.metadata ?? {}), name, resourceVersion: old.metadata.resourceVersion };
    if (def.namespaced) body.metadata.namespace = old.metadata.namespace;
    const obj = this.decode(def, body, old.metadata.namespace, name);
    return this.replace(def, old, obj, options);
  }

  /** Read-modify-write for tests: `fn` edits a copy (e.g. sets pod status); status is kept. */
  mutate(res: ResourceId, namespace: string | undefined, name: string, fn: (obj: StoredObject) => void, options: WriteOptions = {}): StoredObject {
    const def = this.def(res);
    const current = this.read(def, namespace, name);
    fn(current);
    current.metadata.resourceVersion = this.bucket(def).get(nsName(def.namespaced ? (namespace ?? '') : '', name))!.metadata.resourceVersion;
    return this.update(def, current, { keepStatus: true, ...options });
  }

  delete(res: ResourceId, namespace: string | undefined, name: string, options: DeleteOptions = {}): DeleteResult {
    const def = this.def(res);
    const id = nsName(def.namespaced ? (namespace ?? '') : '', name);
    const old = this.bucket(def).get(id);
    if (!old) throw errors.notFound(def, name);
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== old.metadata.uid) {
      throw errors.conflict(def, name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${old.metadata.uid}`);
    }
    if (pre?.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw errors.conflict(
        def,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${old.metadata.resourceVersion}`,
      );
    }
    if (options.dryRun) return { object: clone(old), deleted: (old.metadata.finalizers ?? []).length === 0 };
    const policy = options.propagationPolicy ?? 'Background';
    if (policy === 'Orphan') this.orphanDependents(old);
    if (policy === 'Foreground') {
      for (const dep of this.dependentsOf(old.metadata.uid)) {
        const depDef = this.def(dep.key);
        const others = (dep.obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== old.metadata.uid);
        if (this.bucket(depDef).has(dep.id) && !this.ownersAlive(others)) {
          this.delete(depDef, dep.obj.metadata.namespace, dep.obj.metadata.name, { propagationPolicy: 'Foreground' });
        }
      }
    }
    if ((old.metadata.finalizers ?? []).length > 0) {
      if (old.metadata.deletionTimestamp) return { object: clone(old), deleted: false };
      const next = clone(old);
      next.metadata.deletionTimestamp = rfc3339(this.now());
      next.metadata.deletionGracePeriodSeconds = 0;
      this.commit(def, id, 'MODIFIED', next, old);
      return { object: clone(next), deleted: false };
    }
    return { object: this.remove(def, id, old), deleted: true };
  }

  // ---------------------------------------------------------------- scale subresource

  getScale(res: ResourceId, namespace: string | undefined, name: string): KubeObject {
    const def = this.def(res);
    if (!def.scale) throw errors.notFoundPath();
    return this.scaleOf(def, this.read(def, namespace, name));
  }

  updateScale(res: ResourceId, namespace: string | undefined, name: string, scale: KubeObject, options: { validate?: boolean } = {}): KubeObject {
    const def = this.def(res);
    if (!def.scale) throw errors.notFoundPath();
    const old = this.bucket(def).get(nsName(def.namespaced ? (namespace ?? '') : '', name));
    if (!old) throw errors.notFound(def, name);
    const rv = scale.metadata?.resourceVersion;
    if (rv && rv !== old.metadata.resourceVersion) throw errors.conflict(def, name);
    const replicas = getPath(scale, 'spec.replicas');
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
      throw failureInvalidScale(name, replicas);
    }
    const next = clone(old);
    setPath(next as Record<string, unknown>, def.scale.specReplicasPath, replicas);
    const stored = this.replace(def, old, next, { keepStatus: true, validate: options.validate ?? true }, 'scale');
    return this.scaleOf(def, stored);
  }

  patchScale(res: ResourceId, namespace: string | undefined, name: string, patch: unknown, type: PatchType = 'merge'): KubeObject {
    const def = this.def(res);
    const current = this.getScale(def, namespace, name);
    const patched = this.applyPatch(type, current, patch) as KubeObject;
    return this.updateScale(def, namespace, name, patched);
  }

  private scaleOf(def: ResourceDef, obj: StoredObject): KubeObject {
    const scale = def.scale!;
    const selector = scale.selectorFromSpec
      ? labelSelectorToString(getPath(obj, 'spec.selector') as Parameters<typeof labelSelectorToString>[0])
      : scale.labelSelectorPath
        ? getPath(obj, scale.labelSelectorPath)
        : undefined;
    const status: Record<string, unknown> = { replicas: getPath(obj, scale.statusReplicasPath) ?? 0 };
    if (typeof selector === 'string' && selector !== '') status['selector'] = selector;
    const m = obj.metadata;
    const metadata: ObjectMetaLike = { name: m.name, uid: m.uid, resourceVersion: m.resourceVersion, creationTimestamp: m.creationTimestamp };
    if (m.namespace) metadata.namespace = m.namespace;
    return { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata, spec: { replicas: getPath(obj, scale.specReplicasPath) ?? 0 }, status };
  }

  // ---------------------------------------------------------------- watch

  /**
   * Streams events for one resource. Replays history after options.resourceVersion, or sends the
   * current state as ADDED when it is ''/'0'/omitted. Throws 410 Expired (KubeApiError) when the
   * version is older than the kept history, and 400 for a bad selector.
   */
  watch(res: ResourceId, options: WatchOptions, listener: (ev: WatchEvent) => void): WatchHandle {
    const def = this.def(res);
    const { labels, fields } = this.parseSelectors(def, options);
    const w: Watcher = { key: keyOf(def), namespace: options.namespace ?? '', labels, fields, def, listener };
    const from = options.resourceVersion;
    if (from === undefined || from === '' || from === '0') {
      for (const obj of this.listPage(def, options).items) this.deliver(w, { type: 'ADDED', object: obj });
    } else {
      if (!/^\d+$/.test(from)) throw errors.badRequest(`resourceVersion: Invalid value: "${from}": must be a number`);
      const n = Number(from);
      if (n < this.compactedRv) throw errors.gone(`too old resource version: ${n} (${this.compactedRv + 1})`);
      for (const entry of this.history) if (entry.rv > n && entry.key === w.key) this.dispatch(w, entry);
    }
    this.watchers.add(w);
    return { stop: () => this.watchers.delete(w) };
  }

  /** Forgets history up to `upToRv` (default: all): watches from older versions then get 410 Expired. */
  compact(upToRv: number = this.rv): void {
    while (this.history.length > 0 && this.history[0]!.rv <= upToRv) this.history.shift();
    this.compactedRv = Math.max(this.compactedRv, upToRv);
  }

  // ---------------------------------------------------------------- internals

  private bucket(def: ResourceDef): Map<string, StoredObject> {
    const key = keyOf(def);
    let b = this.objects.get(key);
    if (!b) {
      b = new Map();
      this.objects.set(key, b);
    }
    return b;
  }

  private parseSelectors(def: ResourceDef, options: SelectorOptions): { labels: LabelRequirement[]; fields: FieldRequirement[] } {
    try {
      return {
        labels: parseLabelSelector(options.labelSelector ?? ''),
        fields: parseFieldSelector(options.fieldSelector ?? '', ['metadata.name', 'metadata.namespace', ...(def.fieldSelectors ?? [])]),
      };
    } catch (e) {
      if (e instanceof SelectorError) throw errors.badRequest(e.message);
      throw e;
    }
  }

  private matches(def: ResourceDef, obj: StoredObject, namespace: string, labels: LabelRequirement[], fields: FieldRequirement[]): boolean {
    if (def.namespaced && namespace && obj.metadata.namespace !== namespace) return false;
    return matchesLabels(labels, obj.metadata.labels) && matchesFields(fields, (f) => getPath(obj, f));
  }

  private applyPatch(type: PatchType, target: unknown, patch: unknown): unknown {
    try {
      if (type === 'json') return jsonPatch(target, patch);
      if (!isRecord(patch))
        throw new PatchError(
          `error decoding patch: json: cannot unmarshal ${Array.isArray(patch) ? 'array' : typeof patch} into Go value of type map[string]interface {}`,
          400,
        );
      return type === 'merge' ? mergePatch(target, patch) : strategicMergePatch(target, patch);
    } catch (e) {
      if (e instanceof PatchError) {
        if (e.code === 400) throw errors.badRequest(e.message);
        throw errorsInvalidPatch(e.message);
      }
      throw e;
    }
  }

  /** What the API server's decoder does: kind/apiVersion/namespace/name consistency and types it can parse. */
  private decode(def: ResourceDef, body: KubeObject, namespace: string | undefined, name: string | undefined): KubeObject & { metadata: ObjectMetaLike } {
    if (!isRecord(body)) throw errors.badRequest(`${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: the object is not a JSON object`);
    const obj = clone(body) as KubeObject & { metadata: ObjectMetaLike };
    const apiVersion = apiVersionOf(def);
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersion) {
      throw errors.badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersion})`);
    }
    if (obj.kind !== undefined && obj.kind !== def.kind) {
      throw errors.badRequest(`${obj.kind} in version "${def.version}" cannot be handled as a ${def.kind}: the kind in the data does not match`);
    }
    obj.apiVersion = apiVersion;
    obj.kind = def.kind;
    if (obj.metadata === undefined || obj.metadata === null) obj.metadata = {};
    if (!isRecord(obj.metadata))
      throw errors.badRequest(`${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: metadata must be an object`);
    if (def.namespaced) {
      const ns = namespace ?? obj.metadata.namespace;
      if (obj.metadata.namespace && ns && obj.metadata.namespace !== ns) {
        throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      if (ns) obj.metadata.namespace = ns;
    }
    if (name !== undefined && obj.metadata.name !== undefined && obj.metadata.name !== name) {
      throw errors.badRequest(`the name of the object (${String(obj.metadata.name)}) does not match the name on the URL (${name})`);
    }
    for (const path of def.microTimeFields ?? []) {
      const v = getPath(obj, path);
      if (v !== undefined && v !== null && (typeof v !== 'string' || !MICRO_TIME.test(v))) {
        throw errors.badRequest(
          `${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: parsing time ${JSON.stringify(JSON.stringify(v))} as "\\"2006-01-02T15:04:05.000000Z07:00\\"": cannot parse as RFC3339Micro (${path})`,
        );
      }
    }
    const problem = def.normalize?.(obj);
    if (problem) throw errors.badRequest(problem);
    return obj;
  }

  /** Update path shared by PUT, PATCH, status and scale writes. `obj` is decoded; `old` is the stored object. */
  private replace(def: ResourceDef, old: StoredObject, obj: KubeObject, options: WriteOptions, subresource?: 'scale'): StoredObject {
    const sub = options.subresource ?? subresource;
    // As kube-apiserver does (ValidateObjectMetaUpdate): a write that names another uid is refused
    // as invalid, which is how a patch carrying metadata.uid acts as a precondition.
    const givenUid = obj.metadata?.uid;
    if (typeof givenUid === 'string' && givenUid !== '' && givenUid !== old.metadata.uid) {
      throw errors.invalid(def, old.metadata.name, [
        { reason: 'FieldValueInvalid', field: 'metadata.uid', message: `Invalid value: "${givenUid}": field is immutable` },
      ]);
    }
    let next: StoredObject;
    if (options.subresource === 'status') {
      next = clone(old);
      if (obj['status'] === undefined) delete next['status'];
      else next['status'] = clone(obj['status']);
    } else {
      next = clone(obj) as StoredObject;
      if (def.statusSubresource && !options.keepStatus) {
        if (old['status'] === undefined) delete next['status'];
        else next['status'] = clone(old['status']);
      }
    }
    const meta = next.metadata;
    for (const k of ['uid', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'generation'] as const) {
      if (old.metadata[k] === undefined) delete meta[k];
      else (meta as Record<string, unknown>)[k] = old.metadata[k];
    }
    meta.name = old.metadata.name;
    if (old.metadata.namespace) meta.namespace = old.metadata.namespace;
    meta.resourceVersion = old.metadata.resourceVersion;
    if (def.generation && !deepEqual(specPart(old), specPart(next))) meta.generation = (old.metadata.generation ?? 0) + 1;
    const ctx: ValidationContext = { operation: 'UPDATE', resource: def, object: next, oldObject: clone(old) };
    if (sub) ctx.subresource = sub;
    this.admit(def, ctx, options);
    next = ctx.object;
    if (deepEqual(withoutRv(old), withoutRv(next))) return clone(old);
    if (options.dryRun) return clone(next);
    const id = nsName(old.metadata.namespace ?? '', old.metadata.name);
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      this.commit(def, id, 'MODIFIED', next, old);
      return this.remove(def, id, next);
    }
    this.commit(def, id, 'MODIFIED', next, old);
    const out = clone(next);
    if (!deepEqual(old.metadata.ownerReferences, next.metadata.ownerReferences)) this.collectIfDangling(def, next);
    return out;
  }

  /** Mutators, then metadata, built-in and registered validators; 422 Invalid with every cause. */
  private admit(def: ResourceDef, ctx: ValidationContext, options: WriteOptions): void {
    for (const m of this.mutators.get(keyOf(def)) ?? []) m(ctx);
    if (options.validate === false) return;
    const causes: StatusCause[] = [...validateObjectMeta(ctx.object, def.nameRule ?? 'subdomain', def.namespaced)];
    if (ctx.operation === 'UPDATE') causes.push(...validateFinalizersDuringDeletion(ctx));
    if (def.validate) causes.push(...def.validate(ctx));
    for (const v of this.validators.get(keyOf(def)) ?? []) causes.push(...v(ctx));
    if (causes.length > 0) throw errors.invalid(def, ctx.object.metadata.name ?? '', causes);
  }

  private commit(def: ResourceDef, id: string, type: WatchEventType, obj: StoredObject, old?: StoredObject): void {
    this.rv += 1;
    obj.metadata.resourceVersion = String(this.rv);
    const key = keyOf(def);
    this.bucket(def).set(id, obj);
    this.uids.set(obj.metadata.uid, { key, id });
    this.record({ rv: this.rv, key, type, object: clone(obj), ...(old ? { old: clone(old) } : {}) });
  }

  private remove(def: ResourceDef, id: string, obj: StoredObject): StoredObject {
    this.rv += 1;
    const gone = clone(obj);
    gone.metadata.resourceVersion = String(this.rv);
    const key = keyOf(def);
    this.bucket(def).delete(id);
    this.uids.delete(obj.metadata.uid);
    this.record({ rv: this.rv, key, type: 'DELETED', object: clone(gone) });
    this.collectDependents(obj.metadata.uid);
    return gone;
  }

  private record(entry: HistoryEntry): void {
    this.history.push(entry);
    while (this.history.length > this.historyLimit) this.compactedRv = this.history.shift()!.rv;
    for (const w of [...this.watchers]) if (w.key === entry.key) this.dispatch(w, entry);
  }

  private dispatch(w: Watcher, entry: HistoryEntry): void {
    const pass = (o: StoredObject | undefined) => o !== undefined && this.matches(w.def, o, w.namespace, w.labels, w.fields);
    const now = pass(entry.object);
    if (entry.type === 'MODIFIED') {
      const before = pass(entry.old);
      if (now && before) this.deliver(w, { type: 'MODIFIED', object: clone(entry.object) });
      else if (now) this.deliver(w, { type: 'ADDED', object: clone(entry.object) });
      else if (before) {
        const old = clone(entry.old!);
        old.metadata.resourceVersion = String(entry.rv);
        this.deliver(w, { type: 'DELETED', object: old });
      }
    } else if (now) {
      this.deliver(w, { type: entry.type, object: clone(entry.object) });
    }
  }

  private deliver(w: Watcher, ev: WatchEvent): void {
    try {
      w.listener(ev);
    } catch {
      // A misbehaving listener must never break the store (a real etcd does not care about its watchers).
    }
  }

  private dependentsOf(uid: string): Array<{ key: string; id: string; obj: StoredObject }> {
    const out: Array<{ key: string; id: string; obj: StoredObject }> = [];
    for (const [key, bucket] of this.objects) {
      for (const [id, obj] of bucket) {
        if ((obj.metadata.ownerReferences ?? []).some((r) => r.uid === uid)) out.push({ key, id, obj });
      }
    }
    return out;
  }

  private ownersAlive(refs: OwnerReference[]): boolean {
    return refs.some((r) => this.uids.has(r.uid));
  }

  private collectDependents(uid: string): void {
    for (const dep of this.dependentsOf(uid)) {
      const def = this.def(dep.key);
      const current = this.bucket(def).get(dep.id);
      if (!current || this.ownersAlive(current.metadata.ownerReferences ?? [])) continue;
      this.delete(def, current.metadata.namespace, current.metadata.name);
    }
  }

  private collectIfDangling(def: ResourceDef, obj: StoredObject): void {
    const refs = obj.metadata.ownerReferences ?? [];
    if (!this.collectDangling || refs.length === 0 || this.ownersAlive(refs)) return;
    const id = nsName(obj.metadata.namespace ?? '', obj.metadata.name);
    if (this.bucket(def).has(id)) this.delete(def, obj.metadata.namespace, obj.metadata.name);
  }

  private orphanDependents(owner: StoredObject): void {
    for (const dep of this.dependentsOf(owner.metadata.uid)) {
      const def = this.def(dep.key);
      const next = clone(dep.obj);
      next.metadata.ownerReferences = (next.metadata.ownerReferences ?? []).filter((r) => r.uid !== owner.metadata.uid);
      if (next.metadata.ownerReferences.length === 0) delete next.metadata.ownerReferences;
      this.commit(def, dep.id, 'MODIFIED', next, dep.obj);
    }
  }
}

function failureInvalidScale(name: string, replicas: unknown): KubeApiError {
  return errors.invalid({ group: 'autoscaling', resource: 'scale', kind: 'Scale' }, name, [
    { reason: 'FieldValueInvalid', field: 'spec.replicas', message: `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0` },
  ]);
}

function errorsInvalidPatch(message: string): KubeApiError {
  const e = errors.badRequest(message);
  e.status.code = 422;
  e.status.reason = 'Invalid';
  return e;
}
