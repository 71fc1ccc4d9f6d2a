// The project's CRDs on the real kube-apiserver (test/k8s/control-plane.ts, API server and etcd
// only): what the API server enforces is asked of the API server, not of a re-implementation.
// Owns: the three CRDs as emitted (manifests/*.yaml, byte for byte renderCrdYaml()) accepted as
// structural and Established; what toStructural rewrites (TypeBox's defaults refused as emitted,
// accepted once rewritten) and what it refuses (refused by the server too); every
// x-kubernetes-validations rule with an allowed and a refused case, judged by the server's CEL
// (transition rules: a real create, then a dry-run update); whole-object updates of the design's
// Redis refused for exactly the expected reasons; the examples in manifests/examples/ accepted and
// defaulted to the spec the hook derives; the hook validator refusing exactly the configs the
// server refuses.
// Invariants: one control plane for the file (API server and etcd only, Service CIDR
// 198.19.47.0/24, nothing served off loopback), stopped in `after`; what it stores is the CRDs,
// the old objects of transition cases and the design Redis: every other write is a dry run.
// The coverage check (every rule has both verdicts in CASES) reads the emitted schemas only and
// runs without a server. Skips, with the reason, when the control plane is not built or does not
// start.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { Type, type TSchema } from '@sinclair/typebox';
import { parse, parseAllDocuments } from 'yaml';
import {
  buildOpenApiSchema,
  buildRedisBackupOpenApiSchema,
  buildRedisClusterOpenApiSchema,
  renderCrdYaml,
  renderRedisBackupCrdYaml,
  renderRedisClusterCrdYaml,
  NotStructuralError,
  toStructural,
  type JsonSchema,
} from '../../src/api/crd.ts';
import { DEFAULT_VERSION } from '../../src/api/engine.ts';
import { REDIS_CLUSTER_PLURAL } from '../../src/api/rediscluster-names.ts';
import { allowListRefusal } from '../../src/api/config-allow.ts';
import { RESERVED_REDIS_CLUSTER_CONFIG_KEYS } from '../../src/api/rediscluster-schema.ts';
import { validateRedisClusterSpec } from '../../src/api/rediscluster-validate.ts';
import { GROUP, PLURAL, VERSION } from '../../src/api/labels.ts';
import { REDISBACKUP_PLURAL } from '../../src/api/redisbackup-schema.ts';
import { QUANTITY_PATTERN, RESERVED_CONFIG_KEYS } from '../../src/api/schema.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { isBuilt } from '../k8s/build.ts';
import { startControlPlane, type ControlPlane } from '../k8s/control-plane.ts';

const SUBNET = 47;
const NAMESPACE = 'default';

type Obj = Record<string, any>;
type Kind = 'Redis' | 'RedisCluster' | 'RedisBackup';

const KINDS: Record<Kind, { yaml: string; plural: string; schema: JsonSchema }> = {
  Redis: { yaml: renderCrdYaml(), plural: PLURAL, schema: buildOpenApiSchema() },
  RedisCluster: {
    yaml: renderRedisClusterCrdYaml(),
    plural: REDIS_CLUSTER_PLURAL,
    schema: buildRedisClusterOpenApiSchema(),
  },
  RedisBackup: {
    yaml: renderRedisBackupCrdYaml(),
    plural: REDISBACKUP_PLURAL,
    schema: buildRedisBackupOpenApiSchema(),
  },
};

// ---- the rules the CRDs declare, and the cases that exercise them ----

interface EmittedRule {
  kind: Kind;
  /** Dotted path of the node carrying the rule: also the field the server names when it fails. */
  path: string;
  rule: string;
  message: string;
}

const isObject = (x: unknown): x is JsonSchema => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Every x-kubernetes-validations rule of a schema (`[*]` marks map values, `[]` list items). */
function collectRules(kind: Kind, node: unknown, path = ''): EmittedRule[] {
  if (!isObject(node)) return [];
  const own = Array.isArray(node['x-kubernetes-validations'])
    ? (node['x-kubernetes-validations'] as Array<{ rule: string; message?: string }>)
    : [];
  const properties = isObject(node['properties']) ? Object.entries(node['properties']) : [];
  return [
    ...own.map((v) => ({ kind, path, rule: v.rule, message: v.message ?? v.rule })),
    ...properties.flatMap(([name, child]) => collectRules(kind, child, path ? `${path}.${name}` : name)),
    ...collectRules(kind, node['additionalProperties'], `${path}[*]`),
    ...collectRules(kind, node['items'], `${path}[]`),
  ];
}

const RULES = (Object.keys(KINDS) as Kind[]).flatMap((kind) => collectRules(kind, KINDS[kind].schema));

/** A rule picked by its node and a substring of its message; [path, message substring]. */
type RuleRef = readonly [path: string, message: string];

interface Case {
  name: string;
  kind: Kind;
  path: string;
  /** A substring of the rule's message, to pick one of several rules on the same node. */
  message: string;
  self: unknown;
  /** Set for transition rules: the value is created with oldSelf, then updated to self. */
  oldSelf?: unknown;
  allowed: boolean;
  /** Other rules the object breaks (the server reports every failing rule): asserted too. */
  alsoRefusedBy?: RuleRef[];
  /** The old object cannot exist, because this rule refuses it: asserted instead of the update. */
  oldRefusedBy?: RuleRef;
  /** What the server says for a refusal by a rule with a messageExpression (the evaluated text). */
  refusal?: string;
}

const STORAGE_CLASS = 'storageClassName cannot change';
const SIZE = 'size cannot shrink';
const TOGGLE = 'cannot be switched on or off';
const ALLOWED = 'directives that are not allowed';
/** Directives a hostile spec would set: users without passwords, modules, debugging, files, renamed commands. */
const HOSTILE_DIRECTIVES = [
  'user',
  'loadmodule',
  'enable-debug-command',
  'enable-module-command',
  'enable-protected-configs',
  'include',
  'rename-command',
  'aclfile',
  'acl-pubsub-default',
  'logfile',
  'unixsocket',
  'made-up-directive',
  'MaxMemory',
  'maxmemory policy',
];
const DOWNGRADE = 'cannot be downgraded';
const TLS_SOURCE = 'tls needs secretName or certManager';
const TLS_TOGGLE = 'tls cannot be switched on or off';
const SUPPORTED = 'only the tested combinations are accepted';
const ENGINE_CHANGE = 'spec.engine changes only between';
const STORAGE_ONE = 'storage needs exactly one of s3 or pvc';
const RESTORE_SOURCE = 'restore needs exactly one of backup or location';
const RESTORE_FIXED = 'restore is set at creation only';
const AUTOSCALING = 'minReplicas must not exceed';
const BACKUP_FIXED = 'a RedisBackup cannot change';
const BACKUP_TARGET = 'name exactly one of spec.redis';
const S3 = { bucket: 'backups', region: 'us-east-1', prefix: '' };
const RESTORE = { backup: 'nightly' };
const PERSISTENCE = {
  enableRdb: true,
  rdbSchedule: '*/15 * * * *',
  enableAof: false,
  size: '10Gi',
  whenDeleted: 'Retain',
};
const persistence = (overrides: Record<string, unknown>) => ({ ...PERSISTENCE, ...overrides });
const BOUNDS = {
  enabled: true,
  minReplicas: 3,
  maxReplicas: 5,
  targetMemoryUtilization: 70,
  stabilizationWindowSeconds: 300,
};

