// The RedisCluster CRD and the hook's validator, without a server: the committed file in sync
// with the source, a valid apiextensions object, the scale subresource on the shard count and the
// columns of `kubectl get rediscluster`, the design article's example accepted verbatim (by the
// closed schema after defaulting and the hook validator, with the same defaults), and every
// refusal of the hook validator naming its field. What the API server says of the CRD, its CEL
// rules and the example is crd-server.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { parse, parseAllDocuments } from 'yaml';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import {
  applyDefaults,
  buildRedisClusterCrd,
  buildRedisClusterOpenApiSchema,
  REDISCLUSTER_CRD_NAME,
  renderRedisClusterCrdYaml,
  type JsonSchema,
} from '../../src/api/crd.ts';
import {
  REDIS_CLUSTER_KIND,
  REDIS_CLUSTER_PLURAL,
  REDIS_CLUSTER_SHORT_NAMES,
  REDIS_CLUSTER_SINGULAR,
  MAX_REDIS_CLUSTER_NAME_LENGTH,
} from '../../src/api/rediscluster-names.ts';
import { validateRedisClusterSpec } from '../../src/api/rediscluster-validate.ts';
import { DEFAULT_VERSION } from '../../src/api/engine.ts';
import { GROUP, VERSION } from '../../src/api/labels.ts';
import { closed, kubernetesAjv } from '../support/crd-schema.ts';

const CRD_FILE = fileURLToPath(new URL('../../manifests/rediscluster-crd.yaml', import.meta.url));
const EXAMPLE_FILE = fileURLToPath(new URL('../../manifests/examples/rediscluster.yaml', import.meta.url));
const ARTICLE = fileURLToPath(new URL('../../../shared/seed/operator-pattern-article.txt', import.meta.url));

type Obj = Record<string, any>;
const schema = buildRedisClusterOpenApiSchema();
const specSchema = (schema['properties'] as Record<string, JsonSchema>)['spec'] as JsonSchema;

function child(node: JsonSchema, ...path: string[]): JsonSchema {
  let current = node;
  for (const name of path) current = (current['properties'] as Record<string, JsonSchema>)[name] as JsonSchema;
  return current;
}

/**
 * The article's RedisCluster block: from its apiVersion line to the first unindented line after spec that is not YAML.
 */
function articleExample(): Obj {
  const lines = readFileSync(ARTICLE, 'utf8').split('\n');
  const kindAt = lines.findIndex((l) => l.trim() === 'kind: RedisCluster');
  assert.ok(kindAt > 0, 'the article has a RedisCluster');
  const out = [lines[kindAt - 1] as string];
  for (const line of lines.slice(kindAt)) {
    if (line !== '' && !/^\s/.test(line) && !/^(kind|metadata|spec):/.test(line)) break;
    out.push(line);
  }
  return parse(out.join('\n')) as Obj;
}

const example = (): Obj => {
  const docs = parseAllDocuments(readFileSync(EXAMPLE_FILE, 'utf8')).map((d) => d.toJS() as Obj);
  assert.equal(docs.length, 1);
  return docs[0] as Obj;
};

test('manifests/rediscluster-crd.yaml is what the source generates', () => {
  const committed = readFileSync(CRD_FILE, 'utf8');
  assert.equal(
    committed,
    renderRedisClusterCrdYaml(),
    'manifests/rediscluster-crd.yaml is stale: run npm run gen:crd and commit the result',
  );
  assert.deepEqual(parse(committed), JSON.parse(JSON.stringify(buildRedisClusterCrd())));
});

test('the CRD is a valid apiextensions.k8s.io/v1 object', () => {
  assert.doesNotThrow(() =>
    new CustomResourceDefinition(JSON.parse(JSON.stringify(buildRedisClusterCrd())) as never).validate(),
  );
});

