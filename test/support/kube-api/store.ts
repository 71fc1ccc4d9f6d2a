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
// The store is built in layers, each a class over the one below: store-core.ts (storage, history,
// reads, watches), store-deletion.ts (deletion and garbage collection), and this file (admission
// hooks and the write path: create, update, patch, the status and scale subresources). The pure
// parts are in store-codec.ts, the API's types in store-types.ts; this file re-exports those.
import { randomUUID } from 'node:crypto';
import { errors, type StatusCause } from './errors.ts';
import { deepEqual } from './patch.ts';
import {
  getPath,
  keyOf,
  setPath,
  type KubeObject,
  type Mutator,
  type ObjectMetaLike,
  type ResourceDef,
  type StoredObject,
  type ValidationContext,
  type Validator,
} from './resources.ts';
import {
  applyPatch,
  clone,
  decode,
  failureInvalidScale,
  GENERATE_NAME_CHARS,
  nsName,
  rfc3339,
  scaleOf,
  specPart,
  SYSTEM_META,
  withoutRv,
} from './store-codec.ts';
import { DeletingStore } from './store-deletion.ts';
import type { PatchType, ResourceId, WriteOptions } from './store-types.ts';
import { validateFinalizersDuringDeletion, validateObjectMeta } from './validation.ts';
import { isRecord } from '../records.ts';

export type {
  DeleteOptions,
  DeleteResult,
  ListOptions,
  ListResult,
  PatchType,
  ResourceId,
  SelectorOptions,
  StoreOptions,
  WatchEvent,
  WatchEventType,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from './store-types.ts';

export class ObjectStore extends DeletingStore {
  private readonly validators = new Map<string, Validator[]>();
  private readonly mutators = new Map<string, Mutator[]>();

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

  // ---------------------------------------------------------------- writes

  create(res: ResourceId, body: KubeObject, options: WriteOptions = {}): StoredObject {
    const def = this.def(res);
    const keepStatus = options.keepStatus ?? true;
    const obj = decode(def, body, options.namespace ?? body.metadata?.namespace, undefined);
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
    const obj = decode(def, body, options.namespace ?? body.metadata?.namespace, name);
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
    const patched = applyPatch(type, old, patch);
    if (!isRecord(patched)) throw errors.badRequest('the patch produced something that is not an object');
    const patchedRv = (patched['metadata'] as ObjectMetaLike | undefined)?.resourceVersion;
    if (patchedRv !== undefined && patchedRv !== old.metadata.resourceVersion) throw errors.conflict(def, name);
    const body = patched as KubeObject;
    body.metadata = { ...(body.metadata ?? {}), name, resourceVersion: old.metadata.resourceVersion };
    if (def.namespaced) body.metadata.namespace = old.metadata.namespace;
    const obj = decode(def, body, old.metadata.namespace, name);
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

  // ---------------------------------------------------------------- scale subresource

  getScale(res: ResourceId, namespace: string | undefined, name: string): KubeObject {
    const def = this.def(res);
    if (!def.scale) throw errors.notFoundPath();
    return scaleOf(def, this.read(def, namespace, name));
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
    return scaleOf(def, stored);
  }

  patchScale(res: ResourceId, namespace: string | undefined, name: string, patch: unknown, type: PatchType = 'merge'): KubeObject {
    const def = this.def(res);
    const current = this.getScale(def, namespace, name);
    const patched = applyPatch(type, current, patch) as KubeObject;
    return this.updateScale(def, namespace, name, patched);
  }

  // ---------------------------------------------------------------- internals

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
}
