// The RedisBackup API: one on-demand backup of a named Redis or RedisCluster (one snapshot per
// shard, each recorded with the shard's slots and offset), its own kind with its own
// CompositeController (as database operators do it: the backup outlives the Redis and can be
// restored into a new one). Written once here; the CRD (crd.ts), the hook's validation and the
// types come from it. Invariants: as schema.ts (every property described, structural output);
// the spec is immutable (a backup is one run: change nothing, create another).
import { Type, type Static } from '@sinclair/typebox';
import { storageSchema } from './backup-schema.ts';
import { MAX_REDIS_CLUSTER_SHARDS } from './rediscluster-schema.ts';
import { StringEnum } from './typebox-helpers.ts';

export const REDISBACKUP_KIND = 'RedisBackup';
export const REDISBACKUP_PLURAL = 'redisbackups';
export const REDISBACKUP_SINGULAR = 'redisbackup';
export const REDISBACKUP_SHORT_NAMES = ['rdb', 'rbk'];
/** Its Job is <name>-backup, and a Job's name must fit a label value (63). */
export const MAX_REDISBACKUP_NAME_LENGTH = 56;

export const RedisBackupSpec = Type.Object(
  {
    redis: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        description:
          'The Redis to back up, in the same namespace. Its spec.backup.storage says where the backup goes. Exactly one of redis and redisCluster.',
      }),
    ),
    redisCluster: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        description:
          'The RedisCluster to back up, in the same namespace: one snapshot per shard, read from a replica of the shard (its master only when the shard has none), each recorded with the slots the shard served and its replication offset. Its spec.backup.storage says where the backup goes. Exactly one of redis and redisCluster.',
      }),
    ),
  },
  {
    description: 'One backup, taken once. Immutable: to back up again, create another RedisBackup.',
    'x-kubernetes-validations': [
      { rule: 'self == oldSelf', message: 'a RedisBackup cannot change: create another one' },
      {
        rule: 'has(self.redis) != has(self.redisCluster)',
        message: 'name exactly one of spec.redis (a Redis) and spec.redisCluster (a RedisCluster)',
      },
    ],
  },
);

/** One shard's snapshot of a RedisCluster backup: what a restore of that shard needs. */
export const RedisBackupShard = Type.Object(
  {
    shard: Type.Integer({ minimum: 0, description: 'The shard index (its StatefulSet <cluster>-shard-<i>).' }),
    job: Type.String({ description: 'The Job that backs this shard up.' }),
    phase: StringEnum(['Running', 'Completed', 'Failed'] as const, { description: "This shard's backup." }),
    message: Type.Optional(Type.String({ description: 'What happened, when it failed.' })),
    location: Type.Optional(
      Type.String({ description: "Where the shard's snapshot is: s3://<bucket>/<key> or pvc://<claim>/<path>." }),
    ),
    slots: Type.Optional(
      Type.String({
        description:
          'The slots the shard served when its snapshot was taken, as ranges ("0-5460,5462"): a restore gives them to the same shard.',
      }),
    ),
    replicationOffset: Type.Optional(
      Type.Integer({ description: 'The replication offset of the shard the snapshot was taken at.' }),
    ),
    replicationId: Type.Optional(Type.String({ description: 'The replication id of that offset.' })),
    sizeBytes: Type.Optional(Type.Integer({ description: 'Size of the RDB snapshot in bytes.' })),
    source: Type.Optional(
      Type.String({ description: 'The node it was read from and its role then (master only when it had no replica).' }),
    ),
  },
  { description: 'One shard of a RedisCluster backup.' },
);

export const REDISBACKUP_PHASES = ['Pending', 'Running', 'Completed', 'Failed'] as const;

export const RedisBackupStatus = Type.Object(
  {
    phase: Type.Optional(
      StringEnum(REDISBACKUP_PHASES, {
        description:
          'Pending (waiting for the Redis to be Running), Running, Completed or Failed (the reason and message say why).',
      }),
    ),
    reason: Type.Optional(Type.String({ description: 'One CamelCase word saying why it is in this phase.' })),
    message: Type.Optional(Type.String({ description: 'What a human needs to know.' })),
    job: Type.Optional(Type.String({ description: 'The Job that runs it.' })),
    startTime: Type.Optional(Type.String({ description: 'When the Job started.' })),
    completionTime: Type.Optional(Type.String({ description: 'When it ended (success or failure).' })),
    location: Type.Optional(
      Type.String({ description: 'Where the backup is: s3://<bucket>/<key> or pvc://<claim>/<path>.' }),
    ),
    sizeBytes: Type.Optional(Type.Integer({ description: 'Size of the RDB snapshot in bytes.' })),
    replicationOffset: Type.Optional(
      Type.Integer({ description: 'The replication offset the snapshot was taken at.' }),
    ),
    replicationId: Type.Optional(Type.String({ description: 'The replication id of that offset.' })),
    redisVersion: Type.Optional(Type.String({ description: 'The version of the Redis it was read from.' })),
    source: Type.Optional(Type.String({ description: 'The node it was read from and its role then.' })),
    shards: Type.Optional(
      Type.Array(RedisBackupShard, {
        maxItems: MAX_REDIS_CLUSTER_SHARDS,
        description: 'A RedisCluster backup: one entry per shard, in shard order. Completed only when every shard is.',
      }),
    ),
    storage: Type.Optional(
      storageSchema('Where it was stored, as the Redis said then (a restore naming this backup uses it).'),
    ),
    observedGeneration: Type.Optional(Type.Integer({ description: 'Written by Metacontroller.' })),
  },
  { description: 'What happened to this backup. Computed from its Job and the Job pod only.' },
);

export type RedisBackupSpec = Static<typeof RedisBackupSpec>;
export type RedisBackupStatus = Static<typeof RedisBackupStatus>;
export type RedisBackupShard = Static<typeof RedisBackupShard>;
