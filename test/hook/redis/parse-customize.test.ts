// parseHookRequest / parseCustomizeRequest (structure only) and the customize hook's rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupSelectorLabels } from '../../../src/api/backup.ts';
import { podSelectorLabels } from '../../../src/api/labels.ts';
import { rivalNames } from '../../../src/api/name-conflict.ts';
import { customize, customizeRedisCluster, parseCustomizeRequest, parseHookRequest } from '../../../src/hook/index.ts';
import { designSpec, redis, type Json } from '../common/helpers.ts';

const child = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default' } };

const rejected: Array<[string, unknown, RegExp]> = [
  ['null', null, /JSON object/],
  ['an array', [], /JSON object/],
  ['a string', 'sync', /JSON object/],
  ['no parent', { children: {} }, /^parent must be an object/],
  ['parent without metadata', { parent: { spec: {} } }, /parent\.metadata must be an object/],
  ['parent without name', { parent: { metadata: { namespace: 'default' } } }, /parent\.metadata\.name/],
  [
    'parent with empty namespace',
    { parent: { metadata: { name: 'a', namespace: '' } } },
    /parent\.metadata\.namespace/,
  ],
  ['numeric uid', { parent: { metadata: { name: 'a', namespace: 'b', uid: 5 } } }, /uid/],
  [
    'empty uid (children could not match controller-uid)',
    { parent: { metadata: { name: 'a', namespace: 'b', uid: '' } } },
    /uid/,
  ],
  ['children is a list', { parent: redis(), children: [] }, /^children must be an object/],
  [
    'children group is null',
    { parent: redis(), children: { 'Service.v1': null } },
    /children\["Service\.v1"\] must be an object/,
  ],
  [
    'child is a string',
    { parent: redis(), children: { 'Service.v1': { a: 'x' } } },
    /children\["Service\.v1"\]\["a"\] must be an object/,
  ],
  [
    'child without kind',
    { parent: redis(), children: { 'Service.v1': { a: { apiVersion: 'v1', metadata: { name: 'a' } } } } },
    /apiVersion and kind/,
  ],
  [
    'child without name',
    { parent: redis(), children: { 'Service.v1': { a: { apiVersion: 'v1', kind: 'Service', metadata: {} } } } },
    /metadata\.name/,
  ],
  [
    'related child with numeric namespace',
    {
      parent: redis(),
      related: { 'Pod.v1': { a: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', namespace: 1 } } } },
    },
    /^related.*namespace/,
  ],
  ['finalizing is a string', { parent: redis(), finalizing: 'yes' }, /finalizing must be a boolean/],
];
for (const [label, body, message] of rejected) {
  test(`parseHookRequest rejects ${label}`, () => {
    const result = parseHookRequest(body);
    assert.equal(result.ok, false);
    if (!result.ok) assert.match(result.message, message);
  });
}

const accepted: Array<[string, Json]> = [
  ['a minimal request', { parent: { metadata: { name: 'a', namespace: 'b' } } }],
  ['null children and related', { parent: redis(), children: null, related: null }],
  ['any spec at all (validated later)', { parent: { ...redis(), spec: 'nonsense' } }],
  [
    'a full request',
    {
      controller: {},
      parent: redis(designSpec()),
      children: { 'ConfigMap.v1': { 'default/x': child } },
      related: {},
      finalizing: true,
    },
  ],
];
for (const [label, body] of accepted) {
  test(`parseHookRequest accepts ${label}`, () => {
    const result = parseHookRequest(body);
    assert.ok(result.ok);
    if (result.ok) {
      assert.equal(result.request.parent, body['parent']);
      assert.equal(typeof result.request.finalizing, 'boolean');
      assert.ok(typeof result.request.children === 'object' && result.request.children !== null);
      assert.ok(typeof result.request.related === 'object' && result.request.related !== null);
    }
  });
}

test('parseCustomizeRequest checks the parent only', () => {
  assert.equal(parseCustomizeRequest({}).ok, false);
  assert.equal(parseCustomizeRequest([]).ok, false);
  assert.ok(parseCustomizeRequest({ controller: {}, parent: redis() }).ok);
});

function rules(spec: unknown) {
  const parsed = parseCustomizeRequest({ controller: {}, parent: { ...redis(), spec } });
  assert.ok(parsed.ok);
  return parsed.ok ? customize(parsed.request).relatedResources : [];
}

test("customize asks for the pods and PVCs by the pod selector labels, each in the parent's namespace, and for no Secret", () => {
  const selector = { matchLabels: podSelectorLabels('my-redis') };
  const backups = { matchLabels: backupSelectorLabels('my-redis') };
  assert.deepEqual(rules(designSpec()), [
    { apiVersion: 'v1', resource: 'pods', namespace: 'default', labelSelector: selector },
    { apiVersion: 'v1', resource: 'persistentvolumeclaims', namespace: 'default', labelSelector: selector },
    { apiVersion: 'batch/v1', resource: 'jobs', namespace: 'default', labelSelector: backups },
    { apiVersion: 'v1', resource: 'pods', namespace: 'default', labelSelector: backups },
    // RedisClusters that could take its children's names (common/name-conflict.ts).
    {
      apiVersion: 'redis.example.com/v1',
      resource: 'redisclusters',
      namespace: 'default',
      names: rivalNames('Redis', 'my-redis'),
    },
  ]);
});

test('customize asks for the RedisBackup spec.restore names, in the parent namespace, and for nothing more on a bad restore', () => {
  assert.deepEqual(rules({ ...designSpec(), restore: { backup: 'nightly' } }).at(-1), {
    apiVersion: 'redis.example.com/v1',
    resource: 'redisbackups',
    namespace: 'default',
    names: ['nightly'],
  });
  assert.equal(rules({ ...designSpec(), restore: { backup: 5 } }).length, 5);
  assert.equal(rules({ ...designSpec(), restore: { location: 's3://b/k.rdb' } }).length, 5);
  for (const rule of rules(designSpec())) assert.equal('names' in rule && 'labelSelector' in rule, false);
});

// Metacontroller posts every related object to the hook, over plain HTTP, on every sync: a
// Secret asked for here would put passwords, S3 keys and tls.key on the wire. Whatever names a
// spec gives (auth, users, TLS, S3 credentials), no rule asks for Secrets, for Redis or RedisCluster.
test('customize (Redis and RedisCluster) asks for no Secret, whichever Secrets the spec names', () => {
  const specs: unknown[] = [
    designSpec(),
    { ...designSpec(), auth: { secretName: 'corp-redis' } },
    { ...designSpec(), users: [{ name: 'app', rules: '+@read', passwordSecret: { name: 'app-pw', key: 'password' } }] },
    { ...designSpec(), tls: { secretName: 'corp-tls' } },
    { ...designSpec(), tls: { certManager: { issuerRef: { name: 'ca' } } } },
    {
      ...designSpec(),
      backup: {
        schedule: '0 * * * *',
        storage: { s3: { bucket: 'b', region: 'r', credentialsSecret: { name: 's3-creds' } } },
      },
    },
    undefined,
    'junk',
  ];
  for (const spec of specs) {
    const parent = { ...redis(), spec };
    const answers = [
      customize({ controller: {}, parent } as never),
      customizeRedisCluster({ controller: {}, parent: { ...parent, kind: 'RedisCluster' } } as never),
    ];
    for (const answer of answers) {
      const text = JSON.stringify(answer);
      assert.equal(
        answer.relatedResources.some((r) => r.resource === 'secrets' || r.resource.startsWith('secret')),
        false,
        `a Secret rule for ${JSON.stringify(spec)}: ${text}`,
      );
      assert.doesNotMatch(text, /"secrets"/);
    }
  }
});
