// The Redis API, written once. From these TypeBox schemas come the TypeScript types (Static),
// the ajv validator the hook runs (validate.ts) and the CRD's openAPIV3Schema (crd.ts).
// Invariants: every property has a description (kubectl explain), defaults live here and only
// here, and the emitted JSON is a structural schema a real API server accepts: no $ref, no
// anyOf of consts, no patternProperties (maps are `additionalProperties`), enums as `enum`.
import { Type, type Static } from '@sinclair/typebox';
import { AuthSpec, NetworkPolicySpec, PasswordGracePeriodSeconds, TlsSpec, UsersSpec } from './security-schema.ts';
import { BackupSpec, BackupStatus, RestoreSpec, RestoreStatus } from './backup-schema.ts';
import { Quantity, QUANTITY_PATTERN, StringEnum, StringMap } from './typebox-helpers.ts';
import { MonitoringSpec } from './monitoring-schema.ts';
import { allowedDirectives, allowListValidation, type ConfigKind } from './config-allow.ts';
import { CONFIG_VALUE_PATTERN, NO_CONTROL_OR_SPACE_PATTERN } from './text.ts';

export { BackupResult, BackupSpec, BackupStatus, BackupStorage, RestoreSpec, RestoreStatus } from './backup-schema.ts';
export { AuthSpec, NetworkPolicySpec, PasswordGracePeriodSeconds, TlsSpec, UsersSpec } from './security-schema.ts';
export { AlertSpec, MonitoringSpec } from './monitoring-schema.ts';
export { QUANTITY_PATTERN } from './typebox-helpers.ts';

/** Cron forms we can express as Redis `save <seconds> 1` rules; anything else is refused up front. */
export const RDB_SCHEDULE_PATTERN =
  '^(\\*/([1-9]|[1-5][0-9]) \\* \\* \\* \\*|0 \\*/([1-9]|1[0-9]|2[0-3]) \\* \\* \\*|0 \\* \\* \\* \\*|0 0 \\* \\* \\*|@hourly|@daily)$';

/** The form of a version (major.minor[.patch][-suffix]); which ones are supported is SUPPORTED_VERSION_RULE's. */
export const VERSION_PATTERN = '^[0-9]+\\.[0-9]+(\\.[0-9]+)?(-[0-9A-Za-z]([0-9A-Za-z.]*[0-9A-Za-z])?)?$';

/**
 * The Redis versions the operator supports and tests: 7.x. The sidecar relies on multi-section
 * INFO and multi-parameter CONFIG GET/SET (7.0+): on 6.x every probe fails and no node is ever
 * promoted. Releases after 7 are refused until they are tested here.
 */
export const SUPPORTED_VERSION_RULE = "self.matches('^7[.]')";
export const SUPPORTED_VERSION_MESSAGE =
  'only Redis 7.x is supported (7.0 or later 7 releases; tested with 7.0): the operator needs multi-section INFO and multi-parameter CONFIG GET/SET, which Redis 6 lacks';
/** The same rule for the hook's own validation (validate.ts), kept beside the CEL text it mirrors. */
export const SUPPORTED_VERSION = /^7[.]/;

/** CEL (transition rule on spec.version): major.minor compared as numbers, so 7.10 is newer than 7.9. */
const MAJOR = (v: string) => `int(${v}.split('.')[0])`;
const MINOR = (v: string) => `int(${v}.split('-')[0].split('.')[1])`;
export const VERSION_NO_DOWNGRADE_RULE = `${MAJOR('self')} > ${MAJOR('oldSelf')} || (${MAJOR('self')} == ${MAJOR('oldSelf')} && ${MINOR('self')} >= ${MINOR('oldSelf')})`;

/**
 * redis.conf directives the operator owns; users setting them could break failover or fencing.
 * spec.config is checked against an allow-list (config-allow.ts) that has none of these: this
 * list is what the tests hold the allow-list against.
 */
export const RESERVED_CONFIG_KEYS = [
  'replicaof',
  'slaveof',
  'bind',
  'port',
  'dir',
  'dbfilename',
  'appendonly',
  'appendfilename',
  'save',
  'requirepass',
  'masterauth',
  'masteruser',
  'tls-port',
  'tls-cert-file',
  'tls-key-file',
  'tls-ca-cert-file',
  'tls-auth-clients',
  'tls-replication',
  'min-replicas-to-write',
  'min-slaves-to-write',
  'min-replicas-max-lag',
  'min-slaves-max-lag',
  'replica-announce-ip',
  'slave-announce-ip',
  'replica-read-only',
  'slave-read-only',
  'repl-ping-replica-period',
  'repl-timeout',
  'include',
  'protected-mode',
  'daemonize',
  'supervised',
  'pidfile',
  'logfile',
  'rename-command',
  'aclfile',
  'unixsocket',
  'tls-port',
] as const;

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

