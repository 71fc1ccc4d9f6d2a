// Pure: which shard a Redis is in, which live instance should hold a shard, and who is live.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  foldSightings,
  liveMembers,
  ownerOf,
  shardLeaseName,
  shardOf,
} from '../../../../src/sidecar/redis/decide/shards.ts';

test('shardOf: stable, in range, and spread over the shards', () => {
  assert.equal(shardOf('default', 'cache', 1), 0);
  assert.equal(shardOf('default', 'cache', 8), shardOf('default', 'cache', 8));
  const counts = new Array<number>(8).fill(0);
  for (let i = 0; i < 800; i++) counts[shardOf(`ns-${i % 7}`, `redis-${i}`, 8)]!++;
  for (const c of counts)
    assert.ok(c > 60 && c < 140, `every shard gets a fair part of 800 Redis: ${counts.join(' ')}`);
});

test('ownerOf: the same owner whatever the order; a member leaving moves only its shards', () => {
  const members = ['sidecar-a', 'sidecar-b', 'sidecar-c'];
  const before = Array.from({ length: 16 }, (_, s) => ownerOf(s, members));
  assert.deepEqual(
    Array.from({ length: 16 }, (_, s) => ownerOf(s, [...members].reverse())),
    before,
  );
  for (const m of members) assert.ok(before.includes(m), `${m} owns some of 16 shards: ${before.join(' ')}`);
  const after = Array.from({ length: 16 }, (_, s) => ownerOf(s, ['sidecar-a', 'sidecar-c']));
  for (let s = 0; s < 16; s++)
    if (before[s] !== 'sidecar-b') assert.equal(after[s], before[s], `shard ${s} stays where it was`);
  assert.ok(!after.includes('sidecar-b'));
  assert.equal(ownerOf(3, []), null);
});

test('shardLeaseName: one shard keeps the single Lease of before', () => {
  assert.equal(shardLeaseName('redis-operator', 0, 1), 'redis-operator');
  assert.equal(shardLeaseName('redis-operator', 2, 4), 'redis-operator-shard-2');
});

test('liveMembers: by our own clock since the Lease last changed; released or silent members are out', async (t) => {
  const cases = [
    {
      name: 'renewed 1 s ago',
      listed: [{ identity: 'a', resourceVersion: '2', holder: 'a' }],
      prevRv: '1',
      prevAt: 0,
      now: 10_000,
      want: ['a'],
    },
    {
      name: 'unchanged for the lease duration: dead',
      listed: [{ identity: 'a', resourceVersion: '1', holder: 'a' }],
      prevRv: '1',
      prevAt: 7_000,
      now: 10_000,
      want: [],
    },
    {
      name: 'unchanged, within the lease duration',
      listed: [{ identity: 'a', resourceVersion: '1', holder: 'a' }],
      prevRv: '1',
      prevAt: 8_000,
      now: 10_000,
      want: ['a'],
    },
    {
      name: 'released (empty holder): gone at once',
      listed: [{ identity: 'a', resourceVersion: '2', holder: '' }],
      prevRv: '1',
      prevAt: 9_000,
      now: 10_000,
      want: [],
    },
    {
      name: 'first seen: live for one lease duration',
      listed: [{ identity: 'a', resourceVersion: '5', holder: 'a' }],
      prevRv: null,
      prevAt: 0,
      now: 10_000,
      want: ['a'],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const prev = new Map(
        c.prevRv === null ? [] : [['a', { resourceVersion: c.prevRv, holder: 'a', changedAt: c.prevAt }]],
      );
      assert.deepEqual(liveMembers(foldSightings(prev, c.listed, c.now), c.now, 3000), c.want);
    });
  }
  await t.test('this instance is always live to itself', () =>
    assert.deepEqual(liveMembers(new Map(), 0, 3000, 'me'), ['me']),
  );
});
