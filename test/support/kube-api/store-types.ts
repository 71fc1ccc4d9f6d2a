// The store's vocabulary: the options and results of its API (shared with the HTTP side and the
// typed clients), and the shapes of its history entries and watchers, which the store's layers
// share but nothing outside the store sees (store.ts re-exports only the public ones).
import type { Status } from './errors.ts';
import type { KubeObject, ResourceDef, StoredObject } from './resources.ts';
import type { FieldRequirement, LabelRequirement } from './selectors.ts';

export type ResourceId = string | ResourceDef;
export type PatchType = 'json' | 'merge' | 'strategic';
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface WatchEvent {
  type: WatchEventType | 'BOOKMARK' | 'ERROR';
  object: StoredObject | Status | KubeObject;
}

export interface SelectorOptions {
  /** Omit (or '') for all namespaces. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface ListOptions extends SelectorOptions {
  limit?: number;
  continue?: string;
}

export interface ListResult {
  items: StoredObject[];
  resourceVersion: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface WatchOptions extends SelectorOptions {
  /** Replay events after this version; '' / '0' / omitted sends the current state as ADDED first. */
  resourceVersion?: string;
}

export interface WriteOptions {
  /** `status`: only status changes. Through the main resource, kinds with a status subresource keep their stored status unless keepStatus. */
  subresource?: 'status';
  /**
   * Keep the status given on create/update of the main resource. The in-process API defaults to
   * true (tests set pod status freely); the HTTP API always passes false, as a real server does.
   */
  keepStatus?: boolean;
  /** Run metadata, built-in and registered validation (default true). */
  validate?: boolean;
  dryRun?: boolean;
  /** The namespace from the request URL (HTTP); must agree with metadata.namespace when both are set. */
  namespace?: string;
  /** The name from the request URL (HTTP update); must agree with metadata.name. */
  name?: string;
}

export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: boolean;
}

export interface DeleteResult {
  /** The object as last stored (with deletionTimestamp if finalizers keep it). */
  object: StoredObject;
  /** True when the object is gone; false when finalizers keep it (deletionTimestamp set). */
  deleted: boolean;
}

export interface StoreOptions {
  resources?: ResourceDef[];
  /** Watch events kept for replay; older resourceVersions answer 410 Expired. */
  historyLimit?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  /** Collect objects written with ownerReferences none of which exist (the real GC does). Default true. */
  collectDanglingDependents?: boolean;
}

export interface HistoryEntry {
  rv: number;
  key: string;
  type: WatchEventType;
  object: StoredObject;
  old?: StoredObject;
}

export interface Watcher {
  key: string;
  namespace: string;
  labels: LabelRequirement[];
  fields: FieldRequirement[];
  def: ResourceDef;
  listener: (ev: WatchEvent) => void;
}

export interface WatchHandle {
  stop(): void;
}
