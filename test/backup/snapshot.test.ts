// Loopback octet: 127.0.71.x. A snapshot read over the replication protocol (src/backup/snapshot.ts)
// from real redis-servers: taken from a replica, the master does not fork; the payload is the RDB
// exactly, in the diskless and the disk form, and loads into a fresh node with every key; the
// offset is where the snapshot stands in the replication stream; TLS works; a wrong password is
// refused, naming the node. The restore layout (src/backup/restore-layout.ts) loads with RDB and
// with AOF persistence, and the test shows why AOF needs its own layout.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createWriteStream, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { restoreFiles } from '../../src/backup/restore-layout.ts';
import { openSnapshot } from '../../src/backup/snapshot.ts';
import { redisClient, redisCommand } from '../sidecar/redis/manager/harness-redis.ts';
import { addr, startRedis, TEST_OPERATOR_PASSWORD, OPERATOR_USER, type RedisServer } from '../support/redis-server.ts';
import { issue, makeCa, type Issued } from '../support/tls-certs.ts';
import { until } from '../support/until.ts';

const N = 71;

const call = redisCommand;

const info = async (ip: string, section: string) =>
  Object.fromEntries(
    String(await call(ip, 'INFO', section))
      .split('\r\n')
      .filter((l) => l.includes(':'))
      .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1)]),
  );

/** A master with `keys` keys and a linked replica. */
async function pair(t: TestContext, first: number, keys: number, options: { tls?: Issued; diskless?: boolean } = {}) {
  const extra = { 'repl-diskless-sync': options.diskless === false ? 'no' : 'yes', 'repl-diskless-sync-delay': '0' };
  const [master, replica] = await Promise.all(
    [0, 1].map((i) =>
      startRedis(t, {
        ip: addr(N, first + i),
        extra,
        minReplicasToWrite: 0,
        ...(options.tls ? { tls: options.tls } : {}),
      }),
    ),
  );
  await call(master!.ip, 'REPLICAOF', 'NO', 'ONE');
  const c = redisClient(master!.ip);
  await c.connect();
  for (let i = 0; i < keys; i += 1000) {
    const batch = c.pipeline();
    for (let k = i; k < Math.min(keys, i + 1000); k++) batch.set(`key:${k}`, `value-${k}-${'x'.repeat(50)}`);
    await batch.exec();
  }
  c.disconnect();
  await call(replica!.ip, 'REPLICAOF', master!.ip, '6379');
  await until(
    'the replica linked and caught up',
    async () =>
      (await info(replica!.ip, 'replication'))['master_link_status'] === 'up' &&
      Number(await call(replica!.ip, 'DBSIZE')) === keys,
  );
  return { master: master!, replica: replica! };
}

async function snapshotTo(t: TestContext, from: RedisServer, file: string, tlsOptions?: Issued) {
  const snap = await openSnapshot({
    host: from.ip,
    port: 6379,
    username: OPERATOR_USER,
    password: TEST_OPERATOR_PASSWORD,
    ...(tlsOptions ? { tls: { ca: tlsOptions['ca.crt'], checkServerIdentity: () => undefined } } : {}),
  });
  await pipeline(snap.rdb, createWriteStream(file));
  return { snap, size: await snap.done };
}

/** A fresh node that starts from `rdb` (its dump.rdb), and its key count. */
async function loadInto(t: TestContext, ip: string, rdb: string): Promise<RedisServer> {
  const fresh = await startRedis(t, { ip });
  await fresh.kill();
  copyFileSync(rdb, path.join(fresh.dataDir, 'dump.rdb'));
  await fresh.restart();
  return fresh;
}

