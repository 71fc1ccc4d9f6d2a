// httpClient: the KubeClient over a Kubernetes API server (a real kube-apiserver), with the
// credentials of a kubeconfig (a path, or a KubeConfig).
// Discovery from the API's discovery documents; one informer (list + watch) per informed
// resource feeding the synchronous cache; writes as plain REST calls.
// Invariants: inform() of one resource starts one informer however often it is called, and
// resolves once its initial list is cached (a failed initial list rejects every caller and the
// next inform() tries again); after close() no informer, watch or timer is left.
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, type KubeObject, type StoredObject } from './objects.ts';
import { Discovery } from './discovery.ts';
import { resourcePath, Transport } from './http.ts';
import { Informer, type InformerOptions } from './informer.ts';
import {
  apiVersionOfRef,
  qualifiedResource,
  type DeleteOptions,
  type KubeClient,
  type PatchOptions,
  type PatchType,
  type ResourceRef,
  type SelectorOptions,
  type WriteOptions,
} from './types.ts';

export interface HttpClientOptions extends InformerOptions {
  /** Deadline of every non-watch request (default 30 s). */
  requestTimeoutMs?: number;
}

/** The HTTP client plus what tests look at. */
export interface HttpKubeClient extends KubeClient {
  readonly server: string;
  /** Lists and watches done by the informer of a resource (undefined when not informed). */
  informerCounts(res: ResourceRef): { lists: number; watches: number } | undefined;
}

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
};

function loadKubeConfig(source: string | KubeConfig): KubeConfig {
  if (typeof source !== 'string') return source;
  const kc = new KubeConfig();
  kc.loadFromFile(source);
  return kc;
}

export function httpClient(kubeconfig: string | KubeConfig, options: HttpClientOptions = {}): HttpKubeClient {
  const transport = new Transport(loadKubeConfig(kubeconfig), options.requestTimeoutMs ?? 30_000);
  const discovery = new Discovery(transport);
  const informers = new Map<string, { informer: Informer; ready: Promise<void>; synced: boolean }>();
  let closed = false;

  const cacheOf = (res: ResourceRef) => {
    const entry = informers.get(qualifiedResource(res));
    if (entry === undefined || !entry.synced)
      throw new Error(`kube-client: ${qualifiedResource(res)} is not informed (await inform() first)`);
    return entry.informer.cache;
  };
  const dry = (o: { dryRun?: boolean }) => (o.dryRun ? { dryRun: 'All' } : {});
  const namespaceOf = (res: ResourceRef, obj: KubeObject): string | undefined => {
    const ns = obj.metadata?.namespace;
    if (res.namespaced && !ns) throw new Error(`kube-client: a ${res.kind} needs metadata.namespace`);
    return res.namespaced ? ns : undefined;
  };
  const subresourceOf = (res: ResourceRef, o: WriteOptions): string | undefined => {
    if (o.subresource === undefined) return undefined;
    if (o.subresource === 'status' && res.statusSubresource === false)
      throw new Error(`kube-client: ${qualifiedResource(res)} has no status subresource`);
    return o.subresource;
  };
  const typed = (res: ResourceRef, obj: unknown): StoredObject => {
    const o = obj as StoredObject;
    o.apiVersion ??= apiVersionOfRef(res);
    o.kind ??= res.kind;
    return o;
  };

  return {
    server: transport.server,
    resource: (apiVersion, plural) => discovery.byPlural(apiVersion, plural),
    resourceForKind: (apiVersion, kind) => discovery.byKind(apiVersion, kind),

    inform(res) {
      if (closed) return Promise.reject(new Error('kube-client: closed'));
      const key = qualifiedResource(res);
      const existing = informers.get(key);
      if (existing !== undefined) return existing.ready;
      const informer = new Informer(transport, res, options);
      const entry = { informer, ready: Promise.resolve(), synced: false };
      entry.ready = informer.start().then(
        () => {
          entry.synced = true;
        },
        (error: unknown) => {
          if (informers.get(key) === entry) informers.delete(key);
          throw error;
        },
      );
      informers.set(key, entry);
      return entry.ready;
    },
    informed: (res) => informers.get(qualifiedResource(res))?.synced === true,
    informerCounts: (res) => {
      const c = informers.get(qualifiedResource(res))?.informer.counts;
      return c ? { ...c } : undefined;
    },
    get: (res, namespace, name) => cacheOf(res).get(res.namespaced ? (namespace ?? '') : '', name),
    list: (res, o: SelectorOptions = {}) => cacheOf(res).list(res.namespaced ? o : { ...o, namespace: '' }),
    watch: (res, callback) => cacheOf(res).addListener(callback),

    async read(res, namespace, name) {
      try {
        return typed(res, await transport.request({ method: 'GET', path: resourcePath(res, namespace, name) }));
      } catch (error) {
        if (error instanceof KubeApiError && error.code === 404) return undefined;
        throw error;
      }
    },
    async create(res, obj, o: WriteOptions = {}) {
      const path = resourcePath(res, namespaceOf(res, obj));
      return typed(res, await transport.request({ method: 'POST', path, query: dry(o), body: obj }));
    },
    async update(res, obj, o: WriteOptions = {}) {
      const name = obj.metadata?.name;
      if (!name) throw new Error('kube-client: update needs metadata.name');
      const path = resourcePath(res, namespaceOf(res, obj), name, subresourceOf(res, o));
      return typed(res, await transport.request({ method: 'PUT', path, query: dry(o), body: obj }));
    },
    async patch(res, namespace, name, patch, o: PatchOptions) {
      const path = resourcePath(res, namespace, name, subresourceOf(res, o));
      return typed(
        res,
        await transport.request({
          method: 'PATCH',
          path,
          query: dry(o),
          body: patch,
          contentType: PATCH_CONTENT_TYPES[o.type],
        }),
      );
    },
    async delete(res, namespace, name, o: DeleteOptions = {}) {
      const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
      if (o.propagationPolicy) body['propagationPolicy'] = o.propagationPolicy;
      if (o.preconditions) body['preconditions'] = o.preconditions;
      if (o.gracePeriodSeconds !== undefined) body['gracePeriodSeconds'] = o.gracePeriodSeconds;
      if (o.dryRun) body['dryRun'] = ['All'];
      const answer = (await transport.request({
        method: 'DELETE',
        path: resourcePath(res, namespace, name),
        body,
      })) as KubeObject;
      return answer.kind === 'Status' ? undefined : typed(res, answer);
    },

    async close() {
      closed = true;
      const all = [...informers.values()];
      informers.clear();
      await Promise.all(all.map((e) => e.informer.stop()));
    },
  };
}
