// Loopback octet: 127.0.26.x (the real manager through planned changes: the master's pod is
// deleted (planned switchover, no acknowledged write lost), the auth Secret's password is
// rotated (running nodes are moved to it, replication survives, a pod started later with the new
// password replicates), the Redis resource is deleted (its worker and metrics go away)).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { RedisAdapter } from '../../../src/sidecar/redis/index.ts';
import { addr, startRedis } from '../../support/redis-server.ts';
import { Cluster, missingKeys, NS, redisClient, replicationOf, settle, until, Writer } from './harness.ts';

const N = 26;
const extra = { 'repl-diskless-sync-delay': '0' };

async function threeNodes(t: TestContext, first: number, timing = {}) {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  cluster.createAuthSecret('cache');
  cluster.createRedis('cache');
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, first + i), extra })));
  ['master-0', 'replica-0', 'replica-1'].forEach((n, i) => cluster.addPod('cache', n, servers[i]!.ip));
  const masters = cluster.watchMasters('cache');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), timing });
  await until('a linked set', () => linkedAll(cluster));
  return { cluster, servers, masters, a };
}

function linkedAll(cluster: Cluster): boolean {
  const r = Object.values(cluster.roles('cache'));
  return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
}

async function authWorks(ip: string, password: string): Promise<boolean> {
  const c = redisClient(ip, password);
  try {
    await c.connect();
    return (await c.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    c.disconnect();
  }
}

test('the master pod is being deleted: planned switchover to a linked replica, labels moved, no acknowledged write lost', async (t) => {
  const { cluster, servers, masters } = await threeNodes(t, 1);
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('writes', () => writer.acked.length > 200);
  // A finalizer keeps the deleting pod visible (as graceful termination would for a while).
  cluster.store.patch('pods', NS, 'cache-master-0', { metadata: { finalizers: ['test.example.com/hold'] } }, { type: 'merge' });
  cluster.store.delete('pods', NS, 'cache-master-0');
  const newName = await until('the label moved', () => {
    const m = cluster.masters('cache');
    return m.length === 1 && m[0] !== 'cache-master-0' && m[0];
  });
  const newIp = cluster.pod(newName)!.status!.podIP!;
  await until('writes on the new master', () => writer.ackedAfter(0, newIp));
  const ev = cluster.events('cache').find((e) => e.reason === 'Switchover');
  assert.match(ev?.message ?? '', new RegExp(`^planned switchover from cache-master-0 to ${newName} in \\d+ ms, no write lost`));
  assert.deepEqual(
    cluster.events('cache').filter((e) => e.reason === 'FailoverStarted'),
    [],
  );
  assert.equal((await replicationOf(servers[0]!.ip))['master_host'], newIp, 'the old master follows the new one');
  await writer.stop();
  await settle(newIp, 2);
  for (const s of servers)
    assert.deepEqual(
      await missingKeys(
        s.ip,
        writer.acked.map((x) => x.key),
      ),
      [],
      `${s.ip} holds every acknowledged write`,
    );
  assert.deepEqual(masters.violations, []);
  cluster.store.patch('pods', NS, 'cache-master-0', { metadata: { finalizers: null } }, { type: 'merge' });
});

test("password rotation: running nodes are moved to the Secret's new password, replication survives, a new pod with it replicates", async (t) => {
  const { cluster, servers, masters, a } = await threeNodes(t, 11, { secretRefreshMs: 300 });
  const from = cluster.api.requests.length;
  const NEW = 'rotated-password-1b2c';
  const masterIp = cluster.masterIp('cache')!;
  const old = servers.find((s) => s.ip !== masterIp)!;
  cluster.store.patch('secrets', NS, 'cache-auth', { data: { password: Buffer.from(NEW).toString('base64') } }, { type: 'merge' });
  await until('every node takes the new password', async () => {
    for (const s of servers) if (!(await authWorks(s.ip, NEW))) return false;
    return true;
  });
  for (const s of servers) assert.equal(await authWorks(s.ip, 'test-password-7f3a'), false, `${s.ip} refuses the old password`);
  assert.equal(cluster.events('cache').filter((e) => e.reason === 'PasswordRotated').length, 3);
  // The links survived (no link annotation went down), nobody failed over, and a wrong password
  // was never mistaken for a silent node.
  assert.ok(linkedAll(cluster));
  assert.deepEqual(cluster.podPatches(from), [], 'no label or annotation changed during the rotation');
  assert.deepEqual(
    cluster.events('cache').filter((e) => e.reason === 'FailoverStarted' || e.reason === 'FailoverBlocked'),
    [],
  );
  assert.ok(!a.logs.some((l) => l.includes('silent for')), 'no node looked silent');
  // A replica pod recreated now starts with the new password from the Secret (requirepass and
  // masterauth): it can follow the master, which uses the new password too.
  await old.kill();
  old.cleanup();
  const fresh = await startRedis(t, { ip: addr(N, 21), password: NEW, extra });
  const suffix = cluster.store
    .list('pods', { namespace: NS })
    .find((p) => (p as { status?: { podIP?: string } }).status?.podIP === old.ip)!
    .metadata.name.replace('cache-', '');
  cluster.recreatePod('cache', suffix, fresh.ip);
  await until('the new pod replicates', async () => {
    const c = redisClient(fresh.ip, NEW);
    try {
      await c.connect();
      const info = String(await c.call('INFO', 'replication'));
      return info.includes(`master_host:${masterIp}`) && info.includes('master_link_status:up');
    } catch {
      return false;
    } finally {
      c.disconnect();
    }
  });
  await until('linked', () => linkedAll(cluster));
  assert.deepEqual(masters.violations, []);
});

test('the Redis resource is deleted: its worker stops and its per-pod metrics go away', async (t) => {
  const { cluster, a } = await threeNodes(t, 31);
  assert.match(await a.metrics.registry.metrics(), /redis_operator_pod_up\{namespace="redis-test",redis="cache",pod="cache-master-0"\} 1/);
  cluster.store.delete('redises', NS, 'cache');
  await until('the worker is gone', () => a.manager.worker(NS, 'cache') === undefined);
  await until('metrics forgotten', async () => !/redis="cache"/.test(await a.metrics.registry.metrics()));
});

test('a wrong password is an answer (auth), never a silence, also with a connection name (the manager sets one)', async (t) => {
  const s = await startRedis(t, { ip: addr(N, 41) });
  for (const connectionName of ['redis-operator-sidecar', undefined]) {
    const adapter = new RedisAdapter({ password: 'not-the-password', connectionName });
    t.after(() => adapter.close());
    for (let i = 0; i < 3; i++) {
      const r = await adapter.probe(s.endpoint);
      assert.equal(r.ok ? 'ok' : r.error.kind, 'auth', `probe ${i + 1} with connectionName ${connectionName}`);
    }
  }
});
