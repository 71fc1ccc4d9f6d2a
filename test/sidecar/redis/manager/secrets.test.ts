// Loopback octet: 127.0.22.x. The real manager reporting a Redis's Secrets on the Redis (the
// annotation redis.example.com/secrets), on a real kube-apiserver with real redis-servers: the hook
// is sent no Secret any more, so this report is all it knows of them. Names, versions and key
// names only: no value in the annotation, the logs or the Events; written only when it changes;
// a hand-written annotation is put right; a password that is empty or holds a control character is
// reported (the hook turns it into a condition naming Secret and key) and never given to Redis.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { parseSecretReport, SECRETS_ANNOTATION } from '../../../../src/api/secret-report.ts';
import { parseHookRequest, sync } from '../../../../src/hook/index.ts';
import { replyAs } from '../../../support/redis-keys.ts';
import { addr, startRedis, TEST_OPERATOR_PASSWORD, TEST_PASSWORD } from '../../../support/redis-server.ts';
import { authWorks, Cluster, NS, sleep, until } from './harness.ts';

const N = 22;
Cluster.shareApiServer();

const USER_PASSWORD = 'shop-pw-Zq81-not-in-any-log';
const BAD_USER_PASSWORD = 'shop-pw-\nINJECTED-7f3e';
const BAD_DEFAULT_PASSWORD = 'default-pw-\u0000-NUL-9c2d';

const report = (cluster: Cluster) =>
  cluster.store.get('redises', NS, 'cache')?.metadata.annotations?.[SECRETS_ANNOTATION];
const entry = (cluster: Cluster, name: string) =>
  parseSecretReport(report(cluster))?.get(name) as { unwritable?: string[] } | undefined;
const rv = (cluster: Cluster, name: string) => String(cluster.store.get('secrets', NS, name)?.metadata.resourceVersion);
const asUser = (ip: string, user: string, password: string) =>
  replyAs(
    new Redis({
      host: ip,
      port: 6379,
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    }),
    [user, password],
    ['PING'],
  );

/**
 * The hook's answer for the Redis as stored now (what Metacontroller would send: no Secret among the related objects).
 */
function hookStatus(cluster: Cluster) {
  const parsed = parseHookRequest({
    controller: {},
    parent: cluster.store.get('redises', NS, 'cache'),
    children: {},
    related: {},
  });
  assert.ok(parsed.ok);
  const status = sync(parsed.request).status;
  return { status, secretsReady: status.conditions?.find((c) => c.type === 'SecretsReady') };
}

async function setSecret(cluster: Cluster, name: string, password: string): Promise<void> {
  const data = { password: Buffer.from(password).toString('base64') };
  if (cluster.store.get('secrets', NS, name))
    await cluster.store.patch('secrets', NS, name, { data }, { type: 'merge' });
  else
    await cluster.store.create('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: NS },
      type: 'Opaque',
      data,
    });
}

function assertNoValue(cluster: Cluster, logs: string[], values: string[]): void {
  const places: Array<[string, string]> = [
    ['the annotation', report(cluster) ?? ''],
    ['the logs', logs.join('\n')],
    ['the Events', JSON.stringify(cluster.events('cache'))],
    ['the hook status', JSON.stringify(hookStatus(cluster).status)],
  ];
  for (const [where, text] of places) {
    for (const v of values) {
      assert.equal(text.includes(v), false, `a Secret value in ${where}`);
      assert.equal(text.includes(Buffer.from(v).toString('base64')), false, `a Secret value (base64) in ${where}`);
    }
  }
}

