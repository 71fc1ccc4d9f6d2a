// One CompositeController run against a Kubernetes API through a KubeClient (the in-process
// store, or a real API server over HTTP), following Metacontroller's documented behaviour
// (../shared/notes/metacontroller-contract.md; Metacontroller's pkg/controller/composite,
// common/manage_children, customize, finalizer):
//   sync(parent) = sync the finalizer -> claim children (adopt orphans matching the selector,
//   release owned ones that no longer match) -> related objects from the (cached) customize
//   hook -> POST the sync or finalize hook -> requeue after resyncAfterSeconds -> remove the
//   finalizer on finalized -> enforce the child selector (controller-uid) -> manage children
//   (delete unwanted, create missing with a controllerRef, three-way-merge update InPlace) ->
//   write status (with observedGeneration) only when it changed.
// A failed hook call changes nothing; any failure records a Warning Event `SyncError` on the
// parent and retries with exponential backoff. Child/related/parent changes requeue the parent.
// This module owns discovery, the caches and watches, the queue and the retries; one parent's sync
// is parent-sync.ts.
// Invariants: nothing syncs before start() has discovered every resource and the parent and
// child caches hold their initial lists; one sync per parent at a time; watch callbacks only
// enqueue; parents and children are read from the informer cache (as Metacontroller does: they
// may lag), the parent is re-read live only for the atomic finalizer/status updates and adoption.
import type { Logger } from 'pino';
import type { KubeObject, OwnerReference, StoredObject } from '../../support/kube-api/resources.ts';
import { matchesLabels } from '../../support/kube-api/selectors.ts';
import { apiVersionOfRef, splitApiVersion, type CacheEvent, type KubeClient, type ResourceRef, type WatchHandle } from '../../support/kube-client/index.ts';
import { Children } from './children.ts';
import { EventRecorder } from './events.ts';
import { resolveHook, type ResolvedHook } from './hook-client.ts';
import { childSelector, controllerRefOf, errorText, groupKey, keyOf, newStats, type CompositeController, type ParentStats } from './model.ts';
import { ParentSync } from './parent-sync.ts';
import { WorkQueue, type BackoffOptions } from './queue.ts';
import { Related } from './related.ts';
import { discover, runSync } from './runner-common.ts';

export type { CompositeController, LabelSelector, ParentStats, RelatedRule } from './model.ts';
export { groupKey } from './model.ts';

export interface ControllerOptions {
  client: KubeClient;
  controller: CompositeController;
  hookBaseUrl: string;
  logger: Logger;
  backoff?: BackoffOptions;
  /** Overrides spec.resyncPeriodSeconds (milliseconds); 0 turns the periodic resync off. */
  resyncPeriodMs?: number;
}

export class CompositeControllerRunner {
  readonly name: string;
  readonly finalizerName: string;
  /** Resolves when discovery is done and the parent/child caches are synced; rejects if that failed. */
  readonly ready: Promise<void>;
  private readonly client: KubeClient;
  private readonly cc: CompositeController;
  private readonly log: Logger;
  private readonly hooks: { sync?: ResolvedHook; finalize?: ResolvedHook; customize?: ResolvedHook };
  private readonly queue: WorkQueue;
  private readonly watches: WatchHandle[] = [];
  private readonly stats = new Map<string, ParentStats>();
  private readonly events: EventRecorder;
  private readonly abort = new AbortController();
  private readonly resyncPeriodMs: number;
  // Set by start(); nothing reads them before `ready` resolves.
  private parentDef!: ResourceRef;
  private related!: Related;
  private parentSync!: ParentSync;
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(options: ControllerOptions) {
    this.client = options.client;
    this.cc = options.controller;
    this.name = this.cc.metadata.name;
    this.finalizerName = `metacontroller.io/compositecontroller-${this.name}`;
    this.log = options.logger.child({ controller: this.name });
    const spec = this.cc.spec;
    const hooks = spec.hooks ?? {};
    this.hooks = {};
    const sync = resolveHook(hooks.sync, options.hookBaseUrl);
    const finalize = resolveHook(hooks.finalize, options.hookBaseUrl);
    const customize = resolveHook(hooks.customize, options.hookBaseUrl);
    if (sync) this.hooks.sync = sync;
    if (finalize) this.hooks.finalize = finalize;
    if (customize) this.hooks.customize = customize;
    this.queue = new WorkQueue((key) => this.syncKey(key), options.backoff);
    this.events = new EventRecorder(this.client);
    this.resyncPeriodMs = options.resyncPeriodMs ?? (spec.resyncPeriodSeconds !== undefined ? Math.max(1, spec.resyncPeriodSeconds) * 1000 : 0);
    this.ready = this.start();
    // Callers that never await `ready` must not crash the process with an unhandled rejection.
    this.ready.catch((error: unknown) => this.log.error({ err: errorText(error) }, 'the controller could not start'));
  }

