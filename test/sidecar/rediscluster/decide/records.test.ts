// Node records and role labels (decide/records.ts), and reading what Redis answers
// (decide/cluster-nodes.ts) from real CLUSTER NODES and INFO text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterNodeRecord, readClusterNodeRecord } from '../../../../src/api/rediscluster-names.ts';
import { parseClusterNodes, parseNodeInfo } from '../../../../src/sidecar/rediscluster/decide/cluster-nodes.ts';
import { decideRecord } from '../../../../src/sidecar/rediscluster/decide/records.ts';
import { buildTopology } from '../../../../src/sidecar/rediscluster/decide/topology.ts';
import { healthy, id, THREE, world } from './fixtures.ts';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

test('role label and node record: written on change, figures at most once a minute and only after a 5% move', async (t) => {
  const pods = world(healthy(3, THREE));
  const master = pods.find((p) => p.name === 'c-shard-0-0')!;
  const topology = buildTopology(pods);
  const first = decideRecord(topology, master, T0)!;
  assert.equal(first.role, 'master');
  const written = readClusterNodeRecord(first.record)!;
  assert.deepEqual(written.slots, [[0, 5461]]);
  assert.equal(written.linkUp, true);

  const withRecord = (usedMemory: number, keys: number, role = 'master') => ({
    ...master,
    roleLabel: role,
    record: { ...written, usedMemory, keys },
  });
  const cases: Array<{
    name: string;
    pod: ReturnType<typeof withRecord>;
    now: number;
    role?: string;
    rewrite: boolean;
  }> = [
    { name: 'as written: nothing', pod: withRecord(1_000_000, 10), now: T0 + 120_000, rewrite: false },
    {
      name: 'memory moved 3% two minutes later: nothing',
      pod: withRecord(970_000, 10),
      now: T0 + 120_000,
      rewrite: false,
    },
    {
      name: 'keys moved 50% ten seconds later: not yet',
      pod: withRecord(1_000_000, 20),
      now: T0 + 10_000,
      rewrite: false,
    },
    {
      name: 'keys moved 50% a minute later: rewritten',
      pod: withRecord(1_000_000, 20),
      now: T0 + 60_000,
      rewrite: true,
    },
    {
      name: 'the label says replica: only the label is set',
      pod: withRecord(1_000_000, 10, 'replica'),
      now: T0 + 1000,
      role: 'master',
      rewrite: false,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const w = decideRecord(topology, c.pod, c.now);
      assert.equal(w?.role, c.role);
      assert.equal(w?.record !== undefined, c.rewrite, JSON.stringify(w));
    });
  }
  await t.test('slots changed: rewritten at once', () => {
    const moved = world(healthy(3, [[[0, 5000]], [[5001, 10922]], [[10923, 16383]]]));
    const w = decideRecord(
      buildTopology(moved),
      { ...moved.find((p) => p.name === 'c-shard-0-0')!, roleLabel: 'master', record: written },
      T0 + 1000,
    );
    assert.deepEqual(readClusterNodeRecord(w?.record)?.slots, [[0, 5000]]);
  });
  await t.test("a pod whose node does not answer: the cluster's view of it, link down, last figures kept", () => {
    const silent = world(healthy(3, THREE).map((n) => (n.id === id('m0') ? { ...n, silent: true, fail: true } : n)));
    const pod = {
      ...silent.find((p) => p.name === 'c-shard-0-0')!,
      roleLabel: 'master',
      record: { ...written, keys: 77 },
    };
    const w = decideRecord(buildTopology(silent), pod, T0 + 1000);
    const r = readClusterNodeRecord(w?.record)!;
    assert.equal(r.linkUp, false);
    assert.equal(r.keys, 77);
    assert.equal(r.role, 'master');
  });
  await t.test(
    'a failed master whose slots its replica took over: labelled replica while it is down, one master label per shard',
    () => {
      const nodes = healthy(3, THREE).map((n) =>
        n.id === id('m0')
          ? { ...n, silent: true, fail: true, slots: [] }
          : n.id === id('r0')
            ? { ...n, role: 'master' as const, slots: THREE[0]!, epoch: 9 }
            : n,
      );
      const after = world(nodes);
      const topology = buildTopology(after);
      const dead = { ...after.find((p) => p.name === 'c-shard-0-0')!, roleLabel: 'master', record: written };
      const w = decideRecord(topology, dead, T0 + 1000)!;
      assert.equal(w.role, 'replica');
      const r = readClusterNodeRecord(w.record)!;
      assert.equal(r.role, 'replica');
      assert.deepEqual(r.slots, []);
      assert.equal(r.linkUp, false);
      const promoted = { ...after.find((p) => p.name === 'c-shard-0-1')!, roleLabel: 'replica' };
      assert.equal(decideRecord(topology, promoted, T0 + 1000)?.role, 'master');
    },
  );
});