test('names, scope, the status and scale subresources, and the columns of kubectl get rediscluster', () => {
  const crd = JSON.parse(JSON.stringify(buildRedisClusterCrd())) as Obj;
  assert.equal(crd['metadata']['name'], REDISCLUSTER_CRD_NAME);
  assert.equal(REDISCLUSTER_CRD_NAME, 'redisclusters.redis.example.com');
  assert.deepEqual(crd['spec']['names'], {
    kind: REDIS_CLUSTER_KIND,
    listKind: 'RedisClusterList',
    plural: REDIS_CLUSTER_PLURAL,
    singular: REDIS_CLUSTER_SINGULAR,
    shortNames: REDIS_CLUSTER_SHORT_NAMES,
  });
  assert.equal(crd['spec']['group'], GROUP);
  assert.equal(crd['spec']['scope'], 'Namespaced');
  const [version] = crd['spec']['versions'] as Obj[];
  assert.equal(version?.['name'], VERSION);
  assert.deepEqual(version?.['subresources'], {
    status: {},
    scale: {
      specReplicasPath: '.spec.master.replicas',
      statusReplicasPath: '.status.shards',
      labelSelectorPath: '.status.selector',
    },
  });
  assert.deepEqual(
    (version?.['additionalPrinterColumns'] as Obj[]).map((c) => [c['name'].toUpperCase(), c['type'], c['jsonPath']]),
    [
      ['MASTERS', 'string', '.status.summary.masters'],
      ['REPLICAS', 'string', '.status.summary.replicas'],
      ['SLOTS', 'integer', '.status.slotsCovered'],
      ['PHASE', 'string', '.status.phase'],
      ['AGE', 'date', '.metadata.creationTimestamp'],
      ['ENGINE', 'string', '.spec.engine'],
      ['VERSION', 'string', '.spec.version'],
    ],
  );
});

test('the scale and column paths point at fields of the right type', () => {
  assert.equal(child(schema, 'spec', 'master', 'replicas')['type'], 'integer');
  for (const f of [
    'shards',
    'readyMasters',
    'readyReplicas',
    'slotsCovered',
    'observedGeneration',
    'memoryUtilization',
  ])
    assert.equal(child(schema, 'status', f)['type'], 'integer', f);
  assert.equal(child(schema, 'status', 'selector')['type'], 'string');
  assert.equal(child(schema, 'metadata', 'name')['maxLength'], MAX_REDIS_CLUSTER_NAME_LENGTH);
});

test('every field has a description (kubectl explain), metadata excepted', () => {
  const missing: string[] = [];
  const visit = (node: JsonSchema, path: string) => {
    if (!path.startsWith('metadata') && typeof node['description'] !== 'string') missing.push(path || '<root>');
    for (const [name, c] of Object.entries((node['properties'] as Record<string, JsonSchema> | undefined) ?? {}))
      visit(c, path ? `${path}.${name}` : name);
    if (node['items']) visit(node['items'] as JsonSchema, `${path}[]`);
  };
  visit(schema, '');
  assert.deepEqual(missing, []);
});

test('a RedisCluster with no spec is defaulted by the API server to the spec the hook derives', () => {
  const defaulted = applyDefaults(schema, {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: REDIS_CLUSTER_KIND,
    metadata: { name: 'c' },
  }) as Obj;
  const verdict = validateRedisClusterSpec('c', {});
  assert.ok(verdict.ok);
  // No CRD default for the version (it depends on the engine): the hook resolves it.
  const { version, ...rest } = verdict.spec;
  assert.equal(version, DEFAULT_VERSION.redis);
  assert.deepEqual(defaulted['spec'], rest);
  assert.equal(verdict.spec.master.replicas, 3);
  assert.equal(verdict.spec.replicas, 1);
});