/** The cases of a Redis and a RedisCluster alike (same persistence, version and config rules). */
function sharedCases(kind: 'Redis' | 'RedisCluster', reserved: readonly string[]): Case[] {
  const c = (
    name: string,
    path: string,
    message: string,
    self: unknown,
    allowed: boolean,
    more: Partial<Case> = {},
  ): Case => ({
    name: `${kind}: ${name}`,
    kind,
    path,
    message,
    self,
    allowed,
    ...more,
  });
  const p = 'spec.persistence';
  return [
    // persistence.storageClassName is fixed at creation (volumeClaimTemplates are immutable)
    c('class unset, stays unset', p, STORAGE_CLASS, persistence({}), true, { oldSelf: persistence({}) }),
    c('class kept', p, STORAGE_CLASS, persistence({ storageClassName: 'fast' }), true, {
      oldSelf: persistence({ storageClassName: 'fast' }),
    }),
    c('class changed', p, STORAGE_CLASS, persistence({ storageClassName: 'slow' }), false, {
      oldSelf: persistence({ storageClassName: 'fast' }),
    }),
    c('class set later', p, STORAGE_CLASS, persistence({ storageClassName: 'fast' }), false, {
      oldSelf: persistence({}),
    }),
    c('class removed', p, STORAGE_CLASS, persistence({}), false, {
      oldSelf: persistence({ storageClassName: 'fast' }),
    }),
    // persistence.size grows, never shrinks; compared as quantities, not strings
    c('size unchanged', p, SIZE, persistence({ size: '10Gi' }), true, { oldSelf: persistence({ size: '10Gi' }) }),
    c('size grows', p, SIZE, persistence({ size: '20Gi' }), true, { oldSelf: persistence({ size: '10Gi' }) }),
    c('size grows across units', p, SIZE, persistence({ size: '1Ti' }), true, {
      oldSelf: persistence({ size: '900Gi' }),
    }),
    c('same size in other units', p, SIZE, persistence({ size: '1024Mi' }), true, {
      oldSelf: persistence({ size: '1Gi' }),
    }),
    c('same size in bytes', p, SIZE, persistence({ size: '2147483648' }), true, {
      oldSelf: persistence({ size: '2Gi' }),
    }),
    c('same size as a fraction', p, SIZE, persistence({ size: '1.5Gi' }), true, {
      oldSelf: persistence({ size: '1536Mi' }),
    }),
    c('decimal exponent', p, SIZE, persistence({ size: '1e9' }), true, { oldSelf: persistence({ size: '1G' }) }),
    c('decimal G is less than Gi', p, SIZE, persistence({ size: '1G' }), false, {
      oldSelf: persistence({ size: '1Gi' }),
    }),
    c('size shrinks', p, SIZE, persistence({ size: '5Gi' }), false, { oldSelf: persistence({ size: '10Gi' }) }),
    c('size shrinks by a fraction', p, SIZE, persistence({ size: '9.5Gi' }), false, {
      oldSelf: persistence({ size: '10Gi' }),
    }),
    c('size shrinks although the string grows', p, SIZE, persistence({ size: '9000Mi' }), false, {
      oldSelf: persistence({ size: '10Gi' }),
    }),
    c('size shrinks by a kibibyte', p, SIZE, persistence({ size: '1k' }), false, {
      oldSelf: persistence({ size: '1Ki' }),
    }),
    // persistence cannot be toggled (emptyDir vs PVC is a volumeClaimTemplates change)
    c('RDB to AOF keeps volumes', p, TOGGLE, persistence({ enableRdb: false, enableAof: true }), true, {
      oldSelf: persistence({}),
    }),
    c('both off stays off', p, TOGGLE, persistence({ enableRdb: false }), true, {
      oldSelf: persistence({ enableRdb: false }),
    }),
    c('AOF added to RDB', p, TOGGLE, persistence({ enableAof: true }), true, { oldSelf: persistence({}) }),
    c('persistence switched off', p, TOGGLE, persistence({ enableRdb: false }), false, { oldSelf: persistence({}) }),
    c('persistence switched on', p, TOGGLE, persistence({ enableAof: true }), false, {
      oldSelf: persistence({ enableRdb: false }),
    }),
    // config: an allow-list of directives (config-allow.ts); every other one is refused, named
    c('config empty', 'spec.config', ALLOWED, {}, true),
    c(
      'config runtime and static directives',
      'spec.config',
      ALLOWED,
      { 'maxmemory-policy': 'allkeys-lru', hz: '20', 'io-threads': '4' },
      true,
    ),
    c(
      'config one line with spaces',
      'spec.config',
      ALLOWED,
      { 'client-output-buffer-limit': 'pubsub 32mb 8mb 60' },
      true,
    ),
    c('config an alias of a runtime directive', 'spec.config', ALLOWED, { 'hash-max-ziplist-entries': '256' }, true),
    ...HOSTILE_DIRECTIVES.map((key) =>
      c(`config ${key}`, 'spec.config', ALLOWED, { [key]: 'x' }, false, { refusal: allowListRefusal(kind, [key]) }),
    ),
    ...reserved.map((key) =>
      c(`config reserved ${key}`, 'spec.config', ALLOWED, { [key]: 'x' }, false, {
        refusal: allowListRefusal(kind, [key]),
      }),
    ),
    c(
      'config three refused, all named',
      'spec.config',
      ALLOWED,
      { hz: '10', user: 'u on nopass', loadmodule: 'x.so', 'made-up-directive': 'x' },
      false,
      {
        refusal: allowListRefusal(kind, ['loadmodule', 'user', 'made-up-directive']),
      },
    ),
    kind === 'Redis'
      ? c(
          'config a cluster-only directive on a Redis',
          'spec.config',
          ALLOWED,
          { 'cluster-allow-reads-when-down': 'yes' },
          false,
          {
            refusal: allowListRefusal(kind, ['cluster-allow-reads-when-down']),
          },
        )
      : c(
          'config a cluster-only directive on a RedisCluster',
          'spec.config',
          ALLOWED,
          { 'cluster-allow-reads-when-down': 'yes' },
          true,
        ),
    // engine and version: only the tested combinations (the rule reads both fields, so it sits on spec)
    c('redis 7.0', 'spec', SUPPORTED, { version: '7.0' }, true),
    c('redis 7.2.4-alpine', 'spec', SUPPORTED, { version: '7.2.4-alpine' }, true),
    c('no engine nor version (redis 7.2)', 'spec', SUPPORTED, {}, true),
    c('valkey, no version (8.0)', 'spec', SUPPORTED, { engine: 'valkey' }, true),
    c('valkey 8.0.1', 'spec', SUPPORTED, { engine: 'valkey', version: '8.0.1' }, true),
    c('redis 6.2 refused', 'spec', SUPPORTED, { version: '6.2' }, false),
    c('redis 7.4 refused (not tested here)', 'spec', SUPPORTED, { version: '7.4' }, false),
    c('redis 7.20 refused', 'spec', SUPPORTED, { version: '7.20' }, false),
    c('redis 8.0 refused', 'spec', SUPPORTED, { version: '8.0' }, false),
    c('valkey 7.2 refused', 'spec', SUPPORTED, { engine: 'valkey', version: '7.2' }, false),
    c('valkey 8.1 refused', 'spec', SUPPORTED, { engine: 'valkey', version: '8.1' }, false),
    // version: upgrades and patch changes allowed, major.minor downgrades of one engine refused
    c('version kept', 'spec', DOWNGRADE, { version: '7.2' }, true, { oldSelf: { version: '7.2' } }),
    c('minor upgrade', 'spec', DOWNGRADE, { version: '7.2' }, true, { oldSelf: { version: '7.0' } }),
    c('version unset after 7.0: the default 7.2, an upgrade', 'spec', DOWNGRADE, {}, true, {
      oldSelf: { version: '7.0' },
    }),
    c('patch pinned', 'spec', DOWNGRADE, { version: '7.2.4' }, true, { oldSelf: { version: '7.2' } }),
    c('patch downgrade', 'spec', DOWNGRADE, { version: '7.2.1' }, true, { oldSelf: { version: '7.2.4' } }),
    c('suffix dropped', 'spec', DOWNGRADE, { version: '7.2' }, true, { oldSelf: { version: '7.2.4-alpine' } }),
    c('valkey 8.0 to redis 7.2 is a move, not a downgrade', 'spec', DOWNGRADE, { version: '7.2' }, true, {
      oldSelf: { engine: 'valkey', version: '8.0' },
    }),
    c('minor downgrade', 'spec', DOWNGRADE, { version: '7.0' }, false, { oldSelf: { version: '7.2' } }),
    c('minor downgrade from the default version', 'spec', DOWNGRADE, { version: '7.0.15' }, false, { oldSelf: {} }),
    // engine: changes only between redis 7.2 and valkey 8.0, which replicate to each other both ways
    c('engine kept', 'spec', ENGINE_CHANGE, { version: '7.2' }, true, { oldSelf: { version: '7.0' } }),
    c('redis 7.2 to valkey 8.0', 'spec', ENGINE_CHANGE, { engine: 'valkey' }, true, { oldSelf: { version: '7.2' } }),
    c('redis to valkey, both defaulted', 'spec', ENGINE_CHANGE, { engine: 'valkey' }, true, { oldSelf: {} }),
    c('valkey 8.0.1 back to redis 7.2.6', 'spec', ENGINE_CHANGE, { version: '7.2.6' }, true, {
      oldSelf: { engine: 'valkey', version: '8.0.1' },
    }),
    c('redis 7.0 to valkey 8.0', 'spec', ENGINE_CHANGE, { engine: 'valkey', version: '8.0' }, false, {
      oldSelf: { version: '7.0' },
    }),
    c('valkey 8.0 to redis 7.0', 'spec', ENGINE_CHANGE, { version: '7.0' }, false, {
      oldSelf: { engine: 'valkey' },
    }),
    // Backups go to one place.
    c('backup to s3', 'spec.backup.storage', STORAGE_ONE, { s3: S3 }, true),
    c('backup to a claim', 'spec.backup.storage', STORAGE_ONE, { pvc: { claimName: 'c' } }, true),
    c('backup to both', 'spec.backup.storage', STORAGE_ONE, { s3: S3, pvc: { claimName: 'c' } }, false),
    c('backup to nowhere', 'spec.backup.storage', STORAGE_ONE, {}, false),
  ];
}

