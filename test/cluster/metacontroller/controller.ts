// One CompositeController run against the kube-api stand-in's store, following Metacontroller's
// documented behaviour (../shared/notes/metacontroller-contract.md; Metacontroller's
// pkg/controller/composite, common/manage_children, customize, finalizer):
//   sync(parent) = sync the finalizer -> claim children (adopt orphans matching the selector,
//   release owned ones that no longer match) -> related objects from the (cached) customize
//   hook -> POST the sync or finalize hook -> requeue after resyncAfterSeconds -> remove the
//   finalizer on finalized -> enforce the child selector (controller-uid) -> manage children
//   (delete unwanted, create missing with a controllerRef, three-way-merge update InPlace) ->
//   write status (with observedGeneration) only when it changed.
// A failed hook call changes nothing; any failure records a Warning Event `SyncError` on the
// parent and retries with exponential backoff. Child/related/parent changes requeue the parent.
// Invariants: one sync per parent at a time; store watch listeners only enqueue; the store is
// read directly (a perfectly synced informer cache).
import type { Logger } from 'pino';
import { KubeApiError } from '../../support/kube-api/errors.ts';
import { deepEqual } from '../../support/kube-api/patch.ts';
import { apiVersionOf, type KubeObject, type OwnerReference, type ResourceDef, type StoredObject } from '../../support/kube-api/resources.ts';
import { labelSelectorToString, matchesLabels, parseLabelSelector } from '../../support/kube-api/selectors.ts';
import type { ObjectStore, WatchEvent, WatchHandle } from '../../support/kube-api/store.ts';
import { ApplyError, applyUpdate, withLastApplied } from './apply.ts';
import { callHook, isBoolOrNull, isNumberOrNull, isObjectList, isObjectOrNull, resolveHook, type HookSpec, type ResolvedHook } from './hook-client.ts';
import { WorkQueue, type BackoffOptions } from './queue.ts';

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: string; values?: string[] }>;
}

/** The parts of a metacontroller.k8s.io/v1alpha1 CompositeController this stand-in reads. */
export interface CompositeController {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; [k: string]: unknown };
  spec: {
    generateSelector?: boolean;
    resyncPeriodSeconds?: number;
    parentResource: { apiVersion: string; resource: string; labelSelector?: LabelSelector };
    childResources?: Array<{ apiVersion: string; resource: string; updateStrategy?: { method?: string } }>;
    hooks?: { sync?: HookSpec; finalize?: HookSpec; customize?: HookSpec };
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export interface RelatedRule {
  apiVersion: string;
  resource: string;
  namespace?: string;
  names?: string[];
  labelSelector?: LabelSelector;
}

/** What happened to one parent, for tests. */
export interface ParentStats {
  /** Sync and finalize hook calls (attempts, successful or not). */
  syncCalls: number;
  finalizeCalls: number;
  customizeCalls: number;
  /** Status subresource writes issued (only when the status differed). */
  statusWrites: number;
  /** Child creates, updates and deletes issued. */
  childWrites: number;
  /** Syncs that ended in an error (each one recorded a SyncError event). */
  failures: number;
  /** The error of the most recent sync; undefined once a sync succeeds. */
  lastError: string | undefined;
  /** Completed syncs, successful or not. */
  syncs: number;
}

export interface ControllerOptions {
  store: ObjectStore;
  controller: CompositeController;
  hookBaseUrl: string;
  logger: Logger;
  backoff?: BackoffOptions;
  /** Overrides spec.resyncPeriodSeconds (milliseconds); 0 turns the periodic resync off. */
  resyncPeriodMs?: number;
}

const CONTROLLER_UID = 'controller-uid';
const CUSTOMIZE_TTL_MS = 20 * 60 * 1000;
const GC_FINALIZERS = new Set(['foregroundDeletion', 'orphan']);

class SyncFailure extends Error {
  override name = 'SyncFailure';
}

function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

/** Outer key of a children/related map: `Kind.version` or `Kind.group/version`. */
export function groupKey(apiVersion: string, kind: string): string {
  return `${kind}.${apiVersion}`;
}

function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return (obj.metadata?.ownerReferences ?? []).find((r) => r.controller === true);
}

