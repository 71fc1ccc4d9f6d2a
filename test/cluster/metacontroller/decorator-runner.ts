// One DecoratorController run against a Kubernetes API through a KubeClient, following
// Metacontroller v4.17's pkg/controller/decorator: discovery of every target resource
// (`spec.resources`) and attachment resource (`spec.attachments`), their informer caches, the
// watches that enqueue targets, the work queue and its retries; one target's sync is
// decorator-sync.ts, and managing attachments is the CompositeController's manage-children.ts.
// Targets are enqueued on any event of a target that matches the selector (or carries our
// finalizer), on any event of an attachment whose controllerRef points to such a target, every
// `resyncPeriodSeconds` (at least 1 s), and after `resyncAfterSeconds`. Orphans are never adopted.
// Invariants: nothing syncs before start() has discovered every resource and every cache holds its
// initial list; one sync per target at a time; watch callbacks only enqueue; a customize hook is
// not modelled and makes `ready` reject rather than run without the related objects.
import type { Logger } from 'pino';
import type { KubeObject, OwnerReference, StoredObject } from '../../support/kube-api/resources.ts';
import { apiVersionOfRef, splitApiVersion, type CacheEvent, type KubeClient, type ResourceRef, type WatchHandle } from '../../support/kube-client/index.ts';
import { TargetSelector, TargetSync, kindKey } from './decorator-sync.ts';
import { EventRecorder } from './events.ts';
import { resolveHook, type ResolvedHook } from './hook-client.ts';
import type { ChildResource } from './manage-children.ts';
import { controllerRefOf, errorText, groupKey, newStats, type DecoratorController, type DecoratorStats } from './model.ts';
import { WorkQueue, type BackoffOptions } from './queue.ts';
import { discover, runSync } from './runner-common.ts';

export interface DecoratorRunnerOptions {
  client: KubeClient;
  controller: DecoratorController;
  hookBaseUrl: string;
  logger: Logger;
  backoff?: BackoffOptions;
  /** Overrides spec.resyncPeriodSeconds (milliseconds); 0 turns the periodic resync off. */
  resyncPeriodMs?: number;
}

