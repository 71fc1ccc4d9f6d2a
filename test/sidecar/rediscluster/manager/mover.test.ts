// The slot mover (src/sidecar/rediscluster/manager/mover.ts) and the adapter's pipelined commands:
// a group of slots moved between two real redis-servers in cluster mode (the target with a
// replica), a move re-run over a key left on both ends (REPLACE), the batch sizing, and the wait
// for the target's replicas against a scripted adapter (no timing decides a test).
// Network: 127.0.141.x.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ClusterAdapter, type Result } from '../../../../src/sidecar/adapters/redis/rediscluster.ts';
import {
  BATCH_BYTES,
  batchKeys,
  MAX_BATCH_KEYS,
  moveSlots,
  packBatches,
  WAIT_MS,
  type MoveSpec,
} from '../../../../src/sidecar/rediscluster/manager/mover.ts';
import {
  addr,
  OPERATOR_USER,
  startRedis,
  TEST_OPERATOR_PASSWORD,
  type RedisServer,
} from '../../../support/redis-server.ts';
import { until } from '../../../support/until.ts';
import { redisClient } from '../../redis/manager/harness-redis.ts';
import { myself, nodesOf, openSlots } from '../nodes.ts';
import { keySlot } from '../writer.ts';

const OCTET = 141;

test('batches are sized by bytes, within [1, MAX_BATCH_KEYS], and never split a slot', () => {
  assert.equal(batchKeys(8192), BATCH_BYTES / 8192);
  assert.equal(batchKeys(1), MAX_BATCH_KEYS);
  assert.equal(batchKeys(0), MAX_BATCH_KEYS, 'unknown size: the key cap');
  assert.equal(batchKeys(BATCH_BYTES * 10), 1);
  const lists = [3, 2, 4, 1, 5].map((n, slot) => ({ slot, keys: Array.from({ length: n }) }));
  assert.deepEqual(
    packBatches(lists, 5).map((b) => b.map((l) => l.slot)),
    [[0, 1], [2, 3], [4]],
  );
  assert.deepEqual(
    packBatches([{ slot: 9, keys: Array.from({ length: 8 }) }], 5).map((b) => b.map((l) => l.slot)),
    [[9]],
    'a list longer than the bound goes alone',
  );
});

/** Two masters (A: 0-8191, B: 8192-16383) and a replica of B, agreeing. */
async function cluster(t: TestContext, base: number) {
  const servers: RedisServer[] = [];
  for (let i = 0; i < 3; i++) servers.push(await startRedis(t, { ip: addr(OCTET, base + i), cluster: {} }));
  const [a, b, r] = servers.map((s) => redisClient(s.ip, undefined, 5000)) as [Redis, Redis, Redis];
  t.after(() => [a, b, r].forEach((c) => c.disconnect()));
  await Promise.all([a, b, r].map((c) => c.connect()));
  await b.call('CLUSTER', 'MEET', servers[0]!.ip, '6379');
  await r.call('CLUSTER', 'MEET', servers[0]!.ip, '6379');
  await a.call('CLUSTER', 'ADDSLOTSRANGE', '0', '8191');
  await b.call('CLUSTER', 'ADDSLOTSRANGE', '8192', '16383');
  const [aId, bId] = (await Promise.all([a.call('CLUSTER', 'MYID'), b.call('CLUSTER', 'MYID')])) as [string, string];
  await until('every node knows the others', async () => {
    const views = (await Promise.all([a, b, r].map((c) => c.call('CLUSTER', 'NODES')))) as string[];
    return views.every((v) => v.trim().split('\n').length === 3);
  });
  await r.call('CLUSTER', 'REPLICATE', bId);
  await until('cluster ok, the replica linked', async () => {
    const infos = (await Promise.all([a, b].map((c) => c.call('CLUSTER', 'INFO')))) as string[];
    return (
      infos.every((i) => i.includes('cluster_state:ok')) && (await r.info('replication')).includes('link_status:up')
    );
  });
  const redis = new ClusterAdapter({ username: OPERATOR_USER, timeouts: { commandTimeoutMs: 5000 } });
  redis.setPassword(TEST_OPERATOR_PASSWORD);
  t.after(() => redis.close());
  return { servers, a, b, r, aId, bId, redis };
}

/** `n` keys in each of `slots` (hash tags), written on A. */
async function fill(a: Redis, slots: readonly number[], n: number): Promise<Map<number, string[]>> {
  const tags = new Map<number, string>();
  for (let i = 0; tags.size < slots.length; i++) {
    const slot = keySlot(`{t${i}}`);
    if (slots.includes(slot) && !tags.has(slot)) tags.set(slot, `{t${i}}`);
  }
  const out = new Map<number, string[]>();
  for (const [slot, tag] of tags) {
    const keys = Array.from({ length: n }, (_, j) => `${tag}:${j}`);
    await Promise.all(keys.map((k) => a.set(k, `v-${k}`)));
    out.set(slot, keys);
  }
  return out;
}

const specs = (
  slots: readonly number[],
  c: Awaited<ReturnType<typeof cluster>>,
  over: Partial<MoveSpec> = {},
): MoveSpec[] =>
  slots.map((slot) => ({
    slot,
    from: { ip: c.servers[0]!.ip, id: c.aId },
    to: { ip: c.servers[1]!.ip, id: c.bId },
    cold: false,
    toImportingFrom: null,
    fromMigratingTo: null,
    toServes: false,
    others: [],
    targetReplicas: [c.servers[2]!.ip],
    keyBytes: 100,
    ...over,
  }));