/** The version's CEL rules, the same on a Redis and a RedisCluster. */
export const VERSION_VALIDATIONS = [
  { rule: SUPPORTED_VERSION_RULE, message: SUPPORTED_VERSION_MESSAGE },
  {
    // Older Redis cannot load the RDB files (nor the replication stream) of a newer
    // major.minor; patch downgrades keep the format and stay allowed.
    rule: VERSION_NO_DOWNGRADE_RULE,
    message:
      'version cannot be downgraded to an older major.minor: older Redis cannot load the data files of a newer one',
  },
];

/** The image fields, the same on a Redis and a RedisCluster. */
export const ImageFields = {
  image: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: NO_CONTROL_OR_SPACE_PATTERN,
      description:
        'Container image to run instead of redis:<version>. Must provide redis-server and redis-cli. No spaces or control characters.',
    }),
  ),
  imagePullPolicy: Type.Optional(
    StringEnum(['Always', 'IfNotPresent', 'Never'] as const, {
      description: 'Image pull policy for the Redis containers.',
    }),
  ),
  imagePullSecrets: Type.Optional(
    Type.Array(
      Type.Object(
        { name: Type.String({ description: 'Secret name.' }) },
        { description: 'A reference to an image pull Secret.' },
      ),
      {
        description: 'Secrets for pulling the image from a private registry.',
      },
    ),
  ),
};

/**
 * spec.config of a Redis or a RedisCluster: directives on the allow-list (config-allow.ts) only,
 * values of plain words (CONFIG_VALUE_PATTERN). The bounds keep the CEL rule within the API server's
 * estimated cost budget.
 */
export function ConfigSpec(kind: ConfigKind) {
  const { rule, messageExpression, message } = allowListValidation(kind);
  return Type.Optional(
    Type.Unsafe<Record<string, string>>({
      type: 'object',
      maxProperties: 64,
      additionalProperties: { type: 'string', maxLength: 1024, pattern: CONFIG_VALUE_PATTERN },
      description: `Extra redis.conf directives (for example maxmemory-policy: allkeys-lru), from an allow-list: ${allowedDirectives(kind).join(', ')}. Anything else (authentication, users, modules, debugging, files, networking, replication, persistence: the operator's) is refused. Values are words of letters, digits and . _ % $ + - (optionally in one pair of quotes). Runtime directives are applied without a restart; the others roll the pods.`,
      'x-kubernetes-validations': [{ rule, messageExpression, message }],
    }),
  );
}

export const RedisSpec = Type.Object(
  {
    version: Type.String({
      default: '7.2',
      pattern: VERSION_PATTERN,
      // 63: the version also becomes the app.kubernetes.io/version label value.
      maxLength: 63,
      description:
        'Redis version, for example "7.2" or "7.2.4"; the image is redis:<version> unless image is set. Only 7.x is supported. Can be upgraded, never downgraded to an older major.minor.',
      'x-kubernetes-validations': VERSION_VALIDATIONS,
    }),
    ...ImageFields,
    master: Type.Object(
      {
        replicas: Type.Integer({
          default: 1,
          minimum: 1,
          maximum: 1,
          description:
            'Number of masters. Must be 1: this is a master/replica topology; add read capacity with spec.replicas.',
        }),
      },
      { default: {}, description: 'The master StatefulSet (<name>-master).' },
    ),
    replicas: Type.Integer({
      default: 2,
      minimum: 0,
      maximum: 15,
      description: 'Number of replica pods (<name>-replica-N). Scalable with kubectl scale.',
    }),
    persistence: PersistenceSpec,
    resources: ResourceRequirements,
    auth: Type.Optional(AuthSpec),
    tls: Type.Optional(TlsSpec),
    failover: FailoverSpec,
    config: ConfigSpec('Redis'),
    nodeSelector: Type.Optional(StringMap(Type.String(), 'Node labels the Redis pods must be scheduled on.')),
    tolerations: Type.Optional(Type.Array(Toleration, { description: 'Tolerations for the Redis pods.' })),
    affinity: Type.Optional(
      Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
        description:
          'A Kubernetes Affinity for the Redis pods. When unset, pods prefer separate nodes (pod anti-affinity).',
      }),
    ),
    priorityClassName: Type.Optional(Type.String({ description: 'PriorityClass of the Redis pods.' })),
    podAnnotations: Type.Optional(
      StringMap(Type.String(), 'Extra annotations on the Redis pods (for example for a metrics scraper).'),
    ),
    users: Type.Optional(UsersSpec),
    passwordGracePeriodSeconds: PasswordGracePeriodSeconds,
    networkPolicy: Type.Optional(NetworkPolicySpec),
    backup: Type.Optional(BackupSpec),
    restore: Type.Optional(RestoreSpec),
    monitoring: MonitoringSpec,
    hibernate: Type.Boolean({
      default: false,
      description:
        'Hibernation: true stops every pod (both StatefulSets scale to zero) and keeps the data volumes; false brings the Redis back with its data, the pod with the most data becoming master.',
    }),
  },
  {
    description: 'The desired Redis: version, topology, durability, resources, auth and scheduling.',
    'x-kubernetes-validations': [
      {
        rule: 'has(self.tls) == has(oldSelf.tls)',
        message:
          'tls cannot be switched on or off after creation: during the change, nodes with and without TLS could not replicate from each other (create a new Redis and move the data)',
      },
      {
        rule: 'has(self.restore) == has(oldSelf.restore) && (!has(self.restore) || self.restore == oldSelf.restore)',
        message:
          'restore is set at creation only and cannot change: a running Redis is never overwritten by a backup (create a new Redis from it)',
      },
    ],
  },
);

