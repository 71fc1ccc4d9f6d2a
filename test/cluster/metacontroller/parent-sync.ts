// One parent's sync, as Metacontroller's composite controller runs it (controller.ts queues and
// retries it): sync the finalizer -> claim children -> related objects -> POST the sync or
// finalize hook -> requeue after resyncAfterSeconds -> remove the finalizer on finalized ->
// enforce the child selector -> manage children -> write status (with observedGeneration).
// Invariants: a failed hook call changes no child and no status; the parent's finalizer and
// status are written by read-modify-write of the live object (AtomicUpdate: a GET per attempt, the
// uid must not change), never from the cache; status is written only when it changed.
import type { Logger } from 'pino';
import { deepEqual } from '../../support/kube-api/patch.ts';
import type { KubeObject, StoredObject } from '../../support/kube-api/resources.ts';
import { labelSelectorToString, matchesLabels, parseLabelSelector } from '../../support/kube-api/selectors.ts';
import type { KubeClient, ResourceRef } from '../../support/kube-client/index.ts';
import type { Children } from './children.ts';
import { callHook, isBoolOrNull, isNumberOrNull, isObjectList, isObjectOrNull, type ResolvedHook } from './hook-client.ts';
import {
  childSelector,
  CONTROLLER_UID,
  errorText,
  groupKey,
  innerKey,
  isApiError,
  keyOf,
  SyncFailure,
  type CompositeController,
  type Json,
  type ParentStats,
} from './model.ts';
import type { WorkQueue } from './queue.ts';
import type { Related } from './related.ts';
import { atomicUpdate, hasFinalizer, shouldFinalize, syncFinalizer, updateFinalizer } from './runner-common.ts';

type SyncResponse = { status?: Json | null; children?: KubeObject[] | null; resyncAfterSeconds?: number | null; finalized?: boolean | null };

export interface ParentSyncOptions {
  client: KubeClient;
  cc: CompositeController;
  parentDef: ResourceRef;
  finalizerName: string;
  hooks: { sync?: ResolvedHook; finalize?: ResolvedHook; customize?: ResolvedHook };
  children: Children;
  related: Related;
  /** For resyncAfterSeconds: the hook's requested requeue goes on the controller's own queue. */
  queue: WorkQueue;
  signal: AbortSignal;
}

export class ParentSync {
  private readonly client: KubeClient;
  private readonly cc: CompositeController;
  private readonly parentDef: ResourceRef;
  private readonly finalizerName: string;
  private readonly hooks: { sync?: ResolvedHook; finalize?: ResolvedHook; customize?: ResolvedHook };
  private readonly children: Children;
  private readonly related: Related;
  private readonly queue: WorkQueue;
  private readonly signal: AbortSignal;

  constructor(options: ParentSyncOptions) {
    this.client = options.client;
    this.cc = options.cc;
    this.parentDef = options.parentDef;
    this.finalizerName = options.finalizerName;
    this.hooks = options.hooks;
    this.children = options.children;
    this.related = options.related;
    this.queue = options.queue;
    this.signal = options.signal;
  }

  // ---------------------------------------------------------------- which parents are ours

  doNotMatchLabels(labels: Record<string, string> | undefined): boolean {
    const sel = this.cc.spec.parentResource.labelSelector;
    if (sel === undefined) return false;
    return !matchesLabels(parseLabelSelector(labelSelectorToString(sel)), labels);
  }

  hasFinalizer(obj: KubeObject): boolean {
    return hasFinalizer(obj, this.finalizerName);
  }

  // ---------------------------------------------------------------- the sync

  /** Returns the Retry-After seconds of a 429 (no error, no event), else undefined. */
  async syncParent(initial: StoredObject, stats: ParentStats, log: Logger): Promise<number | undefined> {
    let parent = initial;
    if (!this.hasFinalizer(parent) && this.doNotMatchLabels(parent.metadata.labels)) return undefined;

    // The finalizer first, so that anything done below can be cleaned up.
    parent = await syncFinalizer(this.client, this.parentDef, parent, this.finalizerName, this.hooks.finalize !== undefined);

    const observed = await this.children.claim(parent);
    const related = await this.related.objects(parent, stats);

    const finalizing = parent.metadata.deletionTimestamp !== undefined && this.hooks.finalize !== undefined;
    const hook = finalizing ? this.hooks.finalize! : this.hooks.sync;
    if (hook === undefined) throw new SyncFailure('sync hook not defined');
    const request = { controller: this.cc, parent, children: observed.map, related, finalizing };
    if (finalizing) stats.finalizeCalls += 1;
    else stats.syncCalls += 1;
    const outcome = await callHook<SyncResponse>(hook, request, {
      hookType: finalizing ? 'finalize' : 'sync',
      signal: this.signal,
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
      this.queue.addAfter(keyOf(parent), response.resyncAfterSeconds * 1000);
    }

    if (response.finalized === true) {
      parent = await updateFinalizer(this.client, this.parentDef, parent, this.finalizerName, false, 'remove');
      log.info('finalized: finalizer removed');
    }

    const desired = this.desiredChildren(parent, desiredList);
    let manageError: string | undefined;
    if (parent.metadata.deletionTimestamp === undefined || shouldFinalize(parent, this.finalizerName, this.hooks.finalize !== undefined)) {
      manageError = await this.children.manage(parent, observed.objects, desired, stats, log);
    }

    try {
      const status: Json = { ...(response.status ?? {}), observedGeneration: parent.metadata.generation ?? 0 };
      const { written } = await atomicUpdate(
        this.client,
        this.parentDef,
        parent,
        (obj) => {
          if (deepEqual(obj['status'], status)) return false;
          obj['status'] = status;
          return true;
        },
        'status',
      );
      if (written) stats.statusWrites += 1;
    } catch (error) {
      if (isApiError(error, 'NotFound', 'Conflict')) return undefined;
      if (error instanceof SyncFailure && /is gone/.test(error.message)) return undefined;
      throw new SyncFailure(`can't update status for ${parent.kind} ${keyOf(parent)}: ${errorText(error)}`);
    }
    if (manageError !== undefined) throw new SyncFailure(`can't reconcile children for ${parent.kind} ${keyOf(parent)}: ${manageError}`);
    return undefined;
  }

  /** Every desired child must match the selector (controller-uid is added when missing). */
  private desiredChildren(parent: StoredObject, desiredList: KubeObject[]): Map<string, Map<string, KubeObject>> {
    const selector = childSelector(this.cc, parent);
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
      desired.get(group)!.set(innerKey(child, 'v2', parent), child);
    }
    return desired;
  }
}
