// The workload parts of the Redis API: the pods' resources and placement, the data volumes and
// how often Redis writes to them (spec.persistence), and failure detection with write fencing
// (spec.failover). Part of the one schema source: schema.ts composes them into RedisSpec and
// rediscluster-schema.ts reuses resources, placement and persistence; the same invariants hold
// (every property described, defaults here and only here, structural output: see schema.ts).
import { Type, type Static } from '@sinclair/typebox';
import { Quantity, QUANTITY_PATTERN, StringEnum, StringMap } from './typebox-helpers.ts';

/** Cron forms we can express as Redis `save <seconds> 1` rules; anything else is refused up front. */
export const RDB_SCHEDULE_PATTERN =
  '^(\\*/([1-9]|[1-5][0-9]) \\* \\* \\* \\*|0 \\*/([1-9]|1[0-9]|2[0-3]) \\* \\* \\*|0 \\* \\* \\* \\*|0 0 \\* \\* \\*|@hourly|@daily)$';

export const ResourceRequirements = Type.Object(
  {
    requests: Type.Optional(
      StringMap(Quantity, 'Minimum resources per Redis container, for example memory: 256Mi, cpu: 100m.'),
    ),
    limits: Type.Optional(
      StringMap(
        Quantity,
        'Maximum resources per Redis container. Set a memory limit: Redis maxmemory is derived from it.',
      ),
    ),
  },
  { description: 'CPU and memory for each Redis container (master and replicas alike).', default: {} },
);

export const Toleration = Type.Object(
  {
    key: Type.Optional(Type.String({ description: 'Taint key the toleration applies to; empty matches all keys.' })),
    operator: Type.Optional(
      StringEnum(['Exists', 'Equal'] as const, { description: 'Exists or Equal (default Equal).' }),
    ),
    value: Type.Optional(Type.String({ description: 'Taint value the toleration matches (with operator Equal).' })),
    effect: Type.Optional(
      StringEnum(['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const, {
        description: 'Taint effect to match; empty matches all effects.',
      }),
    ),
    tolerationSeconds: Type.Optional(
      Type.Integer({ description: 'For NoExecute: how long the pod stays bound after the taint appears.' }),
    ),
  },
  { description: 'A Kubernetes toleration, copied onto every Redis pod.' },
);

/**
 * Where the Redis pods run and what they carry: the spec fields both kinds share, in the order the
 * CRD lists them. Only the affinity's default and the annotations' example differ, so those two
 * descriptions are the caller's.
 */
export function PodPlacementFields(descriptions: { affinity: string; podAnnotations: string }) {
  return {
    nodeSelector: Type.Optional(StringMap(Type.String(), 'Node labels the Redis pods must be scheduled on.')),
    tolerations: Type.Optional(Type.Array(Toleration, { description: 'Tolerations for the Redis pods.' })),
    affinity: Type.Optional(
      Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        description: descriptions.affinity,
      }),
    ),
    priorityClassName: Type.Optional(Type.String({ description: 'PriorityClass of the Redis pods.' })),
    podAnnotations: Type.Optional(StringMap(Type.String(), descriptions.podAnnotations)),
  };
}

export const PersistenceSpec = Type.Object(
  {
    enableRdb: Type.Boolean({ default: true, description: 'Write RDB snapshots to the data volume on rdbSchedule.' }),
    rdbSchedule: Type.String({
      default: '*/15 * * * *',
      pattern: RDB_SCHEDULE_PATTERN,
      description:
        'When to snapshot, as cron: "*/N * * * *" (every N minutes), "0 */N * * *" (every N hours), "0 * * * *" / @hourly, "0 0 * * *" / @daily. Becomes a Redis `save <seconds> 1` rule: a snapshot at that interval when anything changed.',
    }),
    enableAof: Type.Boolean({
      default: false,
      description:
        'Append-only file with appendfsync everysec: at most about one second of writes lost on a crash of every pod at once.',
    }),
    size: Type.String({
      default: '1Gi',
      pattern: QUANTITY_PATTERN,
      description: "Size of each pod's data volume. Can grow (when the storage class allows expansion), never shrink.",
    }),
    storageClassName: Type.Optional(
      Type.String({
        description: 'Storage class of the data volumes; the cluster default when unset. Cannot change after creation.',
      }),
    ),
    whenDeleted: StringEnum(['Retain', 'Delete'] as const, {
      default: 'Retain',
      description:
        'What happens to the data volumes when the Redis is deleted: Retain keeps them (the default: deleting a resource should not delete data), Delete removes them.',
    }),
  },
  {
    default: {},
    description:
      'Durability. Data volumes (PersistentVolumeClaims) are created when RDB or AOF is enabled; otherwise data lives in an emptyDir and Redis is a cache.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)',
        message: 'persistence.storageClassName cannot change after creation',
      },
      {
        rule: 'quantity(self.size).compareTo(quantity(oldSelf.size)) >= 0',
        message: 'persistence.size cannot shrink',
      },
      {
        rule: '(self.enableRdb || self.enableAof) == (oldSelf.enableRdb || oldSelf.enableAof)',
        message:
          "persistence cannot be switched on or off after creation (turning both enableRdb and enableAof off, or one on from none): the StatefulSets' volume claims are immutable",
      },
    ],
  },
);

export const FailoverSpec = Type.Object(
  {
    downAfterMilliseconds: Type.Integer({
      default: 1000,
      minimum: 200,
      maximum: 60000,
      description:
        'How long the master must fail to answer before a failover, and then only if the replicas or the Kubernetes API agree that it is down.',
    }),
    minReplicasToWrite: Type.Integer({
      default: 1,
      minimum: 0,
      maximum: 15,
      description:
        'Fencing: the master refuses writes unless this many replicas acknowledge within minReplicasMaxLagSeconds (capped at spec.replicas). 0 turns fencing off.',
    }),
    minReplicasMaxLagSeconds: Type.Integer({
      default: 5,
      minimum: 1,
      maximum: 60,
      description: 'Seconds of replica silence after which the master stops counting it for minReplicasToWrite.',
    }),
  },
  { default: {}, description: 'Failure detection and write fencing.' },
);

export type PersistenceSpec = Static<typeof PersistenceSpec>;
export type FailoverSpec = Static<typeof FailoverSpec>;
