// validateSpec: the design's Redis passes with every default filled in, the input is never
// mutated, and every invalid field is named in the problems (for the InvalidSpec condition).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  formatProblems,
  MAX_NAME_LENGTH,
  readStorage,
  validateSpec,
  type SpecProblem,
} from '../../src/api/validate.ts';

const DESIGN_SPEC = {
  version: '7.2',
  master: { replicas: 1 },
  replicas: 2,
  persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '10Gi' },
  resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '512Mi', cpu: '500m' } },
};

test("the design's Redis is valid and comes back with every default filled in", () => {
  const input = structuredClone(DESIGN_SPEC);
  const verdict = validateSpec('my-redis', input);
  assert.ok(verdict.ok, JSON.stringify(verdict));
  assert.deepEqual(verdict.spec, {
    engine: 'redis',
    version: '7.2',
    master: { replicas: 1 },
    replicas: 2,
    persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '10Gi', whenDeleted: 'Retain' },
    resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '512Mi', cpu: '500m' } },
    failover: { downAfterMilliseconds: 1000, minReplicasToWrite: 1, minReplicasMaxLagSeconds: 5 },
    hibernate: false,
    sentinel: { enabled: false },
    passwordGracePeriodSeconds: 600,
    monitoring: {
      enabled: true,
      exporter: {
        enabled: true,
        image: 'oliver006/redis_exporter:v1.45.0',
        resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } },
      },
      prometheus: { enabled: true },
      alerts: [],
    },
  });
  assert.deepEqual(input, DESIGN_SPEC, 'the input is not mutated');
});

test('an empty spec is valid and fully defaulted', () => {
  const verdict = validateSpec('r', {});
  assert.ok(verdict.ok);
  assert.equal(verdict.spec.version, '7.2');
  assert.equal(verdict.spec.replicas, 2);
  assert.equal(verdict.spec.master.replicas, 1);
  assert.equal(verdict.spec.persistence.size, '1Gi');
  assert.equal(verdict.spec.persistence.whenDeleted, 'Retain');
  assert.equal(verdict.spec.auth, undefined, 'no auth means the generated <name>-auth Secret');
});

test('auth gets its default key; optional production fields pass through', () => {
  const spec = {
    ...DESIGN_SPEC,
    image: 'registry.example.com/redis:7.2.4',
    imagePullPolicy: 'IfNotPresent',
    imagePullSecrets: [{ name: 'pull' }],
    auth: { secretName: 'my-password' },
    persistence: { ...DESIGN_SPEC.persistence, storageClassName: 'fast', whenDeleted: 'Delete' },
    config: { 'maxmemory-policy': 'allkeys-lru' },
    nodeSelector: { 'kubernetes.io/os': 'linux' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'redis', effect: 'NoSchedule' }],
    affinity: { nodeAffinity: { anything: ['is', 'preserved'] } },
    priorityClassName: 'high',
    podAnnotations: { 'prometheus.io/scrape': 'true' },
    failover: { downAfterMilliseconds: 500, minReplicasToWrite: 0, minReplicasMaxLagSeconds: 10 },
  };
  const verdict = validateSpec('r', spec);
  assert.ok(verdict.ok, JSON.stringify(verdict));
  assert.deepEqual(verdict.spec.auth, { secretName: 'my-password', key: 'password' });
  assert.deepEqual(verdict.spec.affinity, spec.affinity);
});

