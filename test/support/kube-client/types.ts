// One small async client for a Kubernetes API server (httpClient, over HTTP(S)). Reads are
// synchronous and come from an informer cache (`inform` first); writes are async and go to the
// API; failures are thrown as KubeApiError carrying the HTTP code and the API's Status (reason,
// message, details).
// Invariants:
// - get/list/watch on a resource that was not informed throw: a caller that forgot `inform`
//   fails at once, not with an empty answer.
// - Objects never leak by reference: what get/list/watch hand out is a copy.
// - The cache is updated before watch callbacks run, so a callback reading the cache sees at
//   least the state it is told about.
import type { KubeObject, StoredObject } from './objects.ts';

/** What discovery says about one resource. */
export interface ResourceRef {
  /** '' for the core group. */
  group: string;
  version: string;
  /** Plural, lower case: the URL segment. */
  resource: string;
  kind: string;
  namespaced: boolean;
  /** The resource has a /status subresource. */
  statusSubresource?: boolean;
}

export interface SelectorOptions {
  /** Omit (or '') for every namespace. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface CacheEvent {
  type: EventType;
  object: StoredObject;
}

export interface WatchHandle {
  stop(): void;
}

export interface WriteOptions {
  subresource?: 'status';
  dryRun?: boolean;
}

export type PatchType = 'merge' | 'strategic' | 'json';

export interface PatchOptions extends WriteOptions {
  type: PatchType;
}

export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  preconditions?: { uid?: string; resourceVersion?: string };
  gracePeriodSeconds?: number;
  dryRun?: boolean;
}

export interface KubeClient {
  /** Discovery by plural (`statefulsets` in `apps/v1`); a resource the API does not serve is a 404 KubeApiError. */
  resource(apiVersion: string, plural: string): Promise<ResourceRef>;
  /** Discovery by kind (`StatefulSet` in `apps/v1`); same failure as resource(). */
  resourceForKind(apiVersion: string, kind: string): Promise<ResourceRef>;

  /** Starts (once) a cache of every object of the resource; resolves when the initial list is in it. */
  inform(res: ResourceRef): Promise<void>;
  informed(res: ResourceRef): boolean;
  /** From the cache. */
  get(res: ResourceRef, namespace: string | undefined, name: string): StoredObject | undefined;
  /** From the cache, sorted by namespace/name. */
  list(res: ResourceRef, options?: SelectorOptions): StoredObject[];
  /** Cache events; the objects already cached are delivered first as ADDED, synchronously. */
  watch(res: ResourceRef, callback: (event: CacheEvent) => void): WatchHandle;

  /** A live GET past the cache (a quorum read); undefined when the object does not exist. */
  read(res: ResourceRef, namespace: string | undefined, name: string): Promise<StoredObject | undefined>;
  create(res: ResourceRef, obj: KubeObject, options?: WriteOptions): Promise<StoredObject>;
  /** PUT; a set metadata.resourceVersion that is stale is a 409 Conflict. */
  update(res: ResourceRef, obj: KubeObject, options?: WriteOptions): Promise<StoredObject>;
  patch(
    res: ResourceRef,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    options: PatchOptions,
  ): Promise<StoredObject>;
  /** Resolves with the object the API answered with, or undefined when it answered a Status. */
  delete(
    res: ResourceRef,
    namespace: string | undefined,
    name: string,
    options?: DeleteOptions,
  ): Promise<StoredObject | undefined>;

  /** Stops every informer and watch; pending writes still settle. */
  close(): Promise<void>;
}

export function apiVersionOfRef(res: ResourceRef): string {
  return res.group ? `${res.group}/${res.version}` : res.version;
}

/** `pods`, `statefulsets.apps`: how resources are named in messages and cache keys. */
export function qualifiedResource(res: ResourceRef): string {
  return res.group ? `${res.resource}.${res.group}` : res.resource;
}

export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}
