// A RedisBackup of a RedisCluster (spec.redisCluster): one Job per shard, each with the backup pod
// the shard's scheduled backups use (common/backup-job.ts), reading a replica of its shard (its
// master only when the shard has none), and status.shards recording per shard where its snapshot
// is, the slots it served and its replication offset. Pure. Invariants:
// - The Jobs are created at most once, all in one sync, when the RedisCluster is Running (every
//   slot covered, nothing being resharded); observed Jobs are returned exactly as last applied; a
//   final status never gets new Jobs.
// - Completed only when every shard's Job stored a snapshot with readable slots AND the shards'
//   slots are disjoint and cover all 16384 slots: only then can a restore rebuild the same layout.
//   Anything less is Failed once every shard is final, saying which shard and why.
// - The storage is recorded when the Jobs are made, as for a Redis.
import { BACKUP_TRIGGER_LABEL, MAX_REDISCLUSTER_BACKUP_NAME_LENGTH, onDemandShardJobName } from '../../api/backup.ts';
import { API_VERSION, CONTROLLER_UID_LABEL } from '../../api/labels.ts';
import type { RedisBackupShard, RedisBackupStatus } from '../../api/redisbackup-schema.ts';
import {
  REDIS_CLUSTER_KIND,
  SHARD_LABEL,
  parseSlotRanges,
  redisClusterBackupSelectorLabels,
} from '../../api/rediscluster-names.ts';
import { slotLayoutProblem } from '../../api/slot-layout.ts';
import { validateRedisClusterSpec } from '../../api/rediscluster-validate.ts';
import { formatProblems } from '../../api/validate.ts';
import { failureMessage, jobCondition, jobResult, resultFields } from '../common/backup-status.ts';
import { backupJobSpecFor, backupPodSpecFor, shardBackupHosts, storageOfJob } from '../common/backup-job.ts';
import type { HookOptions } from '../common/options.ts';
import { findObject } from '../common/observed.ts';
import type { KubeObject } from '../common/types.ts';
import { at, str } from '../common/util.ts';

export interface ClusterBackupInput {
  /** The RedisBackup's name, uid and namespace. */
  name: string;
  uid: string | undefined;
  namespace: string;
  cluster: string;
  previous: Partial<RedisBackupStatus>;
  observed: readonly KubeObject[];
  related: readonly KubeObject[];
  pods: readonly KubeObject[];
  options: HookOptions;
}

export interface ClusterBackupAnswer {
  status: RedisBackupStatus;
  /** undefined: return the observed children as last applied. */
  children: KubeObject[] | undefined;
}

type Phase = NonNullable<RedisBackupStatus['phase']>;
const say = (phase: Phase, reason: string, message: string, rest: Partial<RedisBackupStatus> = {}) => ({
  status: { phase, reason, message, ...rest },
  children: undefined,
});

/** One shard's entry from its Job (or, with the Job gone, what was recorded). */
function shardOf(shard: number, job: KubeObject | undefined, pods: readonly KubeObject[], before?: RedisBackupShard) {
  const name = job?.metadata.name ?? before?.job ?? '';
  if (job === undefined)
    return before?.phase === 'Completed' || before?.phase === 'Failed'
      ? before
      : { shard, job: name, phase: 'Failed' as const, message: `Job ${name} is gone before it reported a result` };
  if (jobCondition(job, 'Complete') !== undefined) {
    const result = jobResult(job, pods);
    if (result === undefined)
      return before?.phase === 'Completed'
        ? before
        : { shard, job: name, phase: 'Failed' as const, message: 'the Job completed but its pod left no result' };
    const r = resultFields(result, undefined);
    const slots = typeof result['slots'] === 'string' ? result['slots'] : undefined;
    const ranges = slots !== undefined ? parseSlotRanges(slots) : null;
    const role = String(result['role'] ?? 'unknown role');
    const entry: RedisBackupShard = {
      shard,
      job: name,
      phase: 'Completed',
      location: r.location,
      ...(r.sizeBytes !== undefined ? { sizeBytes: r.sizeBytes } : {}),
      ...(r.replicationOffset !== undefined ? { replicationOffset: r.replicationOffset } : {}),
      ...(typeof result['replicationId'] === 'string' ? { replicationId: result['replicationId'] } : {}),
      ...(typeof result['source'] === 'string' ? { source: `${result['source']} (${role})` } : {}),
    };
    if (ranges === null || ranges.length === 0)
      return { ...entry, phase: 'Failed' as const, message: `stored ${r.location} but recorded no readable slots` };
    return {
      ...entry,
      slots: slots!,
      ...(role === 'master' ? { message: 'read from the master: the shard had no replica that answered' } : {}),
    };
  }
  if (jobCondition(job, 'Failed') !== undefined)
    return { shard, job: name, phase: 'Failed' as const, message: failureMessage(job, pods) };
  return { shard, job: name, phase: 'Running' as const };
}

