// Children of one parent, as Metacontroller's ControllerRefManager and common/manage_children do:
// claim (owned + matching are observed; matching orphans are adopted with a controllerRef after
// a live re-read of the parent; owned ones that no longer match are released) and manage
// (delete what is no longer desired, create what is missing with last-applied + controllerRef,
// update what differs per the child resource's updateStrategy: InPlace = PUT of the three-way
// merge, Recreate = delete, OnDelete = never).
// Invariants: observed children come from the informer cache (they may lag: a stale write is a
// Conflict, AlreadyExists or NotFound, skipped, and the watch event that follows requeues the
// parent); every error is collected and returned, none stops the other children.
import type { Logger } from 'pino';
import { deepEqual } from '../../support/kube-api/patch.ts';
import type { KubeObject, StoredObject } from '../../support/kube-api/resources.ts';
import { matchesLabels } from '../../support/kube-api/selectors.ts';
import type { KubeClient, ResourceRef } from '../../support/kube-client/index.ts';
import { ApplyError, applyUpdate, withLastApplied } from './apply.ts';
import {
  childSelector,
  controllerRefOf,
  controllerRefTo,
  errorText,
  groupKey,
  innerKey,
  isApiError,
  SyncFailure,
  type CompositeController,
  type Json,
  type ParentStats,
} from './model.ts';

export interface ChildResource {
  def: ResourceRef;
  /** updateStrategy.method (default OnDelete). */
  method: string;
  /** The children map's outer key, `Kind.group/version`. */
  group: string;
}

export interface Observed {
  /** As the hook request carries it: outer key per declared child resource, inner key per hook version. */
  map: Record<string, Record<string, KubeObject>>;
  /** Outer key -> `namespace/name` -> the observed object. */
  objects: Map<string, Map<string, StoredObject>>;
}

export class Children {
  private readonly client: KubeClient;
  private readonly cc: CompositeController;
  private readonly parentDef: ResourceRef;
  readonly resources: ChildResource[];
  private readonly version: 'v1' | 'v2';

  constructor(client: KubeClient, cc: CompositeController, parentDef: ResourceRef, resources: ChildResource[], hookVersion: 'v1' | 'v2') {
    this.client = client;
    this.cc = cc;
    this.parentDef = parentDef;
    this.resources = resources;
    this.version = hookVersion;
  }

  async claim(parent: StoredObject): Promise<Observed> {
    const selector = childSelector(this.cc, parent);
    if (selector === undefined) throw new SyncFailure('.spec.selector must have either matchLabels, matchExpressions, or both');
    const map: Observed['map'] = {};
    const objects: Observed['objects'] = new Map();
    const parentDeleting = parent.metadata.deletionTimestamp !== undefined;
    for (const { def, group } of this.resources) {
      const inner: Record<string, KubeObject> = {};
      const byKey = new Map<string, StoredObject>();
      map[group] = inner;
      objects.set(group, byKey);
      for (let obj of this.client.list(def, this.parentDef.namespaced ? { namespace: parent.metadata.namespace ?? '' } : {})) {
        const ref = controllerRefOf(obj);
        const matches = matchesLabels(selector, obj.metadata.labels);
        if (ref !== undefined) {
          if (ref.uid !== parent.metadata.uid) continue;
          if (!matches) {
            if (!parentDeleting) await this.release(def, obj, parent);
            continue;
          }
        } else {
          if (!matches || parentDeleting || obj.metadata.deletionTimestamp) continue;
          const adopted = await this.adopt(def, obj, parent);
          if (adopted === undefined) continue;
          obj = adopted;
        }
        inner[innerKey(obj, this.version, parent)] = obj;
        byKey.set(innerKey(obj, 'v2', parent), obj);
      }
    }
    return { map, objects };
  }

  private async adopt(def: ResourceRef, obj: StoredObject, parent: StoredObject): Promise<StoredObject | undefined> {
    // canAdopt: an uncached read, so a parent deleted meanwhile adopts nothing.
    const fresh = await this.client.read(this.parentDef, parent.metadata.namespace, parent.metadata.name);
    if (fresh === undefined || fresh.metadata.uid !== parent.metadata.uid || fresh.metadata.deletionTimestamp) return undefined;
    try {
      return await this.client.patch(
        def,
        obj.metadata.namespace,
        obj.metadata.name,
        {
          metadata: { ownerReferences: [...(obj.metadata.ownerReferences ?? []), controllerRefTo(parent)], uid: obj.metadata.uid },
        },
        { type: 'merge' },
      );
    } catch (error) {
      if (isApiError(error, 'NotFound')) return undefined;
      throw error;
    }
  }

  private async release(def: ResourceRef, obj: StoredObject, parent: StoredObject): Promise<void> {
    const refs = (obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== parent.metadata.uid);
    try {
      await this.client.patch(
        def,
        obj.metadata.namespace,
        obj.metadata.name,
        { metadata: { ownerReferences: refs.length > 0 ? refs : null, uid: obj.metadata.uid } },
        { type: 'merge' },
      );
    } catch (error) {
      if (!isApiError(error, 'NotFound')) throw error;
    }
  }

