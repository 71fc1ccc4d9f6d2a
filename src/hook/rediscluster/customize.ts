// The RedisCluster customize hook: which related objects its sync and finalize need to see, by the
// parent alone (Metacontroller caches the answer per uid and generation). Invariants: never fails
// on a bad spec; every label-selector rule names the parent's namespace (hooks v2 would otherwise
// list, and watch, every namespace); never asks for Secrets (their values would reach the hook in
// plain HTTP on every sync: the sidecar reports what status needs, common/secret-status.ts).
import {
  REDIS_CLUSTER_KIND,
  redisClusterBackupSelectorLabels,
  redisClusterPodSelectorLabels,
} from '../../api/rediscluster-names.ts';
import { rivalRule } from '../common/name-conflict.ts';
import type { CustomizeRequest, CustomizeResponse } from '../common/types.ts';

export function customizeRedisCluster(request: CustomizeRequest): CustomizeResponse {
  const { name } = request.parent.metadata;
  const namespace = request.parent.metadata.namespace ?? '';
  const pods = { matchLabels: redisClusterPodSelectorLabels(name) };
  const backups = { matchLabels: redisClusterBackupSelectorLabels(name) };
  return {
    relatedResources: [
      // The pods (grandchildren): status and the scale-down rule read their cluster-node records,
      // so a changed annotation resyncs the RedisCluster.
      { apiVersion: 'v1', resource: 'pods', namespace, labelSelector: pods },
      // Made from the claim templates, which carry the pod selector labels: finalize waits on them.
      { apiVersion: 'v1', resource: 'persistentvolumeclaims', namespace, labelSelector: pods },
      // The shards' backup Jobs and their pods: status.backup reads each result from the pod.
      { apiVersion: 'batch/v1', resource: 'jobs', namespace, labelSelector: backups },
      { apiVersion: 'v1', resource: 'pods', namespace, labelSelector: backups },
      // Redises whose children could take this RedisCluster's names: the older of the two keeps them.
      ...rivalRule(REDIS_CLUSTER_KIND, name, namespace),
    ],
  };
}
