// The CronJob <name>-backup of a Redis (spec.backup.schedule); its pod is common/backup-job.ts's,
// the one a RedisBackup's Job runs too. Invariants: never two backups of one Redis at once, and
// suspended while the Redis hibernates.
import type { ICronJob } from 'kubernetes-models/batch/v1/CronJob';
import {
  BACKUP_TRIGGER_LABEL,
  SCHEDULED_TRIGGER,
  backupCronJobName,
  backupSelectorLabels,
} from '../../../api/backup.ts';
import { backupJobSpec } from '../../common/backup-job.ts';
import type { Child } from '../../common/child.ts';
import type { HookContext } from '../context.ts';
import { childMetadata } from './meta.ts';

/**
 * The CronJob <name>-backup when spec.backup has a schedule; suspended while hibernating or asked
 * to. Without a schedule, spec.backup only says where on-demand backups go: no CronJob.
 */
export function desiredCronJob(ctx: HookContext, operatorImage: string): Child<ICronJob> | undefined {
  const backup = ctx.spec.backup;
  if (backup?.schedule === undefined) return undefined;
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: childMetadata(ctx, backupCronJobName(ctx.name), 'backup'),
    spec: {
      schedule: backup.schedule,
      suspend: backup.suspend || ctx.spec.hibernate,
      // Never two backups of one Redis at once; a run missed by more than an hour is skipped.
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: 3600,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 3,
      jobTemplate: {
        metadata: { labels: { ...backupSelectorLabels(ctx.name), [BACKUP_TRIGGER_LABEL]: SCHEDULED_TRIGGER } },
        spec: backupJobSpec(ctx, backup.storage, operatorImage, SCHEDULED_TRIGGER),
      },
    },
  };
}
