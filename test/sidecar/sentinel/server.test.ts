// The Sentinel endpoint over real TCP: ioredis's own Sentinel support finds the master through it, keeps writing to
// real redis-server processes, and on the +switch-master the view announces moves to the new master at once (the old
// one stays up and reachable, so only the message can move it); and the limits a hostile client meets.
// Loopback octet: 127.0.213.x (.1, .2 the Redis nodes, .100 the endpoint).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { addr, startRedis, TEST_PASSWORD, type RedisServer } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { startSentinelServer, type SentinelServer } from '../../../src/sidecar/sentinel/server.ts';
import { EMPTY_VIEW, buildView, type SentinelView } from '../../../src/sidecar/sentinel/decide/view.ts';

const N = 213;
const HOST = addr(N, 100);
const SENTINEL_PASSWORD = 'sentinel-password-5e1b';
const logger = pino({ level: 'silent' });

function viewWith(master: RedisServer, replica: RedisServer, prev: SentinelView): SentinelView {
  const pods = [
    { name: 'cache-0', ip: master.ip, ready: true, role: 'master' as const },
    { name: 'cache-1', ip: replica.ip, ready: true, role: 'replica' as const },
  ];
  const redis = {
    namespace: 'apps',
    name: 'cache',
    masterName: 'mymaster',
    password: SENTINEL_PASSWORD,
    port: 6379,
    pods,
  };
  return buildView([redis], [], prev);
}

async function admin(t: TestContext, s: RedisServer): Promise<Redis> {
  const c = new Redis({ host: s.ip, port: 6379, password: TEST_PASSWORD, lazyConnect: true, maxRetriesPerRequest: 1 });
  t.after(() => c.disconnect());
  await c.connect();
  return c;
}

async function linkUp(c: Redis): Promise<void> {
  await until('the replica linked', async () => /master_link_status:up/.test(await c.info('replication')));
}

test('ioredis with sentinels: finds the master, follows +switch-master at once, never reads an unpublished one', async (t) => {
  const extra = { 'repl-diskless-sync-delay': '0' };
  const [a, b] = await Promise.all([1, 2].map((h) => startRedis(t, { ip: addr(N, h), minReplicasToWrite: 0, extra })));
  const [ca, cb] = [await admin(t, a!), await admin(t, b!)];
  await ca.replicaof('NO', 'ONE');
  await cb.replicaof(a!.ip, 6379);
  await linkUp(cb);

  const server = await startSentinelServer({ host: HOST, port: 0, myid: 'a'.repeat(40), logger });
  t.after(() => server.close());
  let view = viewWith(a!, b!, EMPTY_VIEW);
  server.update(view);

  const client = new Redis({
    sentinels: [{ host: HOST, port: server.port }],
    name: 'mymaster',
    sentinelPassword: SENTINEL_PASSWORD,
    password: TEST_PASSWORD,
    failoverDetector: true,
  });
  t.after(() => client.disconnect());
  await client.set('k', 'on-a');
  assert.equal(client.stream.remoteAddress, a!.ip);
  await until('ioredis subscribed to +switch-master', () => server.subscribers() === 1);

  // The nodes switch roles, but the view has not published it yet: the client stays where the view says.
  await cb.replicaof('NO', 'ONE');
  await ca.replicaof(b!.ip, 6379);
  await linkUp(ca);
  await assert.rejects(client.set('k', 'early'), /READONLY/);

  const published = performance.now();
  view = viewWith(b!, a!, view);
  server.update(view);
  await until('a write on the new master', async () => {
    try {
      await client.set('k', 'on-b');
      return client.stream.remoteAddress === b!.ip;
    } catch {
      return false;
    }
  });
  const followMs = performance.now() - published;
  t.diagnostic(`sentinel_client_follow_ms=${followMs.toFixed(1)}`);
  assert.equal(await cb.get('k'), 'on-b');
  // The old master never went away: only the published message can have moved the client.
  assert.equal(await ca.ping(), 'PONG');
});

