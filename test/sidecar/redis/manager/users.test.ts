// Loopback octet: 127.0.29.x. The real manager applying spec.users (src/sidecar/redis/manager/users.ts)
// to real redis-servers: a user added is on every node with its Secret's password and its rules,
// a changed rule or password reaches every node (the old password working until its grace period
// ends), a restarted node gets the users as it joins, a removed user is deleted everywhere, and a
// user made by hand (never managed) is left alone.
// The Kubernetes side is a real kube-apiserver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { MANAGED_USERS_ANNOTATION, PASSWORD_GRACE_ANNOTATION } from '../../../../src/api/labels.ts';
import { replyAs } from '../../../support/redis-keys.ts';
import { addr, startRedis, type RedisServer } from '../../../support/redis-server.ts';
import { Cluster, NS, redisCall, until } from './harness.ts';

const N = 29;
Cluster.shareApiServer();

/** What `user` may do on the node at ip, logged in with `password`: PING, GET, SET, or the error word. */
const as = (ip: string, user: string, password: string, ...command: string[]) =>
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
    command,
  );

const everyNode = async (servers: RedisServer[], check: (ip: string) => Promise<boolean>) =>
  (await Promise.all(servers.map((s) => check(s.ip)))).every(Boolean);

async function secret(cluster: Cluster, name: string, password: string): Promise<void> {
  if (cluster.store.get('secrets', NS, name))
    await cluster.store.patch('secrets', NS, name, { stringData: { password } }, { type: 'merge' });
  else
    await cluster.store.create('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: NS },
      type: 'Opaque',
      stringData: { password },
    });
}

async function setUsers(cluster: Cluster, users: unknown[] | null): Promise<void> {
  await cluster.store.patch('redises', NS, 'cache', { spec: { users } }, { type: 'merge' });
}

test('spec.users: on every node, changed everywhere, on a restarted node as it joins, removed everywhere; hand-made users left alone', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await secret(cluster, 'shop-redis', 'shop-pw-1');
  await cluster.createRedis('cache', {
    passwordGracePeriodSeconds: 3,
    users: [{ name: 'shop', rules: '~shop:* +get +set +ping', passwordSecret: { name: 'shop-redis' } }],
  });
  const servers = await Promise.all([1, 2, 3].map((i) => startRedis(t, { ip: addr(N, i) })));
  await cluster.addPods('cache', servers);
  // A user an administrator made by hand: not in spec.users, never managed, never touched.
  for (const s of servers)
    assert.equal(await redisCall(s.ip, 'ACL', 'SETUSER', 'admin', 'on', '>admin-pw', '+@all', '~*'), 'OK');
  await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250) });

  // 1. Added: every node lets shop in with its Secret's password, within its rules only.
  await until('shop on every node', () =>
    everyNode(servers, async (ip) => (await as(ip, 'shop', 'shop-pw-1', 'PING')) === 'PONG'),
  );
  assert.equal(
    await as(servers[0]!.ip, 'shop', 'shop-pw-1', 'GET', 'other:key'),
    'NOPERM',
    'keys outside ~shop:* are refused',
  );
  assert.equal(
    await as(servers[0]!.ip, 'shop', 'shop-pw-1', 'FLUSHALL'),
    'NOPERM',
    'commands outside its rules are refused',
  );
  assert.equal(await as(servers[0]!.ip, 'shop', 'wrong', 'PING'), 'WRONGPASS');
  assert.equal(
    cluster.store.get('redises', NS, 'cache')?.metadata.annotations?.[MANAGED_USERS_ANNOTATION],
    'shop',
    'recorded as managed',
  );

  // 2. Changed: a new password and a new rule reach every node; for the grace period (3 s here)
  // the old password works too, then it stops working.
  await secret(cluster, 'shop-redis', 'shop-pw-2');
  await setUsers(cluster, [{ name: 'shop', rules: '~shop:* +get +ping', passwordSecret: { name: 'shop-redis' } }]);
  await until('shop-pw-2 and no SET on every node', () =>
    everyNode(
      servers,
      async (ip) =>
        (await as(ip, 'shop', 'shop-pw-2', 'PING')) === 'PONG' &&
        (await as(ip, 'shop', 'shop-pw-2', 'SET', 'shop:1', 'x')) === 'NOPERM',
    ),
  );
  assert.ok(
    await everyNode(servers, async (ip) => (await as(ip, 'shop', 'shop-pw-1', 'PING')) === 'PONG'),
    'the old password still works during the grace period',
  );
  assert.match(
    cluster.store.get('redises', NS, 'cache')?.metadata.annotations?.[PASSWORD_GRACE_ANNOTATION] ?? '',
    /^\{"shop":"[^"]+"\}$/,
    'the grace period is recorded',
  );
  await until('shop-pw-1 refused on every node after the grace period', () =>
    everyNode(
      servers,
      async (ip) =>
        (await as(ip, 'shop', 'shop-pw-1', 'PING')) === 'WRONGPASS' &&
        (await as(ip, 'shop', 'shop-pw-2', 'PING')) === 'PONG',
    ),
  );
  await until(
    'the grace record cleared',
    () => cluster.store.get('redises', NS, 'cache')?.metadata.annotations?.[PASSWORD_GRACE_ANNOTATION] === undefined,
  );
  await until('told in Events', () =>
    ['PasswordGraceStarted', 'PasswordGraceEnded'].every((r) => cluster.events('cache').some((e) => e.reason === r)),
  );

  // 3. A restarted node starts without any user: it gets them as it joins.
  await servers[2]!.restart();
  await until(
    'shop on the restarted node',
    async () => (await as(servers[2]!.ip, 'shop', 'shop-pw-2', 'PING')) === 'PONG',
  );

  // 4. Removed: gone from every node; the hand-made user is still there.
  await setUsers(cluster, null);
  await until('shop gone from every node', () =>
    everyNode(servers, async (ip) => (await as(ip, 'shop', 'shop-pw-2', 'PING')) === 'WRONGPASS'),
  );
  await until(
    'no longer recorded as managed',
    () => cluster.store.get('redises', NS, 'cache')?.metadata.annotations?.[MANAGED_USERS_ANNOTATION] === undefined,
  );
  for (const s of servers.slice(0, 2))
    assert.equal(await as(s.ip, 'admin', 'admin-pw', 'PING'), 'PONG', 'a user never managed is left alone');
});
