// Related objects (Metacontroller's customize hook): the hook is called once per parent uid +
// generation (cached 20 minutes); each rule is resolved from the informer cache (labelSelector
// and/or names, each optionally with a namespace; names plus a selector is an error; a namespace
// other than the parent's is an error; as upstream v4.17 does, a rule without a namespace is
// looked up in every namespace, except a label selector under customize hook v1, which stays in
// the parent's); a rule's resource is informed and watched from then on, and any change of an
// object a cached rule matches (old or new state) requeues that parent.
// Invariants: one informer + watch per related resource however many parents ask for it;
// watch callbacks only enqueue.
import type { KubeObject, StoredObject } from '../../support/kube-api/resources.ts';
import { labelSelectorToString, matchesLabels, parseLabelSelector } from '../../support/kube-api/selectors.ts';
import type { CacheEvent, KubeClient, ResourceRef, WatchHandle } from '../../support/kube-client/index.ts';
import { callHook, type ResolvedHook } from './hook-client.ts';
import { groupKey, innerKey, isApiError, SyncFailure, type CompositeController, type ParentStats, type RelatedRule } from './model.ts';
import { isRecord } from '../../support/records.ts';

const CUSTOMIZE_TTL_MS = 20 * 60 * 1000;

export interface RelatedOptions {
  client: KubeClient;
  cc: CompositeController;
  parentDef: ResourceRef;
  hook: ResolvedHook | undefined;
  syncVersion: 'v1' | 'v2';
  signal: AbortSignal;
  /** Requeue a parent (the watch callbacks call nothing else). */
  enqueue: (parent: StoredObject) => void;
}

export class Related {
  private readonly o: RelatedOptions;
  private readonly watches = new Map<string, Promise<WatchHandle | undefined>>();
  private readonly lastSeen = new Map<string, StoredObject>();
  private readonly customizeCache = new Map<string, { rules: RelatedRule[]; at: number }>();
  private stopped = false;