const CASES: Case[] = [
  ...sharedCases('Redis', RESERVED_CONFIG_KEYS),
  // Of a RedisCluster, the directives that make it a cluster, and those a replica's wiring needs.
  ...sharedCases(
    'RedisCluster',
    RESERVED_REDIS_CLUSTER_CONFIG_KEYS.filter(
      (k) => k.startsWith('cluster-') || k === 'replicaof' || k === 'requirepass',
    ),
  ),
  // tls: a Secret or cert-manager; never switched on or off after creation
  {
    name: 'tls with a Secret',
    kind: 'Redis',
    path: 'spec.tls',
    message: TLS_SOURCE,
    self: { secretName: 'my-tls' },
    allowed: true,
  },
  {
    name: 'tls from cert-manager',
    kind: 'Redis',
    path: 'spec.tls',
    message: TLS_SOURCE,
    self: { certManager: { issuerRef: { name: 'ca' } } },
    allowed: true,
  },
  { name: 'tls with neither', kind: 'Redis', path: 'spec.tls', message: TLS_SOURCE, self: {}, allowed: false },
  {
    name: 'tls kept',
    kind: 'Redis',
    path: 'spec',
    message: TLS_TOGGLE,
    self: { tls: { secretName: 'a' } },
    oldSelf: { tls: { secretName: 'b' } },
    allowed: true,
  },
  {
    name: 'tls never on',
    kind: 'Redis',
    path: 'spec',
    message: TLS_TOGGLE,
    self: { replicas: 3 },
    oldSelf: { replicas: 2 },
    allowed: true,
  },
  {
    name: 'tls switched on',
    kind: 'Redis',
    path: 'spec',
    message: TLS_TOGGLE,
    self: { tls: { secretName: 'a' } },
    oldSelf: {},
    allowed: false,
  },
  {
    name: 'tls switched off',
    kind: 'Redis',
    path: 'spec',
    message: TLS_TOGGLE,
    self: {},
    oldSelf: { tls: { secretName: 'a' } },
    allowed: false,
  },
  // A restore names one backup (or location), at creation only, reached in one place.
  {
    name: 'restore reaches s3',
    kind: 'Redis',
    path: 'spec.restore.storage',
    message: STORAGE_ONE,
    self: { s3: S3 },
    allowed: true,
  },
  {
    name: 'restore reaches nothing',
    kind: 'Redis',
    path: 'spec.restore.storage',
    message: STORAGE_ONE,
    self: {},
    allowed: false,
  },
  {
    name: 'restored from a claim',
    kind: 'Redis',
    path: 'status.restore.storage',
    message: STORAGE_ONE,
    self: { pvc: { claimName: 'c' } },
    allowed: true,
  },
  {
    name: 'restored from nowhere',
    kind: 'Redis',
    path: 'status.restore.storage',
    message: STORAGE_ONE,
    self: {},
    allowed: false,
  },
  {
    name: 'restore a RedisBackup',
    kind: 'Redis',
    path: 'spec.restore',
    message: RESTORE_SOURCE,
    self: RESTORE,
    allowed: true,
  },
  {
    name: 'restore a location',
    kind: 'Redis',
    path: 'spec.restore',
    message: RESTORE_SOURCE,
    self: { location: 's3://backups/k.rdb' },
    allowed: true,
  },
  {
    name: 'restore both',
    kind: 'Redis',
    path: 'spec.restore',
    message: RESTORE_SOURCE,
    self: { backup: 'a', location: 's3://backups/k.rdb' },
    allowed: false,
  },
  { name: 'restore neither', kind: 'Redis', path: 'spec.restore', message: RESTORE_SOURCE, self: {}, allowed: false },
  {
    name: 'restore kept',
    kind: 'Redis',
    path: 'spec',
    message: RESTORE_FIXED,
    self: { restore: RESTORE },
    oldSelf: { restore: RESTORE },
    allowed: true,
  },
  {
    name: 'never restored',
    kind: 'Redis',
    path: 'spec',
    message: RESTORE_FIXED,
    self: { replicas: 3 },
    oldSelf: { replicas: 2 },
    allowed: true,
  },
  {
    name: 'restore added later',
    kind: 'Redis',
    path: 'spec',
    message: RESTORE_FIXED,
    self: { restore: RESTORE },
    oldSelf: {},
    allowed: false,
  },
  {
    name: 'restore removed',
    kind: 'Redis',
    path: 'spec',
    message: RESTORE_FIXED,
    self: {},
    oldSelf: { restore: RESTORE },
    allowed: false,
  },
  {
    name: 'restore changed',
    kind: 'Redis',
    path: 'spec',
    message: RESTORE_FIXED,
    self: { restore: { backup: 'other' } },
    oldSelf: { restore: RESTORE },
    allowed: false,
  },
  // RedisCluster autoscaling bounds
  {
    name: 'bounds in order',
    kind: 'RedisCluster',
    path: 'spec.autoscaling',
    message: AUTOSCALING,
    self: BOUNDS,
    allowed: true,
  },
  {
    name: 'article bounds (2..5)',
    kind: 'RedisCluster',
    path: 'spec.autoscaling',
    message: AUTOSCALING,
    self: { ...BOUNDS, minReplicas: 2 },
    allowed: true,
  },
  {
    name: 'equal bounds',
    kind: 'RedisCluster',
    path: 'spec.autoscaling',
    message: AUTOSCALING,
    self: { ...BOUNDS, minReplicas: 5 },
    allowed: true,
  },
  {
    name: 'bounds crossed',
    kind: 'RedisCluster',
    path: 'spec.autoscaling',
    message: AUTOSCALING,
    self: { ...BOUNDS, minReplicas: 6, maxReplicas: 5 },
    allowed: false,
  },
  // A RedisBackup is immutable; its status names one place.
  {
    name: 'backup spec kept',
    kind: 'RedisBackup',
    path: 'spec',
    message: BACKUP_FIXED,
    self: { redis: 'r' },
    oldSelf: { redis: 'r' },
    allowed: true,
  },
  {
    name: 'backup of another Redis',
    kind: 'RedisBackup',
    path: 'spec',
    message: BACKUP_FIXED,
    self: { redis: 's' },
    oldSelf: { redis: 'r' },
    allowed: false,
  },
  {
    name: 'backed up to s3',
    kind: 'RedisBackup',
    path: 'status.storage',
    message: STORAGE_ONE,
    self: { s3: S3 },
    allowed: true,
  },
  {
    name: 'backed up to both',
    kind: 'RedisBackup',
    path: 'status.storage',
    message: STORAGE_ONE,
    self: { s3: S3, pvc: { claimName: 'c' } },
    allowed: false,
  },
  // A RedisCluster restore, as a Redis's: set at creation only; its status names one place.
  {
    name: 'cluster restore kept',
    kind: 'RedisCluster',
    path: 'spec',
    message: RESTORE_FIXED,
    self: { restore: RESTORE },
    oldSelf: { restore: RESTORE },
    allowed: true,
  },
  {
    name: 'cluster restore added later',
    kind: 'RedisCluster',
    path: 'spec',
    message: RESTORE_FIXED,
    self: { restore: RESTORE },
    oldSelf: {},
    allowed: false,
  },
  {
    name: 'cluster restored from s3',
    kind: 'RedisCluster',
    path: 'status.restore.storage',
    message: STORAGE_ONE,
    self: { s3: S3 },
    allowed: true,
  },
  {
    name: 'cluster restored from nowhere',
    kind: 'RedisCluster',
    path: 'status.restore.storage',
    message: STORAGE_ONE,
    self: {},
    allowed: false,
  },
  // A RedisBackup names a Redis or a RedisCluster, never both.
  {
    name: 'backup of a RedisCluster',
    kind: 'RedisBackup',
    path: 'spec',
    message: BACKUP_TARGET,
    self: { redisCluster: 'c' },
    allowed: true,
  },
  {
    name: 'backup of both',
    kind: 'RedisBackup',
    path: 'spec',
    message: BACKUP_TARGET,
    self: { redis: 'r', redisCluster: 'c' },
    allowed: false,
  },
  ...backupLocationCases(),
];