test('the leader reports the Secrets on the Redis: names, versions and key names only, written when they change; the hook reads it', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await setSecret(cluster, 'shop-redis', USER_PASSWORD);
  // No grace period: a password applied would replace the old one on every node at once.
  await cluster.createRedis('cache', {
    passwordGracePeriodSeconds: 0,
    users: [{ name: 'shop', rules: '~shop:* +ping', passwordSecret: { name: 'shop-redis' } }],
  });
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, 11 + i) })));
  await cluster.addPods('cache', servers);
  assert.equal(hookStatus(cluster).secretsReady?.status, 'Unknown', 'before the first report: not checked yet');
  assert.equal(hookStatus(cluster).secretsReady?.reason, 'SecretsNotChecked');
  const sidecar = await cluster.startInstance({
    id: 'sidecar-a',
    sourceIp: addr(N, 250),
    timing: { secretRefreshMs: 300 },
  });

  const expected = () =>
    JSON.stringify(
      ['cache-auth', 'cache-exporter', 'cache-operator', 'shop-redis'].map((name) => ({
        name,
        resourceVersion: rv(cluster, name),
        keys: ['password'],
        unwritable: [],
      })),
    );
  await until('the report on the Redis', () => report(cluster) === expected());
  assert.deepEqual(
    hookStatus(cluster).status.secrets,
    ['cache-auth', 'cache-exporter', 'cache-operator', 'shop-redis'].map((name) => ({
      name,
      resourceVersion: rv(cluster, name),
    })),
  );
  assert.equal(hookStatus(cluster).secretsReady?.status, 'True');
  await until('shop on every node', async () =>
    (await Promise.all(servers.map((s) => asUser(s.ip, 'shop', USER_PASSWORD)))).every((r) => r === 'PONG'),
  );

  // At rest: polled every 300 ms, written never.
  const patches = (from: number) =>
    cluster.api.requests.slice(from).filter((r) => r.method === 'PATCH' && r.path.includes('/redises/cache')).length;
  const rest = cluster.api.requests.length;
  await sleep(1500);
  assert.equal(patches(rest), 0, 'an unchanged report is not written again');

  // A hand-written report (anyone who can edit the Redis can write one) is put right.
  await cluster.store.patch(
    'redises',
    NS,
    'cache',
    { metadata: { annotations: { [SECRETS_ANNOTATION]: '[{"name":"cache-auth","missing":true}]' } } },
    { type: 'merge' },
  );
  await until('the hand-written report replaced', () => report(cluster) === expected());

  // A user's password rotated to one with a newline: reported unwritable, never applied, told by
  // Secret and key; the old password keeps working on every node.
  await setSecret(cluster, 'shop-redis', BAD_USER_PASSWORD);
  await until(
    'the unwritable password reported',
    () => JSON.stringify(entry(cluster, 'shop-redis')?.unwritable) === '["password"]',
  );
  const { secretsReady } = hookStatus(cluster);
  assert.equal(secretsReady?.status, 'False');
  assert.equal(secretsReady?.reason, 'PasswordUnwritable');
  assert.equal(
    secretsReady?.message,
    `Secret ${NS}/shop-redis key password is empty or holds a control character; Redis cannot be given it safely`,
  );
  // Several users passes later (every 300 ms), every node still takes the old password.
  await sleep(1500);
  for (const s of servers)
    assert.equal(
      await asUser(s.ip, 'shop', USER_PASSWORD),
      'PONG',
      'the old password still works: the bad one was not applied',
    );
  await cluster.eventsWhen('cache', 'a PasswordUnwritable Event', (es) =>
    es.some((e) => e.reason === 'PasswordUnwritable' && e.message.includes('shop-redis')),
  );

  // A Secret that goes away is reported missing (not left at its old version).
  await cluster.store.delete('secrets', NS, 'shop-redis');
  await until(
    'reported missing',
    () => JSON.stringify(entry(cluster, 'shop-redis')) === '{"name":"shop-redis","missing":true}',
  );
  assert.equal(hookStatus(cluster).secretsReady?.reason, 'UserSecretMissing');

  assertNoValue(cluster, sidecar.logs, [
    TEST_PASSWORD,
    TEST_OPERATOR_PASSWORD,
    USER_PASSWORD,
    BAD_USER_PASSWORD,
    'INJECTED-7f3e',
  ]);
});

test('a default password holding a NUL is reported and refused: Redis keeps the one it has, the condition names Secret and key', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  // No grace period: a password applied would replace the old one on every node at once.
  await cluster.createRedis('cache', { passwordGracePeriodSeconds: 0 });
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, 21 + i) })));
  await cluster.addPods('cache', servers);
  const sidecar = await cluster.startInstance({
    id: 'sidecar-a',
    sourceIp: addr(N, 251),
    timing: { secretRefreshMs: 300 },
  });
  await until('a linked set', () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  });
  await until('the first report', () => hookStatus(cluster).secretsReady?.status === 'True');

  await setSecret(cluster, 'cache-auth', BAD_DEFAULT_PASSWORD);
  await until('reported unwritable', () => hookStatus(cluster).secretsReady?.reason === 'PasswordUnwritable');
  assert.equal(
    hookStatus(cluster).secretsReady?.message,
    `Secret ${NS}/cache-auth key password is empty or holds a control character; Redis cannot be given it safely`,
  );
  // Several polls and users passes later, every node still takes the password it had.
  await sleep(1500);
  for (const s of servers) assert.ok(await authWorks(s.ip, TEST_PASSWORD), `${s.ip} keeps the password it had`);
  await cluster.eventsWhen('cache', 'a PasswordUnwritable Event', (es) =>
    es.some((e) => e.reason === 'PasswordUnwritable' && e.message.includes('cache-auth')),
  );
  assertNoValue(cluster, sidecar.logs, [TEST_PASSWORD, TEST_OPERATOR_PASSWORD, BAD_DEFAULT_PASSWORD, '-NUL-9c2d']);
});
