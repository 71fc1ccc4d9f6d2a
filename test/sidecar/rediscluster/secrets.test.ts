// The real RedisCluster manager on a real kube-apiserver reporting the cluster's Secrets on the
// RedisCluster (annotation redis.example.com/secrets): the hook is sent no Secret, so this report
// is what status.secrets and SecretsReady come from. Names, versions and key names only: no value
// in the annotation, the logs or the Events; an empty password is reported (the condition names
// Secret and key) and told in an Event, never used. No Redis node is needed for any of it.
// Network: 127.0.39.x (only the sidecar's source address is used).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL } from '../../../src/api/rediscluster-names.ts';
import { formatSecretReport, SECRETS_ANNOTATION } from '../../../src/api/secret-report.ts';
import { parseHookRequest, syncRedisCluster as syncCluster } from '../../../src/hook/index.ts';
import { addr, TEST_OPERATOR_PASSWORD, TEST_PASSWORD } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { ClusterEnv, NS } from './harness.ts';

const NAME = 'orders';
const S3_SECRET_KEY = 's3-secret-Hq2x-not-in-any-log';

test('the acting sidecar reports the RedisCluster’s Secrets; the hook reads them; an empty password is refused by Secret and key', async (t) => {
  const env = await ClusterEnv.start(t);
  await env.createSecrets(NAME);
  await env.store.create('secrets', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's3-creds', namespace: NS },
    type: 'Opaque',
    stringData: { AWS_ACCESS_KEY_ID: 'AKIA-not-secret', AWS_SECRET_ACCESS_KEY: S3_SECRET_KEY },
  });
  await env.createCluster(NAME, {
    master: { replicas: 3 },
    replicas: 1,
    backup: {
      schedule: '0 */6 * * *',
      retention: 7,
      storage: { s3: { bucket: 'redis-backups', region: 'us-east-1', credentialsSecret: { name: 's3-creds' } } },
    },
  });
  const sidecar = await env.startInstance({
    id: 'sidecar-a',
    sourceIp: addr(39, 100),
    timing: { secretRefreshMs: 300 },
  });
  const stored = () => env.store.get(CLUSTER_PLURAL, NS, NAME);
  const rv = (name: string) => String(env.store.get('secrets', NS, name)?.metadata.resourceVersion);
  const hook = () => {
    const parsed = parseHookRequest({ controller: {}, parent: stored(), children: {}, related: {} });
    assert.ok(parsed.ok);
    const status = syncCluster(parsed.request).status;
    return { status, ready: status.conditions?.find((c) => c.type === 'SecretsReady') };
  };

  const expected = () =>
    formatSecretReport([
      { name: `${NAME}-auth`, resourceVersion: rv(`${NAME}-auth`), keys: ['password'], unwritable: [] },
      // Monitoring is on by default: the exporter's Secret is named too.
      { name: `${NAME}-exporter`, resourceVersion: rv(`${NAME}-exporter`), keys: ['password'], unwritable: [] },
      { name: `${NAME}-operator`, resourceVersion: rv(`${NAME}-operator`), keys: ['password'], unwritable: [] },
      {
        name: 's3-creds',
        resourceVersion: rv('s3-creds'),
        keys: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'],
        unwritable: [],
      },
    ]);
  await until(
    'the report on the RedisCluster',
    () => stored()?.metadata.annotations?.[SECRETS_ANNOTATION] === expected(),
    15_000,
    { everyMs: 50 },
  );
  assert.equal(hook().ready?.status, 'True');
  assert.deepEqual(
    hook().status.secrets?.map((s) => s.name),
    [`${NAME}-auth`, `${NAME}-exporter`, `${NAME}-operator`, 's3-creds'],
  );

  await env.store.patch('secrets', NS, `${NAME}-auth`, { data: { password: '' } }, { type: 'merge' });
  await until('the empty password reported', () => hook().ready?.reason === 'PasswordUnwritable', 15_000, {
    everyMs: 50,
  });
  assert.equal(
    hook().ready?.message,
    `Secret ${NS}/${NAME}-auth key password is empty or holds a control character; Redis cannot be given it safely`,
  );
  await env.eventsWith(NAME, { PasswordUnwritable: 1 });

  const values = [TEST_PASSWORD, TEST_OPERATOR_PASSWORD, S3_SECRET_KEY];
  const events = JSON.stringify(env.store.list('events', { namespace: NS }));
  for (const [where, text] of [
    ['the annotation', stored()?.metadata.annotations?.[SECRETS_ANNOTATION] ?? ''],
    ['the logs', sidecar.logs.join('\n')],
    ['the Events', events],
    ['the hook status', JSON.stringify(hook().status)],
  ] as const)
    for (const v of values) {
      assert.equal(text.includes(v), false, `a Secret value in ${where}`);
      assert.equal(text.includes(Buffer.from(v).toString('base64')), false, `a Secret value (base64) in ${where}`);
    }
});
