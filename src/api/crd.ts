// The Redis CustomResourceDefinition, generated from the TypeBox schemas in schema.ts through
// the generic compiler in structural.ts (re-exported here for existing importers).
// Invariants: pure and deterministic: the committed manifests/crd.yaml must equal
// renderCrdYaml() byte for byte (test/api/crd.test.ts, `npm run gen:crd`).
import { stringify } from 'yaml';
import { DEFAULT_VERSION } from './engine.ts';
import { API_VERSION, GROUP, KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION } from './labels.ts';
import {
  MAX_REDISBACKUP_NAME_LENGTH,
  REDISBACKUP_KIND,
  REDISBACKUP_PLURAL,
  REDISBACKUP_SHORT_NAMES,
  REDISBACKUP_SINGULAR,
  RedisBackupSpec,
  RedisBackupStatus,
} from './redisbackup-schema.ts';
import {
  REDIS_CLUSTER_KIND,
  REDIS_CLUSTER_PLURAL,
  REDIS_CLUSTER_SHORT_NAMES,
  REDIS_CLUSTER_SINGULAR,
  MAX_REDIS_CLUSTER_NAME_LENGTH,
} from './rediscluster-names.ts';
import { CLUSTER_SLOTS, RedisClusterSpec, RedisClusterStatus } from './rediscluster-schema.ts';
import { RedisSpec, RedisStatus } from './schema.ts';
import { toStructural, type JsonSchema } from './structural.ts';

export { applyDefaults, NotStructuralError, toStructural, type JsonSchema } from './structural.ts';

/** The openAPIV3Schema of the Redis resource. */
export function buildOpenApiSchema(): JsonSchema {
  return toStructural({
    type: 'object',
    description: 'A Redis master with replicas, kept highly available by redis-operator.',
    properties: {
      apiVersion: { type: 'string', description: `API version of this object: ${API_VERSION}.` },
      kind: { type: 'string', description: `Kind of this object: ${KIND}.` },
      metadata: { type: 'object' },
      // A default so that `spec: {}`, or no spec at all, is a valid Redis with every field
      // defaulted. It is set here rather than on RedisSpec because ajv (strict) refuses a default
      // on the root of the schema it compiles for the hook.
      spec: { ...RedisSpec, default: {} },
      status: RedisStatus,
    },
  });
}

export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: JsonSchema;
}

export const CRD_NAME = `${PLURAL}.${GROUP}`;

type PrinterColumn = { name: string; type: string; jsonPath: string; description?: string; priority?: number };

/**
 * The engine and the version asked for. spec.version has no CRD default (an unset one means the
 * engine's newest tested release, resolved by the hook), so its column is empty then.
 */
const ENGINE_COLUMNS: PrinterColumn[] = [
  { name: 'Engine', type: 'string', jsonPath: '.spec.engine', description: 'redis or valkey.' },
  {
    name: 'Version',
    type: 'string',
    jsonPath: '.spec.version',
    description: `Version asked for; empty: the engine's newest tested (redis ${DEFAULT_VERSION.redis}, valkey ${DEFAULT_VERSION.valkey}).`,
  },
];

/** What differs between this project's CRDs; the rest (group, one served and stored version, labels) is shared. */
interface CrdParts {
  plural: string;
  singular: string;
  kind: string;
  shortNames: readonly string[];
  schema: JsonSchema;
  subresources: JsonSchema;
  columns: PrinterColumn[];
}

