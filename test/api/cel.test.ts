// Every x-kubernetes-validations rule of the emitted CRD, evaluated with a CEL interpreter
// (@marcbachmann/cel-js) plus a stand-in for Kubernetes' quantity library. Table-driven; a rule
// added to the schema without an allowed AND a refused case here fails the coverage test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyDefaults, buildOpenApiSchema, type JsonSchema } from '../../src/api/crd.ts';
import { RESERVED_CONFIG_KEYS } from '../../src/api/schema.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { cel, collectRules, evaluateRule, isTransitionRule, ruleViolations, type EmittedRule } from './cel-env.ts';
import { compareQuantities, parseQuantity } from './k8s-quantity.ts';

const schema = buildOpenApiSchema();
const rules = collectRules(schema);
const specSchema = (schema['properties'] as Record<string, JsonSchema>)['spec'] as JsonSchema;

const PERSISTENCE = { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: false, size: '10Gi', whenDeleted: 'Retain' };
const persistence = (overrides: Record<string, unknown>) => ({ ...PERSISTENCE, ...overrides });

interface Case {
  name: string;
  path: string;
  /** A substring of the rule's message, to pick one of several rules on the same node. */
  message: string;
  self: unknown;
  oldSelf?: unknown;
  allowed: boolean;
}

const STORAGE_CLASS = 'storageClassName cannot change';
const SIZE = 'size cannot shrink';
const TOGGLE = 'cannot be switched on or off';
const KEYS = 'config keys must be lower-case';
const LINES = 'single line';
const RESERVED = 'directive the operator owns';
const DOWNGRADE = 'cannot be downgraded';
const TLS_SOURCE = 'tls needs secretName or certManager';
const TLS_TOGGLE = 'tls cannot be switched on or off';
const SUPPORTED = 'only Redis 7.x is supported';
const STORAGE_ONE = 'storage needs exactly one of s3 or pvc';
const RESTORE_SOURCE = 'restore needs exactly one of backup or location';
const RESTORE_FIXED = 'restore is set at creation only';
const S3 = { bucket: 'b', region: 'us-east-1', prefix: '' };
const RESTORE = { backup: 'nightly' };

