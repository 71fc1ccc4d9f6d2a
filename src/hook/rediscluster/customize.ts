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
import { API_VERSION } from '../../api/labels.ts';
import { REDISBACKUP_PLURAL } from '../../api/redisbackup-schema.ts';
import type { CustomizeRequest, CustomizeResponse } from '../common/types.ts';
import { at, str } from '../common/util.ts';

export function customizeRedisCluster(request: CustomizeRequest): CustomizeResponse {
  const { name } = request.parent.metadata;
  const namespace = request.parent.metadata.namespace ?? '';
  const pods = { matchLabels: redisClusterPodSelectorLabels(name) };
  const backups = { matchLabels: redisClusterBackupSelectorLabels(name) };
  const restore = str(at(request.parent.spec, 'restore', 'backup'));
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
      // spec.restore: the RedisBackup whose shards' snapshots and slots it is formed from.
      ...(restore !== undefined && restore !== ''
        ? [{ apiVersion: API_VERSION, resource: REDISBACKUP_PLURAL, namespace, names: [restore] }]
        : []),
    ],
  };
}
