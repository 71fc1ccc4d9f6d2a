// spec.restore of a RedisCluster: resolved from a completed RedisBackup of a RedisCluster with as
// many shards, held (no shard StatefulSet) until the ConfigMap carries every shard's location,
// pod 0 of each shard restoring its shard's snapshot, and Completed only on each pod 0's word.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { RESTORE_CONTAINER, shardRestoreLocationKey } from '../../../src/api/backup.ts';
import { customizeRedisCluster, type KubeObject } from '../../../src/hook/index.ts';
import { dryRunMissing, rewrites, startDryRunServer, type DryRunServer } from '../../k8s/dry-run.ts';
import { get, type Json } from '../common/helpers.ts';
import { applied, articleSpec, named, NAME, NS, podName, redisCluster, sync } from './helpers.ts';

const STORAGE = { s3: { bucket: 'redis-backups', region: 'us-east-1', prefix: '' } };
const EVEN = ['0-5460', '5461-10922', '10923-16383'];
const loc = (i: number) => `s3://redis-backups/rediscluster~${NS}~old~shard-${i}/20261201T100000Z-${i}.rdb`;

function backup(status: Json, spec: Json = { redisCluster: 'old' }): KubeObject {
  return {
    apiVersion: 'redis.example.com/v1',
    kind: 'RedisBackup',
    metadata: { name: 'before-upgrade', namespace: NS },
    spec,
    status,
  } as KubeObject;
}
const completed = (slots: string[] = EVEN, extra: Json = {}) =>
  backup({
    phase: 'Completed',
    storage: STORAGE,
    shards: slots.map((s, shard) => ({ shard, job: `j-${shard}`, phase: 'Completed', location: loc(shard), slots: s })),
    ...extra,
  });
const spec = (shards = 3): Json => ({
  ...articleSpec(),
  master: { replicas: shards },
  restore: { backup: 'before-upgrade' },
});
const parent = (status?: Json, s: Json = spec()) => redisCluster(s, status ? { status } : {});
const shardSets = (children: readonly KubeObject[]) => children.filter((c) => c.kind === 'StatefulSet');

test('it waits for, or refuses, a backup it cannot restore, and creates no shard until it can', async (t) => {
  const cases: Array<[string, KubeObject[], Json, string, RegExp]> = [
    ['no such RedisBackup', [], spec(), 'Pending', /not found/],
    ['still running', [backup({ phase: 'Running' })], spec(), 'Pending', /waiting for it to complete/],
    ['failed', [backup({ phase: 'Failed' })], spec(), 'Failed', /failed: nothing to restore/],
    [
      'a backup of a Redis',
      [backup({ phase: 'Completed', location: loc(0) }, { redis: 'r' })],
      spec(),
      'Failed',
      /backup of a Redis/,
    ],
    ['another shard count', [completed()], spec(4), 'Failed', /has 3 shards and master.replicas is 4/],
    [
      'a location outside the allow-list',
      [
        backup({
          phase: 'Completed',
          storage: STORAGE,
          shards: [0, 1, 2].map((i) => ({ shard: i, location: i === 1 ? 's3://b/../x.rdb' : loc(i), slots: EVEN[i] })),
        }),
      ],
      spec(),
      'Failed',
      /shard 1: location/,
    ],
    ['slots not whole', [completed(['0-5460', '5461-10922', '10923-16000'])], spec(), 'Failed', /cover 16001 of 16384/],
    [
      'no storage recorded, none in spec.backup',
      [completed(EVEN, { storage: undefined })],
      (({ backup: _b, ...rest }) => rest)(spec()),
      'Failed',
      /records no storage .* spec\.backup\.storage is not set/,
    ],
    [
      'no storage recorded: spec.backup.storage reaches it',
      [completed(EVEN, { storage: undefined })],
      spec(),
      'Restoring',
      /waiting for ConfigMap/,
    ],
  ];
  for (const [name, related, s, phase, message] of cases) {
    await t.test(name, () => {
      const r = sync({ parent: parent(undefined, s), related });
      assert.equal(r.status.restore?.phase, phase);
      assert.match(r.status.restore?.message ?? '', message);
      assert.deepEqual(shardSets(r.children), []);
      assert.ok(named(r.children).includes(`ConfigMap/${NAME}-config`));
    });
  }
});