export const Condition = Type.Object(
  {
    type: Type.String({
      description:
        'Condition type: Ready, MasterAvailable, ReplicasInSync, SpecValid, Updated, Hibernated or BackupHealthy (with spec.backup).',
    }),
    status: StringEnum(['True', 'False', 'Unknown'] as const, { description: 'True, False or Unknown.' }),
    reason: Type.String({ description: 'One CamelCase word saying why.' }),
    message: Type.String({ description: 'What a human needs to know.' }),
    lastTransitionTime: Type.Optional(
      Type.String({
        description:
          'When the condition last changed, taken from what was observed (never a clock read in the hook); may be absent.',
      }),
    ),
  },
  { description: 'A standard Kubernetes condition.' },
);

export const RedisStatus = Type.Object(
  {
    phase: Type.Optional(
      StringEnum(['Pending', 'Running', 'Failed', 'Hibernated'] as const, {
        description:
          'Running while exactly one master pod is Ready (replica health is in the ReplicasInSync condition); Pending otherwise; Failed when the spec is invalid (see the SpecValid condition); Hibernated while spec.hibernate is true (the Hibernated condition says whether every pod has stopped).',
      }),
    ),
    masterStatus: Type.Optional(
      Type.String({ description: 'Ready, NotReady or None (no pod is labelled master yet).' }),
    ),
    master: Type.Optional(Type.String({ description: 'Name of the pod that is master now (it moves on failover).' })),
    masterIP: Type.Optional(Type.String({ description: 'Pod IP of the master.' })),
    replicaStatus: Type.Optional(
      StringMap(Type.String(), 'Per replica pod: Ready, Syncing (link to the master down) or NotReady.'),
    ),
    readyReplicas: Type.Optional(Type.Integer({ description: 'Replica pods that are Ready (linked to the master).' })),
    replicas: Type.Optional(Type.Integer({ description: 'Replica pods that exist (for the scale subresource).' })),
    summary: Type.Optional(
      Type.Object(
        {
          replicas: Type.String({
            description:
              'Replica pods Ready and linked to the master, of those wanted (spec.replicas; 0 while hibernating), as "2/3": the REPLICAS column.',
          }),
        },
        {
          description:
            'Figures written for `kubectl get redis` to print (a printer column reads one field, so ready/desired is one string).',
        },
      ),
    ),
    selector: Type.Optional(
      Type.String({ description: 'Label selector of the pods (for the scale subresource and HPAs).' }),
    ),
    rollout: Type.Optional(
      Type.Object(
        {
          updatedPods: Type.Array(Type.String({ description: 'A pod name.' }), {
            description: "Pods running the current pod template (their StatefulSet's update revision).",
          }),
          stalePods: Type.Array(Type.String({ description: 'A pod name.' }), {
            description:
              'Pods still running an older template; the sidecar replaces them one at a time, the master last.',
          }),
        },
        {
          description:
            'Progress of a rolling update (version, image, resources or a static config directive changed). The Updated condition says what it waits for.',
        },
      ),
    ),
    switchover: Type.Optional(
      Type.String({
        description:
          'Outcome of the last on-demand switchover request, as the sidecar recorded it (annotation redis.example.com/switchover-status).',
      }),
    ),
    backup: Type.Optional(BackupStatus),
    restore: Type.Optional(RestoreStatus),
    secrets: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ description: 'The Secret name.' }),
            resourceVersion: Type.String({ description: "The Secret's resourceVersion as the sidecar last read it." }),
          },
          { description: 'One Secret this Redis uses.' },
        ),
        {
          description:
            'The Secrets this Redis uses that exist (passwords, application users, TLS, S3 credentials), sorted by name, as the sidecar reports them (annotation redis.example.com/secrets: the hook is sent no Secret). Absent until the first report.',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
        },
      ),
    ),
    conditions: Type.Optional(
      Type.Array(Condition, {
        description:
          'Ready, MasterAvailable, ReplicasInSync, SpecValid, Updated, Hibernated, SecretsReady, and BackupHealthy when spec.backup is set.',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    ),
    observedGeneration: Type.Optional(
      Type.Integer({ description: 'The generation of the spec last handled (written by Metacontroller).' }),
    ),
  },
  { description: 'What the operator observed. Computed from the children and pods only.' },
);

export type RedisSpec = Static<typeof RedisSpec>;
export type RedisStatus = Static<typeof RedisStatus>;
export type Condition = Static<typeof Condition>;
export type PersistenceSpec = Static<typeof PersistenceSpec>;
export type FailoverSpec = Static<typeof FailoverSpec>;

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  creationTimestamp?: string;
  ownerReferences?: Array<Record<string, unknown>>;
}

/** A Redis object as it arrives from the API server: spec may be anything until validated. */
export interface RedisObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: unknown;
  status?: RedisStatus;
}
