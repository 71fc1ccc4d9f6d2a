// The Redis API, written once. From these TypeBox schemas come the TypeScript types (Static),
// the ajv validator the hook runs (validate.ts) and the CRD's openAPIV3Schema (crd.ts).
// Invariants: every property has a description (kubectl explain), defaults live here and only
// here, and the emitted JSON is a structural schema a real API server accepts: no $ref, no
// anyOf of consts, no patternProperties (maps are `additionalProperties`), enums as `enum`.
// The spec's self-contained parts live in siblings (security, backup, monitoring, workload) and
// the status in status-schema.ts; they are re-exported here so callers import one module.
import { Type, type Static } from '@sinclair/typebox';
import { AuthSpec, NetworkPolicySpec, PasswordGracePeriodSeconds, TlsSpec, UsersSpec } from './security-schema.ts';
import { BackupSpec, RestoreSpec } from './backup-schema.ts';
import { StringEnum } from './typebox-helpers.ts';
import { MonitoringSpec } from './monitoring-schema.ts';
import { SentinelSpec } from './sentinel-schema.ts';
import { allowedDirectives, allowListValidation, type ConfigKind } from './config-allow.ts';
import { CONFIG_VALUE_PATTERN, NO_CONTROL_OR_SPACE_PATTERN } from './text.ts';
import { FailoverSpec, PersistenceSpec, PodPlacementFields, ResourceRequirements } from './workload-schema.ts';
import type { RedisStatus } from './status-schema.ts';

export { BackupResult, BackupSpec, BackupStatus, BackupStorage, RestoreSpec, RestoreStatus } from './backup-schema.ts';
export { AuthSpec, NetworkPolicySpec, PasswordGracePeriodSeconds, TlsSpec, UsersSpec } from './security-schema.ts';
export { AlertSpec, MonitoringSpec } from './monitoring-schema.ts';
export { QUANTITY_PATTERN } from './typebox-helpers.ts';
export {
  FailoverSpec,
  PersistenceSpec,
  RDB_SCHEDULE_PATTERN,
  ResourceRequirements,
  Toleration,
} from './workload-schema.ts';
export { Condition, RedisStatus } from './status-schema.ts';

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
    ...PodPlacementFields({
      affinity: 'A Kubernetes Affinity for the Redis pods. When unset, pods prefer separate nodes (pod anti-affinity).',
      podAnnotations: 'Extra annotations on the Redis pods (for example for a metrics scraper).',
    }),
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
    sentinel: SentinelSpec,
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

export type RedisSpec = Static<typeof RedisSpec>;

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
