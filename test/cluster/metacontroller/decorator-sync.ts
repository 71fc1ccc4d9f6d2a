// One target's sync, as Metacontroller's decorator controller runs it (decorator-runner.ts queues
// and retries it): skip a target that neither matches the selector nor carries our finalizer ->
// sync the finalizer -> observe its attachments -> POST the sync hook, or the finalize hook
// (`finalizing: true`) when the target is being deleted or no longer matches -> requeue after
// resyncAfterSeconds -> apply labels, annotations, status and `finalized` to the target with one
// update, only when something changed -> annotate the desired attachments -> manage them.
// Attachments are the objects of each attachment resource in the target's namespace whose
// controllerRef uid is the target's AND whose `metacontroller.k8s.io/decorator-controller`
// annotation names this controller (no selector, no adoption).
// Invariants: a failed hook call changes nothing; a null or absent `status` leaves the target's
// status as it is; the target's own update is made from the cached object, and a Conflict or
// NotFound on it ends the sync quietly (the watch event that follows requeues the target).
import type { Logger } from 'pino';
import { deepEqual } from '../../support/kube-api/patch.ts';
import type { KubeObject, StoredObject } from '../../support/kube-api/resources.ts';
import { labelSelectorToString, matchesLabels, parseLabelSelector, type LabelRequirement } from '../../support/kube-api/selectors.ts';
import { splitApiVersion, type KubeClient, type ResourceRef } from '../../support/kube-client/index.ts';
import { isRecord } from '../../support/records.ts';
import { callHook, isBoolOrNull, isNumberOrNull, isObjectList, isObjectOrNull, isStringMapOrNull, type ResolvedHook } from './hook-client.ts';
import { ChildManager, type ChildResource, type ObjectsByGroup } from './manage-children.ts';
import {
  controllerRefOf,
  errorText,
  groupKey,
  innerKey,
  isApiError,
  keyOf,
  SyncFailure,
  type DecoratorController,
  type DecoratorStats,
  type Json,
  type LabelSelector,
} from './model.ts';
import { hasFinalizer, shouldFinalize, syncFinalizer } from './runner-common.ts';

export const DECORATOR_ANNOTATION = 'metacontroller.k8s.io/decorator-controller';

type StringMap = Record<string, string | null>;
type DecoratorResponse = {
  labels?: StringMap | null;
  annotations?: StringMap | null;
  status?: Json | null;
  attachments?: Array<KubeObject | null> | null;
  resyncAfterSeconds?: number | null;
  finalized?: boolean | null;
};

/** `Kind.group`: how Metacontroller keys target kinds (the version does not matter). */
export function kindKey(group: string, kind: string): string {
  return `${kind}.${group}`;
}

function requirements(sel: LabelSelector | undefined, what: string, rule: { apiVersion: string; resource: string }): LabelRequirement[] {
  try {
    return parseLabelSelector(labelSelectorToString(sel));
  } catch (error) {
    throw new SyncFailure(`can't convert ${what} selector for parent resource "${rule.resource}" in apiVersion "${rule.apiVersion}": ${errorText(error)}`);
  }
}

/** decoratorSelector: per target kind (group + kind), a label and an annotation selector; an object must match both. */
export class TargetSelector {
  private readonly byKind = new Map<string, { labels: LabelRequirement[]; annotations: LabelRequirement[] }>();

  constructor(rules: Array<{ rule: DecoratorController['spec']['resources'][number]; def: ResourceRef }>) {
    for (const { rule, def } of rules) {
      const annotations = rule.annotationSelector && {
        matchLabels: rule.annotationSelector.matchAnnotations,
        matchExpressions: rule.annotationSelector.matchExpressions,
      };
      this.byKind.set(kindKey(def.group, def.kind), {
        labels: requirements(rule.labelSelector, 'label', rule),
        annotations: requirements(annotations, 'annotation', rule),
      });
    }
  }

  matches(obj: KubeObject): boolean {
    const sel = this.byKind.get(kindKey(splitApiVersion(String(obj.apiVersion ?? '')).group, String(obj.kind ?? '')));
    if (sel === undefined) return false;
    return matchesLabels(sel.labels, obj.metadata?.labels) && matchesLabels(sel.annotations, obj.metadata?.annotations);
  }
}

