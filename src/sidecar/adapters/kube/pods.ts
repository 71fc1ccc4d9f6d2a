// The sidecar's pod writes: role labels and link annotations, as one JSON merge patch; and the
// deletion of one pod a rollout replaces.
// Invariants: keys not mentioned are left alone (other writers' labels survive); callers patch
// only on transitions, since every write wakes Metacontroller; with a uid the write is refused
// for any other incarnation of the pod (see patchPodMetadata).
import type { V1Pod } from '@kubernetes/client-node';
import { mergePatchOptions, timeoutOptions, type CoreCalls } from './request.ts';

export interface PodMetadataChanges {
  labels?: Record<string, string | null>;
  annotations?: Record<string, string | null>;
  uid?: string;
}

/**
 * Sets (string) or removes (null) pod labels and annotations with one JSON merge patch. Keys not
 * mentioned are left alone. Callers patch only on transitions: every write wakes Metacontroller.
 * With `uid`, the patch carries metadata.uid as a precondition: the API server refuses it
 * (isReplaced: a 422, not the 409 of a stale resourceVersion) when the pod was deleted and
 * recreated under the same name since the caller looked, so a
 * master label meant for one incarnation never lands on the next (empty) one.
 */
export async function patchPodMetadata(
  calls: CoreCalls,
  namespace: string,
  name: string,
  changes: PodMetadataChanges,
): Promise<V1Pod> {
  const metadata: Record<string, unknown> = {};
  if (changes.uid) metadata['uid'] = changes.uid;
  if (changes.labels && Object.keys(changes.labels).length > 0) metadata['labels'] = changes.labels;
  if (changes.annotations && Object.keys(changes.annotations).length > 0) metadata['annotations'] = changes.annotations;
  return calls.core.patchNamespacedPod({ namespace, name, body: { metadata } }, mergePatchOptions(calls.timeoutMs));
}

/**
 * Deletes one pod (its StatefulSet recreates it from the current template), with metadata.uid
 * as a precondition so a decision about one incarnation never deletes the next. The pod's own
 * grace period applies: Redis gets SIGTERM and saves, as on any pod deletion.
 */
export async function deletePod(calls: CoreCalls, namespace: string, name: string, uid: string): Promise<void> {
  await calls.core.deleteNamespacedPod(
    { namespace, name, body: { preconditions: { uid } } },
    timeoutOptions(calls.timeoutMs),
  );
}
