// The hook's view of the Secrets, from the sidecar's report on the parent (hook/common/secret-status.ts,
// api/secret-report.ts): status.secrets and the SecretsReady condition, for Redis and
// RedisCluster; a hostile or broken annotation reads as "not checked yet", never as a fact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  formatSecretReport,
  MAX_REPORT_CHARS,
  parseSecretReport,
  passwordWritable,
  SECRETS_ANNOTATION,
  type ReportedSecret,
} from '../../../src/api/secret-report.ts';
import { sync, syncRedisCluster } from '../../../src/hook/index.ts';
import { secretsView } from '../../../src/hook/common/secret-status.ts';
import { redisSecretUses, secretNeeds } from '../../../src/api/secret-report.ts';
import { validateSpec } from '../../../src/api/validate.ts';
import {
  articleSpec,
  redisCluster,
  healthyRedisClusterPods,
  request as redisClusterRequest,
} from '../rediscluster/helpers.ts';
import { condition, designSpec, get, healthyPods, pod, redis, request, type Json } from './helpers.ts';

const found = (name: string, keys = ['password'], unwritable: string[] = [], rv = '1'): ReportedSecret => ({
  name,
  resourceVersion: rv,
  keys,
  unwritable,
});
// The design's Redis runs the exporter, so its Secret is named too.
const GOOD = formatSecretReport([found('my-redis-auth'), found('my-redis-operator'), found('my-redis-exporter')]);
const withAnnotation = (value: unknown, spec: Json = designSpec()) =>
  redis(spec, { metadata: { annotations: { [SECRETS_ANNOTATION]: value } } });

function secretsOf(parent: Json, related = healthyPods()) {
  const { status } = sync(request({ parent, related }));
  return { status, cond: condition(status, 'SecretsReady') };
}

test('the report maps to status.secrets and SecretsReady', async (t) => {
  const users = [{ name: 'app', rules: '+@read', passwordSecret: { name: 'app-pw', key: 'password' } }];
  const s3 = {
    schedule: '0 */6 * * *',
    retention: 7,
    storage: { s3: { bucket: 'redis-backups', region: 'us-east-1', credentialsSecret: { name: 's3-creds' } } },
  };
  const table: Array<[string, unknown, Json, string, string, RegExp]> = [
    ['every Secret found', GOOD, designSpec(), 'True', 'SecretsFound', /3 Secret\(s\) found/],
    [
      'no report yet: not checked, never "missing"',
      undefined,
      designSpec(),
      'Unknown',
      'SecretsNotChecked',
      /not there yet/,
    ],
    [
      'a Secret the report does not cover yet (the spec just named it)',
      formatSecretReport([found('my-redis-auth')]),
      designSpec(),
      'Unknown',
      'SecretsNotChecked',
      /my-redis-operator.* not checked yet/,
    ],
    [
      'a missing password Secret',
      formatSecretReport([{ name: 'my-redis-auth', missing: true }, found('my-redis-operator')]),
      designSpec(),
      'False',
      'AuthSecretMissing',
      /Secret my-redis-auth not found/,
    ],
    [
      'an unwritable default password: names the Secret and key',
      formatSecretReport([found('my-redis-auth', ['password'], ['password']), found('my-redis-operator')]),
      designSpec(),
      'False',
      'PasswordUnwritable',
      /^Secret default\/my-redis-auth key password is empty or holds a control character; Redis cannot be given it safely$/,
    ],
    [
      "an unwritable user's password",
      formatSecretReport([
        found('my-redis-auth'),
        found('my-redis-operator'),
        found('app-pw', ['password'], ['password']),
      ]),
      { ...designSpec(), users },
      'False',
      'PasswordUnwritable',
      /Secret default\/app-pw key password/,
    ],
    [
      "a user's Secret missing",
      formatSecretReport([found('my-redis-auth'), found('my-redis-operator'), { name: 'app-pw', missing: true }]),
      { ...designSpec(), users },
      'False',
      'UserSecretMissing',
      /app-pw not found \(spec\.users\[0\]\.passwordSecret\); user app is left as it is/,
    ],
    [
      'the S3 credentials without a key',
      formatSecretReport([
        found('my-redis-auth'),
        found('my-redis-operator'),
        found('s3-creds', ['AWS_ACCESS_KEY_ID']),
      ]),
      { ...designSpec(), backup: s3 },
      'False',
      'S3SecretMissing',
      /s3-creds has no key AWS_SECRET_ACCESS_KEY/,
    ],
  ];
  for (const [name, value, spec, status, reason, message] of table) {
    await t.test(name, () => {
      const { cond } = secretsOf(value === undefined ? redis(spec) : withAnnotation(value, spec));
      assert.equal(get(cond, 'status'), status);
      assert.equal(get(cond, 'reason'), reason);
      assert.match(String(get(cond, 'message')), message);
    });
  }
});

