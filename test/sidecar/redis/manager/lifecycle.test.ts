// Loopback octet: 127.0.26.x (the real manager through planned changes: the master's pod is
// deleted (planned switchover, no acknowledged write lost), the auth Secret's password is
// rotated under writes (both passwords work for the grace period, then only the new one; links
// never break), nodes of an earlier version get the operator's user, the Redis resource is
// deleted (its worker and metrics go away)).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { RedisAdapter } from '../../../../src/sidecar/adapters/redis/index.ts';
import { addr, startRedis, TEST_PASSWORD } from '../../../support/redis-server.ts';
import { authWorks, Cluster, missingKeys, NS, redisClient, replicationOf, settle, until, Writer } from './harness.ts';

const N = 26;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

async function threeNodes(t: TestContext, first: number, timing = {}) {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, first + i), extra })));
  await cluster.addPods('cache', servers);
  const masters = cluster.watchMasters('cache');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), timing });
  await until('a linked set', () => linkedAll(cluster));
  return { cluster, servers, masters, a };
}

function linkedAll(cluster: Cluster): boolean {
  const r = Object.values(cluster.roles('cache'));
  return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
}

test('the master pod is being deleted: planned switchover to a linked replica, labels moved, no acknowledged write lost', async (t) => {
  const { cluster, servers, masters } = await threeNodes(t, 1);
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('writes', () => writer.acked.length > 200);
  // A finalizer keeps the deleting pod visible, as graceful termination would for a while (no
  // kubelet runs here: an unscheduled pod is removed at once).
  await cluster.store.patch(
    'pods',
    NS,
    'cache-master-0',
    { metadata: { finalizers: ['test.example.com/hold'] } },
    { type: 'merge' },
  );
  await cluster.store.delete('pods', NS, 'cache-master-0');
  const newName = await until('the label moved', () => {
    const m = cluster.masters('cache');
    return m.length === 1 && m[0] !== 'cache-master-0' && m[0];
  });
  const newIp = cluster.pod(newName)!.status!.podIP!;
  await until('writes on the new master', () => writer.ackedAfter(0, newIp));
  const ev = (
    await cluster.eventsWhen('cache', 'the switchover told', (e) => e.some((x) => x.reason === 'Switchover'))
  ).find((e) => e.reason === 'Switchover');
  assert.match(
    ev?.message ?? '',
    new RegExp(`^planned switchover from cache-master-0 to ${newName} in \\d+ ms, no write lost`),
  );
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
  await cluster.store.patch('pods', NS, 'cache-master-0', { metadata: { finalizers: null } }, { type: 'merge' });
});

