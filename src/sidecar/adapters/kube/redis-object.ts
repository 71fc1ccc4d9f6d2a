// The sidecar's one write to a Redis object: annotations recording what it did with a request
// written there (the switchover-status annotation); the same on a RedisCluster (`plural`: the
// reshard record). Never spec, never status: the spec is the
// user's and the status the hook's (Metacontroller replaces it whole on every sync).
// Invariants: a JSON merge patch of metadata.annotations only, keys not named left alone, with
// metadata.uid as a precondition so a record never lands on a re-created Redis of the same name.
import { GROUP, PLURAL, VERSION } from '../../../api/labels.ts';
import { mergePatchOptions, type RedisRef } from './request.ts';
import type { CustomObjectsApi } from '@kubernetes/client-node';

export async function patchRedisAnnotations(
  custom: CustomObjectsApi,
  timeoutMs: number,
  redis: RedisRef,
  annotations: Record<string, string | null>,
  plural: string = PLURAL,
  resourceVersion?: string,
): Promise<void> {
  const metadata: Record<string, unknown> = { annotations };
  if (redis.uid) metadata['uid'] = redis.uid;
  // A precondition: the patch is refused (409) if the object changed since that version.
  if (resourceVersion) metadata['resourceVersion'] = resourceVersion;
  await custom.patchNamespacedCustomObject(
    { group: GROUP, version: VERSION, plural, namespace: redis.namespace, name: redis.name, body: { metadata } },
    mergePatchOptions(timeoutMs),
  );
}