test(
  "manifests/examples/rediscluster.yaml holds the design article's spec, its backup commented out",
  { skip: existsSync(ARTICLE) ? false : `${ARTICLE} is not beside the checkout` },
  () => {
    const article = articleExample();
    const ours = example();
    assert.equal(ours['apiVersion'], article['apiVersion']);
    assert.equal(ours['kind'], 'RedisCluster');
    assert.equal(ours['metadata']['name'], article['metadata']['name']);
    const { backup, ...rest } = article['spec'] as Obj;
    assert.deepEqual(ours['spec'], rest);
    assert.equal(
      backup['storage']['s3']['credentialsSecret'],
      undefined,
      "the article's backup: a bucket anyone may own, no credentials",
    );
  },
);

test("the example's backup is off, and its commented block needs the user's own bucket and names a credentials Secret", () => {
  assert.equal(example()['spec']['backup'], undefined, 'applied as is, the example sends no data anywhere');
  const lines = readFileSync(EXAMPLE_FILE, 'utf8').split('\n');
  const from = lines.findIndex((l) => l === '  # backup:');
  assert.ok(from > 0, 'the backup block is there to uncomment');
  const to = lines.findIndex((l, i) => i > from && !l.startsWith('  # '));
  const uncommented = (
    parse(
      lines
        .slice(from, to)
        .map((l) => l.slice('  # '.length))
        .join('\n'),
    ) as Obj
  )['backup'] as Obj;
  assert.deepEqual(uncommented['storage']['s3']['credentialsSecret'], { name: 'order-cache-backup-s3' });
  const withBackup = (bucket: string) => {
    const spec = structuredClone(example()['spec']) as Obj;
    spec['backup'] = structuredClone(uncommented);
    spec['backup']['storage']['s3']['bucket'] = bucket;
    return validateRedisClusterSpec('order-cache', spec);
  };
  const placeholder = withBackup(uncommented['storage']['s3']['bucket']);
  assert.ok(
    !placeholder.ok && JSON.stringify(placeholder).includes('spec.backup.storage.s3.bucket'),
    'the placeholder left in is refused, naming the field',
  );
  assert.ok(withBackup('shop-redis-backups').ok, 'a bucket of the user is taken');
});

test("the article's example is accepted by the closed schema after defaulting and the hook validator, with the same defaults", () => {
  const ex = example();
  const defaulted = applyDefaults(schema, ex) as Obj;
  const validate = kubernetesAjv().compile(closed(schema) as JsonSchema);
  // The metadata schema only bounds the name; the API server fills in the rest of ObjectMeta.
  assert.ok(
    validate({ ...defaulted, metadata: { name: ex['metadata']['name'] } }),
    JSON.stringify(validate.errors, null, 2),
  );
  const verdict = validateRedisClusterSpec(ex['metadata']['name'], ex['spec']);
  assert.ok(verdict.ok, JSON.stringify(verdict));
  assert.deepEqual(verdict.spec, defaulted['spec']);
  // What the article means by its fields, as the API reads them.
  assert.equal(verdict.spec.master.replicas, 3, 'shards');
  assert.equal(verdict.spec.replicas, 2, 'replicas per shard');
  assert.equal(
    verdict.spec.autoscaling.minReplicas,
    2,
    'accepted as written (the floor of 3 is applied, and said, by the hook)',
  );
  assert.deepEqual(verdict.spec.sentinel, {
    enabled: true,
    replicas: 3,
    downAfterMilliseconds: 5000,
    failoverTimeout: 10000,
  });
});

// ---- the hook validator ----

