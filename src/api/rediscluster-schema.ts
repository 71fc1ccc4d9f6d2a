// The RedisCluster API: a sharded Redis in cluster mode, written once, like the Redis
// API in schema.ts (TypeScript types, the hook's validator and the CRD all come from here).
// It reuses the Redis parts that mean the same thing (persistence, resources, auth, scheduling,
// backup, monitoring, config); what differs is the topology (master.replicas = shards, replicas =
// per shard), autoscaling on memory, and the design article's `sentinel` block, which a cluster
// maps onto Redis Cluster's own election (no Sentinel runs).
// Invariants: every property described, defaults here and only here, structural output (see
// schema.ts); a shard count below MIN_REDIS_CLUSTER_SHARDS is refused by the schema.
import { Type, type Static } from '@sinclair/typebox';
import { BackupStatus, ScheduledBackupSpec, storageSchema } from './backup-schema.ts';
import { MonitoringSpec } from './monitoring-schema.ts';
import { ENGINE_VALIDATIONS } from './engine.ts';
import { ConfigSpec, EngineFields, ImageFields, RESERVED_CONFIG_KEYS } from './schema.ts';
import { AuthSpec } from './security-schema.ts';
import { ConditionsStatus, NodesStatus, ObservedGeneration, SecretsStatus } from './status-schema.ts';
import { PersistenceSpec, PodPlacementFields, ResourceRequirements } from './workload-schema.ts';
import { StringEnum } from './typebox-helpers.ts';

/** Redis Cluster's hash slots. */
export const CLUSTER_SLOTS = 16384;
/**
 * Fewest masters a cluster may have: a failed master is replaced only by a vote of the majority of
 * masters, and with two masters the survivor alone is no majority (no automatic failover).
 */
export const MIN_REDIS_CLUSTER_SHARDS = 3;
export const MAX_REDIS_CLUSTER_SHARDS = 64;
export const MAX_REPLICAS_PER_SHARD = 5;

/** Directives the operator owns on a cluster node, on top of the Redis ones. */
export const RESERVED_REDIS_CLUSTER_CONFIG_KEYS = [
  ...RESERVED_CONFIG_KEYS,
  'cluster-enabled',
  'cluster-config-file',
  'cluster-node-timeout',
  'cluster-port',
  'cluster-announce-ip',
  'cluster-announce-port',
  'cluster-announce-bus-port',
  'cluster-announce-tls-port',
  'cluster-require-full-coverage',
  'cluster-allow-replica-migration',
  'cluster-migration-barrier',
  'cluster-replica-no-failover',
  'cluster-slave-no-failover',
] as const;

export const RedisClusterAutoscalingSpec = Type.Object(
  {
    enabled: Type.Boolean({
      default: false,
      description: 'Scale the number of shards (master.replicas) on memory use, between minReplicas and maxReplicas.',
    }),
    minReplicas: Type.Integer({
      default: MIN_REDIS_CLUSTER_SHARDS,
      minimum: 1,
      maximum: MAX_REDIS_CLUSTER_SHARDS,
      description: `Fewest shards. Below ${MIN_REDIS_CLUSTER_SHARDS} is taken as ${MIN_REDIS_CLUSTER_SHARDS} (said in the Autoscaling condition): with fewer masters a failed one cannot be replaced by vote.`,
    }),
    maxReplicas: Type.Integer({
      default: 5,
      minimum: 1,
      maximum: MAX_REDIS_CLUSTER_SHARDS,
      description: 'Most shards.',
    }),
    targetMemoryUtilization: Type.Integer({
      default: 70,
      minimum: 10,
      maximum: 95,
      description:
        "Target of the masters' used memory as a percentage of their maxmemory (from resources.limits.memory), over the whole cluster.",
    }),
    stabilizationWindowSeconds: Type.Integer({
      default: 300,
      minimum: 0,
      maximum: 3600,
      description:
        'A scale-down happens only when every recommendation over this window asked for fewer shards (a spike does not reshard back and forth); scale-ups wait a tenth of it.',
    }),
  },
  {
    default: {},
    description:
      'Memory autoscaling. Needs resources.limits.memory (maxmemory is derived from it). Decisions are Events on the RedisCluster; the new count is written to master.replicas through the scale subresource, as a HorizontalPodAutoscaler does.',
    'x-kubernetes-validations': [
      {
        rule: 'self.minReplicas <= self.maxReplicas',
        message: 'autoscaling.minReplicas must not exceed autoscaling.maxReplicas',
      },
    ],
  },
);

export const RedisClusterSentinelSpec = Type.Object(
  {
    enabled: Type.Boolean({
      default: false,
      description:
        "Accepted for the design article; no Sentinel runs: a sharded Redis fails over by Redis Cluster's own election (the FailoverConfigured condition says so).",
    }),
    replicas: Type.Integer({
      default: 3,
      minimum: 0,
      maximum: 7,
      description: 'Accepted for the design article; no Sentinel runs.',
    }),
    downAfterMilliseconds: Type.Integer({
      default: 5000,
      minimum: 500,
      maximum: 120000,
      description:
        'How long a master must be unreachable before its replicas start an election: becomes cluster-node-timeout.',
    }),
    failoverTimeout: Type.Integer({
      default: 10000,
      minimum: 1000,
      maximum: 600000,
      description:
        "How long the operator waits for the cluster's own failover of a shard whose master failed before it forces one (CLUSTER FAILOVER FORCE on the best replica, which still needs the masters' votes).",
    }),
  },
  {
    default: {},
    description: "Failover settings, in the shape of the design article (Sentinel's names), mapped onto Redis Cluster.",
  },
);