const CASES: Case[] = [
  // persistence.storageClassName is fixed at creation (volumeClaimTemplates are immutable)
  { name: 'class unset, stays unset', path: 'spec.persistence', message: STORAGE_CLASS, self: persistence({}), oldSelf: persistence({}), allowed: true },
  {
    name: 'class kept',
    path: 'spec.persistence',
    message: STORAGE_CLASS,
    self: persistence({ storageClassName: 'fast' }),
    oldSelf: persistence({ storageClassName: 'fast' }),
    allowed: true,
  },
  {
    name: 'class changed',
    path: 'spec.persistence',
    message: STORAGE_CLASS,
    self: persistence({ storageClassName: 'slow' }),
    oldSelf: persistence({ storageClassName: 'fast' }),
    allowed: false,
  },
  {
    name: 'class set later',
    path: 'spec.persistence',
    message: STORAGE_CLASS,
    self: persistence({ storageClassName: 'fast' }),
    oldSelf: persistence({}),
    allowed: false,
  },
  {
    name: 'class removed',
    path: 'spec.persistence',
    message: STORAGE_CLASS,
    self: persistence({}),
    oldSelf: persistence({ storageClassName: 'fast' }),
    allowed: false,
  },
  // persistence.size grows, never shrinks; compared as quantities, not strings
  {
    name: 'size unchanged',
    path: 'spec.persistence',
    message: SIZE,
    self: persistence({ size: '10Gi' }),
    oldSelf: persistence({ size: '10Gi' }),
    allowed: true,
  },
  { name: 'size grows', path: 'spec.persistence', message: SIZE, self: persistence({ size: '20Gi' }), oldSelf: persistence({ size: '10Gi' }), allowed: true },
  {
    name: 'size grows across units',
    path: 'spec.persistence',
    message: SIZE,
    self: persistence({ size: '1Ti' }),
    oldSelf: persistence({ size: '900Gi' }),
    allowed: true,
  },
  {
    name: 'same size in other units',
    path: 'spec.persistence',
    message: SIZE,
    self: persistence({ size: '1024Mi' }),
    oldSelf: persistence({ size: '1Gi' }),
    allowed: true,
  },
  {
    name: 'decimal G is less than Gi',
    path: 'spec.persistence',
    message: SIZE,
    self: persistence({ size: '1G' }),
    oldSelf: persistence({ size: '1Gi' }),
    allowed: false,
  },
  { name: 'size shrinks', path: 'spec.persistence', message: SIZE, self: persistence({ size: '5Gi' }), oldSelf: persistence({ size: '10Gi' }), allowed: false },
  {
    name: 'size shrinks by a fraction',
    path: 'spec.persistence',
    message: SIZE,
    self: persistence({ size: '9.5Gi' }),
    oldSelf: persistence({ size: '10Gi' }),
    allowed: false,
  },
  {
    name: 'size shrinks although the string grows',
    path: 'spec.persistence',
    message: SIZE,
    self: persistence({ size: '9000Mi' }),
    oldSelf: persistence({ size: '10Gi' }),
    allowed: false,
  },
  // persistence cannot be toggled (emptyDir vs PVC is a volumeClaimTemplates change)
  {
    name: 'RDB to AOF keeps volumes',
    path: 'spec.persistence',
    message: TOGGLE,
    self: persistence({ enableRdb: false, enableAof: true }),
    oldSelf: persistence({ enableRdb: true, enableAof: false }),
    allowed: true,
  },
  {
    name: 'both off stays off',
    path: 'spec.persistence',
    message: TOGGLE,
    self: persistence({ enableRdb: false }),
    oldSelf: persistence({ enableRdb: false }),
    allowed: true,
  },
  { name: 'AOF added to RDB', path: 'spec.persistence', message: TOGGLE, self: persistence({ enableAof: true }), oldSelf: persistence({}), allowed: true },
  {
    name: 'persistence switched off',
    path: 'spec.persistence',
    message: TOGGLE,
    self: persistence({ enableRdb: false, enableAof: false }),
    oldSelf: persistence({}),
    allowed: false,
  },
  {
    name: 'persistence switched on',
    path: 'spec.persistence',
    message: TOGGLE,
    self: persistence({ enableAof: true }),
    oldSelf: persistence({ enableRdb: false }),
    allowed: false,
  },
  // config: directive names, single-line values, reserved directives
  { name: 'config empty', path: 'spec.config', message: KEYS, self: {}, allowed: true },
  { name: 'config directive name', path: 'spec.config', message: KEYS, self: { 'maxmemory-policy': 'allkeys-lru', hz: '20' }, allowed: true },
  { name: 'config upper case', path: 'spec.config', message: KEYS, self: { MaxMemory: '1gb' }, allowed: false },
  { name: 'config space in key', path: 'spec.config', message: KEYS, self: { 'maxmemory policy': 'x' }, allowed: false },
  { name: 'config key starts with digit', path: 'spec.config', message: KEYS, self: { '1hz': '10' }, allowed: false },
  { name: 'config one line', path: 'spec.config', message: LINES, self: { 'client-output-buffer-limit': 'pubsub 32mb 8mb 60' }, allowed: true },
  { name: 'config newline smuggles a directive', path: 'spec.config', message: LINES, self: { hz: '10\nreplicaof 10.0.0.1 6379' }, allowed: false },
  { name: 'config carriage return', path: 'spec.config', message: LINES, self: { hz: '10\rsave ""' }, allowed: false },
  { name: 'config not reserved', path: 'spec.config', message: RESERVED, self: { 'maxmemory-policy': 'noeviction', 'replica-priority': '10' }, allowed: true },
  ...RESERVED_CONFIG_KEYS.map((key) => ({ name: `config reserved ${key}`, path: 'spec.config', message: RESERVED, self: { [key]: 'x' }, allowed: false })),
  // version: only 7.x is supported
  { name: 'version 7.0', path: 'spec.version', message: SUPPORTED, self: '7.0', allowed: true },
  { name: 'version 7.2.4-alpine', path: 'spec.version', message: SUPPORTED, self: '7.2.4-alpine', allowed: true },
  { name: 'version 7.10', path: 'spec.version', message: SUPPORTED, self: '7.10', allowed: true },
  { name: 'version 6.2 refused', path: 'spec.version', message: SUPPORTED, self: '6.2', allowed: false },
  { name: 'version 8.0 refused (not tested here)', path: 'spec.version', message: SUPPORTED, self: '8.0', allowed: false },
  { name: 'version 70.1 refused', path: 'spec.version', message: SUPPORTED, self: '70.1', allowed: false },
  // version: upgrades and patch changes allowed, major.minor downgrades refused (numerically)
  { name: 'version kept', path: 'spec.version', message: DOWNGRADE, self: '7.2', oldSelf: '7.2', allowed: true },
  { name: 'minor upgrade', path: 'spec.version', message: DOWNGRADE, self: '7.4', oldSelf: '7.2', allowed: true },
  { name: 'major upgrade', path: 'spec.version', message: DOWNGRADE, self: '8.0', oldSelf: '7.4', allowed: true },
  { name: '7.10 is newer than 7.9', path: 'spec.version', message: DOWNGRADE, self: '7.10', oldSelf: '7.9', allowed: true },
  { name: 'patch pinned', path: 'spec.version', message: DOWNGRADE, self: '7.2.4', oldSelf: '7.2', allowed: true },
  { name: 'patch downgrade', path: 'spec.version', message: DOWNGRADE, self: '7.2.1', oldSelf: '7.2.4', allowed: true },
  { name: 'suffix dropped', path: 'spec.version', message: DOWNGRADE, self: '7.2', oldSelf: '7.2.4-alpine', allowed: true },
  { name: 'minor downgrade', path: 'spec.version', message: DOWNGRADE, self: '7.0', oldSelf: '7.2', allowed: false },
  { name: '7.9 is older than 7.10', path: 'spec.version', message: DOWNGRADE, self: '7.9', oldSelf: '7.10', allowed: false },
  { name: 'major downgrade', path: 'spec.version', message: DOWNGRADE, self: '7.4', oldSelf: '8.0', allowed: false },
  { name: 'downgrade with suffix', path: 'spec.version', message: DOWNGRADE, self: '6.2-alpine', oldSelf: '7.0.15', allowed: false },
  // tls: a Secret or cert-manager; never switched on or off after creation
  { name: 'tls with a Secret', path: 'spec.tls', message: TLS_SOURCE, self: { secretName: 'my-tls' }, allowed: true },
  { name: 'tls from cert-manager', path: 'spec.tls', message: TLS_SOURCE, self: { certManager: { issuerRef: { name: 'ca' } } }, allowed: true },
  { name: 'tls with neither', path: 'spec.tls', message: TLS_SOURCE, self: {}, allowed: false },
  { name: 'tls kept', path: 'spec', message: TLS_TOGGLE, self: { tls: { secretName: 'a' } }, oldSelf: { tls: { secretName: 'b' } }, allowed: true },
  { name: 'tls never on', path: 'spec', message: TLS_TOGGLE, self: { replicas: 3 }, oldSelf: { replicas: 2 }, allowed: true },
  { name: 'tls switched on', path: 'spec', message: TLS_TOGGLE, self: { tls: { secretName: 'a' } }, oldSelf: {}, allowed: false },
  { name: 'tls switched off', path: 'spec', message: TLS_TOGGLE, self: {}, oldSelf: { tls: { secretName: 'a' } }, allowed: false },
  // Backups go to one place; a restore names one backup, at creation only.
  { name: 'backup to s3', path: 'spec.backup.storage', message: STORAGE_ONE, self: { s3: S3 }, allowed: true },
  { name: 'backup to a claim', path: 'spec.backup.storage', message: STORAGE_ONE, self: { pvc: { claimName: 'c' } }, allowed: true },
  { name: 'backup to both', path: 'spec.backup.storage', message: STORAGE_ONE, self: { s3: S3, pvc: { claimName: 'c' } }, allowed: false },
  { name: 'backup to nowhere', path: 'spec.backup.storage', message: STORAGE_ONE, self: {}, allowed: false },
  { name: 'restore reaches s3', path: 'spec.restore.storage', message: STORAGE_ONE, self: { s3: S3 }, allowed: true },
  { name: 'restore reaches nothing', path: 'spec.restore.storage', message: STORAGE_ONE, self: {}, allowed: false },
  { name: 'restored from a claim', path: 'status.restore.storage', message: STORAGE_ONE, self: { pvc: { claimName: 'c' } }, allowed: true },
  { name: 'restored from nowhere', path: 'status.restore.storage', message: STORAGE_ONE, self: {}, allowed: false },
  { name: 'restore a RedisBackup', path: 'spec.restore', message: RESTORE_SOURCE, self: RESTORE, allowed: true },
  { name: 'restore a location', path: 'spec.restore', message: RESTORE_SOURCE, self: { location: 's3://b/k.rdb' }, allowed: true },
  { name: 'restore both', path: 'spec.restore', message: RESTORE_SOURCE, self: { backup: 'a', location: 's3://b/k.rdb' }, allowed: false },
  { name: 'restore neither', path: 'spec.restore', message: RESTORE_SOURCE, self: {}, allowed: false },
  { name: 'restore kept', path: 'spec', message: RESTORE_FIXED, self: { restore: RESTORE }, oldSelf: { restore: RESTORE }, allowed: true },
  { name: 'never restored', path: 'spec', message: RESTORE_FIXED, self: { replicas: 3 }, oldSelf: { replicas: 2 }, allowed: true },
  { name: 'restore added later', path: 'spec', message: RESTORE_FIXED, self: { restore: RESTORE }, oldSelf: {}, allowed: false },
  { name: 'restore removed', path: 'spec', message: RESTORE_FIXED, self: {}, oldSelf: { restore: RESTORE }, allowed: false },
  { name: 'restore changed', path: 'spec', message: RESTORE_FIXED, self: { restore: { backup: 'other' } }, oldSelf: { restore: RESTORE }, allowed: false },
];