/**
 * Where backups go and a restore reads: a bucket by S3's rules, a prefix and a location's path
 * relative with no empty, "." or ".." segment (the patterns give the characters; these values
 * pass them, so only the rule refuses). Every place a storage block sits.
 */
function backupLocationCases(): Case[] {
  const BUCKET = 'bucket must be an S3 bucket name';
  const PREFIX = 'prefix must be relative';
  const places: Array<[Kind, string]> = [
    ['Redis', 'spec.backup.storage.s3'],
    ['Redis', 'spec.restore.storage.s3'],
    ['Redis', 'status.restore.storage.s3'],
    ['RedisCluster', 'spec.backup.storage.s3'],
    ['RedisCluster', 'status.restore.storage.s3'],
    ['RedisBackup', 'status.storage.s3'],
  ];
  const PREFIX_CHARS = 'prefix may only use';
  const values: Array<[string, 'bucket' | 'prefix', string, string, boolean]> = [
    ['a bucket with dots between labels', 'bucket', BUCKET, 'backups.example.com', true],
    ['a bucket with ".."', 'bucket', BUCKET, 'my..bucket', false],
    ['a bucket that is an IP address', 'bucket', BUCKET, '192.168.0.1', false],
    ['a prefix of segments', 'prefix', PREFIX, 'team/nightly/', true],
    ['a prefix climbing out', 'prefix', PREFIX, 'a/../b/', false],
    ['a prefix with an empty segment', 'prefix', PREFIX, 'a//b', false],
    ['an absolute prefix', 'prefix', PREFIX, '/etc/', false],
    ['a prefix of allowed characters', 'prefix', PREFIX_CHARS, 'a.b_c-d/', true],
    ['a prefix with a backslash', 'prefix', PREFIX_CHARS, 'a\\b/', false],
    ['a prefix with a %-encoded dot', 'prefix', PREFIX_CHARS, '%2e%2e/', false],
    ['a prefix imitating an owner folder', 'prefix', PREFIX_CHARS, 'redis~shop~cache/', false],
  ];
  const LOCATION_SHAPE = 'location must be s3://';
  const LOCATION_SEGMENTS = 'location must not have an empty';
  const LOCATION_NAME = 'the bucket or claim must be a valid name';
  const location = (name: string, self: string, message: string, allowed: boolean): Case => ({
    name,
    kind: 'Redis',
    path: 'spec.restore.location',
    message,
    self,
    allowed,
  });
  return [
    ...places.flatMap(([kind, at]) =>
      values.map(([name, field, message, self, allowed]): Case => ({
        name: `${kind} ${at}: ${name}`,
        kind,
        path: `${at}.${field}`,
        message,
        self,
        allowed,
      })),
    ),
    location(
      'a location in the layout before owner folders',
      'pvc://claim/nightly/shop/cache/20261201T000000Z-1.rdb',
      LOCATION_SHAPE,
      true,
    ),
    location('a location with a backslash', 's3://backups/a\\x.rdb', LOCATION_SHAPE, false),
    location('a location with a %-encoded ".."', 's3://backups/%2e%2e/x.rdb', LOCATION_SHAPE, false),
    location('a location with a control character', 's3://backups/a\u0007.rdb', LOCATION_SHAPE, false),
    location('a location of another scheme', 'file:///etc/x.rdb', LOCATION_SHAPE, false),
    location('a location that is not an RDB file', 's3://backups/x.txt', LOCATION_SHAPE, false),
    location(
      'a location in an owner folder',
      's3://backups/team/redis~shop~cache/20261201T000000Z-1.rdb',
      LOCATION_SEGMENTS,
      true,
    ),
    location('a location climbing out', 's3://backups/a/../x.rdb', LOCATION_SEGMENTS, false),
    location('a location with an empty segment', 'pvc://claim//x.rdb', LOCATION_SEGMENTS, false),
    location('a location in a bucket with dots', 's3://backups.example.com/x.rdb', LOCATION_NAME, true),
    location('a location in a bucket with ".."', 's3://my..bucket/x.rdb', LOCATION_NAME, false),
    location('a location in an IP-address bucket', 's3://10.0.0.1/x.rdb', LOCATION_NAME, false),
  ];
}

