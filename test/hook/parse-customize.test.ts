// parseHookRequest / parseCustomizeRequest (structure only) and the customize hook's rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupSelectorLabels } from '../../src/api/backup.ts';
import { podSelectorLabels } from '../../src/api/labels.ts';
import { customize, parseCustomizeRequest, parseHookRequest } from '../../src/hook/index.ts';
import { designSpec, redis, type Json } from './helpers.ts';

const child = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default' } };

const rejected: Array<[string, unknown, RegExp]> = [
  ['null', null, /JSON object/],
  ['an array', [], /JSON object/],
  ['a string', 'sync', /JSON object/],
  ['no parent', { children: {} }, /^parent must be an object/],
  ['parent without metadata', { parent: { spec: {} } }, /parent\.metadata must be an object/],
  ['parent without name', { parent: { metadata: { namespace: 'default' } } }, /parent\.metadata\.name/],
  ['parent with empty namespace', { parent: { metadata: { name: 'a', namespace: '' } } }, /parent\.metadata\.namespace/],
  ['numeric uid', { parent: { metadata: { name: 'a', namespace: 'b', uid: 5 } } }, /uid/],
  ['empty uid (children could not match controller-uid)', { parent: { metadata: { name: 'a', namespace: 'b', uid: '' } } }, /uid/],
  ['children is a list', { parent: redis(), children: [] }, /^children must be an object/],
  ['children group is null', { parent: redis(), children: { 'Service.v1': null } }, /children\["Service\.v1"\] must be an object/],
  ['child is a string', { parent: redis(), children: { 'Service.v1': { a: 'x' } } }, /children\["Service\.v1"\]\["a"\] must be an object/],
  ['child without kind', { parent: redis(), children: { 'Service.v1': { a: { apiVersion: 'v1', metadata: { name: 'a' } } } } }, /apiVersion and kind/],
  ['child without name', { parent: redis(), children: { 'Service.v1': { a: { apiVersion: 'v1', kind: 'Service', metadata: {} } } } }, /metadata\.name/],
  [
    'related child with numeric namespace',
    { parent: redis(), related: { 'Pod.v1': { a: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', namespace: 1 } } } } },
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
  ['a full request', { controller: {}, parent: redis(designSpec()), children: { 'ConfigMap.v1': { 'default/x': child } }, related: {}, finalizing: true }],
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

test("customize asks for the pods and PVCs by the pod selector labels and the generated auth and operator Secrets by name, each in the parent's namespace", () => {
  const selector = { matchLabels: podSelectorLabels('my-redis') };
  const backups = { matchLabels: backupSelectorLabels('my-redis') };
  assert.deepEqual(rules(designSpec()), [
    { apiVersion: 'v1', resource: 'pods', namespace: 'default', labelSelector: selector },
    { apiVersion: 'v1', resource: 'secrets', namespace: 'default', names: ['my-redis-auth', 'my-redis-operator'] },
    { apiVersion: 'v1', resource: 'persistentvolumeclaims', namespace: 'default', labelSelector: selector },
    { apiVersion: 'batch/v1', resource: 'jobs', namespace: 'default', labelSelector: backups },
    { apiVersion: 'v1', resource: 'pods', namespace: 'default', labelSelector: backups },
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
});

test("customize asks for the application users' password Secrets (each once), so a rotation resyncs the Redis", () => {
  const users = [
    { name: 'app', rules: '+@read', passwordSecret: { name: 'app-pw', key: 'password' } },
    { name: 'ops', rules: '+@all', passwordSecret: { name: 'app-pw', key: 'ops' } },
    { name: 'batch', rules: '+@write', passwordSecret: { name: 'batch-pw' } },
  ];
  assert.deepEqual(rules({ ...designSpec(), users })[1]?.names, ['my-redis-auth', 'my-redis-operator', 'app-pw', 'batch-pw']);
  // A malformed users list (the validator refuses it) names nothing extra.
  assert.deepEqual(rules({ ...designSpec(), users: [{ name: 'x', passwordSecret: { name: 5 } }, 'junk'] })[1]?.names, ['my-redis-auth', 'my-redis-operator']);
});

test('customize follows spec.auth.secretName, and falls back to the generated Secret on any bad spec', async (t) => {
  assert.deepEqual(rules({ ...designSpec(), auth: { secretName: 'corp-redis' } })[1]?.names, ['corp-redis', 'my-redis-operator']);
  for (const bad of [undefined, 'x', { auth: 'x' }, { auth: { secretName: 5 } }, { auth: { secretName: '' } }]) {
    await t.test(`falls back on ${String(JSON.stringify(bad))}`, () => {
      assert.deepEqual(rules(bad)[1]?.names, ['my-redis-auth', 'my-redis-operator']);
    });
  }
  for (const rule of rules(designSpec())) assert.equal('names' in rule && 'labelSelector' in rule, false);
});

test('customize also asks for the TLS Secret when spec.tls is set (given, or the one cert-manager writes)', () => {
  assert.deepEqual(rules({ ...designSpec(), tls: { secretName: 'corp-tls' } })[1]?.names, ['my-redis-auth', 'my-redis-operator', 'corp-tls']);
  assert.deepEqual(rules({ ...designSpec(), tls: { certManager: { issuerRef: { name: 'ca' } } } })[1]?.names, [
    'my-redis-auth',
    'my-redis-operator',
    'my-redis-tls',
  ]);
});