function crdOf(p: CrdParts): CustomResourceDefinition {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${p.plural}.${GROUP}`,
      labels: { 'app.kubernetes.io/name': 'redis-operator', 'app.kubernetes.io/part-of': 'redis-operator' },
    },
    spec: {
      group: GROUP,
      names: {
        kind: p.kind,
        listKind: `${p.kind}List`,
        plural: p.plural,
        singular: p.singular,
        shortNames: [...p.shortNames],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: p.schema },
          subresources: p.subresources,
          // AGE ends what `kubectl get` prints; the -o wide columns (priority 1) follow it, as kubectl prints them in
          // this order.
          additionalPrinterColumns: [
            ...p.columns.filter((c) => !c.priority),
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
            ...p.columns.filter((c) => c.priority),
          ],
        },
      ],
    },
  };
}

/** The Redis CRD: namespaced, one served and stored version, status and scale subresources. */
export function buildCrd(): CustomResourceDefinition {
  return crdOf({
    plural: PLURAL,
    singular: SINGULAR,
    kind: KIND,
    shortNames: SHORT_NAMES,
    schema: buildOpenApiSchema(),
    subresources: {
      status: {},
      scale: {
        specReplicasPath: '.spec.replicas',
        statusReplicasPath: '.status.replicas',
        labelSelectorPath: '.status.selector',
      },
    },
    columns: [
      ...ENGINE_COLUMNS,
      // The master's pod name, and ready/desired replicas: where to look and how healthy, as `kubectl get deploy` shows
      // READY.
      {
        name: 'Master',
        type: 'string',
        jsonPath: '.status.master',
        description: 'The pod that is master now (moves on failover).',
      },
      {
        name: 'Replicas',
        type: 'string',
        jsonPath: '.status.summary.replicas',
        description: 'Replica pods Ready and linked to the master / spec.replicas.',
      },
      {
        name: 'Phase',
        type: 'string',
        jsonPath: '.status.phase',
        description: 'Pending, Running, Failed or Hibernated.',
      },
      {
        name: 'Master Status',
        type: 'string',
        jsonPath: '.status.masterStatus',
        priority: 1,
        description: 'Ready, NotReady or None.',
      },
    ],
  });
}

export const REDISBACKUP_CRD_NAME = `${REDISBACKUP_PLURAL}.${GROUP}`;

/** The openAPIV3Schema of the RedisBackup resource. */
export function buildRedisBackupOpenApiSchema(): JsonSchema {
  return toStructural({
    type: 'object',
    description:
      'One on-demand backup of a Redis, taken once by a Job; survives the Redis and can be restored into a new one (spec.restore.backup).',
    properties: {
      apiVersion: { type: 'string', description: `API version of this object: ${API_VERSION}.` },
      kind: { type: 'string', description: `Kind of this object: ${REDISBACKUP_KIND}.` },
      metadata: {
        type: 'object',
        // At most 56 characters: its Job is <name>-backup, and a Job name must fit a label value.
        properties: { name: { type: 'string', maxLength: MAX_REDISBACKUP_NAME_LENGTH } },
      },
      spec: RedisBackupSpec,
      status: RedisBackupStatus,
    },
    required: ['spec'],
  });
}

/** The RedisBackup CRD: namespaced, status subresource, the columns `kubectl get redisbackup` shows. */
export function buildRedisBackupCrd(): CustomResourceDefinition {
  return crdOf({
    plural: REDISBACKUP_PLURAL,
    singular: REDISBACKUP_SINGULAR,
    kind: REDISBACKUP_KIND,
    shortNames: REDISBACKUP_SHORT_NAMES,
    schema: buildRedisBackupOpenApiSchema(),
    subresources: { status: {} },
    columns: [
      { name: 'Redis', type: 'string', jsonPath: '.spec.redis', description: 'The Redis backed up.' },
      {
        name: 'RedisCluster',
        type: 'string',
        jsonPath: '.spec.redisCluster',
        description: 'The RedisCluster backed up (one snapshot per shard: status.shards).',
      },
      {
        name: 'Phase',
        type: 'string',
        jsonPath: '.status.phase',
        description: 'Pending, Running, Completed or Failed.',
      },
      { name: 'Size', type: 'integer', jsonPath: '.status.sizeBytes', description: 'Snapshot size in bytes.' },
      {
        name: 'Offset',
        type: 'integer',
        jsonPath: '.status.replicationOffset',
        description: 'Replication offset of the snapshot.',
      },
      {
        name: 'Version',
        type: 'string',
        jsonPath: '.status.redisVersion',
        description: 'Redis version it was read from.',
      },
      { name: 'Started', type: 'date', jsonPath: '.status.startTime' },
      { name: 'Completed', type: 'date', jsonPath: '.status.completionTime' },
      {
        name: 'Location',
        type: 'string',
        jsonPath: '.status.location',
        priority: 1,
        description: 'Where the backup is.',
      },
      {
        name: 'Reason',
        type: 'string',
        jsonPath: '.status.reason',
        priority: 1,
        description: 'Why it is in this phase.',
      },
    ],
  });
}

export const REDISCLUSTER_CRD_NAME = `${REDIS_CLUSTER_PLURAL}.${GROUP}`;

/** The openAPIV3Schema of the RedisCluster resource. */
export function buildRedisClusterOpenApiSchema(): JsonSchema {
  return toStructural({
    type: 'object',
    description:
      'A sharded Redis in cluster mode (hash slots over master.replicas shards, each with its replicas), kept available and resharded by redis-operator.',
    properties: {
      apiVersion: { type: 'string', description: `API version of this object: ${API_VERSION}.` },
      kind: { type: 'string', description: `Kind of this object: ${REDIS_CLUSTER_KIND}.` },
      metadata: {
        type: 'object',
        // The shard StatefulSets, their backup CronJobs and the pods' labels are named from it.
        properties: { name: { type: 'string', maxLength: MAX_REDIS_CLUSTER_NAME_LENGTH } },
      },
      // As for Redis: `spec: {}` or no spec is a valid RedisCluster with every field defaulted.
      spec: { ...RedisClusterSpec, default: {} },
      status: RedisClusterStatus,
    },
  });
}

/**
 * The RedisCluster CRD: status subresource, and a scale subresource on the number of shards
 * (`kubectl scale rediscluster --replicas=N`, and the sidecar's memory autoscaler, like an HPA).
 */
export function buildRedisClusterCrd(): CustomResourceDefinition {
  return crdOf({
    plural: REDIS_CLUSTER_PLURAL,
    singular: REDIS_CLUSTER_SINGULAR,
    kind: REDIS_CLUSTER_KIND,
    shortNames: REDIS_CLUSTER_SHORT_NAMES,
    schema: buildRedisClusterOpenApiSchema(),
    subresources: {
      status: {},
      scale: {
        specReplicasPath: '.spec.master.replicas',
        statusReplicasPath: '.status.shards',
        labelSelectorPath: '.status.selector',
      },
    },
    columns: [
      {
        name: 'Masters',
        type: 'string',
        jsonPath: '.status.summary.masters',
        description: 'Shards whose master is Ready / shards asked for (spec.master.replicas).',
      },
      {
        name: 'Replicas',
        type: 'string',
        jsonPath: '.status.summary.replicas',
        description: 'Replica pods Ready and linked to their master / wanted over all shards.',
      },
      {
        name: 'Slots',
        type: 'integer',
        jsonPath: '.status.slotsCovered',
        description: `Hash slots served by a ready master (of ${CLUSTER_SLOTS}).`,
      },
      ...ENGINE_COLUMNS.map((c) => ({ ...c, priority: 1 })),
      {
        name: 'Phase',
        type: 'string',
        jsonPath: '.status.phase',
        description: 'Pending, Running, Resharding, Failed or Hibernated.',
      },
    ],
  });
}

const header = (file: string) =>
  `# Generated by \`npm run gen:crd\` from src/api (via src/api/crd.ts) into manifests/${file}. Do not edit.\n`;

/** manifests/crd.yaml exactly as committed: a header, then the CRD with no line folding. */
export function renderCrdYaml(): string {
  return `${header('crd.yaml')}${stringify(buildCrd(), { lineWidth: 0 })}`;
}

/** manifests/rediscluster-crd.yaml exactly as committed. */
export function renderRedisClusterCrdYaml(): string {
  return `${header('rediscluster-crd.yaml')}${stringify(buildRedisClusterCrd(), { lineWidth: 0 })}`;
}

/** manifests/redisbackup-crd.yaml exactly as committed. */
export function renderRedisBackupCrdYaml(): string {
  return `${header('redisbackup-crd.yaml')}${stringify(buildRedisBackupCrd(), { lineWidth: 0 })}`;
}
