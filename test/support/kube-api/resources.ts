// The kinds the stand-in serves, one table entry per kind. Adding a kind is adding an entry to
// DEFAULT_RESOURCES (or passing `resources` to startKubeApi); everything else (routing, discovery,
// storage, watch, selectors, subresources) is derived from the entry.
// Invariant: the storage key is group + plural (version-independent, as in etcd), so a kind
// served under two versions would share objects; today every kind has exactly one version.
// The entry's shape and helpers are in resource-def.ts, the default table in default-resources.ts;
// this file owns the lookup (ResourceTable) and re-exports both, so importers use one path.
import { keyOf, type ResourceDef } from './resource-def.ts';

export {
  apiVersionOf,
  defineResource,
  getPath,
  keyOf,
  setPath,
  type KubeObject,
  type Mutator,
  type NameRule,
  type ObjectMetaLike,
  type Operation,
  type OwnerReference,
  type ResourceDef,
  type ResourceInput,
  type ScaleDef,
  type StoredObject,
  type ValidationContext,
  type Validator,
} from './resource-def.ts';
export { DEFAULT_RESOURCES } from './default-resources.ts';

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