  private async start(): Promise<void> {
    const spec = this.cc.spec;
    this.parentDef = await discover(this.client, spec.parentResource.apiVersion, spec.parentResource.resource);
    if (!this.parentDef.statusSubresource) throw new Error(`parent ${this.parentDef.resource} has no status subresource: Metacontroller ignores it`);
    const resources = await Promise.all(
      (spec.childResources ?? []).map(async (c) => {
        const def = await discover(this.client, c.apiVersion, c.resource);
        return { def, method: c.updateStrategy?.method ?? 'OnDelete', group: groupKey(apiVersionOfRef(def), def.kind) };
      }),
    );
    const version = this.hooks.sync?.version ?? 'v2';
    const children = new Children(this.client, this.cc, this.parentDef, resources, version);
    this.related = new Related({
      client: this.client,
      cc: this.cc,
      parentDef: this.parentDef,
      hook: this.hooks.customize,
      syncVersion: version,
      signal: this.abort.signal,
      enqueue: (p) => this.enqueue(p),
    });
    this.parentSync = new ParentSync({
      client: this.client,
      cc: this.cc,
      parentDef: this.parentDef,
      finalizerName: this.finalizerName,
      hooks: this.hooks,
      children,
      related: this.related,
      queue: this.queue,
      signal: this.abort.signal,
    });
    // As Metacontroller: every cache is synced before the first sync.
    await Promise.all([this.parentDef, ...resources.map((r) => r.def)].map((def) => this.client.inform(def)));
    if (this.stopped) return;
    this.watches.push(this.client.watch(this.parentDef, (ev) => this.enqueue(ev.object)));
    for (const { def } of resources) this.watches.push(this.client.watch(def, (ev) => this.onChild(ev)));
    if (this.resyncPeriodMs > 0) {
      this.resyncTimer = setInterval(() => {
        for (const p of this.client.list(this.parentDef)) this.enqueue(p);
      }, this.resyncPeriodMs);
      this.resyncTimer.unref();
    }
  }

  // ---------------------------------------------------------------- public

  statsOf(key: string): ParentStats {
    let s = this.stats.get(key);
    if (s === undefined) {
      s = newStats();
      this.stats.set(key, s);
    }
    return s;
  }

  enqueueKey(key: string): void {
    this.queue.add(key);
  }

  async whenIdle(): Promise<void> {
    await this.ready;
    return this.queue.whenIdle();
  }

  get idle(): boolean {
    return this.queue.idle;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    // start() registers no watch once stopped, so there is no need to wait for it here.
    for (const w of this.watches.splice(0)) w.stop();
    await this.related?.stop();
    this.abort.abort();
    await this.queue.stop();
  }

  // ---------------------------------------------------------------- event handlers (enqueue only)

  private enqueue(parent: KubeObject): void {
    if (!this.parentSync.hasFinalizer(parent) && this.parentSync.doNotMatchLabels(parent.metadata?.labels)) return;
    this.queue.add(keyOf(parent));
  }

  /** The cached parent a controllerRef points to, if it is ours. */
  private resolveControllerRef(namespace: string | undefined, ref: OwnerReference): StoredObject | undefined {
    if (splitApiVersion(ref.apiVersion).group !== this.parentDef.group || ref.kind !== this.parentDef.kind) return undefined;
    const parent = this.client.get(this.parentDef, this.parentDef.namespaced ? namespace : undefined, ref.name);
    if (parent === undefined || parent.metadata.uid !== ref.uid) return undefined;
    if (!this.parentSync.hasFinalizer(parent) && this.parentSync.doNotMatchLabels(parent.metadata.labels)) return undefined;
    return parent;
  }

  private onChild(ev: CacheEvent): void {
    const child = ev.object;
    const ref = controllerRefOf(child);
    if (ref !== undefined) {
      const parent = this.resolveControllerRef(child.metadata.namespace, ref);
      if (parent) this.enqueue(parent);
      return;
    }
    // An orphan: parents whose selector matches it may adopt it (never when it is going away).
    if (ev.type === 'DELETED' || child.metadata.deletionTimestamp) return;
    for (const parent of this.client.list(this.parentDef, this.parentDef.namespaced ? { namespace: child.metadata.namespace ?? '' } : {})) {
      const sel = childSelector(this.cc, parent);
      if (sel !== undefined && matchesLabels(sel, child.metadata.labels)) this.enqueue(parent);
    }
  }

  private async syncKey(key: string): Promise<void> {
    if (this.stopped) return;
    try {
      await this.ready;
    } catch {
      return;
    }
    const slash = key.indexOf('/');
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const parent = this.client.get(this.parentDef, this.parentDef.namespaced ? namespace : undefined, name);
    if (parent === undefined) return;
    const log = this.log.child({ namespace, name, uid: parent.metadata.uid });
    const run = { key, parent, stats: this.statsOf(key), queue: this.queue, events: this.events, log, stopped: () => this.stopped };
    await runSync(run, () => this.parentSync.syncParent(parent, run.stats, log));
  }
}
