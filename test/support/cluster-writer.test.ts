// The cluster-aware test application (cluster-writer.ts) against a real Redis Cluster: six real
// redis-servers in cluster mode (three masters, a replica each) formed by hand with the cluster
// commands, no operator. While it writes: slots migrate by hand (ASK, then MOVED) and a master is
// SIGKILLed (the cluster's own failover). It must follow every redirection without an
// application-visible error, and every write it counts as acknowledged must read back.
// Network: 127.0.85.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { addr, startRedis, TEST_PASSWORD, type RedisServer } from './redis-server.ts';
import { ClusterWriter, keySlot, missingFromCluster } from './cluster-writer.ts';
import { until } from './until.ts';

const N = 85;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function client(s: RedisServer): Redis {
  const r = new Redis({ host: s.ip, port: 6379, password: TEST_PASSWORD, maxRetriesPerRequest: 1 });
  r.on('error', () => {});
  return r;
}

/** Three masters with 0-5460, 5461-10922, 10923-16383 and a replica each, every node agreeing. */
async function formCluster(servers: RedisServer[], conns: Redis[]): Promise<void> {
  for (const c of conns.slice(1)) await c.call('CLUSTER', 'MEET', servers[0]!.ip, '6379');
  const ranges: Array<[number, number]> = [
    [0, 5460],
    [5461, 10922],
    [10923, 16383],
  ];
  for (let i = 0; i < 3; i++)
    await conns[i]!.call('CLUSTER', 'ADDSLOTSRANGE', String(ranges[i]![0]), String(ranges[i]![1]));
  const ids = await Promise.all(conns.slice(0, 3).map((c) => c.call('CLUSTER', 'MYID') as Promise<string>));
  await until('every node knows the masters', async () => {
    const views = await Promise.all(conns.map((c) => c.call('CLUSTER', 'NODES') as Promise<string>));
    return views.every((v) => ids.every((id) => v.includes(id)));
  });
  for (let i = 0; i < 3; i++) await conns[i + 3]!.call('CLUSTER', 'REPLICATE', ids[i]!);
  await until(
    'cluster_state:ok everywhere, replicas linked',
    async () => {
      const infos = await Promise.all(conns.map((c) => c.call('CLUSTER', 'INFO') as Promise<string>));
      const links = await Promise.all(conns.slice(3).map((c) => c.info('replication')));
      return (
        infos.every((i) => i.includes('cluster_state:ok')) && links.every((l) => l.includes('master_link_status:up'))
      );
    },
    20_000,
  );
}

/** Moves `slots` from one master to another the way a reshard does, key batch by key batch. */
async function migrate(from: Redis, to: Redis, toIp: string, slots: number[], all: Redis[]): Promise<void> {
  const fromId = (await from.call('CLUSTER', 'MYID')) as string;
  const toId = (await to.call('CLUSTER', 'MYID')) as string;
  for (const slot of slots) {
    await to.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId);
    await from.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId);
    for (;;) {
      const keys = (await from.call('CLUSTER', 'GETKEYSINSLOT', String(slot), '50')) as string[];
      if (keys.length === 0) break;
      await from.call('MIGRATE', toIp, '6379', '', '0', '5000', 'AUTH', TEST_PASSWORD, 'KEYS', ...keys);
      await sleep(5); // let the writer hit the slot while it is half moved (ASK)
    }
    for (const c of [to, from, ...all])
      await c.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', toId).catch(() => undefined);
  }
}

test(
  'ioredis Cluster writing SET + WAIT 1 and plain SET through a hand-made reshard and a master crash: every redirection followed, nothing acknowledged lost',
  { timeout: 120_000 },
  async (t) => {
    const servers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => startRedis(t, { ip: addr(N, i + 1), cluster: { nodeTimeoutMs: 1000 } })),
    );
    const conns = servers.map(client);
    t.after(() => conns.forEach((c) => c.disconnect()));
    await formCluster(servers, conns);
    for (const key of ['foo', 'acked:17', '{user1000}.following', '', '{}x', 'plain:123456'])
      assert.equal(
        keySlot(key),
        Number(await conns[0]!.call('CLUSTER', 'KEYSLOT', key)),
        `keySlot(${JSON.stringify(key)}) is the slot Redis computes`,
      );
    const seeds = servers.map((s) => ({ host: s.ip, port: 6379 }));
    const acked = new ClusterWriter({
      seeds,
      password: TEST_PASSWORD,
      prefix: 'acked',
      waitReplicas: 1,
      waitTimeoutMs: 200,
      verifyReads: true,
    }).start();
    const plain = new ClusterWriter({ seeds, password: TEST_PASSWORD, prefix: 'plain' }).start();
    t.after(() => Promise.all([acked.stop(), plain.stop()]));
    await until('writes flowing', () => acked.acked.length > 200 && plain.acked.length > 200, 20_000);

    // 300 slots of the first master to the second, while both writers run.
    const moved = Array.from({ length: 300 }, (_, i) => i);
    await migrate(conns[0]!, conns[1]!, servers[1]!.ip, moved, conns.slice(2));
    const before = acked.acked.length;
    await until('writes after the reshard', () => acked.acked.length > before + 200, 20_000);

    // The plain writer stops before the crash (a plain write is never acknowledged by a replica, so
    // the crash may take the last ones); its keys are replicated before the master goes.
    await plain.stop();
    for (const c of conns.slice(0, 3)) await c.call('WAIT', '1', '2000');

    // The third master crashes: its replica takes over by the cluster's vote. It has no replica of
    // its own then, so its writes are stored but never acknowledged (WAIT 1 answers 0 after 200 ms):
    // the other two shards' writes still are.
    await servers[2]!.kill();
    await until(
      'the replica of the crashed master is master',
      async () => ((await conns[5]!.info('replication')) as string).includes('role:master'),
      20_000,
    );
    const afterCrash = acked.acked.length;
    await until('acknowledged writes after the failover', () => acked.acked.length > afterCrash + 200, 30_000).catch(
      (err: unknown) => {
        throw new Error(
          `${String(err)}: acked ${acked.acked.length} unacked ${acked.unacked.length} transient ${acked.transient} status ${acked.cluster.status} errors ${acked.errors.slice(0, 3).join(' | ')} last ${acked.lastError}`,
        );
      },
    );
    await Promise.all([acked.stop(), plain.stop()]);

    t.diagnostic(
      `acked ${acked.acked.length} (unacked ${acked.unacked.length}), plain ${plain.acked.length}; redirections ${acked.redirections}+${plain.redirections}, transient ${acked.transient}+${plain.transient}, reads ${acked.reads}`,
    );
    assert.deepEqual(acked.errors, [], 'no application-visible error (acknowledged writer)');
    assert.deepEqual(plain.errors, [], 'no application-visible error (plain writer)');
    assert.deepEqual(acked.readMismatches, []);
    const live = seeds.filter((_, i) => i !== 2);
    assert.deepEqual(
      await missingFromCluster({ seeds: live, password: TEST_PASSWORD }, acked.acked),
      [],
      'every acknowledged write reads back',
    );
    assert.deepEqual(
      await missingFromCluster({ seeds: live, password: TEST_PASSWORD }, plain.acked),
      [],
      'every plain write stored before the crash reads back',
    );
  },
);