function fromJobs(input: ClusterBackupInput, jobs: ReadonlyMap<number, KubeObject>): ClusterBackupAnswer {
  const { previous, pods } = input;
  const recorded = previous.shards ?? [];
  const count = Math.max(recorded.length, ...[...jobs.keys()].map((k) => k + 1));
  const shards = Array.from({ length: count }, (_, i) =>
    shardOf(
      i,
      jobs.get(i),
      pods,
      recorded.find((s) => s.shard === i),
    ),
  );
  // Recorded when the Jobs were made; read back from a Job if that status write did not land.
  const storage = previous.storage ?? [...jobs.values()].map(storageOfJob).find((x) => x !== undefined);
  const rest: Partial<RedisBackupStatus> = {
    shards,
    ...(storage !== undefined ? { storage } : {}),
    ...(previous.job !== undefined ? { job: previous.job } : {}),
  };
  const running = shards.filter((s) => s.phase === 'Running');
  const failed = shards.filter((s) => s.phase === 'Failed');
  if (running.length > 0)
    return say('Running', 'JobsRunning', `${running.length} of ${count} shard Jobs are taking their snapshot`, rest);
  if (failed.length > 0)
    return say(
      'Failed',
      'BackupFailed',
      failed.map((s) => `shard ${s.shard}: ${s.message ?? 'failed'}`).join('; '),
      rest,
    );
  const problem = slotLayoutProblem(shards);
  if (problem !== undefined)
    return say(
      'Failed',
      'LayoutIncomplete',
      `every shard stored a snapshot but ${problem}: it cannot be restored`,
      rest,
    );
  const bytes = shards.reduce((n, s) => n + (s.sizeBytes ?? 0), 0);
  const fromMaster = shards.filter((s) => s.source?.endsWith('(master)')).map((s) => s.shard);
  return say(
    'Completed',
    'BackupStored',
    `stored ${count} shard snapshots` +
      (fromMaster.length > 0 ? `; shard ${fromMaster.join(', ')} read from its master (no replica answered)` : ''),
    { ...rest, sizeBytes: bytes },
  );
}

export function syncClusterBackup(input: ClusterBackupInput): ClusterBackupAnswer {
  const { name, namespace, cluster, previous, observed } = input;
  if (name.length > MAX_REDISCLUSTER_BACKUP_NAME_LENGTH)
    return say(
      'Failed',
      'InvalidSpec',
      `metadata.name: must be at most ${MAX_REDISCLUSTER_BACKUP_NAME_LENGTH} characters to back up a RedisCluster (its Jobs are <name>-backup-<shard>)`,
    );
  const jobs = new Map<number, KubeObject>();
  for (const job of observed) {
    if (job.kind !== 'Job') continue;
    const m = /^(0|[1-9][0-9]?)$/.exec(job.metadata.name.slice(`${name}-backup-`.length));
    if (job.metadata.name.startsWith(`${name}-backup-`) && m) jobs.set(Number(m[1]), job);
  }
  if (jobs.size > 0) return fromJobs(input, jobs);
  if (previous.phase === 'Completed' || previous.phase === 'Failed')
    return { status: previous as RedisBackupStatus, children: undefined };

  const rc = findObject(input.related, API_VERSION, REDIS_CLUSTER_KIND, namespace, cluster);
  if (rc === undefined)
    return say('Pending', 'RedisClusterNotFound', `RedisCluster ${cluster} not found in ${namespace}; waiting for it`);
  const verdict = validateRedisClusterSpec(cluster, rc['spec']);
  if (!verdict.ok)
    return say(
      'Pending',
      'RedisClusterSpecInvalid',
      `RedisCluster ${cluster} has an invalid spec: ${formatProblems(verdict.problems)}`,
    );
  const spec = verdict.spec;
  const storage = spec.backup?.storage;
  if (storage === undefined)
    return say(
      'Failed',
      'NoBackupStorage',
      `RedisCluster ${cluster} has no spec.backup.storage: nowhere to store the backup (set it, with a schedule; then create another RedisBackup)`,
    );
  const phase = str(at(rc, 'status', 'phase'));
  if (phase !== 'Running')
    return say(
      'Pending',
      'RedisClusterNotRunning',
      `RedisCluster ${cluster} is ${phase ?? 'not yet reporting a phase'}; the backup waits until it is Running (every slot served, nothing moving)`,
    );

  const shards = spec.master.replicas;
  const children: KubeObject[] = [];
  const entries: RedisBackupShard[] = [];
  for (let shard = 0; shard < shards; shard++) {
    const jobName = onDemandShardJobName(name, shard);
    // The pod template's labels never carry controller-uid: the Job controller sets its own there
    // (and selects on it), so the RedisBackup's would make the Job invalid.
    const podLabels: Record<string, string> = {
      ...redisClusterBackupSelectorLabels(cluster),
      [SHARD_LABEL]: String(shard),
      [BACKUP_TRIGGER_LABEL]: name,
    };
    const labels: Record<string, string> = {
      ...(input.uid !== undefined && input.uid !== '' ? { [CONTROLLER_UID_LABEL]: input.uid } : {}),
      ...podLabels,
    };
    const pod = backupPodSpecFor(
      {
        namespace,
        name: cluster,
        hosts: shardBackupHosts(cluster, namespace, shard, 1 + spec.replicas),
        tlsSecret: undefined,
        backup: spec.backup,
        imagePullSecrets: spec.imagePullSecrets,
        env: [{ name: 'BACKUP_SHARD', value: String(shard) }],
      },
      storage,
      input.options.operatorImage,
    );
    children.push({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: jobName, namespace, labels },
      spec: backupJobSpecFor(podLabels, pod),
    });
    entries.push({ shard, job: jobName, phase: 'Running' });
  }
  const from = spec.replicas > 0 ? 'a replica of each' : "each shard's master (the shards have no replica)";
  return {
    status: {
      phase: 'Running',
      reason: 'JobsCreated',
      message: `${shards} Jobs back up RedisCluster ${cluster}, reading ${from}`,
      shards: entries,
      storage,
    },
    children,
  };
}
