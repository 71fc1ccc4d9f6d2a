// Loopback octet: 127.0.10.x (the redis-server harness itself).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { Redis } from 'ioredis';
import {
  addr,
  cutLink,
  RedisServer,
  startRedis,
  sweepRules,
  TEST_OPERATOR_PASSWORD,
  TEST_PASSWORD,
} from '../../../support/redis-server.ts';

const N = 10;

function client(ip: string): Redis {
  const c = new Redis({
    host: ip,
    port: 6379,
    password: TEST_PASSWORD,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 500,
    commandTimeout: 500,
    enableReadyCheck: false,
    disableClientInfo: true,
  });
  c.on('error', () => {});
  return c;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Raw TCP connect from a chosen source address: 'connected' | error code | 'timeout'. */
function tcpConnect(host: string, localAddress: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.createConnection({ host, port: 6379, localAddress });
    const t = setTimeout(() => {
      s.destroy();
      resolve('timeout');
    }, timeoutMs);
    s.on('connect', () => {
      clearTimeout(t);
      s.destroy();
      resolve('connected');
    });
    s.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(t);
      resolve(e.code ?? 'error');
    });
  });
}

test('a server starts on its own loopback address as a replica of nowhere, configured like the ConfigMap', async (t) => {
  const server = await startRedis(t, { ip: addr(N, 1) });
  const c = client(server.ip);
  t.after(() => c.disconnect());
  await c.connect();
  const info = String(await c.call('INFO', 'replication'));
  assert.match(info, /role:slave/);
  assert.match(info, /master_host:127\.0\.0\.1/);
  assert.match(info, /master_port:1\r?\n/);
  const cfg = (await c.call(
    'CONFIG',
    'GET',
    'repl-ping-replica-period',
    'replica-read-only',
    'min-replicas-to-write',
    'masterauth',
    'masteruser',
  )) as string[];
  const map = Object.fromEntries(cfg.flatMap((v, i) => (i % 2 === 0 ? [[v, cfg[i + 1]]] : [])));
  assert.deepEqual(map, {
    'repl-ping-replica-period': '1',
    'replica-read-only': 'yes',
    'min-replicas-to-write': '1',
    // The link authenticates as the operator's own user, as the pod's start-up config sets it.
    masterauth: TEST_OPERATOR_PASSWORD,
    masteruser: 'redis-operator',
  });
  // Without the password it refuses us.
  const anon = new Redis({
    host: server.ip,
    port: 6379,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableReadyCheck: false,
    disableClientInfo: true,
  });
  anon.on('error', () => {});
  t.after(() => anon.disconnect());
  await anon.connect();
  await assert.rejects(anon.call('GET', 'x'), /NOAUTH/);
});

test('kill, stop/cont, restart on a new address with the same data, wipe', async (t) => {
  const server = await startRedis(t, { ip: addr(N, 2) });
  const c = client(server.ip);
  await c.connect();
  await c.call('REPLICAOF', 'NO', 'ONE');
  await c.call('CONFIG', 'SET', 'min-replicas-to-write', '0');
  await c.set('k', 'v');
  await c.call('SAVE');
  c.disconnect();

  // SIGSTOP: the kernel still accepts TCP, but no command is answered.
  server.stop();
  const hung = client(server.ip);
  t.after(() => hung.disconnect());
  await assert.rejects(
    hung.connect().then(() => hung.call('PING')),
    /timed out/i,
  );
  hung.disconnect();
  server.cont();

  const pid = server.pid;
  assert.ok(pid);
  await server.restart({ ip: addr(N, 3) });
  assert.equal(alive(pid), false, 'old process gone');
  assert.equal(server.ip, addr(N, 3));
  assert.equal(await tcpConnect(addr(N, 2), addr(N, 200), 300), 'ECONNREFUSED', 'old address no longer served');
  const c2 = client(server.ip);
  t.after(() => c2.disconnect());
  await c2.connect();
  assert.equal(await c2.get('k'), 'v', 'data survived the restart (RDB)');
  assert.match(String(await c2.call('INFO', 'replication')), /master_port:1\r?\n/, 'back as a replica of nowhere');
  c2.disconnect();

  await server.wipe();
  const c3 = client(server.ip);
  t.after(() => c3.disconnect());
  await c3.connect();
  assert.equal(await c3.dbsize(), 0, 'wiped');
  c3.disconnect();

  const pid2 = server.pid;
  assert.ok(pid2);
  await server.kill();
  assert.equal(alive(pid2), false);
  assert.equal(server.running, false);
});

test('cleanup kills even a stopped server and removes its directory; a failed start says why', async () => {
  const server = await RedisServer.start({ ip: addr(N, 4) });
  const pid = server.pid;
  assert.ok(pid);
  server.stop();
  server.cleanup();
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(alive(pid), false);
  assert.throws(() => execFileSync('ls', [server.root], { stdio: 'ignore' }));

  await assert.rejects(
    RedisServer.start({ ip: addr(N, 5), extra: { 'no-such-directive': 'x' } }),
    /died at start[\s\S]*no-such-directive/,
  );
});

test('cutLink drops traffic between exactly two addresses, both ways, and restore() undoes it', async (t) => {
  sweepRules(N);
  const server = await startRedis(t, { ip: addr(N, 6) });
  const cut = cutLink(t, addr(N, 250), server.ip);
  assert.equal(await tcpConnect(server.ip, addr(N, 250), 400), 'timeout', 'cut source cannot connect');
  assert.equal(await tcpConnect(server.ip, addr(N, 251), 400), 'connected', 'another source still can');
  const rules = execFileSync('iptables', ['-w', '-S', 'OUTPUT'], { encoding: 'utf8' });
  const tag = `redis-operator-test-${addr(N, 1).split('.').slice(0, 3).join('.')}`;
  assert.equal(rules.split('\n').filter((l) => l.includes(tag)).length, 2);
  cut.restore();
  cut.restore();
  assert.equal(await tcpConnect(server.ip, addr(N, 250), 400), 'connected');
  const after = execFileSync('iptables', ['-w', '-S', 'OUTPUT'], { encoding: 'utf8' });
  assert.equal(after.includes(tag), false);
});