const INVALID: Array<[string, string, unknown, string]> = [
  // [case, resource name, spec, field that must be named]
  ['spec missing', 'r', undefined, 'spec'],
  ['spec null', 'r', null, 'spec'],
  ['spec a list', 'r', [], 'spec'],
  ['version 5', 'r', { version: '5.0' }, 'spec.version'],
  ['version 6.2 (multi-section INFO and CONFIG need 7.0)', 'r', { version: '6.2' }, 'spec.version'],
  ['version 8.0 (not tested here)', 'r', { version: '8.0' }, 'spec.version'],
  ['version not a version', 'r', { version: 'seven' }, 'spec.version'],
  ['version not a string', 'r', { version: 7.2 }, 'spec.version'],
  ['two masters', 'r', { master: { replicas: 2 } }, 'spec.master.replicas'],
  ['too many replicas', 'r', { replicas: 16 }, 'spec.replicas'],
  ['negative replicas', 'r', { replicas: -1 }, 'spec.replicas'],
  ['fractional replicas', 'r', { replicas: 1.5 }, 'spec.replicas'],
  ['size not a quantity', 'r', { persistence: { size: 'ten' } }, 'spec.persistence.size'],
  ['unsupported schedule', 'r', { persistence: { rdbSchedule: '15 3 * * *' } }, 'spec.persistence.rdbSchedule'],
  ['whenDeleted Keep', 'r', { persistence: { whenDeleted: 'Keep' } }, 'spec.persistence.whenDeleted'],
  ['memory not a quantity', 'r', { resources: { requests: { memory: 'lots' } } }, 'spec.resources.requests.memory'],
  [
    'memory request above its limit (the API server would refuse the pods)',
    'r',
    { resources: { requests: { memory: '1Gi' }, limits: { memory: '256Mi' } } },
    'spec.resources.requests.memory',
  ],
  ['auth without secretName', 'r', { auth: {} }, 'spec.auth.secretName'],
  ['auth with empty key', 'r', { auth: { secretName: 's', key: '' } }, 'spec.auth.key'],
  ['failover too fast', 'r', { failover: { downAfterMilliseconds: 10 } }, 'spec.failover.downAfterMilliseconds'],
  ['toleration operator', 'r', { tolerations: [{ operator: 'Maybe' }] }, 'spec.tolerations.0.operator'],
  ['reserved config', 'r', { config: { replicaof: '10.0.0.1 6379' } }, 'spec.config.replicaof'],
  ['multi-line config', 'r', { config: { hz: '10\nsave ""' } }, 'spec.config.hz'],
  ['config key case', 'r', { config: { Hz: '10' } }, 'spec.config.Hz'],
  ['name too long', 'r'.repeat(MAX_NAME_LENGTH + 1), {}, 'metadata.name'],
  [
    'user named default',
    'r',
    { users: [{ name: 'default', rules: '+@all', passwordSecret: { name: 's' } }] },
    'spec.users[0].name',
  ],
  [
    "user named as the operator's own",
    'r',
    { users: [{ name: 'redis-operator', rules: '+@all', passwordSecret: { name: 's' } }] },
    'spec.users[0].name',
  ],
  ['tls with neither a Secret nor cert-manager', 'r', { tls: {} }, 'spec.tls'],
  ["TLS directives are the operator's", 'r', { config: { 'tls-port': '6380' } }, 'spec.config.tls-port'],
  ['negative password grace period', 'r', { passwordGracePeriodSeconds: -1 }, 'spec.passwordGracePeriodSeconds'],
  ['password grace period over a week', 'r', { passwordGracePeriodSeconds: 604801 }, 'spec.passwordGracePeriodSeconds'],
  [
    'user listed twice',
    'r',
    {
      users: [
        { name: 'a', rules: '', passwordSecret: { name: 's' } },
        { name: 'a', rules: '', passwordSecret: { name: 's' } },
      ],
    },
    'spec.users[1].name',
  ],
  [
    'user rules set a password',
    'r',
    { users: [{ name: 'a', rules: '+@read >secret', passwordSecret: { name: 's' } }] },
    'spec.users[0].rules',
  ],
  [
    'user rules nopass',
    'r',
    { users: [{ name: 'a', rules: 'nopass +@all', passwordSecret: { name: 's' } }] },
    'spec.users[0].rules',
  ],
  [
    'user rules off',
    'r',
    { users: [{ name: 'a', rules: 'off', passwordSecret: { name: 's' } }] },
    'spec.users[0].rules',
  ],
  ['user without a Secret', 'r', { users: [{ name: 'a', rules: '+@read' }] }, 'spec.users.0.passwordSecret'],
  ['network policy without labels', 'r', { networkPolicy: { allowFrom: {} } }, 'spec.networkPolicy.allowFrom'],
];

test('an invalid spec is refused and the offending field is named', async (t) => {
  for (const [name, resource, spec, field] of INVALID) {
    await t.test(name, () => {
      const verdict = validateSpec(resource, spec);
      assert.equal(verdict.ok, false, name);
      if (verdict.ok) return;
      const fields = verdict.problems.map((p: SpecProblem) => p.field);
      assert.ok(fields.includes(field), `${name}: expected ${field} in ${JSON.stringify(verdict.problems)}`);
      for (const problem of verdict.problems) assert.ok(problem.message.length > 0, `${name}: empty message`);
    });
  }
});

test('application users: valid ones pass with the Secret key defaulted', () => {
  const verdict = validateSpec('r', {
    users: [{ name: 'shop', rules: '~shop:* +@read +@write -@dangerous', passwordSecret: { name: 'shop-redis' } }],
  });
  assert.ok(verdict.ok, JSON.stringify(verdict));
  assert.deepEqual(verdict.spec.users, [
    {
      name: 'shop',
      rules: '~shop:* +@read +@write -@dangerous',
      passwordSecret: { name: 'shop-redis', key: 'password' },
    },
  ]);
});

