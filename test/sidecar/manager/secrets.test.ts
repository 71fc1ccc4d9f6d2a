// Loopback octet: 127.0.22.x (the real manager reading a Redis's Secrets when status.secrets says
// they changed, never on a timer: at rest no Secret is read at all, and a rotation published
// there reaches every node). Without status.secrets the Secrets are polled: lifecycle.test.ts's
// rotation test runs that way (its Redis has no status).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addr, startRedis } from '../../support/redis-server.ts';
import { authWorks, Cluster, NS, sleep, until } from './harness.ts';

const N = 22;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

/** What the hook publishes: every Secret of the Redis that exists, with its resourceVersion, by name. */
async function publishVersions(cluster: Cluster, redis: string): Promise<void> {
  const secrets = [`${redis}-auth`, `${redis}-operator`].flatMap((name) => {
    const s = cluster.store.get('secrets', NS, name);
    return s ? [{ name, resourceVersion: String(s.metadata.resourceVersion) }] : [];
  });
  await cluster.store.patch('redises', NS, redis, { status: { secrets } }, { type: 'merge', subresource: 'status' });
}

test('with status.secrets no Secret is read at rest; a rotation published there reaches every node', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  await publishVersions(cluster, 'cache');
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, 11 + i), extra })));
  await cluster.addPods('cache', servers);
  // A polling interval this short would read the Secrets several times a second.
  await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), timing: { secretRefreshMs: 300 } });
  await until('a linked set', () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  });
  const secretReads = (from: number) => cluster.api.requests.slice(from).filter((r) => r.method === 'GET' && r.path.includes('/secrets/')).length;

  const rest = cluster.api.requests.length;
  await sleep(3000);
  assert.equal(secretReads(rest), 0, 'no Secret read in 3 s at rest (ten polls at secretRefreshMs 300)');

  const before = cluster.api.requests.length;
  const NEW = 'rotated-by-version-7f3e';
  await cluster.store.patch('secrets', NS, 'cache-auth', { data: { password: Buffer.from(NEW).toString('base64') } }, { type: 'merge' });
  await publishVersions(cluster, 'cache');
  await until('every node takes the new password', async () => {
    for (const s of servers) if (!(await authWorks(s.ip, NEW))) return false;
    return true;
  });
  const reads = secretReads(before);
  t.diagnostic(`Secret reads for the rotation: ${reads}`);
  assert.ok(reads >= 1, 'the changed version was read');
});