const REFUSALS: Array<[string, string, unknown, string]> = [
  ['not an object', 'c', 'three shards', 'spec'],
  ['two shards', 'c', { master: { replicas: 2 } }, 'spec.master.replicas'],
  ['65 shards', 'c', { master: { replicas: 65 } }, 'spec.master.replicas'],
  ['six replicas per shard', 'c', { replicas: 6 }, 'spec.replicas'],
  ['Redis 6', 'c', { version: '6.2' }, 'spec.version'],
  ['Valkey 7.2', 'c', { engine: 'valkey', version: '7.2' }, 'spec.version'],
  ['Redis 7.4', 'c', { version: '7.4.1' }, 'spec.version'],
  [
    'a node timeout under 500 ms',
    'c',
    { sentinel: { downAfterMilliseconds: 100 } },
    'spec.sentinel.downAfterMilliseconds',
  ],
  ['a failover timeout under a second', 'c', { sentinel: { failoverTimeout: 10 } }, 'spec.sentinel.failoverTimeout'],
  [
    'autoscaling bounds crossed',
    'c',
    { autoscaling: { minReplicas: 5, maxReplicas: 4 } },
    'spec.autoscaling.minReplicas',
  ],
  [
    'a target of 100%',
    'c',
    { autoscaling: { targetMemoryUtilization: 100 } },
    'spec.autoscaling.targetMemoryUtilization',
  ],
  ['cluster-enabled in config', 'c', { config: { 'cluster-enabled': 'no' } }, 'spec.config.cluster-enabled'],
  ['a name too long for the shard objects', 'c'.repeat(MAX_REDIS_CLUSTER_NAME_LENGTH + 1), {}, 'metadata.name'],
  [
    'a bad backup schedule',
    'c',
    { backup: { schedule: '0 */6 * * 9', storage: { s3: { bucket: 'redis-backups', region: 'us-east-1' } } } },
    'spec.backup.schedule',
  ],
  [
    'a backup to two places',
    'c',
    {
      backup: {
        schedule: '@daily',
        storage: { s3: { bucket: 'redis-backups', region: 'us-east-1' }, pvc: { claimName: 'b' } },
      },
    },
    'spec.backup.storage',
  ],
  [
    'a percentage for ReplicationLag',
    'c',
    { monitoring: { alerts: [{ name: 'ReplicationLag', threshold: '80%' }] } },
    'spec.monitoring.alerts[0].threshold',
  ],
  ['a bad nodeSelector value', 'c', { nodeSelector: { zone: 'a b' } }, 'spec.nodeSelector.zone'],
  ['a bad toleration key', 'c', { tolerations: [{ key: 'a b', operator: 'Exists' }] }, 'spec.tolerations[0].key'],
];

test('every refusal of the hook validator names the field', async (t) => {
  for (const [name, clusterName, spec, field] of REFUSALS) {
    await t.test(name, () => {
      const verdict = validateRedisClusterSpec(clusterName, spec);
      assert.equal(verdict.ok, false, name);
      if (verdict.ok) return;
      assert.ok(
        verdict.problems.some((p) => p.field === field),
        `${name}: expected a problem at ${field}, got ${JSON.stringify(verdict.problems)}`,
      );
    });
  }
});

test('the validator leaves its input untouched and returns a defaulted copy', () => {
  const input = { master: { replicas: 4 } };
  const before = JSON.stringify(input);
  const verdict = validateRedisClusterSpec('c', input);
  assert.ok(verdict.ok);
  assert.equal(JSON.stringify(input), before);
  assert.equal(verdict.spec.master.replicas, 4);
  assert.equal(verdict.spec.sentinel.downAfterMilliseconds, 5000);
});

test('the CRD schema and the hook validator agree on what the schema can judge', async (t) => {
  const crdValidate = new Ajv({ strict: false }).compile(specSchema);
  const cases: Array<[string, Record<string, unknown>]> = [
    ['empty', {}],
    ['article', example()['spec'] as Record<string, unknown>],
    ['two shards', { master: { replicas: 2 } }],
    ['64 shards', { master: { replicas: 64 } }],
    ['no replicas', { replicas: 0 }],
    ['sentinel with 8 replicas', { sentinel: { replicas: 8 } }],
    ['autoscaling minReplicas 0', { autoscaling: { minReplicas: 0 } }],
    ['unknown alert', { monitoring: { alerts: [{ name: 'Everything' }] } }],
    ['bad size', { persistence: { size: 'big' } }],
  ];
  for (const [name, spec] of cases) {
    await t.test(name, () => {
      assert.equal(crdValidate(applyDefaults(specSchema, spec)), validateRedisClusterSpec('c', spec).ok, name);
    });
  }
});
