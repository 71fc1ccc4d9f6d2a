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
import { BRIDGE, DEFAULT_ENGINE, DEFAULT_VERSION, ENGINE_VALIDATIONS, ENGINES, TESTED_TEXT } from './engine.ts';
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

/** The form of a version (major.minor[.patch][-suffix]); which ones are accepted is engine.ts's. */
export const VERSION_PATTERN = '^[0-9]+\\.[0-9]+(\\.[0-9]+)?(-[0-9A-Za-z]([0-9A-Za-z.]*[0-9A-Za-z])?)?$';

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

/**
 * The engine and its version, the same on a Redis and a RedisCluster. spec.version has no CRD
 * default: what an unset one means depends on the engine (engine.ts DEFAULT_VERSION), which a CRD
 * default cannot express; the hook resolves it. The rules needing both fields sit on the spec
 * (ENGINE_VALIDATIONS).
 */
export const EngineFields = {
  engine: StringEnum(ENGINES, {
    default: DEFAULT_ENGINE,
    description: `The server to run: redis or valkey. Tested: ${TESTED_TEXT}. Changes only between redis ${BRIDGE.redis} and valkey ${BRIDGE.valkey}, which replicate to each other both ways: the pods are replaced one at a time, the master last after a switchover.`,
  }),
  version: Type.Optional(
    Type.String({
      pattern: VERSION_PATTERN,
      // 63: the version also becomes the app.kubernetes.io/version label value.
      maxLength: 63,
      description: `The engine's version, for example "7.2" or "7.2.4"; unset means redis ${DEFAULT_VERSION.redis} or valkey ${DEFAULT_VERSION.valkey}. The image is redis:<version> or valkey/valkey:<version> unless image is set. Tested: ${TESTED_TEXT}. Can be upgraded, never downgraded to an older major.minor of the same engine.`,
    }),
  ),
};

/** The image fields, the same on a Redis and a RedisCluster. */
export const ImageFields = {
  image: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: NO_CONTROL_OR_SPACE_PATTERN,
      description:
        'Container image to run instead of redis:<version> (valkey/valkey:<version> for valkey). Must provide redis-server and redis-cli (the valkey images link these names to valkey-server and valkey-cli). No spaces or control characters.',
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
    ...EngineFields,
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
    description: 'The desired Redis: engine and version, topology, durability, resources, auth and scheduling.',
    'x-kubernetes-validations': [
      ...ENGINE_VALIDATIONS,
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

/**
 * A validated Redis spec: the hook's validator resolves an unset version by engine, so every
 * reader sees one.
 */
export type RedisSpec = Static<typeof RedisSpec> & { version: string };

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
