// The plugin's backup and restore of a RedisCluster (README "Sharding"): the RedisBackup naming it,
// its progress per shard, and the new RedisCluster a restore creates. Pure; main.ts does the reads
// and writes. Invariants: only documented writes (a RedisBackup with spec.redisCluster, a new
// RedisCluster with spec.restore); a restore keeps each shard's slots, so the new cluster's shard
// count is the backup's, whatever --like says (and the command says when it differed).
import { API_VERSION } from '../api/labels.ts';
import { REDISBACKUP_KIND, type RedisBackupStatus } from '../api/redisbackup-schema.ts';
import { REDIS_CLUSTER_KIND } from '../api/rediscluster-names.ts';
import type { RedisClusterStatus } from '../api/rediscluster-schema.ts';
import type { Progress } from './ops.ts';

export function clusterBackupObject(cluster: string, namespace: string, name: string) {
  return {
    apiVersion: API_VERSION,
    kind: REDISBACKUP_KIND,
    metadata: { name, namespace },
    spec: { redisCluster: cluster },
  };
}

/** Why `kubectl redis backup` cannot work for this RedisCluster, or undefined: it needs spec.backup.storage. */
export function clusterBackupRefusal(cluster: {
  metadata: { name: string };
  spec?: Record<string, unknown>;
}): string | undefined {
  const backup = cluster.spec?.['backup'];
  const storage =
    typeof backup === 'object' && backup !== null ? (backup as Record<string, unknown>)['storage'] : undefined;
  if (typeof storage === 'object' && storage !== null) return undefined;
  return `RedisCluster ${cluster.metadata.name} has no spec.backup.storage: a backup goes where it says, so set spec.backup (a schedule and the storage) first (README "Sharding")`;
}

/** Done when every shard's snapshot is stored: one line per change, shards counted. */
export function clusterBackupProgress(status: RedisBackupStatus | undefined): Progress {
  const phase = status?.phase ?? 'Pending';
  const shards = status?.shards ?? [];
  const done = shards.filter((s) => s.phase === 'Completed').length;
  const why = [status?.reason, status?.message].filter(Boolean).join(': ');
  const line = `phase ${phase}${shards.length > 0 ? `, ${done}/${shards.length} shards stored` : ''}${why ? `, ${why}` : ''}`;
  if (phase === 'Completed')
    return {
      state: 'done',
      line: [
        line,
        ...shards.map(
          (s) =>
            `  shard ${s.shard}: ${s.location ?? '?'} slots ${s.slots ?? '?'} offset ${s.replicationOffset ?? '?'} from ${s.source ?? '?'}`,
        ),
      ].join('\n'),
    };
  if (phase === 'Failed') return { state: 'refused', line };
  return { state: 'waiting', line };
}

export type ClusterRestoreSpec =
  { ok: true; spec: Record<string, unknown>; leftOut: string[] } | { ok: false; reason: string };

/**
 * The spec of a RedisCluster restored from RedisBackup `backup` (a backup of a RedisCluster, with
 * `shards` shards), shaped like `likeSpec` (another RedisCluster's, or {}): without its restore and hibernate,
 * with master.replicas set to the backup's shard count.
 */
export function clusterRestoreSpec(
  backup: { name: string; redisCluster: string | undefined; status: RedisBackupStatus | undefined },
  like: string,
  likeSpec: Record<string, unknown>,
): ClusterRestoreSpec {
  if (backup.redisCluster === undefined)
    return { ok: false, reason: `RedisBackup ${backup.name} is a backup of a Redis, not of a RedisCluster` };
  if (backup.status?.phase !== 'Completed')
    return {
      ok: false,
      reason: `RedisBackup ${backup.name} is ${backup.status?.phase ?? 'Pending'}: only a Completed backup can be restored`,
    };
  const shards = backup.status.shards?.length ?? 0;
  const spec = structuredClone(likeSpec);
  const leftOut: string[] = [];
  if (spec['restore'] !== undefined) leftOut.push(`spec.restore of ${like} (this one restores from ${backup.name})`);
  delete spec['restore'];
  if (spec['hibernate'] === true)
    leftOut.push(`spec.hibernate: true of ${like} (a hibernated RedisCluster would never start, so never restore)`);
  delete spec['hibernate'];
  const master = typeof spec['master'] === 'object' && spec['master'] !== null ? spec['master'] : {};
  const wanted = (master as Record<string, unknown>)['replicas'];
  if (typeof wanted === 'number' && wanted !== shards)
    leftOut.push(
      `master.replicas ${wanted} of ${like} (a restore keeps each shard's slots: ${shards} shards, as backed up; scale afterwards)`,
    );
  spec['master'] = { ...master, replicas: shards };
  spec['restore'] = { backup: backup.name };
  return { ok: true, spec, leftOut };
}

export function clusterRestoreObject(name: string, namespace: string, spec: Record<string, unknown>) {
  return { apiVersion: API_VERSION, kind: REDIS_CLUSTER_KIND, metadata: { name, namespace }, spec };
}

/** Done when the restore is Completed and the cluster Running. */
export function clusterRestoreProgress(status: RedisClusterStatus | undefined): Progress {
  const r = status?.restore;
  const line = `phase ${status?.phase ?? 'Unknown'}, restore ${r?.phase ?? 'not started'}${r?.message ? `: ${r.message}` : ''}`;
  if (r?.phase === 'Failed') return { state: 'refused', line };
  return { state: r?.phase === 'Completed' && status?.phase === 'Running' ? 'done' : 'waiting', line };
}