test('ioredis with sentinels: a wrong Sentinel password resolves nothing', async (t) => {
  const server = await startSentinelServer({ host: HOST, port: 0, myid: 'a'.repeat(40), logger });
  t.after(() => server.close());
  const ip = addr(N, 9);
  const pods = [{ name: 'x-0', ip, ready: true, role: 'master' as const }];
  server.update(
    buildView(
      [{ namespace: 'apps', name: 'x', masterName: undefined, password: 'right', port: 6379, pods }],
      [],
      EMPTY_VIEW,
    ),
  );
  const client = new Redis({
    sentinels: [{ host: HOST, port: server.port }],
    name: 'x',
    sentinelPassword: 'wrong',
    sentinelRetryStrategy: () => null,
    lazyConnect: true,
  });
  client.on('error', () => undefined);
  t.after(() => client.disconnect());
  await assert.rejects(client.connect(), /All sentinels are unreachable.*WRONGPASS/);
});

/** A raw client: what it reads until the server closes the connection. */
function rawSession(port: number, send: string): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.createConnection({ host: HOST, port });
    let data = '';
    socket.on('data', (d) => (data += d.toString()));
    socket.on('connect', () => socket.write(send));
    socket.on('close', () => resolve({ data, closed: true }));
    socket.on('error', () => undefined);
  });
}

test('the limits a hostile client meets', async (t) => {
  let server: SentinelServer | undefined;
  const start = async (o: { maxConnections?: number; idleTimeoutMs?: number }): Promise<SentinelServer> => {
    await server?.close();
    server = await startSentinelServer({ host: HOST, port: 0, myid: 'a'.repeat(40), logger, ...o });
    return server;
  };
  t.after(() => server?.close());

  await t.test('a protocol error is answered, then the connection closes', async () => {
    const s = await start({});
    const r = await rawSession(s.port, 'PING\r\n*1\r\n$99999999\r\nPING\r\n');
    assert.deepEqual(r, { data: '+PONG\r\n-ERR Protocol error: invalid bulk length\r\n', closed: true });
  });
  await t.test('QUIT closes', async () => {
    const s = await start({});
    assert.deepEqual(await rawSession(s.port, 'QUIT\r\n'), { data: '+OK\r\n', closed: true });
  });
  await t.test('past maxConnections, a new client is told and closed', async () => {
    const s = await start({ maxConnections: 1 });
    const first = net.createConnection({ host: HOST, port: s.port });
    t.after(() => first.destroy());
    await until('the first connection counted', () => s.connections() === 1);
    assert.deepEqual(await rawSession(s.port, 'PING\r\n'), {
      data: '-ERR max number of clients reached\r\n',
      closed: true,
    });
  });
  await t.test('an idle client is closed; a subscriber, idle longer, is not and still hears the switch', async () => {
    const s = await start({ idleTimeoutMs: 100 });
    const sub = net.createConnection({ host: HOST, port: s.port });
    t.after(() => sub.destroy());
    let heard = '';
    let subClosed = false;
    sub.on('data', (d) => (heard += d.toString()));
    sub.on('close', () => (subClosed = true));
    sub.write('SUBSCRIBE +switch-master\r\n');
    await until('subscribed', () => s.subscribers() === 1);
    // Opened after the subscriber went quiet: had the subscriber the same timeout, it would be gone first.
    assert.deepEqual(await rawSession(s.port, 'PING\r\n'), { data: '+PONG\r\n', closed: true });
    assert.equal(subClosed, false);
    const ip = (h: number) => ({ name: `p${h}`, ip: addr(N, h), ready: true, role: 'master' as const });
    const at = (h: number, prev: SentinelView) =>
      buildView(
        [{ namespace: 'a', name: 'x', masterName: undefined, password: null, port: 6379, pods: [ip(h)] }],
        [],
        prev,
      );
    const before = at(9, EMPTY_VIEW);
    s.update(before);
    s.update(at(10, before));
    await until('the switch heard', () => heard.includes(`x ${addr(N, 9)} 6379 ${addr(N, 10)} 6379`));
  });
});