function ruleFor(kind: Kind, [path, message]: RuleRef): EmittedRule {
  const found = RULES.filter((r) => r.kind === kind && r.path === path && r.message.includes(message));
  assert.equal(
    found.length,
    1,
    `expected one ${kind} rule at ${path} with a message containing "${message}", found ${found.length}`,
  );
  return found[0]!;
}

test('every CEL rule of the three CRDs has an allowed and a refused case', () => {
  const uncovered = RULES.filter((r) => {
    const verdicts = new Set(
      CASES.filter((c) => c.kind === r.kind && c.path === r.path && r.message.includes(c.message)).map(
        (c) => c.allowed,
      ),
    );
    return !(verdicts.has(true) && verdicts.has(false));
  });
  assert.deepEqual(
    uncovered.map((r) => `${r.kind} ${r.path}: ${r.message}`),
    [],
  );
  assert.ok(RULES.length >= 20, `${RULES.length} rules`);
  for (const c of CASES) ruleFor(c.kind, [c.path, c.message]);
});

// ---- toStructural: what TypeBox emits by default ----

const json = (x: unknown) => JSON.parse(JSON.stringify(x)) as JsonSchema;
function rootWith(spec: Record<string, TSchema | JsonSchema>): JsonSchema {
  return json({
    type: 'object',
    properties: { metadata: { type: 'object' }, spec: Type.Object(spec as Record<string, TSchema>) },
  });
}
const quantityInBranch = {
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string', pattern: QUANTITY_PATTERN }],
};
const sizeRule = { rule: 'quantity(self.size).compareTo(quantity(oldSelf.size)) >= 0', message: 'no shrink' };

/**
 * What TypeBox emits by default that the server refuses, with what it says; toStructural rewrites each into an accepted
 * schema.
 */