test('an unwritable password keeps a pod-less Redis Ready=False with reason PasswordUnwritable; the message names Secret and key only', () => {
  const notReady = [pod({ name: 'my-redis-master-0', ready: false, phase: 'Pending' })];
  const { status } = secretsOf(
    withAnnotation(
      formatSecretReport([found('my-redis-auth', ['password'], ['password']), found('my-redis-operator')]),
    ),
    notReady,
  );
  assert.equal(get(condition(status, 'Ready'), 'reason'), 'PasswordUnwritable');
  assert.match(String(get(condition(status, 'Ready'), 'message')), /my-redis-auth key password/);
});

test('a hostile or broken annotation is "not checked yet": no status.secrets, no claim, no throw', async (t) => {
  const entry = { name: 'my-redis-auth', resourceVersion: '1', keys: ['password'], unwritable: [] };
  const operator = { name: 'my-redis-operator', resourceVersion: '1', keys: ['password'], unwritable: [] };
  const table: Array<[string, unknown]> = [
    ['not JSON', '[{'],
    ['JSON, not a list', '{"name":"my-redis-auth"}'],
    ['a number instead of the string', 42],
    ['too long', JSON.stringify([entry, operator, { name: 'x', missing: true, pad: 'a'.repeat(MAX_REPORT_CHARS) }])],
    ['longer than allowed, even if well formed', GOOD + ' '.repeat(MAX_REPORT_CHARS)],
    [
      'a name with characters no Secret has',
      JSON.stringify([{ ...entry, name: 'my-redis-auth\nPasswordUnwritable' }, operator]),
    ],
    ['a key with a space', JSON.stringify([{ ...entry, keys: ['pass word'] }, operator])],
    ['keys not a list', JSON.stringify([{ ...entry, keys: 'password' }, operator])],
    ['resourceVersion a number', JSON.stringify([{ ...entry, resourceVersion: 7 }, operator])],
    ['an extra field', JSON.stringify([{ ...entry, value: 'hunter2' }, operator])],
    ['missing: false', JSON.stringify([{ name: 'my-redis-auth', missing: false }, operator])],
    [
      'a __proto__ field',
      '[{"name":"my-redis-auth","resourceVersion":"1","keys":["password"],"unwritable":[],"__proto__":{"x":1}}]',
    ],
    ['the same Secret twice', JSON.stringify([entry, entry, operator])],
    ['an unwritable key the Secret does not have', JSON.stringify([{ ...entry, unwritable: ['other'] }, operator])],
    ['too many entries', JSON.stringify(Array.from({ length: 65 }, (_, i) => ({ name: `s${i}`, missing: true })))],
  ];
  for (const [name, value] of table) {
    await t.test(name, () => {
      const { status, cond } = secretsOf(withAnnotation(value));
      assert.equal(get(status, 'secrets'), undefined);
      assert.equal(get(cond, 'status'), 'Unknown');
      assert.equal(get(cond, 'reason'), 'SecretsNotChecked');
      assert.match(String(get(cond, 'message')), /unreadable/);
    });
  }
});

