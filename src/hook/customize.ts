// The customize hook: which related objects sync and finalize need to see. Depends only on the
// parent (Metacontroller caches the answer per uid and generation). Invariant: never fails on a
// bad spec; the Secret name falls back to the generated one.
import { generatedAuthSecretRef, operatorSecretRef } from '../api/auth.ts';
import { backupSelectorLabels } from '../api/backup.ts';
import { childNames, podSelectorLabels } from '../api/labels.ts';
import { REDISBACKUP_PLURAL } from '../api/redisbackup-schema.ts';
import type { CustomizeRequest, CustomizeResponse } from './types.ts';
import { array, at, isRecord, str } from './util.ts';

export function authSecretName(name: string, spec: unknown): string {
  const configured = str(at(spec, 'auth', 'secretName'));
  return configured !== undefined && configured !== '' ? configured : generatedAuthSecretRef(name).secretName;
}

/**
 * The Secrets the pods and the sidecar need: the password ones, the application users' (spec.users),
 * the S3 credentials of spec.backup, and the TLS one when spec.tls asks for TLS. Metacontroller
 * watches them, so a changed one resyncs the Redis and shows in status.secrets.
 */
function secretNames(name: string, spec: unknown): string[] {
  const names = [authSecretName(name, spec), operatorSecretRef(name).secretName];
  for (const user of array(at(spec, 'users'))) {
    const secret = str(at(user, 'passwordSecret', 'name'));
    if (secret !== undefined && secret !== '' && !names.includes(secret)) names.push(secret);
  }
  // The backup pods read the S3 keys from it: status says when it is missing.
  const credentials = str(at(spec, 'backup', 'storage', 's3', 'credentialsSecret', 'name'));
  if (credentials !== undefined && credentials !== '') names.push(credentials);
  const tls = at(spec, 'tls');
  if (isRecord(tls)) {
    const given = str(at(tls, 'secretName'));
    names.push(given !== undefined && given !== '' ? given : childNames(name).certificate);
  }
  return names;
}

function restoreSource(spec: unknown, namespace: string): CustomizeResponse['relatedResources'] {
  const backup = str(at(spec, 'restore', 'backup'));
  return backup !== undefined && backup !== '' ? [{ apiVersion: 'redis.example.com/v1', resource: REDISBACKUP_PLURAL, namespace, names: [backup] }] : [];
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
      // The pods read both passwords from env (and mount the TLS Secret): status says when one is missing.
      { apiVersion: 'v1', resource: 'secrets', namespace, names: secretNames(name, request.parent.spec) },
      // Created from the claim templates, which carry the pod selector labels: finalize waits on them.
      { apiVersion: 'v1', resource: 'persistentvolumeclaims', namespace, labelSelector: selector },
      // Backup Jobs (the CronJob's and on-demand RedisBackups') and their pods: status.backup
      // reads each result from the pod's termination message.
      { apiVersion: 'batch/v1', resource: 'jobs', namespace, labelSelector: { matchLabels: backupSelectorLabels(name) } },
      { apiVersion: 'v1', resource: 'pods', namespace, labelSelector: { matchLabels: backupSelectorLabels(name) } },
      // spec.restore.backup: the RedisBackup's location and storage.
      ...restoreSource(request.parent.spec, namespace),
    ],
  };
}
