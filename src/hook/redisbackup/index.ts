// The RedisBackup controller's hooks (its own CompositeController, routes /redisbackup/*): one
// backup, run once by a Job built with the same pod template as the scheduled ones
// (common/backup-job.ts), and its status from that Job and its pod's termination message. A
// RedisBackup of a RedisCluster (spec.redisCluster) is cluster.ts's: one Job per shard.
// Pure, like the Redis hook. Invariants:
// - The Job is created at most once: a RedisBackup whose status is final (Completed or Failed)
//   never gets a new Job, even when its Job is deleted; an observed Job is returned exactly as
//   last applied (a Job's template is immutable).
// - It never touches the Redis: it waits (Pending, with the reason) until the Redis is Running.
// - The storage is recorded in status when the Job is made, so a restore that names this backup
//   knows how to reach it even after the Redis and its spec are gone.
import { BACKUP_TRIGGER_LABEL, JOB_NAME_LABELS, backupSelectorLabels, onDemandJobName } from '../../api/backup.ts';
import { API_VERSION, CONTROLLER_UID_LABEL, KIND, PLURAL } from '../../api/labels.ts';
import { REDIS_CLUSTER_PLURAL, redisClusterBackupSelectorLabels } from '../../api/rediscluster-names.ts';
import { MAX_REDISBACKUP_NAME_LENGTH, type RedisBackupStatus } from '../../api/redisbackup-schema.ts';
import type { BackupStorage } from '../../api/schema.ts';
import { formatProblems, validateSpec } from '../../api/validate.ts';
import { failureMessage, jobCondition, jobResult, resultFields } from '../common/backup-status.ts';
import { backupJobSpec } from '../common/backup-job.ts';
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from '../common/options.ts';
import { findObject, lastAppliedOf, objectsOf, ofKind } from '../common/observed.ts';
import type { CustomizeRequest, CustomizeResponse, HookRequest, HookResponse, KubeObject } from '../common/types.ts';
import { at, isRecord, str } from '../common/util.ts';
import { syncClusterBackup } from './cluster.ts';

type Phase = NonNullable<RedisBackupStatus['phase']>;

/** The sync answer of the RedisBackup controller: the same wire shape, with its own status. */
export type RedisBackupResponse = Omit<HookResponse, 'status'> & { status: RedisBackupStatus };

const status = (
  phase: Phase,
  reason: string,
  message: string,
  rest: Partial<RedisBackupStatus> = {},
): RedisBackupStatus => ({
  phase,
  reason,
  message,
  ...rest,
});

function fromJob(
  job: KubeObject,
  pods: readonly KubeObject[],
  recorded: Partial<RedisBackupStatus>,
): RedisBackupStatus {
  const started = str(at(job, 'status', 'startTime'));
  const base: Partial<RedisBackupStatus> = {
    job: job.metadata.name,
    ...(started !== undefined ? { startTime: started } : {}),
    ...(recorded.storage !== undefined ? { storage: recorded.storage } : {}),
  };
  const complete = jobCondition(job, 'Complete');
  if (complete !== undefined) {
    const result = jobResult(job, pods);
    const ended = str(at(job, 'status', 'completionTime')) ?? str(at(complete, 'lastTransitionTime'));
    if (result === undefined) {
      // Final already (the pod may be gone); what it stored is not known, so nothing is claimed.
      if (recorded.location !== undefined) return { ...recorded, ...base, phase: 'Completed' } as RedisBackupStatus;
      return status(
        'Completed',
        'ResultUnknown',
        'the Job completed but its pod left no result (termination message)',
        {
          ...base,
          ...(ended ? { completionTime: ended } : {}),
        },
      );
    }
    const r = resultFields(result, ended);
    return status('Completed', 'BackupStored', `stored ${r.location}`, {
      ...base,
      ...(ended !== undefined ? { completionTime: ended } : {}),
      location: r.location,
      ...(r.sizeBytes !== undefined ? { sizeBytes: r.sizeBytes } : {}),
      ...(r.replicationOffset !== undefined ? { replicationOffset: r.replicationOffset } : {}),
      ...(typeof result['replicationId'] === 'string' ? { replicationId: result['replicationId'] } : {}),
      ...(r.redisVersion !== undefined ? { redisVersion: r.redisVersion } : {}),
      ...(typeof result['source'] === 'string'
        ? { source: `${result['source']} (${String(result['role'] ?? 'unknown role')})` }
        : {}),
    });
  }
  const failed = jobCondition(job, 'Failed');
  if (failed !== undefined) {
    const ended = str(at(failed, 'lastTransitionTime'));
    return status('Failed', 'BackupFailed', failureMessage(job, pods), {
      ...base,
      ...(ended !== undefined ? { completionTime: ended } : {}),
    });
  }
  return status('Running', 'JobRunning', `Job ${job.metadata.name} is taking the backup`, base);
}