test('resolved: the ConfigMap carries each shard location first, then the shards come with pod 0 restoring', () => {
  const first = sync({ parent: parent(), related: [completed()] });
  assert.equal(first.status.restore?.phase, 'Restoring');
  assert.match(first.status.restore?.message ?? '', /waiting for ConfigMap/);
  assert.deepEqual(shardSets(first.children), []);
  assert.deepEqual(
    first.status.restore?.shards?.map((s) => [s.shard, s.slots]),
    EVEN.map((s, i) => [i, s]),
  );
  const config = first.children.find((c) => c.kind === 'ConfigMap')!;
  [0, 1, 2].forEach((i) => assert.equal(get(config, 'data', shardRestoreLocationKey(i)), loc(i)));

  // The RedisBackup is gone by now: what status.restore recorded is enough.
  const second = sync({ parent: parent(first.status as Json), children: applied(first.children), related: [] });
  assert.equal(second.status.restore?.phase, 'Restoring');
  const sets = shardSets(second.children);
  assert.equal(sets.length, 3);
  sets.forEach((set, shard) => {
    const init = get(set, 'spec', 'template', 'spec', 'initContainers', 0) as Json;
    assert.equal(init['name'], RESTORE_CONTAINER);
    const env = init['env'] as Array<{ name: string; value?: string; valueFrom?: Json }>;
    assert.equal(
      get(
        env.find((e) => e.name === 'RESTORE_LOCATION'),
        'valueFrom',
        'configMapKeyRef',
        'key',
      ),
      shardRestoreLocationKey(shard),
    );
    assert.equal(env.find((e) => e.name === 'RESTORE_FIRST_POD_ONLY')?.value, 'yes');
  });
  // Applied again, the template is not changed (no second init container, no rollout).
  const third = sync({ parent: parent(second.status as Json), children: applied(second.children), related: [] });
  assert.deepEqual(
    shardSets(third.children).map((s) => (get(s, 'spec', 'template', 'spec', 'initContainers') as Json[]).length),
    [1, 1, 1],
  );
});

function pod0(shard: number, result: Json | undefined, exitCode = 0): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(shard, 0),
      namespace: NS,
      labels: {
        'app.kubernetes.io/name': 'redis-cluster',
        'app.kubernetes.io/instance': NAME,
        'app.kubernetes.io/managed-by': 'redis-operator',
        'redis.example.com/shard': String(shard),
      },
    },
    status:
      result === undefined
        ? {}
        : {
            initContainerStatuses: [
              { name: RESTORE_CONTAINER, state: { terminated: { exitCode, message: JSON.stringify(result) } } },
            ],
          },
  } as KubeObject;
}

test("the outcome from each shard's pod 0", async (t) => {
  const start = sync({ parent: parent(), related: [completed()] });
  const running = sync({ parent: parent(start.status as Json), children: applied(start.children) });
  const ok = (i: number) => pod0(i, { ok: true, restored: true, restoredFrom: loc(i) });
  const cases: Array<[string, KubeObject[], string, RegExp, boolean]> = [
    ['every pod 0 restored its shard', [ok(0), ok(1), ok(2)], 'Completed', /each of the 3 shards/, false],
    ['one not yet', [ok(0), ok(1), pod0(2, undefined)], 'Restoring', /loads its shard's snapshot/, true],
    [
      'one started on other data',
      [
        ok(0),
        pod0(1, { ok: true, restored: false, reason: '/data holds Redis data (dump.rdb): nothing restored' }),
        ok(2),
      ],
      'Failed',
      /shard-1-0: \/data holds Redis data/,
      true,
    ],
    [
      'one failed for good',
      [ok(0), ok(1), pod0(2, { ok: false, error: 'no such key' }, 2)],
      'Failed',
      /no such key/,
      true,
    ],
  ];
  for (const [name, pods, phase, message, keys] of cases) {
    await t.test(name, () => {
      const r = sync({ parent: parent(running.status as Json), children: applied(running.children), related: pods });
      assert.equal(r.status.restore?.phase, phase);
      assert.match(r.status.restore?.message ?? '', message);
      const config = r.children.find((c) => c.kind === 'ConfigMap')!;
      assert.equal(get(config, 'data', shardRestoreLocationKey(0)) !== undefined, keys);
      assert.equal(shardSets(r.children).length, 3);
    });
  }
  await t.test('Completed is final: no location comes back, whatever the pods say later', () => {
    const done = sync({
      parent: parent(running.status as Json),
      children: applied(running.children),
      related: [ok(0), ok(1), ok(2)],
    });
    const later = sync({ parent: parent(done.status as Json), children: applied(done.children), related: [] });
    assert.equal(later.status.restore?.phase, 'Completed');
    assert.equal(
      get(
        later.children.find((c) => c.kind === 'ConfigMap')!,
        'data',
        shardRestoreLocationKey(0),
      ),
      undefined,
    );
  });
});

test('customize asks for the RedisBackup it restores from', () => {
  const c = customizeRedisCluster({ controller: {}, parent: parent() } as never);
  assert.deepEqual(c.relatedResources.at(-1), {
    apiVersion: 'redis.example.com/v1',
    resource: 'redisbackups',
    namespace: NS,
    names: ['before-upgrade'],
  });
});

describe(
  'the real kube-apiserver accepts the restored shards as returned (dry-run create, strict field validation)',
  { skip: dryRunMissing() ?? false },
  () => {
    let server: DryRunServer;
    before(async () => (server = await startDryRunServer({ namespaces: [NS] })));
    after(() => server?.close());
    test('the ConfigMap with every location, the StatefulSets with the restore init container', async () => {
      const first = sync({ parent: parent(), related: [completed()] });
      const second = sync({ parent: parent(first.status as Json), children: applied(first.children), related: [] });
      const children = second.children.filter((c) => c.kind === 'StatefulSet' || c.kind === 'ConfigMap');
      assert.equal(children.length, 4);
      assert.deepEqual(await server.refusals(children), []);
      for (const child of children)
        assert.deepEqual(
          rewrites(child, (await server.dryRun(child)).object),
          [],
          `${child.kind}/${child.metadata.name}`,
        );
    });
  },
);
