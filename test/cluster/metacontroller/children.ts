// Children of one CompositeController parent, as Metacontroller's ControllerRefManager does:
// claim (owned + matching are observed; matching orphans are adopted with a controllerRef after
// a live re-read of the parent; owned ones that no longer match are released); managing them
// (create, update per updateStrategy, delete) is manage-children.ts, shared with decorators.
// Invariants: observed children come from the informer cache (they may lag: a stale adoption or
// release is a NotFound, skipped, and the watch event that follows requeues the parent).
import type { Logger } from 'pino';
import type { KubeObject, StoredObject } from '../../support/kube-api/resources.ts';
import { matchesLabels } from '../../support/kube-api/selectors.ts';
import type { KubeClient, ResourceRef } from '../../support/kube-client/index.ts';
import { ChildManager, type ChildResource, type ObjectsByGroup } from './manage-children.ts';
import { childSelector, controllerRefOf, controllerRefTo, innerKey, isApiError, SyncFailure, type CompositeController, type ParentStats } from './model.ts';

export type { ChildResource } from './manage-children.ts';

export interface Observed {
  /** As the hook request carries it: outer key per declared child resource, inner key per hook version. */
  map: Record<string, Record<string, KubeObject>>;
  /** Outer key -> `namespace/name` -> the observed object. */
  objects: ObjectsByGroup<StoredObject>;
}

export class Children {
  private readonly client: KubeClient;
  private readonly cc: CompositeController;
  private readonly parentDef: ResourceRef;
  readonly resources: ChildResource[];
  private readonly version: 'v1' | 'v2';
  private readonly manager: ChildManager;

  constructor(client: KubeClient, cc: CompositeController, parentDef: ResourceRef, resources: ChildResource[], hookVersion: 'v1' | 'v2') {
    this.client = client;
    this.cc = cc;
    this.parentDef = parentDef;
    this.resources = resources;
    this.version = hookVersion;
    this.manager = new ChildManager(client, resources);
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

  /** Deletes unwanted, creates missing, updates changed children; returns the aggregated error text. */
  manage(
    parent: StoredObject,
    observed: Observed['objects'],
    desired: ObjectsByGroup<KubeObject>,
    stats: ParentStats,
    log: Logger,
  ): Promise<string | undefined> {
    return this.manager.manage(parent, observed, desired, stats, log);
  }
}
