// The plugin's decisions: the objects each command writes, what a waited-for state means, and the error messages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ops from '../../src/plugin/ops.ts';

test('switchover request', async (t) => {
  const cases: Array<[string, string | undefined, string | undefined, string]> = [
    ['a named target', 'r-1', undefined, 'r-1'],
    ['no target is any', undefined, 'r-1', 'any'],
    ['a repeat gets a tag so it runs again', 'r-1', 'r-1', 'r-1@t'],
    ['a repeat of a tagged one too', undefined, 'any@x', 'any@t'],
  ];
  for (const [name, to, current, want] of cases)
    await t.test(name, () => assert.equal(ops.switchoverRequest(to, current, 't'), want));
  await t.test('the documented annotation', () =>
    assert.deepEqual(ops.switchoverPatch('r-1'), {
      metadata: { annotations: { 'redis.example.com/switchover': 'r-1' } },
    }),
  );
});

test('switchover progress', async (t) => {
  const cases: Array<[string, string | undefined, ops.Progress['state']]> = [
    ['not taken yet', undefined, 'waiting'],
    ['an older request', 'r-0: Done: r-0 is master', 'waiting'],
    ['running', 'r-1: Running: catching up', 'waiting'],
    ['done', 'r-1: Done: r-1 is master', 'done'],
    ['refused with the reason', 'r-1: Refused: r-1 is not Ready', 'refused'],
  ];
  for (const [name, s, want] of cases)
    await t.test(name, () =>
      assert.equal(ops.switchoverProgress('r-1', s === undefined ? {} : { switchover: s }).state, want),
    );
  await t.test('the refusal keeps the reason', () =>
    assert.match(ops.switchoverProgress('r-1', { switchover: 'r-1: Refused: r-1 is not Ready' }).line, /not Ready/),
  );
});

test('a RedisCluster switchover names a shard or a pod, exactly one', async (t) => {
  const cases: Array<[string, string | undefined, string | undefined, string]> = [
    ['a shard', undefined, '2', 'shard-2'],
    ['a pod', 'c-shard-1-2', undefined, 'c-shard-1-2'],
    ['neither', undefined, undefined, 'refused: a RedisCluster has a master per shard'],
    ['both', 'c-shard-1-2', '1', 'refused: a RedisCluster has a master per shard'],
    ['not a number', undefined, 'one', 'refused: --shard one: not a shard number'],
  ];
  for (const [name, to, shard, want] of cases)
    await t.test(name, () => {
      const got = ops.clusterSwitchoverTarget(to, shard);
      assert.ok((got.ok ? got.target : `refused: ${got.reason}`).startsWith(want));
    });
  await t.test('its progress is read from the record annotation, for this request only', () => {
    assert.equal(ops.switchoverRecordProgress('shard-2', 'shard-1: Done: x').state, 'waiting');
    assert.equal(ops.switchoverRecordProgress('shard-2', 'shard-2: Done: c-shard-2-1 is the master').state, 'done');
    assert.equal(ops.switchoverRecordProgress('shard-2', 'shard-2: Refused: busy').state, 'refused');
  });
});

const cond = (type: string, status: 'True' | 'False') => ({ type, status, reason: 'R', message: 'm' });
test('hibernate and wake progress', async (t) => {
  const cases: Array<[string, boolean, object, ops.Progress['state']]> = [
    ['hibernating', true, { phase: 'Hibernated', conditions: [cond('Hibernated', 'False')] }, 'waiting'],
    ['hibernated', true, { phase: 'Hibernated', conditions: [cond('Hibernated', 'True')] }, 'done'],
    ['waking', false, { phase: 'Pending', conditions: [cond('Ready', 'False')] }, 'waiting'],
    ['awake', false, { phase: 'Running', conditions: [cond('Ready', 'True')] }, 'done'],
    [
      'a RedisCluster waiting for its reshard',
      true,
      { phase: 'Resharding', conditions: [cond('Hibernated', 'False')] },
      'waiting',
    ],
    ['a RedisCluster hibernated', true, { phase: 'Hibernated', conditions: [cond('Hibernated', 'True')] }, 'done'],
    [
      'a RedisCluster waking',
      false,
      { phase: 'Pending', conditions: [cond('Hibernated', 'False'), cond('Ready', 'False')] },
      'waiting',
    ],
  ];
  for (const [name, on, status, want] of cases)
    await t.test(name, () => assert.equal(ops.hibernateProgress(on, status).state, want));
  await t.test('a merge patch of spec.hibernate', () =>
    assert.deepEqual(ops.hibernatePatch(true), { spec: { hibernate: true } }),
  );
});

