// storeClient: the KubeClient over the in-process ObjectStore. The store IS the cache (a
// perfectly synced informer): reads and watches pass through to it, writes happen synchronously
// and resolve immediately. Writes take the HTTP API's path (status is dropped on create and kept
// on update for kinds with a status subresource), so code written against this client behaves
// the same against a real API server.
// Invariant: get/list/watch still require inform(), so a caller that forgets it fails here too.
import type { ObjectStore } from '../kube-api/store.ts';
import type { KubeObject, ResourceDef, StoredObject } from '../kube-api/resources.ts';
import { errors, KubeApiError } from '../kube-api/errors.ts';
import {
  apiVersionOfRef,
  qualifiedResource,
  splitApiVersion,
  type CacheEvent,
  type DeleteOptions,
  type KubeClient,
  type PatchOptions,
  type ResourceRef,
  type SelectorOptions,
  type WatchHandle,
  type WriteOptions,
} from './types.ts';

function notServed(what: string): KubeApiError {
  const e = errors.notFoundPath();
  e.status.message = `the server could not find the requested resource (${what})`;
  return e;
}

export function storeClient(store: ObjectStore): KubeClient {
  const informed = new Set<string>();
  const handles = new Set<{ stop(): void }>();

  const def = (res: ResourceRef): ResourceDef => {
    const found = store.resources.byUrl(res.group, res.version, res.resource);
    if (found === undefined) throw notServed(`${qualifiedResource(res)} ${apiVersionOfRef(res)}`);
    return found;
  };
  const cached = (res: ResourceRef): ResourceDef => {
    const d = def(res);
    if (!informed.has(qualifiedResource(d))) throw new Error(`kube-client: ${qualifiedResource(d)} is not informed (call inform() first)`);
    return d;
  };

  return {
    async resource(apiVersion, plural) {
      const { group, version } = splitApiVersion(apiVersion);
      const found = store.resources.byUrl(group, version, plural);
      if (found === undefined) throw notServed(`${plural} in ${apiVersion}`);
      return found;
    },
    async resourceForKind(apiVersion, kind) {
      const { group, version } = splitApiVersion(apiVersion);
      const found = store.resources.all.find((d) => d.group === group && d.version === version && d.kind === kind);
      if (found === undefined) throw notServed(`kind ${kind} in ${apiVersion}`);
      return found;
    },

    async inform(res) {
      informed.add(qualifiedResource(def(res)));
    },
    informed: (res) => informed.has(qualifiedResource(res)),
    get: (res, namespace, name) => store.get(cached(res), namespace, name),
    list: (res, options: SelectorOptions = {}) => store.list(cached(res), options),
    watch(res, callback: (event: CacheEvent) => void): WatchHandle {
      const handle = store.watch(cached(res), {}, (ev) => {
        if (ev.type === 'ADDED' || ev.type === 'MODIFIED' || ev.type === 'DELETED') callback({ type: ev.type, object: ev.object as StoredObject });
      });
      const wrapped = {
        stop: () => {
          handle.stop();
          handles.delete(wrapped);
        },
      };
      handles.add(wrapped);
      return wrapped;
    },

    async read(res, namespace, name) {
      return store.get(def(res), namespace, name);
    },
    async create(res, obj: KubeObject, options: WriteOptions = {}) {
      return store.create(def(res), obj, { keepStatus: false, ...(options.dryRun ? { dryRun: true } : {}) });
    },
    async update(res, obj: KubeObject, options: WriteOptions = {}) {
      return store.update(def(res), obj, {
        keepStatus: false,
        ...(options.subresource ? { subresource: options.subresource } : {}),
        ...(options.dryRun ? { dryRun: true } : {}),
      });
    },
    async patch(res, namespace, name, patch, options: PatchOptions) {
      return store.patch(def(res), namespace, name, patch, {
        type: options.type,
        keepStatus: false,
        ...(options.subresource ? { subresource: options.subresource } : {}),
        ...(options.dryRun ? { dryRun: true } : {}),
      });
    },
    async delete(res, namespace, name, options: DeleteOptions = {}) {
      // The store has no graceful deletion: gracePeriodSeconds changes nothing here.
      const { object } = store.delete(def(res), namespace, name, {
        ...(options.propagationPolicy ? { propagationPolicy: options.propagationPolicy } : {}),
        ...(options.preconditions ? { preconditions: options.preconditions } : {}),
        ...(options.dryRun ? { dryRun: true } : {}),
      });
      return object;
    },

    async close() {
      for (const h of [...handles]) h.stop();
      informed.clear();
    },
  };
}