test('parsing what Redis 7.0 answers', () => {
  const text = [
    '50efdfe6be8fe95bce9443d46d384da0fe3432b1 127.0.39.5:6379@16379 slave 6c36e870787de187bce4976e9aaff1cad43b237e 0 1796363366031 2 connected',
    '6c36e870787de187bce4976e9aaff1cad43b237e 127.0.39.2:6379@16379 myself,master - 0 1796363365000 2 connected 5461-10922 [5470->-31023dae2d98f92337d4f1725afdc908256c3c6f] [1-<-adec6ed5557b4f37c0806ba5755c064dcdf8d93f]',
    'adec6ed5557b4f37c0806ba5755c064dcdf8d93f 127.0.39.1:6379@16379 master,fail - 1796363364119 1796363363616 1 disconnected',
    'f98c1394d357b6bb32e0e632ccff98a4cdb11b7e :0@0 master,fail?,noaddr - 0 0 6 disconnected 0-5460 16000',
    '',
  ].join('\n');
  const [replica, me, failed, noaddr] = parseClusterNodes(text);
  assert.equal(replica!.role, 'replica');
  assert.equal(replica!.masterId, '6c36e870787de187bce4976e9aaff1cad43b237e');
  assert.equal(me!.myself, true);
  assert.deepEqual(me!.slots, [[5461, 10922]]);
  assert.deepEqual(me!.migrating, [[5470, '31023dae2d98f92337d4f1725afdc908256c3c6f']]);
  assert.deepEqual(me!.importing, [[1, 'adec6ed5557b4f37c0806ba5755c064dcdf8d93f']]);
  assert.equal(failed!.fail, true);
  assert.equal(failed!.connected, false);
  // ping-sent and pong-recv: the viewer's clock (ms) of the ping still unanswered, and of the last pong.
  assert.equal(failed!.pingSent, 1796363364119);
  assert.equal(failed!.pongRecv, 1796363363616);
  assert.equal(replica!.pingSent, 0);
  assert.equal(replica!.pongRecv, 1796363366031);
  assert.equal(noaddr!.pfail, true);
  assert.equal(noaddr!.noaddr, true);
  assert.deepEqual(noaddr!.slots, [
    [0, 5460],
    [16000, 16000],
  ]);

  const info = parseNodeInfo(
    '# Replication\r\nrole:slave\r\nmaster_host:10.0.0.7\r\nmaster_link_status:up\r\nmaster_sync_in_progress:0\r\nslave_repl_offset:4242\r\n# Memory\r\nused_memory:2048\r\nmaxmemory:1048576\r\n# Keyspace\r\ndb0:keys=12,expires=0,avg_ttl=0\r\n',
    'cluster_state:ok\r\ncluster_slots_assigned:16384\r\n',
  );
  assert.deepEqual(info, {
    role: 'replica',
    linkUp: true,
    syncing: false,
    masterHost: '10.0.0.7',
    offset: 4242,
    usedMemory: 2048,
    maxMemory: 1048576,
    keys: 12,
    clusterOk: true,
  });
  assert.equal(
    clusterNodeRecord(
      readClusterNodeRecord(
        clusterNodeRecord({
          id: id('a'),
          role: 'master',
          slots: [[0, 1]],
          masterId: null,
          linkUp: true,
          usedMemory: 1,
          maxMemory: 2,
          keys: 3,
          at: '2026-01-01T00:00:00.000Z',
        }),
      )!,
    ).length > 0,
    true,
  );
});