/** updateStringMap: a null value deletes the key; returns whether anything changed. */
function updateStringMap(dest: Record<string, string>, updates: StringMap | null | undefined): boolean {
  let changed = false;
  for (const [k, v] of Object.entries(updates ?? {})) {
    if (v === null) {
      if (k in dest) {
        delete dest[k];
        changed = true;
      }
    } else if (dest[k] !== v) {
      dest[k] = v;
      changed = true;
    }
  }
  return changed;
}

export interface TargetSyncOptions {
  client: KubeClient;
  dc: DecoratorController;
  finalizerName: string;
  hooks: { sync?: ResolvedHook; finalize?: ResolvedHook };
  selector: TargetSelector;
  attachments: ChildResource[];
  /** For resyncAfterSeconds: requeue this target after `ms`. */
  requeueAfter: (target: StoredObject, ms: number) => void;
  signal: AbortSignal;
}

export class TargetSync {
  private readonly o: TargetSyncOptions;
  private readonly manager: ChildManager;

  constructor(options: TargetSyncOptions) {
    this.o = options;
    this.manager = new ChildManager(options.client, options.attachments);
  }

  /** Ours: matches the selector, or still carries our finalizer. */
  isOurs(obj: KubeObject): boolean {
    return this.o.selector.matches(obj) || hasFinalizer(obj, this.o.finalizerName);
  }

  /** The target's attachments: one entry per attachment resource, even when empty; inner keys per hook version. */
  private observe(target: StoredObject, version: 'v1' | 'v2'): { map: Record<string, Record<string, KubeObject>>; objects: ObjectsByGroup<StoredObject> } {
    const map: Record<string, Record<string, KubeObject>> = {};
    const objects: ObjectsByGroup<StoredObject> = new Map();
    const namespace = target.metadata.namespace ?? '';
    for (const { def, group } of this.o.attachments) {
      const inner: Record<string, KubeObject> = {};
      const byKey = new Map<string, StoredObject>();
      map[group] = inner;
      objects.set(group, byKey);
      for (const obj of this.o.client.list(def, namespace !== '' ? { namespace } : {})) {
        if (controllerRefOf(obj)?.uid !== target.metadata.uid) continue;
        if (obj.metadata.annotations?.[DECORATOR_ANNOTATION] !== this.o.dc.metadata.name) continue;
        inner[innerKey(obj, version, target)] = obj;
        byKey.set(innerKey(obj, 'v2', target), obj);
      }
    }
    return { map, objects };
  }

  /** Returns the Retry-After seconds of a 429 (no error, no event), else undefined. */
  async sync(initial: StoredObject, def: ResourceRef, stats: DecoratorStats, log: Logger): Promise<number | undefined> {
    const { client, finalizerName, hooks } = this.o;
    const finalizeEnabled = hooks.finalize !== undefined;
    if (!this.isOurs(initial)) return undefined;
    // The finalizer first, so that anything done below can be cleaned up.
    const target = await syncFinalizer(client, def, initial, finalizerName, finalizeEnabled);
    if (!this.isOurs(target)) return undefined;

    // A target that opted out (no longer matches) is finalized too, not only one being deleted.
    const finalizing = finalizeEnabled && (target.metadata.deletionTimestamp !== undefined || !this.o.selector.matches(target));
    const hook = finalizing ? hooks.finalize : hooks.sync;
    if (hook === undefined) throw new SyncFailure('no enabled hooks found');
    const observed = this.observe(target, hook.version);
    if (finalizing) stats.finalizeCalls += 1;
    else stats.syncCalls += 1;
    const request = { controller: this.o.dc, object: target, attachments: observed.map, related: {}, finalizing };
    const outcome = await callHook<DecoratorResponse>(hook, request, {
      hookType: finalizing ? 'finalize' : 'sync',
      signal: this.o.signal,
      fields: {
        labels: isStringMapOrNull,
        annotations: isStringMapOrNull,
        status: isObjectOrNull,
        attachments: isObjectList,
        resyncAfterSeconds: isNumberOrNull,
        finalized: isBoolOrNull,
      },
    });
    if (outcome.kind === 'retryAfter') {
      log.info({ seconds: outcome.seconds }, 'hook answered 429: resync after Retry-After');
      return outcome.seconds;
    }
    if (outcome.kind === 'error') throw new SyncFailure(outcome.message);
    const response = outcome.response;
    const desired = this.desired(target, response.attachments ?? []);

    if (typeof response.resyncAfterSeconds === 'number' && response.resyncAfterSeconds > 0) {
      this.o.requeueAfter(target, response.resyncAfterSeconds * 1000);
    }
    if (!(await this.updateTarget(target, def, response, stats, log))) return undefined;

    if (target.metadata.deletionTimestamp === undefined || shouldFinalize(target, finalizerName, finalizeEnabled)) {
      const error = await this.manager.manage(target, observed.objects, desired, stats, log);
      if (error !== undefined) throw new SyncFailure(`can't reconcile children for ${target.kind} ${keyOf(target)}: ${error}`);
    }
    return undefined;
  }

