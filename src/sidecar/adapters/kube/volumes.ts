// The calls volume expansion makes: the claims of one Redis, the StorageClasses, a merge patch of
// one claim (its storage request and/or annotations), and reading and replacing the two
// StatefulSets. What to do with them is decide/volumes.ts's answer; this only calls.
// Invariants:
// - Claims are found by the pod selector labels of the Redis, which the StatefulSets' claim
//   templates copy onto every claim (hook/redis/children/statefulset.ts), in the Redis' namespace only.
// - Writes to a claim or a StatefulSet carry its uid as a precondition, so a write meant for one
//   incarnation never lands on a successor created under the same name.
// - A StatefulSet is only ever deleted with propagationPolicy Orphan: its pods (and claims) stay.
import type {
  AppsV1Api,
  StorageV1Api,
  V1PersistentVolumeClaim,
  V1StatefulSet,
  V1StorageClass,
} from '@kubernetes/client-node';
import { podSelectorLabels } from '../../../api/labels.ts';
import { isNotFound } from './errors.ts';
import { mergePatchOptions, timeoutOptions, type CoreCalls } from './request.ts';

/** What the volume calls need from the client: core for claims, storage for classes, apps for StatefulSets. */
export interface VolumeCalls extends CoreCalls {
  storage: StorageV1Api;
  apps: AppsV1Api;
}

export interface ClaimChanges {
  /** spec.resources.requests.storage. */
  storage?: string;
  /** Set (string) or remove (null); keys not named are left alone. */
  annotations?: Record<string, string | null>;
  /** metadata.uid precondition. */
  uid?: string;
}

/** `k=v,k=v` of the Redis' pod selector labels (also on its claims). */
export function claimSelector(redisName: string): string {
  return Object.entries(podSelectorLabels(redisName))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The PersistentVolumeClaims of the Redis `name` in `namespace` (one list call). */
export async function listRedisClaims(
  calls: VolumeCalls,
  namespace: string,
  name: string,
): Promise<V1PersistentVolumeClaim[]> {
  const list = await calls.core.listNamespacedPersistentVolumeClaim(
    { namespace, labelSelector: claimSelector(name) },
    timeoutOptions(calls.timeoutMs),
  );
  return list.items;
}

/** Every StorageClass (cluster-scoped; there are few). */
export async function listStorageClasses(calls: VolumeCalls): Promise<V1StorageClass[]> {
  const list = await calls.storage.listStorageClass({}, timeoutOptions(calls.timeoutMs));
  return list.items;
}

/** One JSON merge patch of a claim: its storage request and/or annotations, guarded by its uid. */
export async function patchClaim(
  calls: VolumeCalls,
  namespace: string,
  name: string,
  changes: ClaimChanges,
): Promise<V1PersistentVolumeClaim> {
  const metadata: Record<string, unknown> = {};
  if (changes.uid) metadata['uid'] = changes.uid;
  if (changes.annotations && Object.keys(changes.annotations).length > 0) metadata['annotations'] = changes.annotations;
  const body: Record<string, unknown> = { metadata };
  if (changes.storage !== undefined) body['spec'] = { resources: { requests: { storage: changes.storage } } };
  return calls.core.patchNamespacedPersistentVolumeClaim({ namespace, name, body }, mergePatchOptions(calls.timeoutMs));
}

/** The StatefulSet, or null when it does not exist. */
export async function getStatefulSet(
  calls: VolumeCalls,
  namespace: string,
  name: string,
): Promise<V1StatefulSet | null> {
  try {
    return await calls.apps.readNamespacedStatefulSet({ namespace, name }, timeoutOptions(calls.timeoutMs));
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/**
 * Deletes the StatefulSet with propagationPolicy Orphan and a uid precondition: its pods and
 * claims stay and keep running (the garbage collector only drops their owner reference), and a
 * successor under the same name is never deleted (409 Conflict instead). Metacontroller then
 * recreates it from the hook's desired object and it adopts the orphans.
 */
export async function deleteStatefulSetOrphan(
  calls: VolumeCalls,
  namespace: string,
  name: string,
  uid: string,
): Promise<void> {
  await calls.apps.deleteNamespacedStatefulSet(
    { namespace, name, body: { propagationPolicy: 'Orphan', preconditions: { uid } } },
    timeoutOptions(calls.timeoutMs),
  );
}
