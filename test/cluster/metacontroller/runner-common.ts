// What the CompositeController and DecoratorController runners share (Metacontroller's common/,
// finalizer and dynamic clientset packages): the client they are given, discovery in
// Metacontroller's words, the AtomicUpdate of a parent, its finalizer, ShouldFinalize, and the
// bookkeeping around one sync (stats, backoff, the SyncError event).
// Invariants: a parent write is a read-modify-write of the live object (a GET per attempt; the uid
// must not change), never of the cache; runSync never throws: every failure is counted, retried
// with the key's backoff and recorded as one SyncError Warning event.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { KubeApiError } from '../../support/kube-api/errors.ts';
import type { KubeObject, StoredObject } from '../../support/kube-api/resources.ts';
import type { ObjectStore } from '../../support/kube-api/store.ts';
import { httpClient, storeClient, type KubeClient, type ResourceRef } from '../../support/kube-client/index.ts';
import type { EventRecorder } from './events.ts';
import { errorText, isApiError, keyOf, SyncFailure, type ParentStats } from './model.ts';
import type { WorkQueue } from './queue.ts';

const GC_FINALIZERS = new Set(['foregroundDeletion', 'orphan']);

/** Where the API is: exactly one of `client`, `store` or `kubeconfig`. */
export interface ApiOptions {
  /** Any KubeClient; the caller owns it (stop() does not close it). */
  client?: KubeClient;
  /** Convenience: the in-process store, wrapped with storeClient (closed by stop()). */
  store?: ObjectStore;
  /** Convenience: a kubeconfig path or KubeConfig, wrapped with httpClient (closed by stop()); its credentials are Metacontroller's. */
  kubeconfig?: string | KubeConfig;
}

/** The client of `options`; `owned` when it was made here (and is closed by stop()). */
export function clientOf(options: ApiOptions, caller: string): { client: KubeClient; owned: boolean } {
  const given = [options.client, options.store, options.kubeconfig].filter((x) => x !== undefined).length;
  if (given !== 1) throw new Error(`${caller}: pass exactly one of client, store or kubeconfig`);
  if (options.client) return { client: options.client, owned: false };
  if (options.store) return { client: storeClient(options.store), owned: true };
  return { client: httpClient(options.kubeconfig!), owned: true };
}

/** Discovery of a resource the controller names; a resource the API does not serve fails as Metacontroller words it. */
export async function discover(client: KubeClient, apiVersion: string, resource: string): Promise<ResourceRef> {
  try {
    return await client.resource(apiVersion, resource);
  } catch (error) {
    if (isApiError(error, 'NotFound')) throw new SyncFailure(`can't find resource "${resource}" in apiVersion "${apiVersion}"`);
    throw error;
  }
}

export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return (obj.metadata?.finalizers ?? []).includes(finalizer);
}

/** Read-modify-write of the live parent as Metacontroller's AtomicUpdate does (a GET per attempt; the uid must not change). */
export async function atomicUpdate(
  client: KubeClient,
  def: ResourceRef,
  parent: StoredObject,
  mutate: (obj: StoredObject) => boolean,
  subresource?: 'status',
): Promise<{ object: StoredObject; written: boolean }> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const fresh = await client.read(def, parent.metadata.namespace, parent.metadata.name);
    if (fresh === undefined)
      throw new KubeApiError({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        reason: 'NotFound',
        code: 404,
        message: `${def.resource} "${parent.metadata.name}" not found`,
      });
    if (fresh.metadata.uid !== parent.metadata.uid)
      throw new SyncFailure(`original ${def.kind} ${keyOf(parent)} is gone: got uid ${fresh.metadata.uid}, wanted ${parent.metadata.uid}`);
    if (!mutate(fresh)) return { object: fresh, written: false };
    try {
      return { object: await client.update(def, fresh, subresource ? { subresource } : {}), written: true };
    } catch (error) {
      if (isApiError(error, 'Conflict')) continue;
      throw error;
    }
  }
  throw new SyncFailure(`too many conflicts updating ${keyOf(parent)}`);
}