  /** Desired attachments by group and `namespace/name`: the target's namespace by default, and our annotation. */
  private desired(target: StoredObject, list: Array<KubeObject | null>): ObjectsByGroup<KubeObject> {
    const desired: ObjectsByGroup<KubeObject> = new Map();
    for (const raw of list) {
      if (raw === null) continue;
      const child = structuredClone(raw);
      const meta = (child.metadata ??= {});
      if (!meta.namespace && target.metadata.namespace) meta.namespace = target.metadata.namespace;
      meta.annotations = { ...(isRecord(meta.annotations) ? meta.annotations : {}), [DECORATOR_ANNOTATION]: this.o.dc.metadata.name };
      const group = groupKey(String(child.apiVersion), String(child.kind));
      if (!desired.has(group)) desired.set(group, new Map());
      desired.get(group)!.set(innerKey(child, 'v2', target), child);
    }
    return desired;
  }

  /**
   * Labels, annotations, status and `finalized` in one update of the cached target (status first
   * through its subresource when it has one), only when something changed. Returns false when the
   * target changed or went meanwhile: the sync ends there, as upstream's does.
   */
  private async updateTarget(target: StoredObject, def: ResourceRef, response: DecoratorResponse, stats: DecoratorStats, log: Logger): Promise<boolean> {
    const { client, finalizerName } = this.o;
    const next = structuredClone(target);
    const labels = { ...(next.metadata.labels ?? {}) };
    const annotations = { ...(next.metadata.annotations ?? {}) };
    const current = isRecord(target['status']) ? target['status'] : undefined;
    const status = response.status ?? current;
    const labelsChanged = updateStringMap(labels, response.labels);
    const annotationsChanged = updateStringMap(annotations, response.annotations);
    const statusChanged = current === undefined ? status !== undefined : !deepEqual(current, status);
    const finalized = response.finalized === true && hasFinalizer(target, finalizerName);
    if (!labelsChanged && !annotationsChanged && !statusChanged && !finalized) return true;
    next.metadata.labels = labels;
    next.metadata.annotations = annotations;
    if (Object.keys(labels).length === 0) delete next.metadata.labels;
    if (Object.keys(annotations).length === 0) delete next.metadata.annotations;
    if (status !== undefined) next['status'] = status;
    try {
      if (statusChanged && def.statusSubresource) {
        const written = await client.update(def, next, { subresource: 'status' });
        stats.statusWrites += 1;
        next.metadata.resourceVersion = written.metadata.resourceVersion;
      }
    } catch (error) {
      if (isApiError(error, 'NotFound', 'Conflict')) return false;
      throw new SyncFailure(`can't update status: ${errorText(error)}`);
    }
    if (finalized) next.metadata.finalizers = (next.metadata.finalizers ?? []).filter((f) => f !== finalizerName);
    try {
      await client.update(def, next);
      stats.objectWrites += 1;
      if (finalized) log.info('finalized: finalizer removed');
    } catch (error) {
      if (isApiError(error, 'NotFound', 'Conflict')) return false;
      throw new SyncFailure(`can't update ${target.kind} ${keyOf(target)}: ${errorText(error)}`);
    }
    return true;
  }
}
