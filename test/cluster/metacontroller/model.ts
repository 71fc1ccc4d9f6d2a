// The shapes and small pure helpers the Metacontroller stand-in's parts share: the
// CompositeController and DecoratorController it reads, per-parent stats, the children selector (generateSelector's
// controller-uid or the parent's spec.selector), the controllerRef it writes, and the
// children/related map keys of hook requests (Metacontroller's common/ and composite/ packages).
// Invariant: pure; nothing here does I/O.
import { KubeApiError } from '../../support/kube-api/errors.ts';
import type { KubeObject, OwnerReference, StoredObject } from '../../support/kube-api/resources.ts';
import { labelSelectorToString, parseLabelSelector, type LabelRequirement } from '../../support/kube-api/selectors.ts';
import type { HookSpec } from './hook-client.ts';
import { isRecord } from '../../support/records.ts';

export type Json = Record<string, unknown>;

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

/** An annotation selector: a label selector over annotations (`matchAnnotations` for `matchLabels`). */
export interface AnnotationSelector {
  matchAnnotations?: Record<string, string>;
  matchExpressions?: LabelSelector['matchExpressions'];
}

/** The parts of a metacontroller.k8s.io/v1alpha1 DecoratorController this stand-in reads. */
export interface DecoratorController {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; [k: string]: unknown };
  spec: {
    resources: Array<{ apiVersion: string; resource: string; labelSelector?: LabelSelector; annotationSelector?: AnnotationSelector; [k: string]: unknown }>;
    attachments?: Array<{ apiVersion: string; resource: string; updateStrategy?: { method?: string } }>;
    resyncPeriodSeconds?: number;
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

/** A DecoratorController's stats: `childWrites` counts attachment writes; `objectWrites` the updates of the target itself. */
export interface DecoratorStats extends ParentStats {
  /** Updates of the target (labels, annotations, status without a subresource, finalizer removal) issued. */
  objectWrites: number;
}

export function newStats(): ParentStats {
  return { syncCalls: 0, finalizeCalls: 0, customizeCalls: 0, statusWrites: 0, childWrites: 0, failures: 0, lastError: undefined, syncs: 0 };
}

export const CONTROLLER_UID = 'controller-uid';

/** A sync failure with Metacontroller's wording; recorded as a SyncError event and retried. */
export class SyncFailure extends Error {
  override name = 'SyncFailure';
}

/** Outer key of a children/related map: `Kind.version` or `Kind.group/version`. */
export function groupKey(apiVersion: string, kind: string): string {
  return `${kind}.${apiVersion}`;
}

/** Parent keys (`namespace/name`) of the work queue and the stats. */
export function keyOf(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

export function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return (obj.metadata?.ownerReferences ?? []).find((r) => r.controller === true);
}

export function controllerRefTo(parent: StoredObject): OwnerReference {
  return { apiVersion: parent.apiVersion, kind: parent.kind, name: parent.metadata.name, uid: parent.metadata.uid, controller: true, blockOwnerDeletion: true };
}

export function errorText(error: unknown): string {
  if (error instanceof KubeApiError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

export function isApiError(error: unknown, ...reasons: string[]): boolean {
  return error instanceof KubeApiError && reasons.includes(error.reason ?? '');
}

/** The children selector: controller-uid=<uid> with generateSelector, else the parent's spec.selector. */
export function childSelector(cc: CompositeController, parent: KubeObject): LabelRequirement[] | undefined {
  if (cc.spec.generateSelector === true) return parseLabelSelector(`${CONTROLLER_UID}=${parent.metadata?.uid ?? ''}`);
  const sel = isRecord(parent['spec']) ? (parent['spec']['selector'] as LabelSelector | undefined) : undefined;
  const text = labelSelectorToString(sel);
  return text === '' ? undefined : parseLabelSelector(text);
}

/** Inner key of a children/related map: hook v2 `namespace/name`; v1 the bare name in the parent's namespace. */
export function innerKey(obj: KubeObject, version: 'v1' | 'v2', parent: StoredObject): string {
  const ns = obj.metadata?.namespace ?? '';
  const name = obj.metadata?.name ?? '';
  if (version === 'v1') return ns === '' || ns === parent.metadata.namespace ? name : `${ns}/${name}`;
  return ns === '' ? name : `${ns}/${name}`;
}
