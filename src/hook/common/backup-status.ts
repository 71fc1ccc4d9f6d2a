// status.backup and the BackupHealthy condition of a Redis, from what sync observes: the CronJob
// child, the backup Jobs and their pods (related, by backupSelectorLabels: scheduled and
// on-demand alike), and the previous status (Jobs are pruned by the CronJob's history limits, the
// last success is not forgotten with them). Pure; no clock.
// Invariants:
// - A backup counts as done only when its Job is Complete AND its pod's termination message is
//   the backup's own result (ok: true): a location is never guessed.
// - "Older than twice its interval" is measured against the newest time observed (the CronJob's
//   last schedule, the newest Job's start), never a clock: a backup is stale when the CronJob
//   kept scheduling and nothing succeeded for that long. Without a schedule (on-demand backups
//   only) a backup is never stale.
import { BACKUP_CONTAINER, JOB_NAME_LABELS } from '../../api/backup.ts';
import { longestIntervalSeconds } from '../../api/cron.ts';
import type { BackupResult, BackupStatus, RedisSpec } from '../../api/schema.ts';
import type { KubeObject } from './types.ts';
import { array, at, compare, isRecord, str } from './util.ts';

export interface BackupVerdict {
  status: BackupStatus;
  /** BackupHealthy, only when spec.backup is set. */
  condition:
    { status: 'True' | 'False' | 'Unknown'; reason: string; message: string; since: string | undefined } | undefined;
}

/** The backup's own result line, from a terminated backup container's message. */
export function backupResultOf(pod: KubeObject): Record<string, unknown> | undefined {
  for (const s of array(at(pod, 'status', 'containerStatuses'))) {
    if (at(s, 'name') !== BACKUP_CONTAINER) continue;
    const message = str(at(s, 'state', 'terminated', 'message'));
    if (message === undefined) continue;
    try {
      const parsed = JSON.parse(message.trim().split('\n').at(-1) ?? '') as unknown;
      if (isRecord(parsed)) return parsed;
    } catch {
      return { ok: false, error: message.trim().slice(-512) };
    }
  }
  return undefined;
}

export function jobOfPod(pod: KubeObject): string | undefined {
  for (const label of JOB_NAME_LABELS) {
    const v = pod.metadata.labels?.[label];
    if (v !== undefined) return v;
  }
  return undefined;
}

export function jobCondition(job: KubeObject, type: string): Record<string, unknown> | undefined {
  const c = array(at(job, 'status', 'conditions')).find((x) => at(x, 'type') === type && at(x, 'status') === 'True');
  return isRecord(c) ? c : undefined;
}

/** Pods of a Job, newest first (by name: the Job controller's suffixes do not order, creation times do). */
export function podsOfJob(job: KubeObject, pods: readonly KubeObject[]): KubeObject[] {
  return pods
    .filter((p) => jobOfPod(p) === job.metadata.name)
    .sort(
      (a, b) =>
        compare(str(b.metadata.creationTimestamp) ?? '', str(a.metadata.creationTimestamp) ?? '') ||
        compare(a.metadata.name, b.metadata.name),
    );
}

/** The successful result a Job's pods left (the backup's own line), or undefined. */
export function jobResult(job: KubeObject, pods: readonly KubeObject[]): Record<string, unknown> | undefined {
  return podsOfJob(job, pods)
    .map(backupResultOf)
    .find((r) => r?.['ok'] === true && typeof r['location'] === 'string');
}

export function resultFields(result: Record<string, unknown>, time: string | undefined): BackupResult {
  const num = (k: string) =>
    typeof result[k] === 'number' && Number.isSafeInteger(result[k]) ? (result[k] as number) : undefined;
  const finished = typeof result['finishedAt'] === 'string' ? result['finishedAt'] : time;
  const size = num('bytes');
  const offset = num('offset');
  return {
    location: String(result['location']),
    ...(size !== undefined ? { sizeBytes: size } : {}),
    ...(offset !== undefined ? { replicationOffset: offset } : {}),
    ...(typeof result['redisVersion'] === 'string' ? { redisVersion: result['redisVersion'] } : {}),
    ...(finished !== undefined ? { time: finished } : {}),
  };
}

/** Why a finished Job failed: the backup's own error, else the Job's condition message. */
export function failureMessage(job: KubeObject, pods: readonly KubeObject[]): string {
  for (const pod of podsOfJob(job, pods)) {
    const r = backupResultOf(pod);
    if (r !== undefined && r['ok'] !== true && typeof r['error'] === 'string') return r['error'];
  }
  const failed = jobCondition(job, 'Failed');
  return `${str(at(failed, 'reason')) ?? 'Failed'}: ${str(at(failed, 'message')) ?? 'the backup Job failed'}`;
}