test('backup and restore objects', async (t) => {
  await t.test('a RedisBackup naming the Redis', () =>
    assert.deepEqual(ops.backupObject('r', 'ns', 'b'), {
      apiVersion: 'redis.example.com/v1',
      kind: 'RedisBackup',
      metadata: { name: 'b', namespace: 'ns' },
      spec: { redis: 'r' },
    }),
  );
  await t.test('a new Redis with spec.restore.backup', () =>
    assert.deepEqual(ops.restoreObject('new', 'ns', { backup: 'b' }, { replicas: 1 }).spec, {
      replicas: 1,
      restore: { backup: 'b' },
    }),
  );
  await t.test('or spec.restore.location', () =>
    assert.deepEqual(ops.restoreObject('new', 'ns', { location: 's3://b/k.rdb' }, {}).spec, {
      restore: { location: 's3://b/k.rdb' },
    }),
  );
  const backups: Array<[string, object | undefined, ops.Progress['state']]> = [
    ['no status yet', undefined, 'waiting'],
    ['running', { phase: 'Running' }, 'waiting'],
    ['completed', { phase: 'Completed', location: 's3://b/k.rdb', sizeBytes: 5, replicationOffset: 9 }, 'done'],
    ['failed', { phase: 'Failed', reason: 'JobFailed', message: 'no bucket' }, 'refused'],
  ];
  for (const [name, s, want] of backups)
    await t.test(`backup ${name}`, () => assert.equal(ops.backupProgress(s).state, want));
  await t.test('restore completed only when Running', () => {
    assert.equal(ops.restoreProgress({ phase: 'Pending', restore: { phase: 'Completed' } as never }).state, 'waiting');
    assert.equal(ops.restoreProgress({ phase: 'Running', restore: { phase: 'Completed' } as never }).state, 'done');
    assert.equal(
      ops.restoreProgress({ phase: 'Pending', restore: { phase: 'Failed', message: 'x' } as never }).state,
      'refused',
    );
  });
});

test('errors name the problem', async (t) => {
  const get = { verb: 'get', resource: 'redises', name: 'nope', namespace: 'apps' };
  const cases: Array<[string, ops.Failure, RegExp, number]> = [
    [
      '404: no such Redis, named with its namespace',
      { code: 404, message: 'not found' },
      /^no such Redis "nope" in namespace "apps"$/,
      3,
    ],
    [
      '403: RBAC, with verb and resource',
      { code: 403, message: 'forbidden' },
      /^not allowed by RBAC: you cannot get redises in namespace "apps"/,
      4,
    ],
    [
      'connection refused: unreachable',
      { code: undefined, errno: 'ECONNREFUSED', message: 'fetch failed' },
      /^the API server is unreachable/,
      5,
    ],
    ['anything else: the verb and the message', { code: 500, message: 'boom' }, /^get redises nope failed: boom$/, 1],
  ];
  for (const [name, f, re, exit] of cases)
    await t.test(name, () => {
      const r = ops.explain(f, get);
      assert.match(r.message, re);
      assert.equal(r.exit, exit);
    });
});

test('operator running', async (t) => {
  const now = Date.parse('2026-12-03T10:00:00Z');
  const lease = (holder: string, renew: string, name = 'redis-operator-sidecar') => ({
    metadata: { name },
    spec: { holderIdentity: holder, renewTime: renew, leaseDurationSeconds: 15 },
  });
  const live = '2026-12-03T09:59:59Z';
  const expired = '2026-12-03T09:50:00Z';
  const cases: Array<[string, object | null, object[] | null, boolean]> = [
    ['no ready pod', { status: { readyReplicas: 0 } }, null, false],
    ['no Lease holder', { status: { readyReplicas: 2 } }, [lease('', live)], false],
    ['an expired Lease', { status: { readyReplicas: 2 } }, [lease('a', expired)], false],
    ['ready and held', { status: { readyReplicas: 2 } }, [lease('a', live)], true],
    ['not readable: not refused', null, null, true],
    [
      'sharded: one shard held is enough',
      null,
      [lease('a', expired, 'redis-operator-sidecar-shard-0'), lease('b', live, 'redis-operator-sidecar-shard-1')],
      true,
    ],
    [
      'sharded: every shard Lease expired',
      null,
      [lease('a', expired, 'redis-operator-sidecar-shard-0'), lease('a', expired, 'redis-operator-sidecar-shard-3')],
      false,
    ],
    [
      'a live member Lease is not an acting one',
      null,
      [lease('a', live, 'redis-operator-sidecar-member-a'), lease('a', expired, 'redis-operator-sidecar-shard-0')],
      false,
    ],
    ['Leases of others only: not checked, not refused', null, [lease('x', expired, 'someone-else')], true],
  ];
  for (const [name, d, l, want] of cases)
    await t.test(name, () => assert.equal(ops.operatorRunning(d, l, now).running, want));
  await t.test('the reason says the operator is not running', () =>
    assert.match(ops.operatorRunning({ status: {} }, null, now).reason, /the operator is not running/),
  );
});