test('property: any annotation value is either exactly a report or unknown, and the hook never throws on it', () => {
  const verdict = validateSpec('my-redis', designSpec());
  assert.ok(verdict.ok);
  const uses = redisSecretUses('my-redis', verdict.spec);
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.json(), fc.jsonValue()), (value) => {
      const view = secretsView('default', uses, { [SECRETS_ANNOTATION]: value });
      const parsed = parseSecretReport(value);
      if (parsed === undefined) assert.equal(view.condition.reason, 'SecretsNotChecked');
      else
        assert.equal(
          formatSecretReport([...parsed.values()]),
          formatSecretReport(JSON.parse(value as string) as ReportedSecret[]),
        );
      sync(request({ parent: withAnnotation(value), related: healthyPods() }));
    }),
    { numRuns: 300 },
  );
});

test('RedisCluster: status.secrets and SecretsReady from the report; not checked before it', () => {
  const pods = healthyRedisClusterPods();
  const parent = (annotations?: Record<string, string>) =>
    redisCluster(articleSpec(), annotations ? { annotations } : {});
  const before = syncRedisCluster(redisClusterRequest({ parent: parent(), related: pods })).status;
  assert.equal(before.secrets, undefined);
  assert.equal(condition(before as unknown as Json, 'SecretsReady')?.['status'], 'Unknown');
  const spec = articleSpec() as { auth?: { secretName?: string } };
  const auth = spec.auth?.secretName ?? 'order-cache-auth';
  const report = formatSecretReport([
    found(auth, ['password'], ['password'], '5'),
    found('order-cache-operator', ['password'], [], '6'),
  ]);
  const after = syncRedisCluster(
    redisClusterRequest({ parent: parent({ [SECRETS_ANNOTATION]: report }), related: pods }),
  ).status;
  assert.deepEqual(
    after.secrets,
    [
      { name: auth, resourceVersion: '5' },
      { name: 'order-cache-operator', resourceVersion: '6' },
    ].sort((a, b) => (a.name < b.name ? -1 : 1)),
  );
  const cond = condition(after as unknown as Json, 'SecretsReady');
  assert.equal(cond?.['reason'], 'PasswordUnwritable');
  assert.match(String(cond?.['message']), new RegExp(`Secret default/${auth} key password`));
});

test('passwordWritable: non-empty, no control character (U+0000-U+001F, U+007F)', async (t) => {
  const table: Array<[string, boolean]> = [
    ['s3cret', true],
    ['with space and ünïcode', true],
    ['', false],
    ['a\nb', false],
    ['a\rb', false],
    ['a\u0000b', false],
    ['tab\t', false],
    ['\u001f', false],
    ['del\u007f', false],
    ['\u0080 is not C0', true],
  ];
  for (const [value, ok] of table) await t.test(JSON.stringify(value), () => assert.equal(passwordWritable(value), ok));
});

test('the largest report a valid spec can ask for is read (32 users, long names and keys, one Secret shared by all)', () => {
  const long = (i: number) => `${String(i).padStart(2, '0')}${'a'.repeat(251)}`;
  const key = (i: number) => `k${String(i).padStart(2, '0')}${'K'.repeat(250)}`;
  for (const shared of [false, true]) {
    const users = Array.from({ length: 32 }, (_, i) => ({
      name: `u${i}`,
      rules: '+ping',
      passwordSecret: { name: shared ? long(0) : long(i), key: key(i) },
    }));
    const verdict = validateSpec('my-redis', { ...designSpec(), users, tls: { secretName: long(99) } });
    assert.ok(verdict.ok, JSON.stringify(!verdict.ok && verdict.problems));
    const needs = secretNeeds(redisSecretUses('my-redis', verdict.spec));
    const value = formatSecretReport(
      needs.map((n) => ({ name: n.name, resourceVersion: '123456789', keys: n.keys, unwritable: n.passwordKeys })),
    );
    assert.ok(value.length <= MAX_REPORT_CHARS, `${value.length} chars`);
    assert.ok(parseSecretReport(value), `shared=${shared}: the hook reads it`);
    assert.equal(
      secretsView('default', redisSecretUses('my-redis', verdict.spec), { [SECRETS_ANNOTATION]: value }).condition
        .reason,
      'PasswordUnwritable',
    );
  }
});