const later = (a: string | undefined, b: string | undefined) =>
  a === undefined ? b : b === undefined ? a : compare(a, b) >= 0 ? a : b;
const seconds = (iso: string) => Date.parse(iso) / 1000;

/** storageProblem: why backup pods cannot start (the credentials Secret missing), when sync can see it. */
export function backupVerdict(
  spec: Pick<RedisSpec, 'backup' | 'hibernate'>,
  cronJob: KubeObject | undefined,
  jobs: readonly KubeObject[],
  pods: readonly KubeObject[],
  previous: unknown,
  storageProblem?: string,
): BackupVerdict | undefined {
  const before = isRecord(at(previous, 'backup')) ? (at(previous, 'backup') as BackupStatus) : undefined;
  let success = before?.lastSuccessful;
  let failure = before?.lastFailure;
  let newest = str(at(cronJob, 'status', 'lastScheduleTime'));
  for (const job of [...jobs].sort((a, b) => compare(a.metadata.name, b.metadata.name))) {
    newest = later(newest, str(at(job, 'status', 'startTime')));
    const complete = jobCondition(job, 'Complete');
    if (complete !== undefined) {
      const result = jobResult(job, pods);
      const time = str(at(job, 'status', 'completionTime')) ?? str(at(complete, 'lastTransitionTime'));
      if (result !== undefined && (success?.time === undefined || compare(time ?? '', success.time) > 0))
        success = resultFields(result, time);
      continue;
    }
    const failed = jobCondition(job, 'Failed');
    if (failed === undefined) continue;
    const time = str(at(failed, 'lastTransitionTime'));
    if (failure?.time === undefined || compare(time ?? '', failure.time) > 0)
      failure = { ...(time !== undefined ? { time } : {}), job: job.metadata.name, message: failureMessage(job, pods) };
  }
  // A failure older than the last success is history, not state.
  if (failure !== undefined && success?.time !== undefined && compare(failure.time ?? '', success.time) <= 0)
    failure = undefined;
  const lastScheduleTime = str(at(cronJob, 'status', 'lastScheduleTime'));
  const status: BackupStatus = {
    ...(success !== undefined ? { lastSuccessful: success } : {}),
    ...(failure !== undefined ? { lastFailure: failure } : {}),
    ...(lastScheduleTime !== undefined ? { lastScheduleTime } : {}),
  };
  if (spec.backup === undefined) return Object.keys(status).length > 0 ? { status, condition: undefined } : undefined;
  if (storageProblem !== undefined)
    return {
      status,
      condition: { status: 'False', reason: 'CredentialsSecretMissing', message: storageProblem, since: undefined },
    };
  return { status, condition: healthOf(spec, success, failure, newest) };
}

type Health = NonNullable<BackupVerdict['condition']>;

function healthOf(
  spec: Pick<RedisSpec, 'backup' | 'hibernate'>,
  success: BackupResult | undefined,
  failure: BackupStatus['lastFailure'],
  newest: string | undefined,
): Health {
  const backup = spec.backup!;
  if (failure !== undefined)
    return {
      status: 'False',
      reason: 'BackupFailed',
      message: `the last backup (${failure.job}) failed: ${failure.message}`,
      since: failure.time,
    };
  const schedule = backup.schedule;
  if (schedule !== undefined && (backup.suspend || spec.hibernate))
    return {
      status: 'True',
      reason: 'Suspended',
      message: `scheduled backups are suspended (${backup.suspend ? 'spec.backup.suspend' : 'hibernating'})`,
      since: undefined,
    };
  // Without a schedule nothing is due, so nothing can be late: only success and failure count.
  const interval = schedule !== undefined ? longestIntervalSeconds(schedule) : undefined;
  if (success === undefined)
    return {
      status: 'Unknown',
      reason: 'NoBackupYet',
      message: `no backup has completed yet (${schedule !== undefined ? `schedule "${schedule}"` : 'no schedule: on-demand RedisBackups only'})`,
      since: undefined,
    };
  if (
    interval !== undefined &&
    success.time !== undefined &&
    newest !== undefined &&
    seconds(newest) - seconds(success.time) > 2 * interval
  ) {
    return {
      status: 'False',
      reason: 'BackupStale',
      message: `the last successful backup (${success.time}) is older than twice the schedule's interval (${interval} s) at ${newest}`,
      since: newest,
    };
  }
  return {
    status: 'True',
    reason: 'BackupSucceeded',
    message: `last backup ${success.location} at ${success.time ?? 'an unknown time'}`,
    since: success.time,
  };
}
