// Managing the children (or attachments) of one parent as Metacontroller's
// common/manage_children does, for both controller kinds: delete what is observed and no longer
// desired (Background, uid precondition), create what is missing (last-applied annotation +
// controllerRef), update what differs per the resource's updateStrategy: InPlace = PUT of the
// three-way merge, Recreate = delete, OnDelete (the default) = never. A desired object of an
// undeclared kind is created when missing and never updated or deleted.
// Invariants: observed objects come from the informer cache (they may lag: a stale write is a
// Conflict, AlreadyExists or NotFound, skipped, and the watch event that follows requeues the
// parent); every error is collected and returned, none stops the other objects.
import type { Logger } from 'pino';
import { deepEqual } from '../../support/kube-api/patch.ts';
import type { KubeObject, StoredObject } from '../../support/kube-api/resources.ts';
import type { KubeClient, ResourceRef } from '../../support/kube-client/index.ts';
import { ApplyError, applyUpdate, withLastApplied } from './apply.ts';
import { controllerRefTo, errorText, groupKey, isApiError, type Json, type ParentStats } from './model.ts';

export interface ChildResource {
  def: ResourceRef;
  /** updateStrategy.method (default OnDelete). */
  method: string;
  /** The children map's outer key, `Kind.group/version`. */
  group: string;
}

/** Outer key (`Kind.group/version`) -> `namespace/name` -> object. */
export type ObjectsByGroup<T> = Map<string, Map<string, T>>;

export class ChildManager {
  private readonly client: KubeClient;
  private readonly resources: ChildResource[];

  constructor(client: KubeClient, resources: ChildResource[]) {
    this.client = client;
    this.resources = resources;
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
    observed: ObjectsByGroup<StoredObject>,
    desired: ObjectsByGroup<KubeObject>,
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