function ruleFor(path: string, message: string): EmittedRule {
  const found = rules.filter((r) => r.path === path && (r.message ?? '').includes(message));
  assert.equal(found.length, 1, `expected one rule at ${path} with message containing "${message}", found ${found.length}`);
  return found[0] as EmittedRule;
}

test('every CEL rule of the CRD gives the expected verdict', async (t) => {
  for (const c of CASES) {
    await t.test(c.name, () => {
      const { rule } = ruleFor(c.path, c.message);
      if (isTransitionRule(rule)) assert.notEqual(c.oldSelf, undefined, `${c.name}: a transition rule needs oldSelf`);
      assert.equal(evaluateRule(rule, c.self, c.oldSelf), c.allowed, `${c.name}: ${rule}`);
    });
  }
});

test('every CEL rule of the CRD has an allowed and a refused case', () => {
  const uncovered = rules.filter((r) => {
    const verdicts = new Set(CASES.filter((c) => c.path === r.path && (r.message ?? '').includes(c.message)).map((c) => c.allowed));
    return !(verdicts.has(true) && verdicts.has(false));
  });
  assert.deepEqual(
    uncovered.map((r) => `${r.path}: ${r.message ?? r.rule}`),
    [],
  );
  assert.ok(rules.length >= 7);
});

