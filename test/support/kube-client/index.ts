// One async client for a Kubernetes API server with a synchronous informer cache (see README.md):
// httpClient(kubeconfig), over a real kube-apiserver.
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
export { KubeApiError, type KubeObject, type StoredObject } from './objects.ts';
