// Loopback octet: 127.0.153.x. The real manager and real redis-server nodes started without the
// exporter's user (by an earlier version, or before its Secret existed): the leader creates the
// <name>-exporter Secret and gives every node the read-only user with its password, which then
// reads INFO but no key and no config. With the exporter off, no node gets it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addr, startRedis } from '../../../support/redis-server.ts';
import { authWorks, Cluster, NS, redisClient, until } from './harness.ts';

const N = 153;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

const passwordOf = (secret: unknown) =>
  Buffer.from(String((secret as { data?: Record<string, string> }).data?.['password']), 'base64').toString();

test("nodes without the exporter's user get it from the leader, with the generated Secret's password and read-only rules", async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, 11 + i), extra })));
  await cluster.addPods('cache', servers);
  await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250) });
  const secret = await until('the generated exporter Secret', () => cluster.store.get('secrets', NS, 'cache-exporter'));
  const password = passwordOf(secret);
  assert.match(password, /^[0-9a-f]{64}$/);
  await until('every node has the user', async () => {
    for (const s of servers) if (!(await authWorks(s.ip, password, 'redis-exporter'))) return false;
    return true;
  });
  for (const s of servers) {
    const c = redisClient(s.ip, password, 1500, 'redis-exporter');
    try {
      await c.connect();
      assert.match(String(await c.call('INFO', 'replication')), /role:/);
      for (const args of [
        ['GET', 'k'],
        ['CONFIG', 'GET', 'masterauth'],
        ['SCAN', '0'],
        ['SET', 'k', 'v'],
      ]) {
        await assert.rejects(c.call(args[0]!, ...args.slice(1)), /NOPERM/, `${s.ip}: ${args.join(' ')}`);
      }
    } finally {
      c.disconnect();
    }
  }
});

test('with the exporter off the Secret is still made (turning it on waits for nothing), but no node gets the user', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache', { replicas: 1, monitoring: { exporter: { enabled: false } } });
  const servers = await Promise.all([0, 1].map((i) => startRedis(t, { ip: addr(N, 21 + i), extra })));
  await cluster.addPods('cache', servers);
  await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 251) });
  await until('the generated exporter Secret', () => cluster.store.get('secrets', NS, 'cache-exporter'));
  await until(
    'a linked pair',
    async () =>
      Object.values(cluster.roles('cache')).filter((r) => r.endsWith('/up')).length === 2 &&
      cluster.masters('cache').length === 1,
  );
  for (const s of servers) {
    const c = redisClient(s.ip);
    try {
      await c.connect();
      assert.equal(await c.call('ACL', 'GETUSER', 'redis-exporter'), null, s.ip);
    } finally {
      c.disconnect();
    }
  }
});