test('every CEL rule type-checks to a bool', async (t) => {
  for (const { path, rule } of rules) {
    await t.test(`${path}: ${rule}`, () => {
      const result = cel.check(rule);
      assert.ok(result.valid, `${rule}: ${result.error?.message ?? ''}`);
      assert.equal(result.type, 'bool', rule);
    });
  }
});

test('the hook validator refuses exactly the configs the CEL rules refuse', async (t) => {
  for (const c of CASES.filter((k) => k.path === 'spec.config')) {
    await t.test(c.name, () => {
      const celAllows = ruleViolations(specSchema, { config: c.self }).length === 0;
      assert.equal(validateSpec('r', { config: c.self }).ok, celAllows, c.name);
    });
  }
});

// Whole-object updates, as `kubectl apply` of an edited Redis reaches the API server.
const DESIGN = applyDefaults(specSchema, {
  version: '7.2',
  master: { replicas: 1 },
  replicas: 2,
  persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '10Gi' },
  resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '512Mi', cpu: '500m' } },
}) as Record<string, any>;

const UPDATES: Array<[string, (spec: Record<string, any>) => void, string[]]> = [
  ['nothing changed', () => {}, []],
  [
    'TLS switched on',
    (s) => (s['tls'] = { secretName: 'my-tls' }),
    [
      'spec: tls cannot be switched on or off after creation: during the change, nodes with and without TLS could not replicate from each other (create a new Redis and move the data)',
    ],
  ],
  ['scaled, grown and upgraded', (s) => Object.assign(s, { replicas: 3, version: '7.4', persistence: { ...s['persistence'], size: '20Gi' } }), []],
  ['shrunk', (s) => (s['persistence'].size = '5Gi'), ['spec.persistence: persistence.size cannot shrink']],
  [
    'storage class added and persistence dropped',
    (s) => Object.assign(s['persistence'], { storageClassName: 'fast', enableRdb: false, enableAof: false }),
    [
      'spec.persistence: persistence.storageClassName cannot change after creation',
      "spec.persistence: persistence cannot be switched on or off after creation (turning both enableRdb and enableAof off, or one on from none): the StatefulSets' volume claims are immutable",
    ],
  ],
  [
    'downgraded',
    (s) => (s['version'] = '7.0'),
    ['spec.version: version cannot be downgraded to an older major.minor: older Redis cannot load the data files of a newer one'],
  ],
];

