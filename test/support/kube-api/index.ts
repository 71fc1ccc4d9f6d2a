// Entry point of the Kubernetes API server stand-in for tests (see README.md in this folder).
export { startKubeApi, KubeApiServer, type KubeApiOptions, type RequestRecord } from './server.ts';
export {
  ObjectStore,
  type ResourceId,
  type WatchEvent,
  type WatchHandle,
  type WriteOptions,
  type DeleteOptions,
  type ListOptions,
  type WatchOptions,
  type PatchType,
  type StoreOptions,
} from './store.ts';
export { Faults, type Fault, type FaultRule, type FaultAction } from './faults.ts';
export { KubeApiError, errors, type Status, type StatusCause } from './errors.ts';
export {
  DEFAULT_RESOURCES,
  defineResource,
  keyOf,
  apiVersionOf,
  getPath,
  setPath,
  ResourceTable,
  type ResourceDef,
  type ResourceInput,
  type KubeObject,
  type StoredObject,
  type ObjectMetaLike,
  type OwnerReference,
  type Validator,
  type Mutator,
  type ValidationContext,
  type ScaleDef,
} from './resources.ts';
export { parseLabelSelector, matchesLabels, parseFieldSelector, labelSelectorToString } from './selectors.ts';
export { mergePatch, jsonPatch, strategicMergePatch } from './patch.ts';