test('password rotation under writes: the new password works at once, the old one until the grace period ends; links, labels and writes never notice', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache', { passwordGracePeriodSeconds: 4 });
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, 11 + i), extra })));
  await cluster.addPods('cache', servers);
  const masters = cluster.watchMasters('cache');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), timing: { secretRefreshMs: 300 } });
  await until('a linked set', () => linkedAll(cluster));
  // Clients keep writing with the password they started with: the grace period is for them.
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('writes', () => writer.acked.length > 100);
  // The leader's one write per pod of the engine its node answers with comes once, some time after
  // the pods answer: let it land before the window in which no pod may be patched.
  await until('every pod says the engine its node runs', () => cluster.enginesWritten());
  const from = cluster.api.requests.length;
  const NEW = 'rotated-password-1b2c';
  await cluster.store.patch(
    'secrets',
    NS,
    'cache-auth',
    { data: { password: Buffer.from(NEW).toString('base64') } },
    { type: 'merge' },
  );
  await until('every node takes the new password', async () => {
    for (const s of servers) if (!(await authWorks(s.ip, NEW))) return false;
    return true;
  });
  for (const s of servers)
    assert.equal(
      await authWorks(s.ip, TEST_PASSWORD),
      true,
      `${s.ip} still takes the old password during the grace period`,
    );
  // A replica restarted during the grace period starts with the new password only (its env): it
  // gets the old one back, so a client of that pod is not cut off early either.
  const masterIp = cluster.masterIp('cache')!;
  const restarted = servers.find((s) => s.ip !== masterIp)!;
  await restarted.restart({ password: NEW });
  await until('the restarted node takes the old password again', () => authWorks(restarted.ip, TEST_PASSWORD));
  const acked = writer.acked.length;
  await until('old password refused everywhere after the grace period', async () => {
    for (const s of servers) if ((await authWorks(s.ip, TEST_PASSWORD)) || !(await authWorks(s.ip, NEW))) return false;
    return true;
  });
  await until('the grace period told', () =>
    ['PasswordGraceStarted', 'PasswordGraceEnded'].every((r) => cluster.events('cache').some((e) => e.reason === r)),
  );
  await writer.stop();
  assert.ok(acked > 100, 'writes with the old password went on during the grace period');
  // The links and the master never noticed: probes, the sidecar and replication use the
  // operator's own user; nobody failed over and no node looked silent.
  await until('linked', () => linkedAll(cluster));
  assert.equal(cluster.masterIp('cache'), masterIp);
  const restartedPod = cluster.store
    .list('pods', { namespace: NS })
    .find((p) => (p as { status?: { podIP?: string } }).status?.podIP === restarted.ip)!.metadata.name;
  assert.deepEqual(
    cluster.podPatches(from).filter((p) => !p.path.endsWith(`/${restartedPod}`)),
    [],
    'no other pod had a label or annotation changed (only the restarted one: its link went down and up)',
  );
  assert.deepEqual(
    cluster.events('cache').filter((e) => e.reason === 'FailoverStarted' || e.reason === 'FailoverBlocked'),
    [],
  );
  assert.ok(!a.logs.some((l) => l.includes('silent for')), 'no node looked silent');
  assert.deepEqual(masters.violations, []);
});

test("nodes started by an earlier version (no operator's user): probed as default, then given the user and a link that authenticates as it", async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache', TEST_PASSWORD, NS, null);
  await cluster.createRedis('cache');
  const servers = await Promise.all(
    [0, 1, 2].map((i) => startRedis(t, { ip: addr(N, 41 + i), extra, operatorPassword: null })),
  );
  await cluster.addPods('cache', servers);
  await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250) });
  await until('a linked set', () => linkedAll(cluster));
  const secret = await until('the generated operator secret', () => cluster.store.get('secrets', NS, 'cache-operator'));
  const operatorPassword = Buffer.from(
    String((secret as { data?: Record<string, string> }).data?.['password']),
    'base64',
  ).toString();
  await until('every node adopted', async () => {
    for (const s of servers) {
      const c = redisClient(s.ip);
      try {
        await c.connect();
        const link = (await c.call('CONFIG', 'GET', 'masteruser', 'masterauth')) as string[];
        if (!link.includes('redis-operator') || !link.includes(operatorPassword)) return false;
      } catch {
        return false;
      } finally {
        c.disconnect();
      }
    }
    return true;
  });
  for (const s of servers)
    assert.equal(
      await authWorks(s.ip, operatorPassword, 'redis-operator'),
      true,
      `${s.ip}: the operator's user logs in`,
    );
  await until(
    'told once per node',
    () => cluster.events('cache').filter((e) => e.reason === 'OperatorUserAdded').length === 3,
  );
  assert.ok(linkedAll(cluster));
});

test('the Redis resource is deleted: its worker stops and its per-pod metrics go away', async (t) => {
  const { cluster, a } = await threeNodes(t, 31);
  assert.match(
    await a.metrics.registry.metrics(),
    /redis_operator_pod_up\{namespace="redis-test",redis="cache",pod="cache-master-0"\} 1/,
  );
  await cluster.store.delete('redises', NS, 'cache');
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
