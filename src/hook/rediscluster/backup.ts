// status.backup and the BackupHealthy condition of a RedisCluster: one verdict per shard (the
// Redis reading of a CronJob, its Jobs and their pods' results: common/backup-status.ts), joined into one.
// Pure; no clock. Invariants:
// - A cluster is only as backed up as its least backed-up shard: lastSuccessful is the shard whose
//   last success is oldest, and only when every shard has one (a cluster with a shard never backed
//   up has no complete backup); BackupHealthy is False when any shard's is, Unknown when any shard
//   has none yet, True only when every shard's is.
// - lastFailure is the newest failure of any shard, named by its Job (whose name names the shard).
import { SHARD_LABEL, redisClusterChildNames } from '../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../api/rediscluster-schema.ts';
import type { BackupStatus } from '../../api/schema.ts';
import { backupVerdict, type BackupVerdict } from '../common/backup-status.ts';
import { findObject } from '../common/observed.ts';
import type { KubeObject } from '../common/types.ts';
import { compare } from '../common/util.ts';

export interface RedisClusterBackupInput {
  name: string;
  namespace: string;
  spec: RedisClusterSpec;
  /** Shards that have a backup CronJob this sync. */
  shards: readonly number[];
  observed: readonly KubeObject[];
  /** Backup Jobs and pods of this cluster (redisClusterBackupSelectorLabels), every shard. */
  jobs: readonly KubeObject[];
  pods: readonly KubeObject[];
  /** Why backup pods cannot start (the S3 credentials Secret), when sync can see it. */
  storageProblem: string | undefined;
}

const ofShard = (shard: number) => (o: KubeObject) => o.metadata.labels?.[SHARD_LABEL] === String(shard);

export function redisClusterBackupVerdict(input: RedisClusterBackupInput): BackupVerdict | undefined {
  const { spec } = input;
  if (spec.backup === undefined || input.shards.length === 0) return undefined;
  const names = redisClusterChildNames(input.name);
  const per = input.shards.map((shard) => {
    const cron = findObject(input.observed, 'batch/v1', 'CronJob', input.namespace, names.shardBackup(shard));
    const v = backupVerdict(
      { backup: spec.backup, hibernate: spec.hibernate },
      cron,
      input.jobs.filter(ofShard(shard)),
      input.pods.filter(ofShard(shard)),
      undefined,
      input.storageProblem,
    );
    return { shard, verdict: v as BackupVerdict };
  });
  const successes = per.map((p) => p.verdict.status.lastSuccessful);
  const oldest = successes.every((s) => s !== undefined)
    ? successes.reduce((a, b) => (compare(a?.time ?? '', b?.time ?? '') <= 0 ? a : b))
    : undefined;
  const failures = per.map((p) => p.verdict.status.lastFailure).filter((f) => f !== undefined);
  const newestFailure =
    failures.length > 0 ? failures.reduce((a, b) => (compare(a.time ?? '', b.time ?? '') >= 0 ? a : b)) : undefined;
  const schedules = per.map((p) => p.verdict.status.lastScheduleTime).filter((t) => t !== undefined);
  const lastScheduleTime = schedules.length > 0 ? schedules.reduce((a, b) => (compare(a, b) >= 0 ? a : b)) : undefined;
  const status: BackupStatus = {
    ...(oldest !== undefined ? { lastSuccessful: oldest } : {}),
    ...(newestFailure !== undefined ? { lastFailure: newestFailure } : {}),
    ...(lastScheduleTime !== undefined ? { lastScheduleTime } : {}),
  };
  const conditions = per.map((p) => ({ shard: p.shard, c: p.verdict.condition! }));
  const bad = conditions.filter((x) => x.c.status === 'False');
  if (bad.length > 0) {
    return {
      status,
      condition: {
        status: 'False',
        reason: bad[0]!.c.reason,
        message: bad.map((x) => `shard ${x.shard}: ${x.c.message}`).join('; '),
        since: bad[0]!.c.since,
      },
    };
  }
  const none = conditions.filter((x) => x.c.status === 'Unknown');
  if (none.length > 0) {
    return {
      status,
      condition: {
        status: 'Unknown',
        reason: 'NoBackupYet',
        message: `no backup has completed yet for shard ${none.map((x) => x.shard).join(', ')} (schedule "${spec.backup.schedule}")`,
        since: undefined,
      },
    };
  }
  if (conditions.every((x) => x.c.reason === 'Suspended')) return { status, condition: { ...conditions[0]!.c } };
  const last =
    oldest !== undefined
      ? `; the oldest shard's last backup is ${oldest.location} at ${oldest.time ?? 'an unknown time'}`
      : '';
  return {
    status,
    condition: {
      status: 'True',
      reason: 'BackupSucceeded',
      message: `every shard (${input.shards.join(', ')}) has a recent backup${last}`,
      since: oldest?.time,
    },
  };
}