test("the Lease check's clock is the API server's", async (t) => {
  const local = Date.parse('2026-12-03T10:00:10Z');
  const cases: Array<[string, string | undefined, number]> = [
    ["the Date header (the cluster's clock)", 'Thu, 03 Dec 2026 10:00:00 GMT', Date.parse('2026-12-03T10:00:00Z')],
    ['no header: the local clock', undefined, local],
    ['an unparsable header: the local clock', 'soon', local],
  ];
  for (const [name, header, want] of cases) await t.test(name, () => assert.equal(ops.clusterNow(header, local), want));
  await t.test(
    'a user clock 10 s ahead of the cluster: a 3 s Lease renewed a second ago is live on the cluster clock, not on the local one',
    () => {
      const leases = [
        {
          metadata: { name: 'redis-operator-sidecar' },
          spec: { holderIdentity: 'a', renewTime: '2026-12-03T09:59:59Z', leaseDurationSeconds: 3 },
        },
      ];
      assert.equal(ops.operatorRunning(null, leases, local).running, false);
      assert.equal(
        ops.operatorRunning(null, leases, ops.clusterNow('Thu, 03 Dec 2026 10:00:00 GMT', local)).running,
        true,
      );
    },
  );
});

test('bootstrap-without: only pods the bootstrap waits for now, with the data-loss warning', async (t) => {
  const redis = (record?: string): { metadata: { name: string; annotations: Record<string, string> } } => ({
    metadata: { name: 'r', annotations: record === undefined ? {} : { 'redis.example.com/bootstrap-status': record } },
  });
  const waiting = redis('Waiting: r-replica-1 (volume bound, pod Pending), r-master-0 (loading its data set)');
  await t.test('a waited pod: the documented annotation and a warning', () => {
    const v = ops.bootstrapWithout(waiting, ['r-replica-1']);
    assert.ok(v.ok);
    assert.deepEqual(v.patch, { metadata: { annotations: { 'redis.example.com/bootstrap-without': 'r-replica-1' } } });
    assert.match(v.warning, /writes only it held are lost/);
  });
  await t.test('both waited pods', () => {
    const v = ops.bootstrapWithout(waiting, ['r-replica-1', 'r-master-0']);
    assert.ok(v.ok);
    assert.deepEqual(v.pods, ['r-master-0', 'r-replica-1']);
  });
  const refused: Array<[string, ReturnType<typeof redis>, string[], RegExp]> = [
    ['no bootstrap waits', redis(), ['r-replica-1'], /no bootstrap of r waits/],
    [
      'a pod not waited for',
      waiting,
      ['r-replica-0'],
      /does not wait for r-replica-0; it waits for r-replica-1, r-master-0/,
    ],
    ['not a pod name of this Redis', waiting, ['x-replica-1'], /give pod names of r/],
    ['no pod given', waiting, [], /give pod names of r/],
  ];
  for (const [name, r, pods, reason] of refused)
    await t.test(`refused: ${name}`, () => {
      const v = ops.bootstrapWithout(r, pods);
      assert.equal(v.ok, false);
      if (!v.ok) assert.match(v.reason, reason);
    });
  await t.test('progress: done once a pod is master', () => {
    assert.equal(ops.bootstrapProgress({}).state, 'waiting');
    assert.equal(ops.bootstrapProgress({ master: 'r-master-0' }).state, 'done');
  });
});
