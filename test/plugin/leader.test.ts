// Which sidecar leads a Redis, as `kubectl redis status` finds it: the shard by the sidecar's own
// function, the Lease of that shard (or the single Lease with SHARDS=1), held, expired or unheld
// on the cluster's clock, and what is said when the operator's objects cannot be read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { leaderLines, leaderOf, type LeaseLike } from '../../src/plugin/leader.ts';
import { shardOf } from '../../src/sidecar/redis/decide/shards.ts';

const NOW = Date.parse('2026-12-06T09:00:00Z');
const deployment = (env: Record<string, string>) => ({
  spec: {
    template: {
      spec: {
        containers: [
          { name: 'hook', env: [{ name: 'SHARDS', value: '99' }] },
          { name: 'sidecar', env: Object.entries(env).map(([name, value]) => ({ name, value })) },
        ],
      },
    },
  },
});
const lease = (name: string, holder: string | null, secondsAgo: number, duration = 3): LeaseLike => ({
  metadata: { name },
  spec: {
    holderIdentity: holder,
    renewTime: new Date(NOW - secondsAgo * 1000).toISOString(),
    leaseDurationSeconds: duration,
  },
});
const shardLeases = (holders: Array<string | null>, secondsAgo = 1) =>
  holders
    .map((h, i) => lease(`redis-operator-sidecar-shard-${i}`, h, secondsAgo))
    .concat([lease('redis-operator-sidecar-member-op-a', 'op-a', 1)]);

test('leaderOf', async (t) => {
  const shard = shardOf('apps', 'my-redis', 4);
  const holders = ['op-a', 'op-b', 'op-a', 'op-b'];

  await t.test("SHARDS=4 from the Deployment's sidecar: the shard Lease of the Redis and its holder", () => {
    const l = leaderOf('apps', 'my-redis', deployment({ SHARDS: '4' }), shardLeases(holders), 'redis-operator', NOW);
    assert.ok(l.ok);
    assert.deepEqual(l.view, {
      lease: `redis-operator-sidecar-shard-${shard}`,
      namespace: 'redis-operator',
      shard,
      shards: 4,
      shardsFrom: 'deployment',
      state: 'held',
      holder: holders[shard],
      renewedSecondsAgo: 1,
    });
    assert.deepEqual(leaderLines(l), [
      `  ${holders[shard]} leads it (Lease redis-operator/redis-operator-sidecar-shard-${shard}, shard ${shard} of 4, renewed 1s ago)`,
      `  its log: kubectl logs -n redis-operator ${holders[shard]} -c sidecar`,
    ]);
  });

  await t.test('Redis objects of other names map to other shards, each to its own Lease', () => {
    const seen = new Set<string>();
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) {
      const l = leaderOf('apps', name, deployment({ SHARDS: '4' }), shardLeases(holders), 'redis-operator', NOW);
      assert.ok(l.ok);
      assert.equal(l.view.lease, `redis-operator-sidecar-shard-${shardOf('apps', name, 4)}`);
      seen.add(l.view.lease);
    }
    assert.ok(seen.size > 1);
  });

  await t.test('SHARDS unset (the sidecar default, 1): the single Lease', () => {
    const l = leaderOf(
      'apps',
      'my-redis',
      deployment({}),
      [lease('redis-operator-sidecar', 'op-a', 0)],
      'redis-operator',
      NOW,
    );
    assert.ok(l.ok);
    assert.equal(l.view.lease, 'redis-operator-sidecar');
    assert.equal(l.view.holder, 'op-a');
    assert.match(
      leaderLines(l)[0]!,
      /^ {2}op-a leads it \(Lease redis-operator\/redis-operator-sidecar, renewed 0s ago\)$/,
    );
  });

  await t.test('LEASE_NAME changes the Lease names', () => {
    const l = leaderOf(
      'apps',
      'my-redis',
      deployment({ SHARDS: '4', LEASE_NAME: 'ops' }),
      [lease(`ops-shard-${shard}`, 'op-c', 0)],
      'redis-operator',
      NOW,
    );
    assert.ok(l.ok);
    assert.equal(l.view.lease, `ops-shard-${shard}`);
    assert.equal(l.view.holder, 'op-c');
  });

  await t.test('the Deployment unreadable: SHARDS from the shard Leases that exist, and said so', () => {
    const l = leaderOf('apps', 'my-redis', null, shardLeases(holders), 'redis-operator', NOW);
    assert.ok(l.ok);
    assert.equal(l.view.shards, 4);
    assert.equal(l.view.shardsFrom, 'leases');
    assert.match(leaderLines(l)[0]!, /SHARDS from the Leases/);
  });

  await t.test('a holder that stopped renewing is not leading: expired, with its last log', () => {
    const stale = shardLeases(holders, 40);
    const l = leaderOf('apps', 'my-redis', deployment({ SHARDS: '4' }), stale, 'redis-operator', NOW);
    assert.ok(l.ok);
    assert.equal(l.view.state, 'expired');
    assert.match(
      leaderLines(l)[0]!,
      new RegExp(`nobody leads it: ${holders[shard]} held .* stopped renewing it, renewed 40s ago`),
    );
  });

  await t.test('a released Lease (no holder), or none at all: unheld', () => {
    const released = shardLeases(holders.map((h, i) => (i === shard ? null : h)));
    for (const leases of [
      released,
      released.filter((x) => x.metadata?.name !== `redis-operator-sidecar-shard-${shard}`),
    ]) {
      const l = leaderOf('apps', 'my-redis', deployment({ SHARDS: '4' }), leases, 'redis-operator', NOW);
      assert.ok(l.ok);
      assert.equal(l.view.state, 'unheld');
      assert.match(leaderLines(l)[0]!, /nobody leads it: .* has no holder/);
    }
  });

  await t.test('the Leases unreadable, or no operator there: unknown, naming the namespace', () => {
    const unreadable = leaderOf('apps', 'my-redis', null, null, 'ops-ns', NOW);
    assert.equal(unreadable.ok, false);
    assert.match(leaderLines(unreadable)[0]!, /unknown: the Leases in namespace "ops-ns" could not be read/);
    const none = leaderOf('apps', 'my-redis', null, [], 'ops-ns', NOW);
    assert.equal(none.ok, false);
    assert.match(
      leaderLines(none)[0]!,
      /no Lease redis-operator-sidecar or redis-operator-sidecar-shard-N in namespace "ops-ns"/,
    );
  });
});

test('-o leader: the holding pod alone, or an error saying why there is none', async (t) => {
  const { leaderName } = await import('../../src/plugin/status.ts');
  const shard = shardOf('apps', 'my-redis', 4);
  const holders = ['op-a', 'op-b', 'op-a', 'op-b'];
  await t.test('held', () =>
    assert.equal(
      leaderName(
        leaderOf('apps', 'my-redis', deployment({ SHARDS: '4' }), shardLeases(holders), 'redis-operator', NOW),
      ),
      holders[shard],
    ),
  );
  await t.test('expired', () =>
    assert.throws(
      () =>
        leaderName(
          leaderOf('apps', 'my-redis', deployment({ SHARDS: '4' }), shardLeases(holders, 60), 'redis-operator', NOW),
        ),
      /no sidecar leads it now/,
    ),
  );
  await t.test('unknown', () =>
    assert.throws(() => leaderName(leaderOf('apps', 'my-redis', null, null, 'redis-operator', NOW)), /unknown/),
  );
});