export const RedisClusterSpec = Type.Object(
  {
    ...EngineFields,
    ...ImageFields,
    master: Type.Object(
      {
        replicas: Type.Integer({
          default: MIN_REDIS_CLUSTER_SHARDS,
          minimum: MIN_REDIS_CLUSTER_SHARDS,
          maximum: MAX_REDIS_CLUSTER_SHARDS,
          description: `Number of shards (masters), each a StatefulSet <name>-shard-<i>. At least ${MIN_REDIS_CLUSTER_SHARDS}. Changing it reshards: slots move to new shards, or away from shards before they are removed. kubectl scale rediscluster <name> --replicas=N sets it.`,
        }),
      },
      { default: {}, description: 'The masters: one per shard.' },
    ),
    replicas: Type.Integer({
      default: 1,
      minimum: 0,
      maximum: MAX_REPLICAS_PER_SHARD,
      description: 'Replicas per shard (each shard has 1 + replicas pods).',
    }),
    persistence: PersistenceSpec,
    resources: ResourceRequirements,
    auth: Type.Optional(AuthSpec),
    autoscaling: RedisClusterAutoscalingSpec,
    sentinel: RedisClusterSentinelSpec,
    backup: Type.Optional({
      ...ScheduledBackupSpec,
      description:
        'Scheduled backups of every shard: a CronJob <name>-shard-<i>-backup per shard reads a consistent RDB snapshot from a replica of that shard (from its master only when it has none) and stores it under <prefix>rediscluster~<namespace>~<name>~shard-<i>/. status.backup and the BackupHealthy condition report them (status.backup.lastSuccessful is the shard whose last success is oldest).',
    }),
    restore: Type.Optional(
      Type.Object(
        {
          backup: Type.String({
            minLength: 1,
            maxLength: 253,
            description:
              'A completed RedisBackup of a RedisCluster (spec.redisCluster), in the same namespace, with as many shards as master.replicas.',
          }),
        },
        {
          description:
            "Start this RedisCluster from a backup: pod 0 of each shard loads its shard's snapshot before Redis starts, and the cluster is formed with the slots each shard served when it was backed up (the other pods replicate). Only into empty data volumes (it never overwrites data). Set at creation; cannot change afterwards.",
        },
      ),
    ),
    monitoring: MonitoringSpec,
    hibernate: Type.Boolean({
      default: false,
      description:
        'Hibernation: true stops every pod (every shard StatefulSet scales to zero) and keeps the data volumes, nodes.conf with them, the Services, the ConfigMap and the Secrets; false brings the RedisCluster back with the same slot layout and its data. A reshard that is moving slots finishes first (the Hibernated condition says so).',
    }),
    config: ConfigSpec('RedisCluster'),
    ...PodPlacementFields({
      affinity:
        'A Kubernetes Affinity for the Redis pods. When unset, the pods of one shard prefer separate nodes, so a master and its replicas do not share one.',
      podAnnotations: 'Extra annotations on the Redis pods.',
    }),
  },
  {
    description:
      'The desired sharded Redis: engine and version, shards and replicas per shard, durability, resources, failover, autoscaling, backup and monitoring.',
    'x-kubernetes-validations': [
      ...ENGINE_VALIDATIONS,
      {
        rule: 'has(self.restore) == has(oldSelf.restore) && (!has(self.restore) || self.restore == oldSelf.restore)',
        message:
          'restore is set at creation only and cannot change: a running RedisCluster is never overwritten by a backup (create a new RedisCluster from it)',
      },
    ],
  },
);

export const ShardStatus = Type.Object(
  {
    index: Type.Integer({ description: 'The shard number (its StatefulSet is <name>-shard-<index>).' }),
    master: Type.Optional(
      Type.String({ description: 'The pod that is master of this shard now (it moves on failover).' }),
    ),
    replicas: Type.Array(Type.String({ description: 'A pod name.' }), {
      description: "Pods replicating this shard's master, with their link up.",
    }),
    slots: Type.String({ description: 'The hash slots the shard serves, as ranges ("0-5460"); "-" when none.' }),
    slotCount: Type.Integer({ description: 'How many hash slots the shard serves.' }),
    health: StringEnum(['Healthy', 'Degraded', 'NoMaster', 'Leaving', 'Joining'] as const, {
      description:
        'Healthy: a ready master and every replica linked; Degraded: a master but a replica missing or unlinked; NoMaster: no master answers for its slots; Joining: new, its slots not moved in yet; Leaving: a scale-down is moving its slots away.',
    }),
  },
  { description: 'One shard as the sidecar last reported it on the pods.' },
);