test('an unsupported version is refused with a message that says which versions are tested', () => {
  const verdict = validateSpec('r', { version: '6.2' });
  assert.ok(!verdict.ok);
  assert.deepEqual(verdict.problems, [
    {
      field: 'spec.version',
      message: 'redis 6.2 is not tested here: the tested combinations are redis 7.0, redis 7.2, valkey 8.0 (any patch)',
    },
  ]);
});

test('every problem is reported, once, and formatted on one line', () => {
  const verdict = validateSpec('r', { version: 'latest', replicas: 99, config: { save: '', requirepass: 'x' } });
  assert.equal(verdict.ok, false);
  if (verdict.ok) return;
  const fields = verdict.problems.map((p) => p.field);
  assert.deepEqual(
    new Set(fields),
    new Set(['spec.version', 'spec.replicas', 'spec.config.requirepass', 'spec.config.save']),
    'schema problems first; of the semantic checks only the directive allow-list runs on a schema-invalid spec',
  );
  assert.equal(
    new Set(verdict.problems.map((p) => `${p.field}:${p.message}`)).size,
    verdict.problems.length,
    'no duplicates',
  );
  const line = formatProblems(verdict.problems);
  assert.doesNotMatch(line, /\n/);
  assert.match(line, /spec\.version: must match/);
  assert.match(line, /spec\.replicas: /);

  const semantic = validateSpec('r', { config: { save: '', requirepass: 'x' } });
  assert.equal(semantic.ok, false);
  if (!semantic.ok)
    assert.deepEqual(
      semantic.problems.map((p) => p.field),
      ['spec.config.requirepass', 'spec.config.save'],
    );
});

test('the input is never mutated, even when invalid', () => {
  const spec = { persistence: { size: 'ten' } };
  const before = structuredClone(spec);
  validateSpec('r', spec);
  assert.deepEqual(spec, before);
});

test('validateSpec: scheduling keys the API server would refuse on every sync', async (t) => {
  const cases: Array<{ name: string; spec: Record<string, unknown>; field: string }> = [
    {
      name: 'nodeSelector key with a space',
      spec: { nodeSelector: { 'bad key': 'x' } },
      field: 'spec.nodeSelector.bad key',
    },
    {
      name: 'nodeSelector value too long',
      spec: { nodeSelector: { zone: 'a'.repeat(64) } },
      field: 'spec.nodeSelector.zone',
    },
    {
      name: 'podAnnotations key with a bad prefix',
      spec: { podAnnotations: { 'Bad_Prefix/x': 'y' } },
      field: 'spec.podAnnotations.Bad_Prefix/x',
    },
    {
      name: 'toleration key invalid',
      spec: { tolerations: [{ key: '-x', operator: 'Exists' }] },
      field: 'spec.tolerations[0].key',
    },
    {
      name: 'Exists with a value',
      spec: { tolerations: [{ key: 'k', operator: 'Exists', value: 'v' }] },
      field: 'spec.tolerations[0].value',
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const verdict = validateSpec('my-redis', c.spec);
      assert.equal(verdict.ok, false);
      if (!verdict.ok)
        assert.ok(
          verdict.problems.some((p) => p.field === c.field),
          JSON.stringify(verdict.problems),
        );
    });
  }
  await t.test('accepts valid keys', () => {
    const verdict = validateSpec('my-redis', {
      nodeSelector: { 'kubernetes.io/os': 'linux', 'node.example.com/pool': 'redis' },
      podAnnotations: { 'prometheus.io/scrape': 'true' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'redis', effect: 'NoSchedule' }],
    });
    assert.equal(verdict.ok, true, JSON.stringify(verdict));
  });
});

test("readStorage: a storage another object recorded is checked and defaulted like a spec's", async (t) => {
  const s3 = { bucket: 'backups', region: 'eu-west-1', credentialsSecret: { name: 'creds' } };
  const cases: Array<[string, unknown, unknown]> = [
    [
      's3, defaults filled in',
      { s3 },
      {
        s3: {
          ...s3,
          prefix: '',
          credentialsSecret: {
            name: 'creds',
            accessKeyIdKey: 'AWS_ACCESS_KEY_ID',
            secretAccessKeyKey: 'AWS_SECRET_ACCESS_KEY',
          },
        },
      },
    ],
    ['a claim', { pvc: { claimName: 'backups' } }, { pvc: { claimName: 'backups' } }],
    ['both (the CEL rule refuses it)', { s3, pvc: { claimName: 'backups' } }, undefined],
    ['neither', {}, undefined],
    ['a bad bucket name', { s3: { ...s3, bucket: 'Not_A_Bucket' } }, undefined],
    ['not an object', 'pvc://backups', undefined],
  ];
  for (const [name, input, expected] of cases) {
    await t.test(name, () => {
      const before = structuredClone(input);
      assert.deepEqual(readStorage(input), expected);
      assert.deepEqual(input, before, 'the input is left as it was');
    });
  }
});
