// The names the hook, the RedisBackup hook and the backup programs agree on: labels of backup
// Jobs and pods, the containers, the termination message, and the ConfigMap key that carries a
// restore's location. Invariants: backup pods never carry podSelectorLabels (app.kubernetes.io/
// name is redis-backup, not redis), so no Service, PDB or sidecar ever takes one for a Redis pod;
// changing a value here is an API change for running clusters.
import { GROUP, INSTANCE_LABEL, MANAGED_BY, MANAGED_BY_LABEL, NAME_LABEL } from './labels.ts';

export const BACKUP_APP = 'redis-backup';
/** On backup Jobs and pods: `schedule` for the CronJob's, the RedisBackup's name for on-demand ones. */
export const BACKUP_TRIGGER_LABEL = `${GROUP}/backup-trigger`;
export const SCHEDULED_TRIGGER = 'schedule';
/** The Job controller's label on a Job's pods (and the older one it still writes). */
export const JOB_NAME_LABELS = ['batch.kubernetes.io/job-name', 'job-name'] as const;

export const BACKUP_CONTAINER = 'backup';
export const RESTORE_CONTAINER = 'restore';
/** Kubernetes' default terminationMessagePath: the backup writes its one-line JSON result there. */
export const TERMINATION_LOG = '/dev/termination-log';
/** Where a PVC target is mounted in backup and restore containers. */
export const BACKUP_MOUNT = '/backup';
export const BACKUP_VOLUME = 'backup-target';

/**
 * In the <name>-config ConfigMap while a restore is still to happen: the location the restore
 * init container reads (optional, so once the key is gone a new pod with an empty volume starts
 * empty and syncs from the master, rather than loading an old, perhaps pruned, backup).
 */
export const RESTORE_LOCATION_KEY = 'restore-location';

/**
 * The restore init container's result (its termination message, one JSON line). `restoredFrom` is
 * the backup the data directory holds because of a restore: the one just restored, or the one a
 * restore of an earlier start of the pod left (the marker file). Absent when the container
 * restored nothing (no location given, or data of its own): the hook then knows this pod's Redis
 * did not start from the backup, whatever else it reports.
 */
export interface RestoreResult {
  ok: boolean;
  restored?: boolean;
  restoredFrom?: string;
  reason?: string;
}

/** The labels of every backup Job and pod of the Redis called `name` (the customize hook selects them). */
export function backupSelectorLabels(name: string): Record<string, string> {
  return { [NAME_LABEL]: BACKUP_APP, [INSTANCE_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY };
}

export function backupCronJobName(name: string): string {
  return `${name}-backup`;
}

export function onDemandJobName(redisBackupName: string): string {
  return `${redisBackupName}-backup`;
}

/** The Job that backs up shard `shard` of a RedisCluster for RedisBackup `redisBackupName`. */
export function onDemandShardJobName(redisBackupName: string, shard: number): string {
  return `${redisBackupName}-backup-${shard}`;
}

/** A RedisBackup of a RedisCluster: its shard Jobs' names (<name>-backup-<i>, i < 64) must fit a label value. */
export const MAX_REDISCLUSTER_BACKUP_NAME_LENGTH = 63 - '-backup-'.length - 2;

/** The key of the RedisCluster <name>-config ConfigMap that tells shard `shard`'s pod 0 what to restore. */
export function shardRestoreLocationKey(shard: number): string {
  return `${RESTORE_LOCATION_KEY}-shard-${shard}`;
}
