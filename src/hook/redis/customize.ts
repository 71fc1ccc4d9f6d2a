// The customize hook: which related objects sync and finalize need to see. Depends only on the
// parent (Metacontroller caches the answer per uid and generation). Invariants: never fails on a
// bad spec; never asks for Secrets: Metacontroller would post their values (passwords, S3 keys,
// tls.key) to the hook in plain HTTP on every sync. The sidecar reports what the status needs to
// know of them (which exist, which keys, their versions) on the Redis instead (common/secret-status.ts).
import { backupSelectorLabels } from '../../api/backup.ts';
import { podSelectorLabels } from '../../api/labels.ts';
import { REDISBACKUP_PLURAL } from '../../api/redisbackup-schema.ts';
import { rivalRule } from '../common/name-conflict.ts';
import type { CustomizeRequest, CustomizeResponse } from '../common/types.ts';
import { at, str } from '../common/util.ts';

function restoreSource(spec: unknown, namespace: string): CustomizeResponse['relatedResources'] {
  const backup = str(at(spec, 'restore', 'backup'));
  return backup !== undefined && backup !== ''
    ? [{ apiVersion: 'redis.example.com/v1', resource: REDISBACKUP_PLURAL, namespace, names: [backup] }]
    : [];
}

export function customize(request: CustomizeRequest): CustomizeResponse {
  const { name } = request.parent.metadata;
  const namespace = request.parent.metadata.namespace ?? '';
  const selector = { matchLabels: podSelectorLabels(name) };
  return {
    relatedResources: [
      // The pods are grandchildren (the StatefulSets' children): status is computed from them.
      // Every selector rule names the parent's namespace: with hooks v2, Metacontroller (v4.17)
      // lists a rule without one in EVERY namespace, and any matching object anywhere would then
      // trigger a sync of this parent (the hook would filter it, at the cost of the sync).
      { apiVersion: 'v1', resource: 'pods', namespace, labelSelector: selector },
      // Created from the claim templates, which carry the pod selector labels: finalize waits on them.
      { apiVersion: 'v1', resource: 'persistentvolumeclaims', namespace, labelSelector: selector },
      // Backup Jobs (the CronJob's and on-demand RedisBackups') and their pods: status.backup
      // reads each result from the pod's termination message.
      {
        apiVersion: 'batch/v1',
        resource: 'jobs',
        namespace,
        labelSelector: { matchLabels: backupSelectorLabels(name) },
      },
      { apiVersion: 'v1', resource: 'pods', namespace, labelSelector: { matchLabels: backupSelectorLabels(name) } },
      // RedisClusters whose children could take this Redis's names: the older of the two keeps them.
      ...rivalRule('Redis', name, namespace),
      // spec.restore.backup: the RedisBackup's location and storage.
      ...restoreSource(request.parent.spec, namespace),
    ],
  };
}