for (const diskless of [true, false]) {
  test(`a snapshot from a replica (${diskless ? 'diskless' : 'disk'} sync): the master does not fork, every key loads into a fresh node`, async (t) => {
    const first = diskless ? 1 : 11;
    const { master, replica } = await pair(t, first, 20_000, { diskless });
    const forksBefore = Number((await info(master.ip, 'stats'))['total_forks']);
    const offsetBefore = Number((await info(master.ip, 'replication'))['master_repl_offset']);
    const file = path.join(replica.root, 'snapshot.rdb');
    const { snap, size } = await snapshotTo(t, replica, file);
    assert.equal(Number((await info(master.ip, 'stats'))['total_forks']), forksBefore, 'the master never forked');
    assert.match(snap.replicationId, /^[0-9a-f]{40}$/);
    assert.ok(
      snap.offset >= offsetBefore,
      `offset ${snap.offset} is at or after the master's ${offsetBefore} before the snapshot`,
    );
    assert.ok(size > 20_000 * 10, `${size} bytes (values compress)`);
    const fresh = await loadInto(t, addr(N, first + 2), file);
    assert.equal(Number(await call(fresh.ip, 'DBSIZE')), 20_000);
    assert.equal(await call(fresh.ip, 'GET', 'key:19999'), `value-19999-${'x'.repeat(50)}`);
  });
}

test('a snapshot over TLS; a wrong password is refused, naming the node', async (t) => {
  const cert = issue(makeCa(), { ips: [addr(N, 21), addr(N, 22)] });
  const { replica } = await pair(t, 21, 1000, { tls: cert });
  const file = path.join(replica.root, 'snapshot.rdb');
  const { size } = await snapshotTo(t, replica, file, cert);
  assert.ok(size > 1000 * 10, `${size} bytes`);
  await assert.rejects(
    openSnapshot({
      host: replica.ip,
      port: 6379,
      username: OPERATOR_USER,
      password: 'wrong',
      tls: { ca: cert['ca.crt'], checkServerIdentity: () => undefined },
    }),
    new RegExp(`${replica.ip.replaceAll('.', '\\.')}:6379 refused the snapshot at auth: WRONGPASS`),
  );
});

for (const appendOnly of [false, true]) {
  test(`restore layout (appendonly ${appendOnly ? 'yes' : 'no'}): a fresh node started on it has every key, and keeps new writes across a restart`, async (t) => {
    const first = appendOnly ? 31 : 41;
    const { replica } = await pair(t, first, 5000);
    const file = path.join(replica.root, 'snapshot.rdb');
    await snapshotTo(t, replica, file);
    const fresh = await startRedis(t, { ip: addr(N, first + 2), appendonly: appendOnly, minReplicasToWrite: 0 });
    await fresh.kill();
    for (const f of restoreFiles(appendOnly)) {
      mkdirSync(path.dirname(path.join(fresh.dataDir, f.path)), { recursive: true });
      if ('snapshot' in f.content) copyFileSync(file, path.join(fresh.dataDir, f.path));
      else writeFileSync(path.join(fresh.dataDir, f.path), f.content.text);
    }
    await fresh.restart();
    assert.equal(Number(await call(fresh.ip, 'DBSIZE')), 5000, 'the snapshot loaded');
    await call(fresh.ip, 'REPLICAOF', 'NO', 'ONE');
    await call(fresh.ip, 'SET', 'after-restore', '1');
    if (!appendOnly) await call(fresh.ip, 'SAVE');
    await fresh.restart();
    assert.equal(Number(await call(fresh.ip, 'DBSIZE')), 5001, 'the restored keys and a later write survive a restart');
  });
}

test('why the AOF layout: with appendonly yes, Redis 7 ignores a lone dump.rdb and starts empty', async (t) => {
  const { replica } = await pair(t, 51, 100);
  const file = path.join(replica.root, 'snapshot.rdb');
  await snapshotTo(t, replica, file);
  const naive = await startRedis(t, { ip: addr(N, 53), appendonly: true, minReplicasToWrite: 0 });
  await naive.kill();
  copyFileSync(file, path.join(naive.dataDir, 'dump.rdb'));
  await naive.restart();
  assert.equal(Number(await call(naive.ip, 'DBSIZE')), 0, 'if this changes, restoreFiles can go back to dump.rdb');
});