/** Queue keys name the target kind too (`Kind.group|namespace/name`): a decorator may target several kinds. */
function queueKey(def: ResourceRef, obj: KubeObject): string {
  return `${kindKey(def.group, def.kind)}|${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

export class DecoratorControllerRunner {
  readonly name: string;
  readonly finalizerName: string;
  /** Resolves when discovery is done and every cache is synced; rejects if that failed. */
  readonly ready: Promise<void>;
  private readonly client: KubeClient;
  private readonly dc: DecoratorController;
  private readonly log: Logger;
  private readonly hooks: { sync?: ResolvedHook; finalize?: ResolvedHook };
  private readonly queue: WorkQueue;
  private readonly watches: WatchHandle[] = [];
  private readonly stats = new Map<string, DecoratorStats>();
  private readonly events: EventRecorder;
  private readonly abort = new AbortController();
  private readonly resyncPeriodMs: number;
  /** Target resources by `Kind.group`; set by start(), read only once `ready` resolved. */
  private readonly targets = new Map<string, ResourceRef>();
  private targetSync!: TargetSync;
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(options: DecoratorRunnerOptions) {
    this.client = options.client;
    this.dc = options.controller;
    this.name = this.dc.metadata.name;
    this.finalizerName = `metacontroller.io/decoratorcontroller-${this.name}`;
    this.log = options.logger.child({ controller: this.name, kind: 'DecoratorController' });
    const spec = this.dc.spec;
    this.hooks = {};
    const sync = resolveHook(spec.hooks?.sync, options.hookBaseUrl);
    const finalize = resolveHook(spec.hooks?.finalize, options.hookBaseUrl);
    if (sync) this.hooks.sync = sync;
    if (finalize) this.hooks.finalize = finalize;
    this.queue = new WorkQueue((key) => this.syncKey(key), options.backoff);
    this.events = new EventRecorder(this.client);
    this.resyncPeriodMs = options.resyncPeriodMs ?? (spec.resyncPeriodSeconds !== undefined ? Math.max(1, spec.resyncPeriodSeconds) * 1000 : 0);
    this.ready = this.start();
    // Callers that never await `ready` must not crash the process with an unhandled rejection.
    this.ready.catch((error: unknown) => this.log.error({ err: errorText(error) }, 'the controller could not start'));
  }

  private async start(): Promise<void> {
    const spec = this.dc.spec;
    if (spec.hooks === undefined || spec.hooks === null) throw new Error('no hooks defined');
    if (spec.hooks.customize !== undefined && spec.hooks.customize !== null) {
      throw new Error(`DecoratorController ${this.name}: a customize hook (related objects) is not modelled by the stand-in`);
    }
    const rules = await Promise.all((spec.resources ?? []).map(async (rule) => ({ rule, def: await discover(this.client, rule.apiVersion, rule.resource) })));
    for (const { def } of rules) this.targets.set(kindKey(def.group, def.kind), def);
    const attachments: ChildResource[] = await Promise.all(
      (spec.attachments ?? []).map(async (a) => {
        const def = await discover(this.client, a.apiVersion, a.resource);
        return { def, method: a.updateStrategy?.method ?? 'OnDelete', group: groupKey(apiVersionOfRef(def), def.kind) };
      }),
    );
    this.targetSync = new TargetSync({
      client: this.client,
      dc: this.dc,
      finalizerName: this.finalizerName,
      hooks: this.hooks,
      selector: new TargetSelector(rules),
      attachments,
      requeueAfter: (target, ms) => {
        const def = this.targets.get(kindKey(splitApiVersion(target.apiVersion).group, target.kind));
        if (def) this.queue.addAfter(queueKey(def, target), ms);
      },
      signal: this.abort.signal,
    });
    // As Metacontroller: every cache is synced before the first sync.
    await Promise.all([...this.targets.values(), ...attachments.map((a) => a.def)].map((def) => this.client.inform(def)));
    if (this.stopped) return;
    for (const def of this.targets.values()) this.watches.push(this.client.watch(def, (ev) => this.enqueue(def, ev.object)));
    for (const { def } of attachments) this.watches.push(this.client.watch(def, (ev) => this.onAttachment(ev)));
    if (this.resyncPeriodMs > 0) {
      this.resyncTimer = setInterval(() => {
        for (const def of this.targets.values()) for (const target of this.client.list(def)) this.enqueue(def, target);
      }, this.resyncPeriodMs);
      this.resyncTimer.unref();
    }
  }

  // ---------------------------------------------------------------- public

  /** Stats by `namespace/name` (targets of different kinds with one name share them). */
  statsOf(key: string): DecoratorStats {
    let s = this.stats.get(key);
    if (s === undefined) {
      s = { ...newStats(), objectWrites: 0 };
      this.stats.set(key, s);
    }
    return s;
  }

  /** Enqueue `namespace/name` for every target kind (a kind without such an object syncs nothing). */
  enqueueKey(key: string): void {
    for (const kind of this.targets.keys()) this.queue.add(`${kind}|${key}`);
  }

  async whenIdle(): Promise<void> {
    await this.ready;
    return this.queue.whenIdle();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const w of this.watches.splice(0)) w.stop();
    this.abort.abort();
    await this.queue.stop();
  }

  // ---------------------------------------------------------------- event handlers (enqueue only)

  private enqueue(def: ResourceRef, target: KubeObject): void {
    if (!this.targetSync.isOurs(target)) return;
    this.queue.add(queueKey(def, target));
  }

  /** The cached target a controllerRef points to, if it is one of ours (group and kind only; the version does not matter). */
  private resolveControllerRef(namespace: string | undefined, ref: OwnerReference): { def: ResourceRef; target: StoredObject } | undefined {
    const def = this.targets.get(kindKey(splitApiVersion(ref.apiVersion).group, ref.kind));
    if (def === undefined) return undefined;
    const target = this.client.get(def, def.namespaced ? namespace : undefined, ref.name);
    if (target === undefined || target.metadata.uid !== ref.uid || !this.targetSync.isOurs(target)) return undefined;
    return { def, target };
  }

  private onAttachment(ev: CacheEvent): void {
    // An orphan is nobody's attachment: decorators never adopt.
    const ref = controllerRefOf(ev.object);
    if (ref === undefined) return;
    const found = this.resolveControllerRef(ev.object.metadata.namespace, ref);
    if (found) this.enqueue(found.def, found.target);
  }

  private async syncKey(key: string): Promise<void> {
    if (this.stopped) return;
    try {
      await this.ready;
    } catch {
      return;
    }
    const bar = key.indexOf('|');
    const def = this.targets.get(key.slice(0, bar));
    const statsKey = key.slice(bar + 1);
    const slash = statsKey.indexOf('/');
    const namespace = statsKey.slice(0, slash);
    const name = statsKey.slice(slash + 1);
    const target = def && this.client.get(def, def.namespaced ? namespace : undefined, name);
    if (def === undefined || target === undefined) return;
    const log = this.log.child({ namespace, name, uid: target.metadata.uid });
    const stats = this.statsOf(statsKey);
    const run = { key, parent: target, stats, queue: this.queue, events: this.events, log, stopped: () => this.stopped };
    await runSync(run, () => this.targetSync.sync(target, def, stats, log));
  }
}