const REPAIRABLE: Array<[string, JsonSchema, RegExp]> = [
  [
    'Record emits patternProperties',
    rootWith({ m: Type.Record(Type.String(), Type.String()) }),
    /patternProperties is not supported/,
  ],
  // Unknown to JSONSchemaProps: refused here because of fieldValidation=Strict; without it, dropped (validating
  // nothing).
  [
    'Union of Literals emits anyOf of const',
    rootWith({ e: Type.Union([Type.Literal('a'), Type.Literal('b')]) }),
    /unknown field .*\.const"/,
  ],
  ['Literal emits const', rootWith({ l: Type.Literal('x') }), /unknown field .*\.const"/],
  [
    'numeric exclusiveMaximum (draft 2019)',
    rootWith({ n: Type.Integer({ exclusiveMaximum: 10 }) }),
    /exclusiveMaximum of type bool/,
  ],
  [
    'additionalProperties: false',
    rootWith({ o: Type.Object({ a: Type.String() }, { additionalProperties: false }) }),
    /additionalProperties: Forbidden: additionalProperties and properties are mutual/,
  ],
  [
    'int-or-string with a constrained branch',
    rootWith({ q: quantityInBranch }),
    /anyOf\[1\]\.type: Forbidden: must be empty to be structural/,
  ],
  [
    'default {} over required fields',
    rootWith({ o: Type.Object({ a: Type.String({ default: 'x' }) }, { default: {} }) }),
    /default\.a: Required value/,
  ],
  [
    'default {} that a CEL rule reads',
    rootWith({
      p: Type.Object(
        { size: Type.Optional(Type.String({ default: '1Gi' })) },
        { default: {}, 'x-kubernetes-validations': [sizeRule] },
      ),
    }),
    /default: Invalid value: "object": no such key: size evaluating rule: no shrink/,
  ],
];

/**
 * What has no structural form: toStructural throws NotStructuralError on each, and the server refuses it as emitted.
 */
const REFUSED: Array<[string, JsonSchema, RegExp]> = [
  ['Ref emits $ref', rootWith({ r: Type.Ref('Other') }), /\$ref is not supported/],
  [
    'Tuple emits a list of items',
    rootWith({ t: Type.Tuple([Type.String(), Type.Integer()]) }),
    /items must be a schema object and not an array/,
  ],
  [
    'Union of types emits typed anyOf',
    rootWith({ u: Type.Union([Type.String(), Type.Integer()]) }),
    /type: Required value: must not be empty/,
  ],
  ['Null emits type null', rootWith({ n: Type.Null() }), /type cannot be set to null/],
  [
    'uniqueItems',
    rootWith({ a: Type.Array(Type.String(), { uniqueItems: true }) }),
    /uniqueItems cannot be set to true/,
  ],
  [
    'Record with a key pattern',
    rootWith({ m: Type.Record(Type.String({ pattern: '^[a-z]+$' }), Type.String()) }),
    /patternProperties is not supported/,
  ],
];

test('toStructural refuses what has no structural form', async (t) => {
  for (const [name, schema] of REFUSED)
    await t.test(name, () => assert.throws(() => toStructural(schema), NotStructuralError, name));
});

// ---- the server ----

function controlPlaneMissing(): string | undefined {
  try {
    return isBuilt() ? undefined : 'the control plane is not built (npm run cluster:build)';
  } catch (err) {
    return `the control plane cannot be located: ${err instanceof Error ? err.message : String(err)}`;
  }
}

const missing = controlPlaneMissing();
const startedAt = Date.now();
const started = missing
  ? undefined
  : await startControlPlane({ subnet: SUBNET, controllers: false }).then(
      (cp) => ({ cp, ms: Date.now() - startedAt }),
      (err: unknown) => ({
        error: `the control plane did not start: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`,
      }),
    );
const skip = missing ?? (started && 'error' in started ? started.error : undefined);
const cp: ControlPlane | undefined = started && 'cp' in started ? started.cp : undefined;
const startMs = started && 'ms' in started ? started.ms : 0;
after(() => cp?.stop());

interface Reply {
  status: number;
  body: Obj;
  /** The Warning headers (deprecations, fields a schema drops, ...). */
  warnings: string[];
}

/** A JSON client as cluster-admin (the admin client certificate), one keep-alive connection pool for the file. */
function client(plane: ControlPlane) {
  const admin = plane.pki.client('admin', ['system:masters']);
  const agent = new https.Agent({
    keepAlive: true,
    ca: readFileSync(plane.pki.ca.cert),
    cert: readFileSync(admin.cert),
    key: readFileSync(admin.key),
  });
  after(() => agent.destroy());
  return (method: string, path: string, body?: unknown): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const req = https.request(
        new URL(path, plane.server),
        { method, agent, headers: { 'content-type': 'application/json', accept: 'application/json' } },
        (res) => {
          let data = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (data += chunk));
          res.on('end', () => {
            const warning = res.headers['warning'];
            const warnings = warning === undefined ? [] : Array.isArray(warning) ? warning : [warning];
            resolve({ status: res.statusCode ?? 0, body: data ? (JSON.parse(data) as Obj) : {}, warnings });
          });
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
}

/**
 * What the server refused, one `field: message` per cause, sorted. A CEL failure reads
 * `Invalid value: "<value or type>": <rule message>`; the prefix is dropped so the rule's own
 * message remains. A refusal without causes (a decoding error, say) is returned whole.
 */
function refusals(reply: Reply): string[] {
  if (reply.status < 300) return [];
  const causes = reply.body['details']?.['causes'] as Array<{ field?: string; message?: string }> | undefined;
  if (!causes?.length) return [`HTTP ${reply.status}: ${String(reply.body['message'] ?? JSON.stringify(reply.body))}`];
  return causes
    .map((c) => `${c.field ?? ''}: ${String(c.message).replace(/^Invalid value: (?:"(?:[^"\\]|\\.)*": )?/, '')}`)
    .sort();
}

const ruleRefusal = (kind: Kind, ref: RuleRef) => `${ref[0]}: ${ruleFor(kind, ref).message}`;

/** Values a node's required siblings need, so that a case's value is judged on its own. */
const PARENTS: Record<string, Obj> = {
  'spec.backup': { schedule: '@daily' },
  'spec.restore': { location: 's3://backups/k.rdb' },
  'status.restore': { source: 'nightly', phase: 'Pending', message: '' },
  'spec.backup.storage.s3': { bucket: 'backups', region: 'us-east-1' },
  'spec.restore.storage.s3': { bucket: 'backups', region: 'us-east-1' },
  'status.restore.storage.s3': { bucket: 'backups', region: 'us-east-1' },
  'status.storage.s3': { bucket: 'backups', region: 'us-east-1' },
};

/** The least object of `kind`: every field defaulted (a RedisBackup needs the Redis it backs up). */
function bare(kind: Kind, name: string): Obj {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind,
    metadata: { name, namespace: NAMESPACE },
    spec: kind === 'RedisBackup' ? { redis: 'r' } : {},
  };
}

/** An object of `kind` named `name` with `value` at `path` (and PARENTS on the way). */
function objectWith(kind: Kind, name: string, path: string, value: unknown): Obj {
  const obj = bare(kind, name);
  const names = path.split('.');
  let node = obj;
  names.slice(0, -1).forEach((key, i) => {
    node[key] ??= structuredClone(PARENTS[names.slice(0, i + 1).join('.')] ?? {});
    node = node[key] as Obj;
  });
  node[names.at(-1)!] = structuredClone(value);
  return obj;
}

describe('the CRDs on the real kube-apiserver', { skip: skip ?? false, timeout: 300_000 }, () => {
  const plane = cp!;
  const api = client(plane);
  const base = (kind: Kind) => `/apis/${GROUP}/${VERSION}/namespaces/${NAMESPACE}/${KINDS[kind].plural}`;
  const create = (obj: Obj, dryRun: boolean) =>
    api('POST', `${base(obj['kind'] as Kind)}${dryRun ? '?dryRun=All' : ''}`, obj);
  const update = (obj: Obj, subresource = '') =>
    api('PUT', `${base(obj['kind'] as Kind)}/${String(obj['metadata']['name'])}${subresource}?dryRun=All`, obj);
  const probeCrd = (schema: unknown) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'probes.probe.example.com' },
    spec: {
      group: 'probe.example.com',
      scope: 'Namespaced',
      names: { plural: 'probes', singular: 'probe', kind: 'Probe', listKind: 'ProbeList' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: schema } }],
    },
  });
  /** A dry-run create of a CRD; Strict, so that a field the server would drop is a refusal. */
  const tryCrd = async (crd: unknown) => {
    const reply = await api(
      'POST',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All&fieldValidation=Strict',
      crd,
    );
    return reply.status < 300 ? 'accepted' : String(reply.body['message']);
  };

  test('each CRD as emitted is accepted (strict field validation), structural and Established', async (t) => {
    t.diagnostic(`kube-apiserver ${plane.version} and etcd started in ${startMs} ms`);
    for (const kind of Object.keys(KINDS) as Kind[]) {
      const crd = parse(KINDS[kind].yaml) as Obj;
      const reply = await api(
        'POST',
        '/apis/apiextensions.k8s.io/v1/customresourcedefinitions?fieldValidation=Strict',
        crd,
      );
      assert.equal(reply.status, 201, `${kind}: ${JSON.stringify(reply.body['message'])}`);
      assert.deepEqual(reply.warnings, [], kind);
    }
    for (const kind of Object.keys(KINDS) as Kind[]) {
      const name = (parse(KINDS[kind].yaml) as Obj)['metadata']['name'] as string;
      const deadline = Date.now() + 30_000;
      let conditions: Array<{ type: string; status: string; message?: string }> = [];
      for (;;) {
        const reply = await api('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
        conditions = (reply.body['status']?.['conditions'] ?? []) as typeof conditions;
        const established = conditions.some((c) => c.type === 'Established' && c.status === 'True');
        // Established is set once the names are accepted; the kind is served a moment later.
        if (established && (await api('GET', base(kind))).status === 200) break;
        assert.ok(Date.now() < deadline, `${name} not served within 30 s: ${JSON.stringify(conditions)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(
        conditions
          .filter((c) => c.type === 'NonStructuralSchema' || c.status !== 'True')
          .map((c) => `${c.type}=${c.status}: ${c.message}`),
        [],
        name,
      );
    }
  });

  test('TypeBox output the server refuses is accepted once toStructural rewrote it', async (t) => {
    for (const [name, schema, refusal] of REPAIRABLE) {
      await t.test(name, async () => {
        assert.match(await tryCrd(probeCrd(schema)), refusal);
        assert.equal(await tryCrd(probeCrd(toStructural(schema))), 'accepted');
      });
    }
  });

  test('what toStructural refuses to rewrite, the server refuses too', async (t) => {
    for (const [name, schema, refusal] of REFUSED)
      await t.test(name, async () => assert.match(await tryCrd(probeCrd(schema)), refusal));
  });

  // The cases are independent objects: four at a time take a third off their time on two cores.
  test('every CEL rule of the CRDs gives the expected verdict', { concurrency: 4 }, async (t) => {
    const judge = async (c: Case, name: string) => {
      const own = c.allowed
        ? []
        : [c.refusal !== undefined ? `${c.path}: ${c.refusal}` : ruleRefusal(c.kind, [c.path, c.message])];
      const expected = [...own, ...(c.alsoRefusedBy ?? []).map((ref) => ruleRefusal(c.kind, ref))].sort();
      const isStatus = c.path.startsWith('status.');
      if (c.oldSelf === undefined && !isStatus) {
        assert.deepEqual(refusals(await create(objectWith(c.kind, name, c.path, c.self), true)), expected);
        return;
      }
      // A transition rule needs an old object, and status is ignored on create: a real create first.
      const old = await create(isStatus ? bare(c.kind, name) : objectWith(c.kind, name, c.path, c.oldSelf), false);
      if (c.oldRefusedBy) {
        assert.deepEqual(refusals(old), [ruleRefusal(c.kind, c.oldRefusedBy)], 'the old object is refused');
        return;
      }
      assert.equal(old.status, 201, JSON.stringify(old.body['message']));
      const edited = structuredClone(old.body);
      const changed = objectWith(c.kind, name, c.path, c.self);
      if (isStatus) edited['status'] = changed['status'];
      else if (c.path === 'spec') edited['spec'] = changed['spec'];
      else edited['spec'] = { ...edited['spec'], ...changed['spec'] };
      assert.deepEqual(refusals(await update(edited, isStatus ? '/status' : '')), expected);
    };
    await Promise.all(CASES.map((c, i) => t.test(c.name, () => judge(c, `case-${i}`))));
  });

  // Whole-object updates, as `kubectl apply` of an edited Redis reaches the API server.
  test('updates of the design Redis are refused for the right reasons only', async (t) => {
    const design = parseAllDocuments(
      readFileSync(new URL('../../manifests/examples/redis.yaml', import.meta.url), 'utf8'),
    )[0]!.toJS() as Obj;
    design['metadata'] = { name: 'design', namespace: NAMESPACE };
    const created = await create(design, false);
    assert.equal(created.status, 201, JSON.stringify(created.body['message']));
    const updates: Array<[string, (spec: Obj) => void, RuleRef[]]> = [
      ['nothing changed', () => {}, []],
      ['TLS switched on', (s) => (s['tls'] = { secretName: 'my-tls' }), [['spec', TLS_TOGGLE]]],
      [
        'scaled, grown and patched',
        (s) => Object.assign(s, { replicas: 3, version: '7.2.6', persistence: { ...s['persistence'], size: '20Gi' } }),
        [],
      ],
      ['moved to valkey', (s) => Object.assign(s, { engine: 'valkey', version: '8.0' }), []],
      [
        'moved to valkey keeping the redis version',
        (s) => (s['engine'] = 'valkey'),
        [
          ['spec', SUPPORTED],
          ['spec', ENGINE_CHANGE],
        ],
      ],
      ['shrunk', (s) => (s['persistence'].size = '5Gi'), [['spec.persistence', SIZE]]],
      [
        'storage class added and persistence dropped',
        (s) => Object.assign(s['persistence'], { storageClassName: 'fast', enableRdb: false, enableAof: false }),
        [
          ['spec.persistence', STORAGE_CLASS],
          ['spec.persistence', TOGGLE],
        ],
      ],
      ['downgraded', (s) => (s['version'] = '7.0'), [['spec', DOWNGRADE]]],
      ['restored from a backup later', (s) => (s['restore'] = RESTORE), [['spec', RESTORE_FIXED]]],
    ];
    for (const [name, edit, expected] of updates) {
      await t.test(name, async () => {
        const edited = structuredClone(created.body);
        edit(edited['spec'] as Obj);
        assert.deepEqual(refusals(await update(edited)), expected.map((ref) => ruleRefusal('Redis', ref)).sort());
      });
    }
  });

  test('the examples in manifests/examples/ are accepted and defaulted to the spec the hook derives', async (t) => {
    const hook = { Redis: validateSpec, RedisCluster: validateRedisClusterSpec } as const;
    for (const file of ['redis.yaml', 'rediscluster.yaml']) {
      await t.test(file, async () => {
        const example = parse(
          readFileSync(new URL(`../../manifests/examples/${file}`, import.meta.url), 'utf8'),
        ) as Obj;
        const reply = await create({ ...example, metadata: { ...example['metadata'], namespace: NAMESPACE } }, true);
        assert.deepEqual(refusals(reply), []);
        const verdict = hook[example['kind'] as keyof typeof hook](
          example['metadata']['name'] as string,
          example['spec'],
        );
        assert.ok(verdict.ok, JSON.stringify(verdict));
        assert.deepEqual(reply.body['spec'], verdict.spec);
      });
    }
  });

  test('a Redis and a RedisCluster with no spec are defaulted by the server to the spec the hook derives', async () => {
    for (const [kind, verdict] of [
      ['Redis', validateSpec('r', {})],
      ['RedisCluster', validateRedisClusterSpec('c', {})],
    ] as const) {
      const reply = await create(
        { apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name: 'bare', namespace: NAMESPACE } },
        true,
      );
      assert.deepEqual(refusals(reply), [], kind);
      assert.ok(verdict.ok);
      // No CRD default for the version (it depends on the engine): the hook resolves it.
      const { version, ...rest } = verdict.spec;
      assert.equal(version, DEFAULT_VERSION.redis, kind);
      assert.deepEqual(reply.body['spec'], rest, kind);
    }
  });

  // Strings that reach redis.conf, the start script or a command: a control character is refused
  // by the schema's pattern on the server and in the hook, each naming the field.
  test('control characters are refused in every string that reaches a file, a script or a command, by the server and the hook', async (t) => {
    const hook = { Redis: validateSpec, RedisCluster: validateRedisClusterSpec } as const;
    const user = (rules: string) => [{ name: 'app', rules, passwordSecret: { name: 'app-secret' } }];
    const cases: Array<[Kind & keyof typeof hook, string, Obj, string]> = [];
    for (const kind of ['Redis', 'RedisCluster'] as const) {
      for (const c of ['\u0000', '\t', '\n', '\r', '\u001b', '\u007f']) {
        const code = `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
        cases.push([
          kind,
          `${kind} config value with ${code}`,
          { config: { hz: `10${c}requirepass x` } },
          'spec.config.hz',
        ]);
        cases.push([kind, `${kind} image with ${code}`, { image: `redis:7.2${c}` }, 'spec.image']);
        cases.push([
          kind,
          `${kind} auth key with ${code}`,
          { auth: { secretName: 's', key: `k${c}` } },
          'spec.auth.key',
        ]);
      }
      cases.push([kind, `${kind} image with a space`, { image: 'redis:7.2 --loadmodule' }, 'spec.image']);
      cases.push([kind, `${kind} auth Secret not a name`, { auth: { secretName: 'a b' } }, 'spec.auth.secretName']);
      cases.push([
        kind,
        `${kind} exporter image with a newline`,
        { monitoring: { exporter: { image: 'x\ny' } } },
        'spec.monitoring.exporter.image',
      ]);
    }
    cases.push(['Redis', 'Redis user rules with a NUL', { users: user('+@read\u0000 ~*') }, 'spec.users.0.rules']);
    cases.push(['Redis', 'Redis user rules with a newline', { users: user('+@read\nnopass') }, 'spec.users.0.rules']);
    cases.push([
      'Redis',
      'Redis user Secret key with a tab',
      { users: [{ name: 'app', rules: '', passwordSecret: { name: 's', key: 'a\tb' } }] },
      'spec.users.0.passwordSecret.key',
    ]);
    let n = 0;
    for (const [kind, name, spec, field] of cases) {
      await t.test(name, async () => {
        const reply = await create(
          { apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name: `ctl-${++n}`, namespace: NAMESPACE }, spec },
          true,
        );
        const server = refusals(reply);
        const serverField = field.replace(/\.([0-9]+)\./, '[$1].');
        assert.ok(
          server.length > 0 && server.every((r) => r.startsWith(`${serverField}: `)),
          `server: ${JSON.stringify(server)}`,
        );
        const verdict = hook[kind]('r', spec);
        assert.ok(!verdict.ok, 'the hook refuses it too');
        if (!verdict.ok)
          assert.deepEqual([...new Set(verdict.problems.map((p) => p.field))], [field.replace(/\.([0-9]+)\./, '.$1.')]);
      });
    }
  });

  test('the hook validators refuse exactly the configs the server refuses', async (t) => {
    const hook = { Redis: validateSpec, RedisCluster: validateRedisClusterSpec } as const;
    let n = 0;
    for (const c of CASES.filter((k) => k.path === 'spec.config')) {
      const kind = c.kind as keyof typeof hook;
      await t.test(c.name, async () => {
        const reply = await create(objectWith(kind, `config-${++n}`, 'spec.config', c.self), true);
        assert.equal(
          hook[kind]('r', { config: c.self }).ok,
          reply.status === 201,
          `server: ${JSON.stringify(refusals(reply))}`,
        );
      });
    }
  });
});