export const RedisClusterRestoreStatus = Type.Object(
  {
    source: Type.String({ description: 'What spec.restore named: RedisBackup/<name>.' }),
    phase: StringEnum(['Pending', 'Restoring', 'Completed', 'Failed'] as const, {
      description:
        "Pending (the backup is not known or not complete yet), Restoring, Completed (pod 0 of every shard started from its shard's snapshot, as its restore container reported) or Failed (the backup cannot be restored here, or a shard's pod 0 started without it).",
    }),
    message: Type.String({ description: 'What a human needs to know.' }),
    storage: Type.Optional(
      storageSchema(
        'How the pods reach the snapshots, fixed once the backup is known (the pod template never changes).',
      ),
    ),
    shards: Type.Optional(
      Type.Array(
        Type.Object(
          {
            shard: Type.Integer({ minimum: 0, description: 'The shard index.' }),
            location: Type.String({ description: "The shard's snapshot." }),
            slots: Type.String({
              description: 'The slots the shard is formed with, as ranges ("0-5460"): those it served when backed up.',
            }),
          },
          { description: 'One shard restored.' },
        ),
        {
          maxItems: MAX_REDIS_CLUSTER_SHARDS,
          description: 'Per shard, fixed once the backup is known: the sidecar forms the cluster with these slots.',
        },
      ),
    ),
  },
  { description: 'Where this RedisCluster was restored from (spec.restore).' },
);

export const RedisClusterStatus = Type.Object(
  {
    phase: Type.Optional(
      StringEnum(['Pending', 'Running', 'Resharding', 'Failed', 'Hibernated'] as const, {
        description:
          'Running when every slot is covered by a ready master; Resharding while slots move between shards; Pending otherwise; Failed when the spec is invalid (see SpecValid); Hibernated while spec.hibernate is true and no reshard is moving slots (the Hibernated condition says whether every pod has stopped).',
      }),
    ),
    shards: Type.Optional(
      Type.Integer({ description: 'Shards that exist now, leaving ones included (the scale subresource reads it).' }),
    ),
    readyMasters: Type.Optional(Type.Integer({ description: 'Shards whose master is Ready.' })),
    readyReplicas: Type.Optional(
      Type.Integer({ description: 'Replica pods that are Ready and linked to their master, over all shards.' }),
    ),
    slotsCovered: Type.Optional(
      Type.Integer({ description: `Hash slots served by a ready master (of ${CLUSTER_SLOTS}).` }),
    ),
    summary: Type.Optional(
      Type.Object(
        {
          masters: Type.String({
            description:
              'Shards whose master is Ready, of the shards wanted (spec.master.replicas), as "3/3": the MASTERS column.',
          }),
          replicas: Type.Optional(
            Type.String({
              description:
                'Replica pods Ready and linked to their master, of those wanted (spec.master.replicas times spec.replicas), as "3/3": the REPLICAS column. Absent while the spec is invalid.',
            }),
          ),
        },
        {
          description:
            'Figures written for `kubectl get rediscluster` to print (a printer column reads one field, so ready/desired is one string).',
        },
      ),
    ),
    shardStatus: Type.Optional(
      Type.Array(ShardStatus, { description: 'Per shard: master, replicas, slots and health.' }),
    ),
    resharding: Type.Optional(
      Type.String({
        description:
          'Progress or outcome of the last reshard, as the sidecar recorded it (annotation redis.example.com/reshard).',
      }),
    ),
    memoryUtilization: Type.Optional(
      Type.Integer({
        description:
          "The masters' used memory as a percentage of their maxmemory, as the pods last reported it (what autoscaling reads).",
      }),
    ),
    selector: Type.Optional(Type.String({ description: 'Label selector of the pods (for the scale subresource).' })),
    nodes: NodesStatus('RedisCluster'),
    secrets: SecretsStatus(
      'RedisCluster',
      'The Secrets this RedisCluster uses that exist, sorted by name, as the sidecar reports them (annotation redis.example.com/secrets: the hook is sent no Secret). Absent until the first report.',
    ),
    backup: Type.Optional(BackupStatus),
    restore: Type.Optional(RedisClusterRestoreStatus),
    conditions: ConditionsStatus(
      'Ready, SlotsCovered, ShardsReady, Resharded, SpecValid, Updated (the rollout of a new pod template, one pod at a time), FailoverConfigured, Autoscaling, Hibernated, SecretsReady, and BackupHealthy when spec.backup is set.',
    ),
    observedGeneration: ObservedGeneration,
  },
  { description: 'What the operator observed. Computed from the children and pods only.' },
);

/** A validated RedisCluster spec: its version resolved by engine, as a Redis's (schema.ts). */
export type RedisClusterSpec = Static<typeof RedisClusterSpec> & { version: string };
export type RedisClusterStatus = Static<typeof RedisClusterStatus>;
export type RedisClusterRestoreStatus = Static<typeof RedisClusterRestoreStatus>;
export type ShardStatus = Static<typeof ShardStatus>;
export type RedisClusterAutoscalingSpec = Static<typeof RedisClusterAutoscalingSpec>;
export type RedisClusterSentinelSpec = Static<typeof RedisClusterSentinelSpec>;