function errorText(error: unknown): string {
  if (error instanceof KubeApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

export class CompositeControllerRunner {
  readonly name: string;
  readonly finalizerName: string;
  private readonly store: ObjectStore;
  private readonly cc: CompositeController;
  private readonly log: Logger;
  private readonly parentDef: ResourceDef;
  private readonly children: Array<{ def: ResourceDef; method: string }>;
  private readonly hooks: { sync?: ResolvedHook; finalize?: ResolvedHook; customize?: ResolvedHook };
  private readonly queue: WorkQueue;
  private readonly watches: WatchHandle[] = [];
  private readonly relatedWatches = new Map<string, WatchHandle>();
  private readonly relatedCache = new Map<string, StoredObject>();
  private readonly customizeCache = new Map<string, { rules: RelatedRule[]; at: number }>();
  private readonly stats = new Map<string, ParentStats>();
  private readonly events = new Map<string, string>();
  private readonly abort = new AbortController();
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(options: ControllerOptions) {
    this.store = options.store;
    this.cc = options.controller;
    this.name = this.cc.metadata.name;
    this.finalizerName = `metacontroller.io/compositecontroller-${this.name}`;
    this.log = options.logger.child({ controller: this.name });
    const spec = this.cc.spec;
    this.parentDef = this.resolveResource(spec.parentResource.apiVersion, spec.parentResource.resource);
    if (!this.parentDef.statusSubresource) throw new Error(`parent ${this.parentDef.resource} has no status subresource: Metacontroller ignores it`);
    this.children = (spec.childResources ?? []).map((c) => ({ def: this.resolveResource(c.apiVersion, c.resource), method: c.updateStrategy?.method ?? 'OnDelete' }));
    const hooks = spec.hooks ?? {};
    this.hooks = {};
    const sync = resolveHook(hooks.sync, options.hookBaseUrl);
    const finalize = resolveHook(hooks.finalize, options.hookBaseUrl);
    const customize = resolveHook(hooks.customize, options.hookBaseUrl);
    if (sync) this.hooks.sync = sync;
    if (finalize) this.hooks.finalize = finalize;
    if (customize) this.hooks.customize = customize;
    this.queue = new WorkQueue((key) => this.syncKey(key), options.backoff);

    this.watches.push(this.store.watch(this.parentDef, {}, (ev) => this.onParent(ev)));
    for (const { def } of this.children) this.watches.push(this.store.watch(def, {}, (ev) => this.onChild(ev)));
    const periodMs = options.resyncPeriodMs ?? (spec.resyncPeriodSeconds !== undefined ? Math.max(1, spec.resyncPeriodSeconds) * 1000 : 0);
    if (periodMs > 0) {
      this.resyncTimer = setInterval(() => {
        for (const p of this.store.list(this.parentDef)) this.enqueue(p);
      }, periodMs);
      this.resyncTimer.unref();
    }
  }

  // ---------------------------------------------------------------- public

  statsOf(key: string): ParentStats {
    let s = this.stats.get(key);
    if (s === undefined) {
      s = { syncCalls: 0, finalizeCalls: 0, customizeCalls: 0, statusWrites: 0, childWrites: 0, failures: 0, lastError: undefined, syncs: 0 };
      this.stats.set(key, s);
    }
    return s;
  }

  enqueueKey(key: string): void {
    this.queue.add(key);
  }

  whenIdle(): Promise<void> {
    return this.queue.whenIdle();
  }

  get idle(): boolean {
    return this.queue.idle;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const w of this.watches.splice(0)) w.stop();
    for (const w of this.relatedWatches.values()) w.stop();
    this.relatedWatches.clear();
    this.abort.abort();
    await this.queue.stop();
  }

  // ---------------------------------------------------------------- event handlers (enqueue only)

  private keyOf(obj: KubeObject): string {
    return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
  }

  private doNotMatchLabels(labels: Record<string, string> | undefined): boolean {
    const sel = this.cc.spec.parentResource.labelSelector;
    if (sel === undefined) return false;
    return !matchesLabels(parseLabelSelector(labelSelectorToString(sel)), labels);
  }

  private hasFinalizer(obj: KubeObject): boolean {
    return (obj.metadata?.finalizers ?? []).includes(this.finalizerName);
  }

  private enqueue(parent: KubeObject): void {
    if (!this.hasFinalizer(parent) && this.doNotMatchLabels(parent.metadata?.labels)) return;
    this.queue.add(this.keyOf(parent));
  }

  private onParent(ev: WatchEvent): void {
    if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') this.enqueue(ev.object as StoredObject);
  }

  /** The live parent a controllerRef points to, if it is ours. */
  private resolveControllerRef(namespace: string | undefined, ref: OwnerReference): StoredObject | undefined {
    if (splitApiVersion(ref.apiVersion).group !== this.parentDef.group || ref.kind !== this.parentDef.kind) return undefined;
    const parent = this.store.get(this.parentDef, this.parentDef.namespaced ? namespace : undefined, ref.name);
    if (parent === undefined || parent.metadata.uid !== ref.uid) return undefined;
    if (!this.hasFinalizer(parent) && this.doNotMatchLabels(parent.metadata.labels)) return undefined;
    return parent;
  }

  private onChild(ev: WatchEvent): void {
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') return;
    const child = ev.object as StoredObject;
    const ref = controllerRefOf(child);
    if (ref !== undefined) {
      const parent = this.resolveControllerRef(child.metadata.namespace, ref);
      if (parent) this.enqueue(parent);
      return;
    }
    // An orphan: parents whose selector matches it may adopt it (never when it is going away).
    if (ev.type === 'DELETED' || child.metadata.deletionTimestamp) return;
    for (const parent of this.store.list(this.parentDef, this.parentDef.namespaced ? { namespace: child.metadata.namespace ?? '' } : {})) {
      const sel = this.selectorOf(parent);
      if (sel !== undefined && matchesLabels(sel, child.metadata.labels)) this.enqueue(parent);
    }
  }

  private onRelated(ev: WatchEvent, def: ResourceDef): void {
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') return;
    const cur = ev.object as StoredObject;
    const uid = cur.metadata.uid;
    const old = this.relatedCache.get(uid);
    if (ev.type === 'DELETED') this.relatedCache.delete(uid);
    else this.relatedCache.set(uid, cur);
    if (old !== undefined && old.metadata.resourceVersion === cur.metadata.resourceVersion) return;
    const candidates = old !== undefined ? [old, cur] : [cur];
    for (const parent of this.store.list(this.parentDef)) {
      const cached = this.customizeCache.get(`${parent.metadata.uid}/${parent.metadata.generation ?? 0}`);
      if (cached === undefined) continue;
      if (cached.rules.some((rule) => candidates.some((obj) => this.relatedRuleMatches(parent, obj, def, rule)))) this.enqueue(parent);
    }
  }

  // ---------------------------------------------------------------- helpers

  private resolveResource(apiVersion: string, resource: string): ResourceDef {
    const { group, version } = splitApiVersion(apiVersion);
    const def = this.store.resources.byUrl(group, version, resource);
    if (def === undefined) throw new SyncFailure(`can't find resource "${resource}" in apiVersion "${apiVersion}"`);
    return def;
  }

  private defOfKind(apiVersion: string, kind: string): ResourceDef | undefined {
    return this.store.resources.all.find((d) => apiVersionOf(d) === apiVersion && d.kind === kind);
  }

  /** The children selector: controller-uid=<uid> with generateSelector, else the parent's spec.selector. */
  private selectorOf(parent: KubeObject): ReturnType<typeof parseLabelSelector> | undefined {
    if (this.cc.spec.generateSelector === true) return parseLabelSelector(`${CONTROLLER_UID}=${parent.metadata?.uid ?? ''}`);
    const sel = isRecord(parent['spec']) ? (parent['spec']['selector'] as LabelSelector | undefined) : undefined;
    const text = labelSelectorToString(sel);
    return text === '' ? undefined : parseLabelSelector(text);
  }

  private controllerRef(parent: StoredObject): OwnerReference {
    return { apiVersion: parent.apiVersion, kind: parent.kind, name: parent.metadata.name, uid: parent.metadata.uid, controller: true, blockOwnerDeletion: true };
  }

  private innerKey(obj: KubeObject, version: 'v1' | 'v2', parent: StoredObject): string {
    const ns = obj.metadata?.namespace ?? '';
    const name = obj.metadata?.name ?? '';
    if (version === 'v1') return ns === '' || ns === parent.metadata.namespace ? name : `${ns}/${name}`;
    return ns === '' ? name : `${ns}/${name}`;
  }

  /** Read-modify-write of the parent as Metacontroller's AtomicUpdate does (re-read on conflict; the uid must not change). */
  private atomicUpdate(parent: StoredObject, mutate: (obj: StoredObject) => boolean, subresource?: 'status'): { object: StoredObject; written: boolean } {
    for (let attempt = 0; attempt < 5; attempt++) {
      const fresh = this.store.get(this.parentDef, parent.metadata.namespace, parent.metadata.name);
      if (fresh === undefined) throw new KubeApiError({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'NotFound', code: 404, message: `${this.parentDef.resource} "${parent.metadata.name}" not found` });
      if (fresh.metadata.uid !== parent.metadata.uid) throw new SyncFailure(`original ${this.parentDef.kind} ${this.keyOf(parent)} is gone: got uid ${fresh.metadata.uid}, wanted ${parent.metadata.uid}`);
      if (!mutate(fresh)) return { object: fresh, written: false };
      try {
        return { object: this.store.update(this.parentDef, fresh, subresource ? { subresource, keepStatus: false } : { keepStatus: false }), written: true };
      } catch (error) {
        if (error instanceof KubeApiError && error.reason === 'Conflict') continue;
        throw error;
      }
    }
    throw new SyncFailure(`too many conflicts updating ${this.keyOf(parent)}`);
  }

  // ---------------------------------------------------------------- the sync

  private async syncKey(key: string): Promise<void> {
    if (this.stopped) return;
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const parent = this.store.get(this.parentDef, this.parentDef.namespaced ? namespace : undefined, name);
    if (parent === undefined) return;
    const stats = this.statsOf(key);
    const log = this.log.child({ namespace, name, uid: parent.metadata.uid });
    try {
      const retryAfter = await this.syncParent(parent, stats, log);
      stats.syncs += 1;
      stats.lastError = undefined;
      this.queue.forget(key);
      if (retryAfter !== undefined) this.queue.addAfter(key, retryAfter * 1000);
    } catch (error) {
      if (this.stopped) return;
      const message = errorText(error);
      stats.syncs += 1;
      stats.failures += 1;
      stats.lastError = message;
      const delay = this.queue.addRateLimited(key);
      log.warn({ err: message, retryInMs: delay }, 'sync failed');
      this.recordSyncError(parent, message, log);
    }
  }

  /** Returns the Retry-After seconds of a 429 (no error, no event), else undefined. */
  private async syncParent(initial: StoredObject, stats: ParentStats, log: Logger): Promise<number | undefined> {
    let parent = initial;
    if (!this.hasFinalizer(parent) && this.doNotMatchLabels(parent.metadata.labels)) return undefined;

    // The finalizer first, so that anything done below can be cleaned up.
    const wantFinalizer = this.hooks.finalize !== undefined;
    if (this.hasFinalizer(parent) !== wantFinalizer && !(wantFinalizer && parent.metadata.deletionTimestamp)) {
      try {
        parent = this.atomicUpdate(parent, (obj) => {
          const list = obj.metadata.finalizers ?? [];
          if (list.includes(this.finalizerName) === wantFinalizer) return false;
          obj.metadata.finalizers = wantFinalizer ? [...list, this.finalizerName] : list.filter((f) => f !== this.finalizerName);
          return true;
        }).object;
      } catch (error) {
        throw new SyncFailure(`can't sync finalizer for ${parent.kind} ${this.keyOf(parent)}: ${errorText(error)}`);
      }
    }

    const observed = this.claimChildren(parent);
    const related = await this.relatedObjects(parent, stats);

    const finalizing = parent.metadata.deletionTimestamp !== undefined && this.hooks.finalize !== undefined;
    const hook = finalizing ? this.hooks.finalize! : this.hooks.sync;
    if (hook === undefined) throw new SyncFailure('sync hook not defined');
    const request = { controller: this.cc, parent, children: observed.map, related, finalizing };
    if (finalizing) stats.finalizeCalls += 1;
    else stats.syncCalls += 1;
    const outcome = await callHook<{ status?: Json | null; children?: KubeObject[] | null; resyncAfterSeconds?: number | null; finalized?: boolean | null }>(hook, request, {
      hookType: finalizing ? 'finalize' : 'sync',
      signal: this.abort.signal,
      fields: { status: isObjectOrNull, children: isObjectList, resyncAfterSeconds: isNumberOrNull, finalized: isBoolOrNull },
    });
    if (outcome.kind === 'retryAfter') {
      log.info({ seconds: outcome.seconds }, 'hook answered 429: resync after Retry-After');
      return outcome.seconds;
    }
    if (outcome.kind === 'error') throw new SyncFailure(outcome.message);
    const response = outcome.response;
    const desiredList = (response.children ?? []).filter((c): c is KubeObject => c !== null);

    if (typeof response.resyncAfterSeconds === 'number' && response.resyncAfterSeconds > 0) {
      this.queue.addAfter(this.keyOf(parent), response.resyncAfterSeconds * 1000);
    }

    if (response.finalized === true) {
      try {
        parent = this.atomicUpdate(parent, (obj) => {
          const list = obj.metadata.finalizers ?? [];
          if (!list.includes(this.finalizerName)) return false;
          obj.metadata.finalizers = list.filter((f) => f !== this.finalizerName);
          return true;
        }).object;
      } catch (error) {
        throw new SyncFailure(`can't remove finalizer for ${parent.kind} ${this.keyOf(parent)}: ${errorText(error)}`);
      }
      log.info('finalized: finalizer removed');
    }

    // Every desired child must match the selector (controller-uid is added when missing).
    const selector = this.selectorOf(parent);
    if (selector === undefined) throw new SyncFailure('.spec.selector must have either matchLabels, matchExpressions, or both');
    const desired = new Map<string, Map<string, KubeObject>>();
    for (const raw of desiredList) {
      const child = structuredClone(raw);
      const meta = (child.metadata ??= {});
      const labels = meta.labels && typeof meta.labels === 'object' ? meta.labels : {};
      if (this.cc.spec.generateSelector === true && !(CONTROLLER_UID in labels)) {
        labels[CONTROLLER_UID] = parent.metadata.uid;
        meta.labels = labels;
      }
      if (!matchesLabels(selector, meta.labels)) {
        throw new SyncFailure(`labels on desired child ${String(child.kind)} ${meta.namespace ?? ''}/${meta.name ?? ''} don't match parent selector`);
      }
      const group = groupKey(String(child.apiVersion), String(child.kind));
      if (!desired.has(group)) desired.set(group, new Map());
      desired.get(group)!.set(this.innerKey(child, 'v2', parent), child);
    }

    let manageError: string | undefined;
    if (parent.metadata.deletionTimestamp === undefined || this.shouldFinalize(parent)) {
      manageError = this.manageChildren(parent, observed.objects, desired, stats, log);
    }

    try {
      const status: Json = { ...(response.status ?? {}), observedGeneration: parent.metadata.generation ?? 0 };
      const { written } = this.atomicUpdate(parent, (obj) => {
        if (deepEqual(obj['status'], status)) return false;
        obj['status'] = status;
        return true;
      }, 'status');
      if (written) stats.statusWrites += 1;
    } catch (error) {
      if (error instanceof KubeApiError && (error.reason === 'NotFound' || error.reason === 'Conflict')) return undefined;
      if (error instanceof SyncFailure && /is gone/.test(error.message)) return undefined;
      throw new SyncFailure(`can't update status for ${parent.kind} ${this.keyOf(parent)}: ${errorText(error)}`);
    }
    if (manageError !== undefined) throw new SyncFailure(`can't reconcile children for ${parent.kind} ${this.keyOf(parent)}: ${manageError}`);
    return undefined;
  }

  private shouldFinalize(parent: StoredObject): boolean {
    const finalizers = parent.metadata.finalizers ?? [];
    if (finalizers.some((f) => GC_FINALIZERS.has(f))) return false;
    return finalizers.includes(this.finalizerName) && this.hooks.finalize !== undefined;
  }

  /** The observed children: owned and matching, plus adopted orphans; owned ones that no longer match are released. */
  private claimChildren(parent: StoredObject): { map: Record<string, Record<string, KubeObject>>; objects: Map<string, Map<string, StoredObject>> } {
    const selector = this.selectorOf(parent);
    if (selector === undefined) throw new SyncFailure('.spec.selector must have either matchLabels, matchExpressions, or both');
    const version = this.hooks.sync?.version ?? 'v2';
    const map: Record<string, Record<string, KubeObject>> = {};
    const objects = new Map<string, Map<string, StoredObject>>();
    const parentDeleting = parent.metadata.deletionTimestamp !== undefined;
    for (const { def } of this.children) {
      const group = groupKey(apiVersionOf(def), def.kind);
      const inner: Record<string, KubeObject> = {};
      const byKey = new Map<string, StoredObject>();
      map[group] = inner;
      objects.set(group, byKey);
      const all = this.store.list(def, this.parentDef.namespaced ? { namespace: parent.metadata.namespace ?? '' } : {});
      for (let obj of all) {
        const ref = controllerRefOf(obj);
        const matches = matchesLabels(selector, obj.metadata.labels);
        if (ref !== undefined) {
          if (ref.uid !== parent.metadata.uid) continue;
          if (!matches) {
            if (!parentDeleting) this.release(def, obj, parent);
            continue;
          }
        } else {
          if (!matches || parentDeleting || obj.metadata.deletionTimestamp) continue;
          const adopted = this.adopt(def, obj, parent);
          if (adopted === undefined) continue;
          obj = adopted;
        }
        inner[this.innerKey(obj, version, parent)] = obj;
        byKey.set(this.innerKey(obj, 'v2', parent), obj);
      }
    }
    return { map, objects };
  }

  private adopt(def: ResourceDef, obj: StoredObject, parent: StoredObject): StoredObject | undefined {
    const fresh = this.store.get(this.parentDef, parent.metadata.namespace, parent.metadata.name);
    if (fresh === undefined || fresh.metadata.uid !== parent.metadata.uid || fresh.metadata.deletionTimestamp) return undefined;
    try {
      return this.store.patch(def, obj.metadata.namespace, obj.metadata.name, {
        metadata: { ownerReferences: [...(obj.metadata.ownerReferences ?? []), this.controllerRef(parent)], uid: obj.metadata.uid },
      }, { type: 'merge' });
    } catch (error) {
      if (error instanceof KubeApiError && error.reason === 'NotFound') return undefined;
      throw error;
    }
  }

  private release(def: ResourceDef, obj: StoredObject, parent: StoredObject): void {
    const refs = (obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== parent.metadata.uid);
    try {
      this.store.patch(def, obj.metadata.namespace, obj.metadata.name, { metadata: { ownerReferences: refs.length > 0 ? refs : null, uid: obj.metadata.uid } }, { type: 'merge' });
    } catch (error) {
      if (!(error instanceof KubeApiError && error.reason === 'NotFound')) throw error;
    }
  }

  // ---------------------------------------------------------------- related objects (customize hook)

  private async customizeRules(parent: StoredObject, stats: ParentStats): Promise<RelatedRule[]> {
    const hook = this.hooks.customize;
    if (hook === undefined) return [];
    const cacheKey = `${parent.metadata.uid}/${parent.metadata.generation ?? 0}`;
    const cached = this.customizeCache.get(cacheKey);
    if (cached !== undefined && Date.now() - cached.at < CUSTOMIZE_TTL_MS) return cached.rules;
    stats.customizeCalls += 1;
    const outcome = await callHook<{ relatedResources?: unknown }>(hook, { controller: this.cc, parent }, {
      hookType: 'customize',
      signal: this.abort.signal,
      fields: { relatedResources: (v) => (v === null || Array.isArray(v) ? undefined : `cannot unmarshal ${typeof v} into Go value of type []*v1alpha1.RelatedResourceRule`) },
    });
    if (outcome.kind === 'retryAfter') throw new SyncFailure(`customize hook answered 429 (retry after ${outcome.seconds} s)`);
    if (outcome.kind === 'error') throw new SyncFailure(outcome.message);
    const rules: RelatedRule[] = [];
    for (const raw of (outcome.response.relatedResources as unknown[] | null | undefined) ?? []) {
      if (raw === null) continue;
      if (!isRecord(raw)) throw new SyncFailure('customize hook failed: a relatedResources entry is not an object');
      const unknown = Object.keys(raw).filter((k) => !['apiVersion', 'resource', 'namespace', 'names', 'labelSelector'].includes(k));
      if (unknown.length > 0 && hook.version === 'v2') {
        throw new SyncFailure(`customize hook failed: strict validation failed for v2 webhookResponse (type: customize, mode: Strict): ${unknown.map((k) => `unknown field "relatedResources[].${k}"`).join(', ')}`);
      }
      rules.push(raw as unknown as RelatedRule);
    }
    this.customizeCache.set(cacheKey, { rules, at: Date.now() });
    return rules;
  }

  /** Metacontroller's selection types: `names` (optionally with a namespace) or a label selector (optionally with a namespace); never both names and a selector. */
  private selectionType(rule: RelatedRule): 'labels' | 'names' {
    const hasNames = Array.isArray(rule.names) && rule.names.length > 0;
    if (hasNames && rule.labelSelector != null) throw new SyncFailure(`related rule cannot have both names and labelSelector/namespaceSelector specified: ${JSON.stringify(rule)}`);
    return rule.labelSelector != null ? 'labels' : 'names';
  }

  private relatedRuleMatches(parent: StoredObject, obj: StoredObject, def: ResourceDef, rule: RelatedRule): boolean {
    try {
      if (obj.apiVersion !== rule.apiVersion || def.resource !== rule.resource) return false;
      if (this.selectionType(rule) === 'labels') {
        return matchesLabels(parseLabelSelector(labelSelectorToString(rule.labelSelector)), obj.metadata.labels);
      }
      if (this.parentDef.namespaced && obj.metadata.namespace !== parent.metadata.namespace) return false;
      return !rule.names || rule.names.length === 0 || rule.names.includes(obj.metadata.name);
    } catch {
      return false;
    }
  }

  private ensureRelatedWatch(def: ResourceDef): void {
    const key = `${def.group}/${def.resource}`;
    if (this.relatedWatches.has(key)) return;
    this.relatedWatches.set(key, this.store.watch(def, {}, (ev) => this.onRelated(ev, def)));
  }

  private async relatedObjects(parent: StoredObject, stats: ParentStats): Promise<Record<string, Record<string, KubeObject>>> {
    const rules = await this.customizeRules(parent, stats);
    const version = this.hooks.sync?.version ?? 'v2';
    const related: Record<string, Record<string, KubeObject>> = {};
    const ns = parent.metadata.namespace ?? '';
    for (const rule of rules) {
      const def = this.resolveResource(rule.apiVersion, rule.resource);
      this.ensureRelatedWatch(def);
      const type = this.selectionType(rule);
      const group = groupKey(rule.apiVersion, def.kind);
      const inner = (related[group] ??= {});
      if (this.parentDef.namespaced && rule.namespace && rule.namespace !== ns) {
        throw new SyncFailure(`requested related object namespace ${rule.namespace} differs from parent object namespace ${ns}`);
      }
      let found: StoredObject[];
      if (type === 'labels') {
        found = this.store.list(def, { namespace: this.parentDef.namespaced ? ns : (rule.namespace ?? ''), labelSelector: labelSelectorToString(rule.labelSelector) });
      } else {
        // As Metacontroller: names without a namespace are looked up in every namespace.
        found = this.store.list(def, { namespace: rule.namespace ?? '' });
        if (rule.names && rule.names.length > 0) found = found.filter((o) => rule.names!.includes(o.metadata.name));
      }
      for (const obj of found) inner[this.innerKey(obj, version, parent)] = obj;
    }
    return related;
  }

  // ---------------------------------------------------------------- children

  /** Deletes unwanted, creates missing, updates changed children; returns the aggregated error text. */
  private manageChildren(parent: StoredObject, observed: Map<string, Map<string, StoredObject>>, desired: Map<string, Map<string, KubeObject>>, stats: ParentStats, log: Logger): string | undefined {
    const errs: string[] = [];
    for (const [group, objects] of observed) {
      for (const [key, obj] of objects) {
        if (obj.metadata.deletionTimestamp) continue;
        if (desired.get(group)?.has(key)) continue;
        const def = this.defOfKind(obj.apiVersion, obj.kind);
        if (def === undefined) continue;
        try {
          this.store.delete(def, obj.metadata.namespace, obj.metadata.name, { propagationPolicy: 'Background', preconditions: { uid: obj.metadata.uid } });
          stats.childWrites += 1;
          log.info({ child: `${obj.kind} ${key}` }, 'deleting child');
        } catch (error) {
          if (!(error instanceof KubeApiError && error.reason === 'NotFound')) errs.push(`can't delete ${obj.kind} ${key}: ${errorText(error)}`);
        }
      }
    }
    for (const [group, objects] of desired) {
      for (const [key, child] of objects) {
        const def = this.defOfKind(String(child.apiVersion), String(child.kind));
        if (def === undefined) {
          errs.push(`can't find resource for ${String(child.apiVersion)} ${String(child.kind)}`);
          continue;
        }
        const ns = child.metadata?.namespace || parent.metadata.namespace;
        const old = observed.get(group)?.get(key);
        if (old !== undefined) {
          let next: Json;
          try {
            next = applyUpdate(old, child);
          } catch (error) {
            errs.push(error instanceof ApplyError ? error.message : errorText(error));
            continue;
          }
          if (deepEqual(next, old) || old.metadata.deletionTimestamp) continue;
          const method = this.children.find((c) => c.def === def)?.method ?? 'OnDelete';
          if (method === 'OnDelete' || method === '') continue;
          try {
            if (method === 'Recreate' || method === 'RollingRecreate') {
              this.store.delete(def, ns, old.metadata.name, { propagationPolicy: 'Background', preconditions: { uid: old.metadata.uid } });
              log.info({ child: `${child.kind} ${key}` }, 'deleting child for update (Recreate)');
            } else if (method === 'InPlace' || method === 'RollingInPlace') {
              this.store.update(def, next as KubeObject, { keepStatus: false });
              log.info({ child: `${child.kind} ${key}` }, 'updating child in place');
            } else {
              errs.push(`invalid update strategy for ${def.kind}: unknown method "${method}"`);
              continue;
            }
            stats.childWrites += 1;
          } catch (error) {
            if (error instanceof KubeApiError && (error.reason === 'NotFound' || error.reason === 'Conflict')) continue;
            errs.push(`can't update ${child.kind} ${key}: ${errorText(error)}`);
          }
          continue;
        }
        // Create: last-applied is the object as the hook returned it, before the controllerRef.
        const created = withLastApplied(child, child) as KubeObject;
        created.metadata = { ...created.metadata, ownerReferences: [...(created.metadata?.ownerReferences ?? []), this.controllerRef(parent)] };
        if (!created.metadata.namespace && def.namespaced) created.metadata.namespace = ns;
        try {
          this.store.create(def, created, { keepStatus: false });
          stats.childWrites += 1;
          log.info({ child: `${child.kind} ${key}` }, 'creating child');
        } catch (error) {
          if (error instanceof KubeApiError && error.reason === 'AlreadyExists') continue;
          errs.push(`can't create ${child.kind} ${key}: ${errorText(error)}`);
        }
      }
    }
    return errs.length > 0 ? errs.join('; ') : undefined;
  }

  // ---------------------------------------------------------------- events

  /** A Warning Event `SyncError` on the parent, aggregated by count as client-go's recorder does. */
  private recordSyncError(parent: StoredObject, message: string, log: Logger): void {
    const text = `Sync error: ${message}`;
    const dedupe = `${parent.metadata.uid}\u0000SyncError\u0000${text}`;
    const now = rfc3339(Date.now());
    const ns = parent.metadata.namespace ?? 'default';
    try {
      const existing = this.events.get(dedupe);
      if (existing !== undefined && this.store.get('events', ns, existing)) {
        this.store.mutate('events', ns, existing, (ev) => {
          ev['count'] = (typeof ev['count'] === 'number' ? ev['count'] : 1) + 1;
          ev['lastTimestamp'] = now;
        });
        return;
      }
      const name = `${parent.metadata.name}.${(BigInt(Date.now()) * 1_000_000n + BigInt(this.events.size)).toString(16)}`;
      this.store.create('events', {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name, namespace: ns },
        involvedObject: { apiVersion: parent.apiVersion, kind: parent.kind, namespace: parent.metadata.namespace, name: parent.metadata.name, uid: parent.metadata.uid, resourceVersion: parent.metadata.resourceVersion },
        reason: 'SyncError',
        message: text,
        type: 'Warning',
        source: { component: 'metacontroller' },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        reportingComponent: 'metacontroller',
      }, { keepStatus: false });
      this.events.set(dedupe, name);
    } catch (error) {
      log.warn({ err: errorText(error) }, 'could not record the SyncError event');
    }
  }
}
