// One async client for "a Kubernetes API" with a synchronous informer cache (see README.md):
// storeClient(store) over the in-process ObjectStore, httpClient(kubeconfig) over any API server.
export { storeClient } from './store-client.ts';
export { httpClient, type HttpClientOptions, type HttpKubeClient } from './http-client.ts';
export { apiError } from './http.ts';
export {
  apiVersionOfRef,
  qualifiedResource,
  splitApiVersion,
  type CacheEvent,
  type DeleteOptions,
  type EventType,
  type KubeClient,
  type PatchOptions,
  type PatchType,
  type ResourceRef,
  type SelectorOptions,
  type WatchHandle,
  type WriteOptions,
} from './types.ts';
export { KubeApiError } from '../kube-api/errors.ts';