export function syncRedisBackup(
  request: HookRequest,
  options: HookOptions = DEFAULT_HOOK_OPTIONS,
): RedisBackupResponse {
  const { name, uid } = request.parent.metadata;
  const namespace = request.parent.metadata.namespace ?? '';
  const previous = (isRecord(request.parent.status) ? request.parent.status : {}) as Partial<RedisBackupStatus>;
  const observed = objectsOf(request.children);
  const echo = observed.map(lastAppliedOf);
  const jobName = onDemandJobName(name);
  const job = findObject(observed, 'batch/v1', 'Job', namespace, jobName);
  const pods = ofKind(objectsOf(request.related), 'v1', 'Pod', namespace);
  const redisName = str(at(request.parent.spec, 'redis'));
  const clusterName = str(at(request.parent.spec, 'redisCluster'));
  if (clusterName !== undefined && clusterName !== '') {
    if (redisName !== undefined && redisName !== '')
      return {
        status: status('Failed', 'InvalidSpec', 'spec: name exactly one of spec.redis and spec.redisCluster'),
        children: echo,
      };
    const answer = syncClusterBackup({
      name,
      uid: typeof uid === 'string' ? uid : undefined,
      namespace,
      cluster: clusterName,
      previous,
      observed,
      related: objectsOf(request.related),
      pods,
      options,
    });
    return { status: answer.status, children: answer.children ?? echo };
  }
  if (name.length > MAX_REDISBACKUP_NAME_LENGTH)
    return {
      status: status(
        'Failed',
        'InvalidSpec',
        `metadata.name: must be at most ${MAX_REDISBACKUP_NAME_LENGTH} characters (its Job is <name>-backup)`,
      ),
      children: echo,
    };
  if (redisName === undefined || redisName === '')
    return {
      status: status(
        'Failed',
        'InvalidSpec',
        'spec.redis or spec.redisCluster: one is required (what to back up, in this namespace)',
      ),
      children: echo,
    };
  if (job !== undefined) return { status: fromJob(job, pods, previous), children: echo };
  if (previous.phase === 'Completed' || previous.phase === 'Failed')
    return { status: previous as RedisBackupStatus, children: echo };

  const redis = findObject(objectsOf(request.related), API_VERSION, KIND, namespace, redisName);
  if (redis === undefined)
    return {
      status: status('Pending', 'RedisNotFound', `Redis ${redisName} not found in ${namespace}; waiting for it`),
      children: echo,
    };
  const verdict = validateSpec(redisName, redis['spec']);
  if (!verdict.ok)
    return {
      status: status(
        'Pending',
        'RedisSpecInvalid',
        `Redis ${redisName} has an invalid spec: ${formatProblems(verdict.problems)}`,
      ),
      children: echo,
    };
  const storage: BackupStorage | undefined = verdict.spec.backup?.storage;
  if (storage === undefined)
    return {
      status: status(
        'Failed',
        'NoBackupStorage',
        `Redis ${redisName} has no spec.backup.storage: nowhere to store the backup (set it, storage alone, no schedule needed; then create another RedisBackup)`,
      ),
      children: echo,
    };
  const phase = str(at(redis, 'status', 'phase'));
  if (phase !== 'Running')
    return {
      status: status(
        'Pending',
        'RedisNotRunning',
        `Redis ${redisName} is ${phase ?? 'not yet reporting a phase'}; the backup waits until it is Running`,
      ),
      children: echo,
    };

  const ctx = {
    name: redisName,
    namespace,
    uid: undefined,
    spec: verdict.spec,
    operatorImage: options.operatorImage,
    operatorNamespace: options.operatorNamespace,
  };
  const labels: Record<string, string> = {
    ...(typeof uid === 'string' && uid !== '' ? { [CONTROLLER_UID_LABEL]: uid } : {}),
    ...backupSelectorLabels(redisName),
    [BACKUP_TRIGGER_LABEL]: name,
  };
  const desired: KubeObject = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: jobName, namespace, labels },
    spec: backupJobSpec(ctx, storage, options.operatorImage, name),
  };
  return {
    status: status('Running', 'JobCreated', `Job ${jobName} backs up Redis ${redisName}`, { job: jobName, storage }),
    children: [desired],
  };
}

/**
 * The Redis or RedisCluster it backs up (status: is it Running; spec: where to store) and the Jobs'
 * pods (their results).
 */
export function customizeRedisBackup(request: CustomizeRequest): CustomizeResponse {
  const namespace = request.parent.metadata.namespace ?? '';
  const redis = str(at(request.parent.spec, 'redis'));
  const cluster = str(at(request.parent.spec, 'redisCluster'));
  if (cluster !== undefined && cluster !== '' && (redis === undefined || redis === ''))
    return {
      relatedResources: [
        { apiVersion: API_VERSION, resource: REDIS_CLUSTER_PLURAL, namespace, names: [cluster] },
        {
          apiVersion: 'v1',
          resource: 'pods',
          namespace,
          labelSelector: {
            matchLabels: {
              ...redisClusterBackupSelectorLabels(cluster),
              [BACKUP_TRIGGER_LABEL]: request.parent.metadata.name,
            },
          },
        },
      ],
    };
  return {
    relatedResources: [
      ...(redis !== undefined && redis !== ''
        ? [{ apiVersion: API_VERSION, resource: PLURAL, namespace, names: [redis] }]
        : []),
      {
        apiVersion: 'v1',
        resource: 'pods',
        namespace,
        labelSelector: { matchLabels: { [JOB_NAME_LABELS[0]]: onDemandJobName(request.parent.metadata.name) } },
      },
    ],
  };
}