  /** The declared child resource of a kind, or (undeclared kinds are created, never updated) discovery's. */
  private async resourceOf(apiVersion: string, kind: string): Promise<{ def: ResourceRef; declared?: ChildResource } | undefined> {
    const declared = this.resources.find((c) => c.group === groupKey(apiVersion, kind));
    if (declared) return { def: declared.def, declared };
    try {
      return { def: await this.client.resourceForKind(apiVersion, kind) };
    } catch (error) {
      if (isApiError(error, 'NotFound')) return undefined;
      throw error;
    }
  }

  /** Deletes unwanted, creates missing, updates changed children; returns the aggregated error text. */
  async manage(
    parent: StoredObject,
    observed: Observed['objects'],
    desired: Map<string, Map<string, KubeObject>>,
    stats: ParentStats,
    log: Logger,
  ): Promise<string | undefined> {
    const errs: string[] = [];
    for (const [group, objects] of observed) {
      const def = this.resources.find((c) => c.group === group)?.def;
      if (def === undefined) continue;
      for (const [key, obj] of objects) {
        if (obj.metadata.deletionTimestamp || desired.get(group)?.has(key)) continue;
        try {
          await this.client.delete(def, obj.metadata.namespace, obj.metadata.name, {
            propagationPolicy: 'Background',
            preconditions: { uid: obj.metadata.uid },
          });
          stats.childWrites += 1;
          log.info({ child: `${obj.kind} ${key}` }, 'deleting child');
        } catch (error) {
          if (!isApiError(error, 'NotFound')) errs.push(`can't delete ${obj.kind} ${key}: ${errorText(error)}`);
        }
      }
    }
    for (const [group, objects] of desired) {
      for (const [key, child] of objects) {
        const found = await this.resourceOf(String(child.apiVersion), String(child.kind));
        if (found === undefined) {
          errs.push(`can't find resource for ${String(child.apiVersion)} ${String(child.kind)}`);
          continue;
        }
        const { def, declared } = found;
        const ns = child.metadata?.namespace || parent.metadata.namespace;
        const old = observed.get(group)?.get(key);
        const error =
          old !== undefined
            ? await this.update(def, declared?.method ?? 'OnDelete', ns, old, child, stats, log, key)
            : await this.create(def, ns, child, parent, stats, log, key);
        if (error !== undefined) errs.push(error);
      }
    }
    return errs.length > 0 ? errs.join('; ') : undefined;
  }

  private async update(
    def: ResourceRef,
    method: string,
    ns: string | undefined,
    old: StoredObject,
    child: KubeObject,
    stats: ParentStats,
    log: Logger,
    key: string,
  ): Promise<string | undefined> {
    let next: Json;
    try {
      next = applyUpdate(old, child);
    } catch (error) {
      return error instanceof ApplyError ? error.message : errorText(error);
    }
    if (deepEqual(next, old) || old.metadata.deletionTimestamp) return undefined;
    if (method === 'OnDelete' || method === '') return undefined;
    try {
      if (method === 'Recreate' || method === 'RollingRecreate') {
        await this.client.delete(def, ns, old.metadata.name, { propagationPolicy: 'Background', preconditions: { uid: old.metadata.uid } });
        log.info({ child: `${child.kind} ${key}` }, 'deleting child for update (Recreate)');
      } else if (method === 'InPlace' || method === 'RollingInPlace') {
        await this.client.update(def, next as KubeObject);
        log.info({ child: `${child.kind} ${key}` }, 'updating child in place');
      } else {
        return `invalid update strategy for ${def.kind}: unknown method "${method}"`;
      }
      stats.childWrites += 1;
    } catch (error) {
      // A stale cache: the watch event that follows requeues the parent, which retries.
      if (isApiError(error, 'NotFound', 'Conflict')) return undefined;
      return `can't update ${child.kind} ${key}: ${errorText(error)}`;
    }
    return undefined;
  }

  private async create(
    def: ResourceRef,
    ns: string | undefined,
    child: KubeObject,
    parent: StoredObject,
    stats: ParentStats,
    log: Logger,
    key: string,
  ): Promise<string | undefined> {
    // Last-applied is the object as the hook returned it, before the controllerRef.
    const created = withLastApplied(child, child) as KubeObject;
    created.metadata = { ...created.metadata, ownerReferences: [...(created.metadata?.ownerReferences ?? []), controllerRefTo(parent)] };
    if (!created.metadata.namespace && def.namespaced && ns) created.metadata.namespace = ns;
    try {
      await this.client.create(def, created);
      stats.childWrites += 1;
      log.info({ child: `${child.kind} ${key}` }, 'creating child');
    } catch (error) {
      if (isApiError(error, 'AlreadyExists')) return undefined;
      return `can't create ${child.kind} ${key}: ${errorText(error)}`;
    }
    return undefined;
  }
}
