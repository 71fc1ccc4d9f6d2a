// The names rule of api/name-conflict.ts: which parents of the other kind could make children
// with the same names (rivalNames must list every one, in both directions, for arbitrary names),
// which of two keeps them (the older, then the smaller uid), and the status the sidecar reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  NAME_CONFLICT_REASON,
  nameClaims,
  nameConflictOf,
  nameRefusalOf,
  olderThan,
  refusedForName,
  rivalNames,
  sharedClaims,
  type ParentFacts,
} from '../../src/api/name-conflict.ts';

const R = (name: string) => ({ kind: 'Redis' as const, name });
const C = (name: string) => ({ kind: 'RedisCluster' as const, name });

test('shared child names between a Redis and a RedisCluster', async (t) => {
  const table: Array<[string, string, string[]]> = [
    [
      'x',
      'x',
      [
        'ConfigMap/x-config',
        'PodMonitor/x',
        'PrometheusRule/x',
        'Secret/x-auth',
        'Secret/x-exporter',
        'Secret/x-operator',
        'Secret/x-tls',
        'Service/x-headless',
        'Service/x-metrics',
      ],
    ],
    // The RedisCluster's client Service is named as itself: Redis x's master Service is x-master.
    ['x', 'x-master', ['Service/x-master']],
    ['x', 'x-replicas', ['Service/x-replicas']],
    ['x', 'x-headless', ['Service/x-headless']],
    ['x', 'x-metrics', ['Service/x-metrics']],
    // Redis x-shard-2's backup CronJob is RedisCluster x's shard 2's.
    ['x-shard-2', 'x', ['CronJob/x-shard-2-backup']],
    ['x-shard-63', 'x', ['CronJob/x-shard-63-backup']],
    ['x-shard-64', 'x', []],
    ['x-shard-02', 'x', []],
    ['x', 'y', []],
    ['x', 'x-replica', []],
    ['x-master', 'x', []],
  ];
  for (const [redis, cluster, shared] of table)
    await t.test(`Redis ${redis} and RedisCluster ${cluster}`, () => {
      assert.deepEqual(sharedClaims(R(redis), C(cluster)), shared);
      assert.deepEqual(sharedClaims(C(cluster), R(redis)), shared);
      assert.equal(rivalNames('Redis', redis).includes(cluster), shared.length > 0);
      assert.equal(rivalNames('RedisCluster', cluster).includes(redis), shared.length > 0);
    });
  await t.test('two parents of one kind never conflict (the API server keeps their names apart)', () => {
    assert.deepEqual(sharedClaims(R('x'), R('x')), []);
    assert.deepEqual(sharedClaims(C('x'), C('x')), []);
  });
});

/** DNS-label-like names, and names made from another by the suffixes that matter. */
const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,12}[a-z0-9])?$/);
const derived = (base: string) =>
  fc.oneof(
    fc.constant(base),
    fc
      .constantFrom('-master', '-replicas', '-headless', '-metrics', '-replica', '-config', '-auth')
      .map((s) => base + s),
    fc.integer({ min: 0, max: 70 }).map((i) => `${base}-shard-${i}`),
    label,
  );

test('rivalNames lists every other-kind name whose children could share one, both ways (property)', () => {
  fc.assert(
    fc.property(
      label.chain((a) => fc.tuple(fc.constant(a), derived(a))),
      fc.boolean(),
      ([a, b], redisFirst) => {
        const [redis, cluster] = redisFirst ? [a, b] : [b, a];
        const collide = sharedClaims(R(redis), C(cluster)).length > 0;
        assert.equal(rivalNames('Redis', redis).includes(cluster), collide, `Redis ${redis} / RedisCluster ${cluster}`);
        assert.equal(rivalNames('RedisCluster', cluster).includes(redis), collide, `${cluster} / ${redis}`);
      },
    ),
    { numRuns: 3000 },
  );
});

test('claims are sorted and without repeats, and a RedisCluster claims all 64 shards', () => {
  for (const claims of [nameClaims('Redis', 'a'), nameClaims('RedisCluster', 'a')]) {
    assert.deepEqual(claims, [...new Set(claims)].sort());
  }
  assert.ok(nameClaims('RedisCluster', 'a').includes('StatefulSet/a-shard-63'));
  assert.ok(!nameClaims('RedisCluster', 'a').includes('StatefulSet/a-shard-64'));
});

const facts = (kind: ParentFacts['kind'], name: string, at?: string, uid?: string): ParentFacts => ({
  kind,
  name,
  creationTimestamp: at,
  uid,
});