test('updates of the design Redis are refused for the right reasons only', async (t) => {
  assert.deepEqual(ruleViolations(specSchema, DESIGN, undefined, 'spec'), [], 'create');
  for (const [name, edit, expected] of UPDATES) {
    await t.test(name, () => {
      const updated = structuredClone(DESIGN);
      edit(updated);
      assert.deepEqual(ruleViolations(specSchema, updated, DESIGN, 'spec'), expected, name);
    });
  }
});

test('the quantity stand-in parses and orders quantities like Kubernetes', async (t) => {
  const ordered: Array<[string, string, -1 | 0 | 1]> = [
    ['1Gi', '1024Mi', 0],
    ['1.5Gi', '1536Mi', 0],
    ['1G', '1Gi', -1],
    ['1k', '1e3', 0],
    ['1Ki', '1k', 1],
    ['500m', '1', -1],
    ['0.5', '500m', 0],
    ['-1', '0', -1],
    ['2Gi', '2147483648', 0],
    ['.5Gi', '512Mi', 0],
    ['1E', '1e18', 0],
    ['100n', '1u', -1],
  ];
  for (const [a, b, expected] of ordered)
    await t.test(`${a} vs ${b}`, () => assert.equal(compareQuantities(parseQuantity(a), parseQuantity(b)), expected, `${a} vs ${b}`));
  for (const bad of ['', 'ten', '1GB', '1 Gi', 'Gi', '1e2.5', '1KiB'])
    await t.test(`refuses ${JSON.stringify(bad)}`, () => assert.throws(() => parseQuantity(bad), Error, bad));
  const sameSize = 'quantity(self).compareTo(quantity(oldSelf)) == 0';
  assert.equal(evaluateRule(sameSize, '1Gi', '1024Mi'), true);
  assert.throws(() => evaluateRule(sameSize, 'lots', '1Gi'), Error, 'quantity() of a non-quantity is an evaluation error');
});
