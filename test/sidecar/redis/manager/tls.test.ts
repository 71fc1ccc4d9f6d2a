// Loopback octet: 127.0.18.x. The real manager with spec.tls against real redis-servers speaking
// TLS only (certificates made with openssl): the set comes up and replicates over TLS, the
// plaintext port is closed, a renewed certificate is loaded by every node without a restart (and a
// password rotation over TLS works as without it), a certificate that does not name the Redis is
// refused, and a SIGKILL of the master under SET + WAIT 1 traffic over TLS fails over with
// nothing acknowledged lost.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { servedFingerprint } from '../../../../src/sidecar/adapters/redis/tls.ts';
import { addr, startRedis, TEST_PASSWORD } from '../../../support/redis-server.ts';
import { issue, makeCa, type Issued } from '../../../support/tls-certs.ts';
import { Cluster, missingKeys, NS, redisClient, settle, until, Writer } from './harness.ts';

const N = 18;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };
const NAMES = { dnsNames: ['*.cache-headless.redis-test.svc', '*.cache-headless.redis-test.svc.cluster.local'] };

async function tlsSecret(cluster: Cluster, cert: Issued): Promise<void> {
  const data = { 'tls.crt': cert['tls.crt'], 'tls.key': cert['tls.key'], 'ca.crt': cert['ca.crt'] };
  if (cluster.store.get('secrets', NS, 'cache-tls'))
    await cluster.store.patch('secrets', NS, 'cache-tls', { stringData: data }, { type: 'merge' });
  else
    await cluster.store.create('secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'cache-tls', namespace: NS },
      type: 'kubernetes.io/tls',
      stringData: data,
    });
}

async function tlsSet(t: TestContext, first: number, cert: Issued) {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await tlsSecret(cluster, cert);
  await cluster.createRedis('cache', { tls: { secretName: 'cache-tls' } });
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, first + i), extra, tls: cert })));
  await cluster.addPods('cache', servers);
  const masters = cluster.watchMasters('cache');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), timing: { secretRefreshMs: 300 } });
  return { cluster, servers, masters, a };
}

function linkedAll(cluster: Cluster): boolean {
  const r = Object.values(cluster.roles('cache'));
  return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
}

/** What a plaintext client gets from a TLS-only node: an error, never a PONG. */
async function plaintextPing(ip: string): Promise<string> {
  const c = new Redis({
    host: ip,
    port: 6379,
    password: 'x',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 500,
    commandTimeout: 1000,
  });
  c.on('error', () => {});
  try {
    await c.connect();
    return String(await c.ping());
  } catch (err) {
    return `refused: ${(err as Error).message}`;
  } finally {
    c.disconnect();
  }
}

test('spec.tls: the set comes up over TLS, plaintext is refused, a renewed certificate is loaded by every node without a restart', async (t) => {
  const ca = makeCa();
  const first = issue(ca, { ...NAMES, cn: 'first' });
  const { cluster, servers, masters } = await tlsSet(t, 1, first);
  await until('a linked set over TLS', () => linkedAll(cluster));
  for (const s of servers) assert.match(await plaintextPing(s.ip), /^refused/, `${s.ip}: plaintext gets no answer`);
  const master = cluster.masterIp('cache')!;
  const info = await (async () => {
    const c = redisClient(servers.find((s) => s.ip !== master)!.ip);
    await c.connect();
    try {
      return String(await c.call('INFO', 'replication'));
    } finally {
      c.disconnect();
    }
  })();
  assert.match(info, /master_link_status:up/, 'replication over TLS');

  // Renewal: the kubelet rewrites the mounted files, the Secret holds the new certificate.
  const pids = servers.map((s) => s.pid);
  const renewed = issue(ca, { ...NAMES, cn: 'renewed' });
  for (const s of servers) s.renewTls(renewed);
  await tlsSecret(cluster, renewed);
  await until('every node serves the renewed certificate', async () => {
    for (const s of servers) {
      const fp = await servedFingerprint({ host: s.ip, port: 6379 }, s.clientTls!, undefined, 1000).catch(() => null);
      if (fp !== renewed.fingerprint) return false;
    }
    return true;
  });
  assert.deepEqual(
    servers.map((s) => s.pid),
    pids,
    'no node restarted',
  );
  await until(
    'told per node',
    () => cluster.events('cache').filter((e) => e.reason === 'TLSCertificateLoaded').length === 3,
  );
  assert.ok(linkedAll(cluster), 'links stayed up');

  // A password rotation over TLS works as without it: the new password on every node, the old one
  // kept for the grace period, the links untouched.
  await cluster.store.patch(
    'secrets',
    NS,
    'cache-auth',
    { stringData: { password: 'rotated-over-tls' } },
    { type: 'merge' },
  );
  const pings = (password: string) =>
    Promise.all(
      servers.map(async (s) => {
        const c = redisClient(s.ip, password);
        try {
          await c.connect();
          return String(await c.ping());
        } catch {
          return 'refused';
        } finally {
          c.disconnect();
        }
      }),
    );
  await until('the new password on every node over TLS', async () =>
    (await pings('rotated-over-tls')).every((r) => r === 'PONG'),
  );
  assert.deepEqual(await pings(TEST_PASSWORD), ['PONG', 'PONG', 'PONG'], 'the old one during the grace period');
  assert.ok(linkedAll(cluster), 'links untouched by the rotation');
  assert.deepEqual(masters.violations, []);
});

test('spec.tls: SIGKILL of the master under SET + WAIT 1 over TLS: failover, nothing acknowledged lost', async (t) => {
  const cert = issue(makeCa(), NAMES);
  const { cluster, servers, masters } = await tlsSet(t, 11, cert);
  await until('a linked set over TLS', () => linkedAll(cluster));
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('acknowledged writes', () => writer.acked.length > 200);
  const oldName = cluster.masters('cache')[0]!;
  const old = servers.find((s) => s.ip === cluster.masterIp('cache'))!;
  await old.kill();
  const notReady = cluster.later(1000, `${oldName} NotReady`, () => cluster.setPodStatus(oldName, old.ip, false));
  const newName = await until('the master label on another pod', () => {
    const m = cluster.masters('cache');
    return m.length === 1 && m[0] !== oldName && m[0];
  });
  const newIp = cluster.pod(newName)!.status!.podIP!;
  await until('writes on the new master', () => writer.ackedAfter(0, newIp));
  await writer.stop();
  await notReady;
  assert.deepEqual(cluster.failedWrites, []);
  await settle(newIp, 1);
  for (const s of servers.filter((x) => x !== old))
    assert.deepEqual(
      await missingKeys(
        s.ip,
        writer.acked.map((x) => x.key),
      ),
      [],
      `${s.ip} holds every acknowledged write`,
    );
  assert.deepEqual(masters.violations, []);
});

test('spec.tls: a certificate signed by the CA that does not name this Redis is refused (no probe, no step)', async (t) => {
  const ca = makeCa();
  const wrong = issue(ca, { dnsNames: ['*.other-headless.redis-test.svc'] });
  const { cluster, a } = await tlsSet(t, 21, wrong);
  await until('the refusal logged', () => a.logs.some((l) => /names neither/.test(l)));
  assert.deepEqual(cluster.masters('cache'), [], 'nothing promoted through an unverified connection');
});
