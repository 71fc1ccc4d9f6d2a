// The RedisCluster customize hook: which related objects its sync and finalize need to see, by the
// parent alone (Metacontroller caches the answer per uid and generation). Invariants: never fails
// on a bad spec (names fall back to the generated Secret); every label-selector rule names the
// parent's namespace (hooks v2 would otherwise list, and watch, every namespace).
import { generatedAuthSecretRef, operatorSecretRef } from '../../api/auth.ts';
import { clusterBackupSelectorLabels, clusterPodSelectorLabels } from '../../api/cluster-names.ts';
import type { CustomizeRequest, CustomizeResponse } from '../types.ts';
import { at, str } from '../util.ts';

/** The password Secrets the pods read, and the S3 credentials of spec.backup: a change shows in status.secrets. */
function secretNames(name: string, spec: unknown): string[] {
  const auth = str(at(spec, 'auth', 'secretName'));
  const names = [auth !== undefined && auth !== '' ? auth : generatedAuthSecretRef(name).secretName, operatorSecretRef(name).secretName];
  const credentials = str(at(spec, 'backup', 'storage', 's3', 'credentialsSecret', 'name'));
  if (credentials !== undefined && credentials !== '' && !names.includes(credentials)) names.push(credentials);
  return names;
}

export function customizeCluster(request: CustomizeRequest): CustomizeResponse {
  const { name } = request.parent.metadata;
  const namespace = request.parent.metadata.namespace ?? '';
  const pods = { matchLabels: clusterPodSelectorLabels(name) };
  const backups = { matchLabels: clusterBackupSelectorLabels(name) };
  return {
    relatedResources: [
      // The pods (grandchildren): status and the scale-down rule read their cluster-node records,
      // so a changed annotation resyncs the RedisCluster.
      { apiVersion: 'v1', resource: 'pods', namespace, labelSelector: pods },
      { apiVersion: 'v1', resource: 'secrets', namespace, names: secretNames(name, request.parent.spec) },
      // Made from the claim templates, which carry the pod selector labels: finalize waits on them.
      { apiVersion: 'v1', resource: 'persistentvolumeclaims', namespace, labelSelector: pods },
      // The shards' backup Jobs and their pods: status.backup reads each result from the pod.
      { apiVersion: 'batch/v1', resource: 'jobs', namespace, labelSelector: backups },
      { apiVersion: 'v1', resource: 'pods', namespace, labelSelector: backups },
    ],
  };
}