test('which of two parents is older', async (t) => {
  const table: Array<[string, ParentFacts, ParentFacts, boolean]> = [
    [
      'earlier time',
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'b'),
      facts('Redis', 'x', '2026-01-01T00:00:01Z', 'a'),
      true,
    ],
    [
      'later time',
      facts('Redis', 'x', '2026-01-02T00:00:00Z', 'a'),
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'b'),
      false,
    ],
    [
      'same second: smaller uid',
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'a'),
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'b'),
      true,
    ],
    [
      'same second: larger uid',
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'b'),
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'a'),
      false,
    ],
    [
      'no time counts as youngest',
      facts('Redis', 'x', undefined, 'a'),
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'b'),
      false,
    ],
    [
      'identical: neither',
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'a'),
      facts('Redis', 'x', '2026-01-01T00:00:00Z', 'a'),
      false,
    ],
  ];
  for (const [label, a, b, older] of table) await t.test(label, () => assert.equal(olderThan(a, b), older));
});

test('olderThan is a strict order: of two distinct parents exactly one is older (property)', () => {
  const arb = fc.record({
    kind: fc.constantFrom('Redis' as const, 'RedisCluster' as const),
    name: fc.constant('x'),
    creationTimestamp: fc.option(
      fc.integer({ min: 0, max: 5 }).map((s) => `2026-01-01T00:00:0${s}Z`),
      { nil: undefined },
    ),
    uid: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
  });
  fc.assert(
    fc.property(arb, arb, (a, b) => {
      const same = a.creationTimestamp === b.creationTimestamp && a.uid === b.uid;
      assert.equal(olderThan(a, b) && olderThan(b, a), false);
      if (!same) assert.equal(olderThan(a, b) || olderThan(b, a), true);
    }),
  );
});

test('the verdict on a parent among its rivals', async (t) => {
  const self = facts('RedisCluster', 'x', '2026-01-02T00:00:00Z', 'u2');
  await t.test('an older Redis of the same name refuses it, named in the message', () => {
    const v = nameConflictOf(self, [facts('Redis', 'x', '2026-01-01T00:00:00Z', 'u1')]);
    assert.ok(v);
    assert.equal(v.holder.name, 'x');
    assert.match(v.message, /^Redis x is older and makes children with the same names as this RedisCluster would/);
    assert.match(v.message, /ConfigMap\/x-config/);
    assert.match(v.message, /delete this RedisCluster and create it under another name/);
  });
  await t.test('a younger Redis does not', () => {
    assert.equal(nameConflictOf(self, [facts('Redis', 'x', '2026-01-03T00:00:00Z', 'u3')]), undefined);
  });
  await t.test('a Redis whose names do not meet does not', () => {
    assert.equal(nameConflictOf(self, [facts('Redis', 'y', '2026-01-01T00:00:00Z', 'u1')]), undefined);
  });
  await t.test('a parent of its own kind does not', () => {
    assert.equal(nameConflictOf(self, [facts('RedisCluster', 'x', '2026-01-01T00:00:00Z', 'u1')]), undefined);
  });
  await t.test('of several older rivals the oldest is named', () => {
    const v = nameConflictOf(facts('Redis', 'x', '2026-01-05T00:00:00Z', 'u9'), [
      facts('RedisCluster', 'x-master', '2026-01-03T00:00:00Z', 'u3'),
      facts('RedisCluster', 'x', '2026-01-02T00:00:00Z', 'u2'),
    ]);
    assert.equal(v?.holder.name, 'x');
  });
  await t.test('the two sides agree: exactly one of a colliding pair is refused', () => {
    const redis = facts('Redis', 'x', '2026-01-01T00:00:00Z', 'u1');
    assert.equal(nameConflictOf(redis, [self]), undefined);
    assert.ok(nameConflictOf(self, [redis]));
  });
});

test('the refusal as the sidecar reads it from status', async (t) => {
  const ready = (status: string, reason: string, message = 'why') => ({
    conditions: [
      { type: 'SpecValid', status: 'False', reason },
      { type: 'Ready', status, reason, message },
    ],
  });
  const table: Array<[string, unknown, string | undefined]> = [
    ['Ready False NameConflict', ready('False', NAME_CONFLICT_REASON, 'Redis x is older'), 'Redis x is older'],
    ['Ready False InvalidSpec', ready('False', 'InvalidSpec'), undefined],
    ['Ready True', ready('True', NAME_CONFLICT_REASON), undefined],
    ['no status', undefined, undefined],
    ['conditions not a list', { conditions: 'x' }, undefined],
    ['junk in the list', { conditions: [null, 3, 'Ready'] }, undefined],
  ];
  for (const [label, status, message] of table)
    await t.test(label, () => {
      assert.equal(nameRefusalOf(status), message);
      assert.equal(refusedForName(status), message !== undefined);
    });
});