const serves = async (ip: string, slot: number) =>
  (myself(await nodesOf(ip))?.slots ?? []).some(([x, y]) => slot >= x && slot <= y);

test("a group of slots moves in one run: every key on the target and its replica, the slots the target's, none open", async (t) => {
  const c = await cluster(t, 1);
  const slots = [100, 101, 2000, 8000];
  const keys = await fill(c.a, slots, 300);
  const batches: Array<[number, number]> = [];
  const out = await moveSlots(c.redis, specs(slots, c, { keyBytes: BATCH_BYTES / 250 }), {
    stopped: () => false,
    afterBatch: (slot, n) => {
      batches.push([slot, n]);
    },
  });
  assert.deepEqual(
    [...out.entries()].sort((x, y) => x[0] - y[0]),
    slots.map((s) => [s, { ok: true, keys: 300 }]),
  );
  // 250 keys a batch: each slot's 300 keys in two batches (250 + 50).
  assert.deepEqual(
    slots.map((s) => batches.filter(([x]) => x === s).map(([, n]) => n)),
    slots.map(() => [250, 50]),
  );
  for (const [slot, list] of keys) {
    assert.equal(await c.b.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot)), list.length, `slot ${slot} on B`);
    assert.equal(await c.a.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot)), 0, `slot ${slot} left A`);
    // The replica had each batch before the next one: all of them once the run is over.
    assert.equal(
      await c.r.call('CLUSTER', 'COUNTKEYSINSLOT', String(slot)),
      list.length,
      `slot ${slot} on B's replica`,
    );
  }
  assert.deepEqual(await openSlots(c.servers.map((s) => s.ip)), [], 'no slot left migrating or importing');
  for (const s of slots) {
    assert.ok(await serves(c.servers[1]!.ip, s), `B serves slot ${s}`);
    assert.ok(!(await serves(c.servers[0]!.ip, s)), `A no longer serves slot ${s}`);
  }
});

test('a key left on both ends is moved again with REPLACE; a slot that fails does not stop the others', async (t) => {
  const c = await cluster(t, 11);
  const [left, other] = [300, 301];
  const keys = await fill(c.a, [left, other], 5);
  const k = keys.get(left)![0]!;
  // As a MIGRATE that restored on B but crashed before deleting at A leaves it: B importing, A
  // migrating, the key on both ends (B's copy older).
  await c.b.call('CLUSTER', 'SETSLOT', String(left), 'IMPORTING', c.aId);
  await c.a.call('CLUSTER', 'SETSLOT', String(left), 'MIGRATING', c.bId);
  await c.b.call('ASKING');
  await c.b.set(k, 'older');
  const run = specs([left, other], c);
  run[0] = { ...run[0]!, toImportingFrom: c.aId, fromMigratingTo: c.bId };
  // A slot of B's own, said to be A's: A cannot migrate it (its own answer says so), the others go on.
  const wrong = { ...run[1]!, slot: 9000 };
  const out = await moveSlots(c.redis, [...run, wrong], { stopped: () => false });
  assert.deepEqual(out.get(left), { ok: true, keys: 5 });
  assert.deepEqual(out.get(other), { ok: true, keys: 5 });
  const failed = out.get(9000);
  assert.ok(failed && !failed.ok && failed.phase === 'migrating', JSON.stringify(failed));
  assert.equal(await c.b.get(k), `v-${k}`, "the source's copy won");
});

test("the wait for the target's replicas: until each has the target's offset; one that lags is dropped once another keeps up", async () => {
  let now = 0;
  const offsets = new Map<string, number[]>([
    ['T', [100, 200]],
    // r1 catches up at its second answer; r2 never does.
    ['r1', [50, 100, 200, 200]],
    ['r2', [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]],
  ]);
  const asked: string[] = [];
  const fake = {
    setSlots: async (_ip: string, e: unknown[]) => e.map(() => ({ ok: true, value: 'OK' })),
    getKeysInSlots: (() => {
      let round = 0;
      return async (_ip: string, slots: number[]) =>
        slots.map(() => ({ ok: true, value: round++ < 2 ? [Buffer.from(`k${round}`)] : [] }));
    })(),
    migrateMany: async (_a: string, _b: string, batches: unknown[]) => batches.map(() => ({ ok: true, value: 'OK' })),
    replicationOffset: async (ip: string): Promise<Result<number>> => {
      asked.push(ip);
      const list = offsets.get(ip)!;
      return { ok: true, value: list.length > 1 ? list.shift()! : list[0]! };
    },
  } as unknown as ClusterAdapter;
  const spec: MoveSpec = {
    slot: 7,
    from: { ip: 'S', id: 's' },
    to: { ip: 'T', id: 't' },
    cold: false,
    toImportingFrom: null,
    fromMigratingTo: null,
    toServes: false,
    others: [],
    targetReplicas: ['r1', 'r2'],
    keyBytes: 10,
  };
  const out = await moveSlots(fake, [spec], {
    stopped: () => false,
    now: () => now,
    sleep: async (ms) => {
      now += ms;
    },
  });
  assert.deepEqual(out.get(7), { ok: true, keys: 2 });
  const first = asked.slice(0, asked.lastIndexOf('T'));
  assert.ok(now >= WAIT_MS, 'the first batch waited out the deadline for r2');
  assert.ok(first.filter((x) => x === 'r2').length > 2, 'r2 was asked again until the deadline');
  assert.deepEqual(
    asked.slice(asked.lastIndexOf('T')),
    ['T', 'r1'],
    'after the deadline only r1, which kept up, is waited for',
  );
});