/** Adds (`want`) or removes the finalizer on the live parent; `what` names the step in the error. */
export async function updateFinalizer(
  client: KubeClient,
  def: ResourceRef,
  parent: StoredObject,
  finalizer: string,
  want: boolean,
  what: string,
): Promise<StoredObject> {
  try {
    return (
      await atomicUpdate(client, def, parent, (obj) => {
        const list = obj.metadata.finalizers ?? [];
        if (list.includes(finalizer) === want) return false;
        obj.metadata.finalizers = want ? [...list, finalizer] : list.filter((f) => f !== finalizer);
        return true;
      })
    ).object;
  } catch (error) {
    throw new SyncFailure(`can't ${what} finalizer for ${parent.kind} ${keyOf(parent)}: ${errorText(error)}`);
  }
}

/** finalizer.SyncObject: add the finalizer when a finalize hook is configured (never once deletion started), remove it when none is. */
export async function syncFinalizer(client: KubeClient, def: ResourceRef, parent: StoredObject, finalizer: string, enabled: boolean): Promise<StoredObject> {
  if (hasFinalizer(parent, finalizer) === enabled || (enabled && parent.metadata.deletionTimestamp)) return parent;
  return updateFinalizer(client, def, parent, finalizer, enabled, 'sync');
}

/** ShouldFinalize: manage children of a parent pending deletion only while our finalizer holds it and no GC finalizer does. */
export function shouldFinalize(parent: StoredObject, finalizer: string, enabled: boolean): boolean {
  const finalizers = parent.metadata.finalizers ?? [];
  if (finalizers.some((f) => GC_FINALIZERS.has(f))) return false;
  return finalizers.includes(finalizer) && enabled;
}

export interface SyncRun {
  /** The work-queue key. */
  key: string;
  parent: StoredObject;
  stats: ParentStats;
  queue: WorkQueue;
  events: EventRecorder;
  log: Logger;
  stopped: () => boolean;
}

/**
 * One sync with the queue's bookkeeping: a success forgets the key's failures (and requeues after
 * a 429's Retry-After, which `sync` returns in seconds); a failure is counted, requeued with
 * backoff and recorded as a SyncError Warning event on the parent.
 */
export async function runSync(run: SyncRun, sync: () => Promise<number | undefined>): Promise<void> {
  const { key, stats, queue } = run;
  try {
    const retryAfter = await sync();
    stats.syncs += 1;
    stats.lastError = undefined;
    queue.forget(key);
    if (retryAfter !== undefined) queue.addAfter(key, retryAfter * 1000);
  } catch (error) {
    if (run.stopped()) return;
    const message = errorText(error);
    stats.syncs += 1;
    stats.failures += 1;
    stats.lastError = message;
    const delay = queue.addRateLimited(key);
    run.log.warn({ err: message, retryInMs: delay }, 'sync failed');
    await run.events.warning(run.parent, 'SyncError', `Sync error: ${message}`, run.log);
  }
}

/** What a controller runner offers its handle (CompositeControllerRunner, DecoratorControllerRunner). */
export interface Runner<S extends { syncCalls: number; finalizeCalls: number; lastError?: string | undefined }> {
  readonly ready: Promise<void>;
  readonly finalizerName: string;
  statsOf(key: string): S;
  enqueueKey(key: string): void;
  whenIdle(): Promise<void>;
  stop(): Promise<void>;
}

/** The handle both start functions return: counts per parent key, resync, idle, stop (closing a client it made). */
export function runnerHandle<S extends { syncCalls: number; finalizeCalls: number; lastError?: string | undefined }>(
  runner: Runner<S>,
  client: KubeClient,
  owned: boolean,
) {
  return {
    ready: runner.ready,
    client,
    finalizer: runner.finalizerName,
    syncCount: (key: string) => {
      const s = runner.statsOf(key);
      return s.syncCalls + s.finalizeCalls;
    },
    stats: (key: string): S => ({ ...runner.statsOf(key) }),
    lastError: (key: string) => runner.statsOf(key).lastError,
    resync: (key: string) => runner.enqueueKey(key),
    waitForIdle: () => runner.whenIdle(),
    stop: async () => {
      await runner.stop();
      if (owned) await client.close();
    },
  };
}
