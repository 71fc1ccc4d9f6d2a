// Deletion as the generic registry and the garbage collector do it: uid and resourceVersion
// preconditions, deletionTimestamp while finalizers remain, the Background, Foreground and Orphan
// propagation policies, and ownerReference garbage collection.
// Invariant: garbage collection is synchronous: when an owner is removed, dependents whose owners
// are all gone are deleted before the call returns (the real GC is asynchronous; tests here want
// determinism). Dependents whose owners never existed are collected right after they are written
// (collectIfDangling, called by the write path), unless collectDanglingDependents is false.
import { errors } from './errors.ts';
import { keyOf, type OwnerReference, type StoredObject, type ResourceDef } from './resources.ts';
import { clone, nsName, rfc3339 } from './store-codec.ts';
import { StoreCore } from './store-core.ts';
import type { DeleteOptions, DeleteResult, ResourceId, StoreOptions } from './store-types.ts';

export abstract class DeletingStore extends StoreCore {
  protected readonly now: () => number;
  private readonly collectDangling: boolean;

  constructor(options: StoreOptions = {}) {
    super(options);
    this.now = options.now ?? Date.now;
    this.collectDangling = options.collectDanglingDependents ?? true;
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

  protected remove(def: ResourceDef, id: string, obj: StoredObject): StoredObject {
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

  protected collectIfDangling(def: ResourceDef, obj: StoredObject): void {
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