  constructor(options: RelatedOptions) {
    this.o = options;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of await Promise.allSettled(this.watches.values())) if (w.status === 'fulfilled') w.value?.stop();
    this.watches.clear();
  }

  private async customizeRules(parent: StoredObject, stats: ParentStats): Promise<RelatedRule[]> {
    const hook = this.o.hook;
    if (hook === undefined) return [];
    const cacheKey = `${parent.metadata.uid}/${parent.metadata.generation ?? 0}`;
    const cached = this.customizeCache.get(cacheKey);
    if (cached !== undefined && Date.now() - cached.at < CUSTOMIZE_TTL_MS) return cached.rules;
    stats.customizeCalls += 1;
    const outcome = await callHook<{ relatedResources?: unknown }>(
      hook,
      { controller: this.o.cc, parent },
      {
        hookType: 'customize',
        signal: this.o.signal,
        fields: {
          relatedResources: (v) =>
            v === null || Array.isArray(v) ? undefined : `cannot unmarshal ${typeof v} into Go value of type []*v1alpha1.RelatedResourceRule`,
        },
      },
    );
    if (outcome.kind === 'retryAfter') throw new SyncFailure(`customize hook answered 429 (retry after ${outcome.seconds} s)`);
    if (outcome.kind === 'error') throw new SyncFailure(outcome.message);
    const rules: RelatedRule[] = [];
    for (const raw of (outcome.response.relatedResources as unknown[] | null | undefined) ?? []) {
      if (raw === null) continue;
      if (!isRecord(raw)) throw new SyncFailure('customize hook failed: a relatedResources entry is not an object');
      const unknown = Object.keys(raw).filter((k) => !['apiVersion', 'resource', 'namespace', 'names', 'labelSelector'].includes(k));
      if (unknown.length > 0 && hook.version === 'v2') {
        throw new SyncFailure(
          `customize hook failed: strict validation failed for v2 webhookResponse (type: customize, mode: Strict): ${unknown.map((k) => `unknown field "relatedResources[].${k}"`).join(', ')}`,
        );
      }
      rules.push(raw as unknown as RelatedRule);
    }
    this.customizeCache.set(cacheKey, { rules, at: Date.now() });
    return rules;
  }

  /** Metacontroller's selection types: `names` (optionally with a namespace) or a label selector; never both. */
  private selectionType(rule: RelatedRule): 'labels' | 'names' {
    const hasNames = Array.isArray(rule.names) && rule.names.length > 0;
    if (hasNames && rule.labelSelector != null)
      throw new SyncFailure(`related rule cannot have both names and labelSelector/namespaceSelector specified: ${JSON.stringify(rule)}`);
    return rule.labelSelector != null ? 'labels' : 'names';
  }

  private ruleMatches(parent: StoredObject, obj: StoredObject, def: ResourceRef, rule: RelatedRule): boolean {
    try {
      if (obj.apiVersion !== rule.apiVersion || def.resource !== rule.resource) return false;
      if (this.selectionType(rule) === 'labels') {
        if (rule.namespace && obj.metadata.namespace !== rule.namespace) return false;
        return matchesLabels(parseLabelSelector(labelSelectorToString(rule.labelSelector)), obj.metadata.labels);
      }
      if (this.o.parentDef.namespaced && obj.metadata.namespace !== parent.metadata.namespace) return false;
      return !rule.names || rule.names.length === 0 || rule.names.includes(obj.metadata.name);
    } catch {
      return false;
    }
  }

  private onEvent(ev: CacheEvent, def: ResourceRef): void {
    const cur = ev.object;
    const uid = cur.metadata.uid;
    const old = this.lastSeen.get(uid);
    if (ev.type === 'DELETED') this.lastSeen.delete(uid);
    else this.lastSeen.set(uid, cur);
    if (old !== undefined && old.metadata.resourceVersion === cur.metadata.resourceVersion) return;
    const candidates = old !== undefined ? [old, cur] : [cur];
    for (const parent of this.o.client.list(this.o.parentDef)) {
      const cached = this.customizeCache.get(`${parent.metadata.uid}/${parent.metadata.generation ?? 0}`);
      if (cached === undefined) continue;
      if (cached.rules.some((rule) => candidates.some((obj) => this.ruleMatches(parent, obj, def, rule)))) this.o.enqueue(parent);
    }
  }

  /** Informs and watches a related resource once. */
  private ensureWatch(def: ResourceRef): Promise<WatchHandle | undefined> {
    const key = `${def.group}/${def.resource}`;
    let pending = this.watches.get(key);
    if (pending === undefined) {
      pending = this.o.client.inform(def).then(() => (this.stopped ? undefined : this.o.client.watch(def, (ev) => this.onEvent(ev, def))));
      // A failed inform is retried by the next sync that needs it.
      pending.catch(() => this.watches.delete(key));
      this.watches.set(key, pending);
    }
    return pending;
  }

  private async resolve(apiVersion: string, resource: string): Promise<ResourceRef> {
    try {
      return await this.o.client.resource(apiVersion, resource);
    } catch (error) {
      if (isApiError(error, 'NotFound')) throw new SyncFailure(`can't find resource "${resource}" in apiVersion "${apiVersion}"`);
      throw error;
    }
  }

  async objects(parent: StoredObject, stats: ParentStats): Promise<Record<string, Record<string, KubeObject>>> {
    const rules = await this.customizeRules(parent, stats);
    const related: Record<string, Record<string, KubeObject>> = {};
    const ns = parent.metadata.namespace ?? '';
    for (const rule of rules) {
      const def = await this.resolve(rule.apiVersion, rule.resource);
      await this.ensureWatch(def);
      const type = this.selectionType(rule);
      const inner = (related[groupKey(rule.apiVersion, def.kind)] ??= {});
      if (this.o.parentDef.namespaced && rule.namespace && rule.namespace !== ns) {
        throw new SyncFailure(`requested related object namespace ${rule.namespace} differs from parent object namespace ${ns}`);
      }
      let found: StoredObject[];
      if (type === 'labels') {
        const parentsOnly = this.o.hook?.version === 'v1' && this.o.parentDef.namespaced;
        found = this.o.client.list(def, {
          namespace: rule.namespace ?? (parentsOnly ? ns : ''),
          labelSelector: labelSelectorToString(rule.labelSelector),
        });
      } else {
        // As Metacontroller: names without a namespace are looked up in every namespace.
        found = this.o.client.list(def, { namespace: rule.namespace ?? '' });
        if (rule.names && rule.names.length > 0) found = found.filter((o) => rule.names!.includes(o.metadata.name));
      }
      for (const obj of found) inner[innerKey(obj, this.o.syncVersion, parent)] = obj;
    }
    return related;
  }
}
