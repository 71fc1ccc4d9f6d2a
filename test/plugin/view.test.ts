// The plugin's views: what `kubectl redis status` and `events` print from the objects the operator writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stripVTControlCharacters } from 'node:util';
import { bytes, coloured, eventLines, eventViews, plain, statusLines, statusView } from '../../src/plugin/view.ts';

// The labels the StatefulSets' pod selector puts on every pod of my-redis (api/labels.ts podSelectorLabels).
const SELECTOR = {
  'app.kubernetes.io/name': 'redis',
  'app.kubernetes.io/instance': 'my-redis',
  'app.kubernetes.io/managed-by': 'redis-operator',
};
const pod = (
  name: string,
  role: string | null,
  ready: boolean,
  link: string | null,
  extra: Record<string, string> = {},
) => ({
  metadata: {
    name,
    labels: { ...SELECTOR, ...(role ? { 'redis.example.com/role': role } : {}) } as Record<string, string>,
    annotations: { ...(link ? { 'redis.example.com/link': link } : {}), ...extra } as Record<string, string>,
  },
  status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
});
const redis = {
  metadata: { name: 'my-redis', namespace: 'apps' },
  status: {
    phase: 'Running' as const,
    master: 'my-redis-master-0',
    summary: { replicas: '0/1' },
    switchover: 'my-redis-replica-0: Done: my-redis-replica-0 is master',
    conditions: [{ type: 'Ready', status: 'True' as const, reason: 'MasterReady', message: 'the master is Ready' }],
    rollout: { updatedPods: ['my-redis-master-0'], stalePods: ['my-redis-replica-0'] },
  },
};
/** A backup Job's pod of my-redis, as backup-job.ts labels it: the instance label, not the Redis pods' selector. */
const backupPod = {
  metadata: {
    name: 'my-redis-backup-29384720-x7k2p',
    labels: {
      'app.kubernetes.io/name': 'redis-backup',
      'app.kubernetes.io/instance': 'my-redis',
      'app.kubernetes.io/managed-by': 'redis-operator',
    },
  },
  status: { conditions: [{ type: 'Ready', status: 'False' }] },
};
const pods = [
  backupPod,
  pod('my-redis-replica-0', 'replica', false, 'down', {
    'redis.example.com/replication': 'offset=900 lag=1572864 at=2026-12-03T10:00:05.000Z',
  }),
  pod('my-redis-master-0', 'master', true, 'up', {
    'redis.example.com/role-changed-by': 'failover from my-redis-replica-0 at offset 42',
    'redis.example.com/replication': 'offset=2473764 lag=- at=2026-12-03T10:00:04.000Z',
  }),
];
const events = [
  {
    type: 'Normal',
    reason: 'Switchover',
    message: 'planned switchover from a to b',
    lastTimestamp: new Date('2026-12-03T10:00:02Z'),
  },
  { type: 'Normal', reason: 'RolloutStep', message: 'deleted x', lastTimestamp: new Date('2026-12-03T10:00:03Z') },
  {
    type: 'Normal',
    reason: 'FailoverCompleted',
    message: 'b is master',
    lastTimestamp: new Date('2026-12-03T10:00:01Z'),
  },
];
const backups = [
  {
    metadata: { name: 'b1' },
    spec: { redis: 'my-redis' },
    status: {
      phase: 'Completed' as const,
      sizeBytes: 10,
      replicationOffset: 7,
      location: 's3://b/k.rdb',
      completionTime: '2026-12-03T09:00:00Z',
    },
  },
  { metadata: { name: 'other' }, spec: { redis: 'someone-else' }, status: { phase: 'Completed' as const } },
];

test('statusView', async (t) => {
  const v = statusView(redis, pods, events, backups);
  const cases: Array<[string, () => void]> = [
    [
      'pods sorted by name with role, readiness and link',
      () =>
        assert.deepEqual(
          v.pods.map((p) => [p.name, p.role, p.ready, p.link]),
          [
            ['my-redis-master-0', 'master', true, 'up'],
            ['my-redis-replica-0', 'replica', false, 'down'],
          ],
        ),
    ],
    [
      "a backup Job's pod, and another Redis's pod, are no pods of this Redis",
      () => {
        assert.ok(!v.pods.some((p) => p.name === backupPod.metadata.name), 'the backup pod is not listed');
        const other = pod('other-master-0', 'master', true, 'up');
        other.metadata.labels['app.kubernetes.io/instance'] = 'other';
        assert.deepEqual(
          statusView(redis, [...pods, other], [], []).pods.map((p) => p.name),
          ['my-redis-master-0', 'my-redis-replica-0'],
        );
      },
    ],
    [
      "the sidecar's role note on the master",
      () => assert.equal(v.pods[0]!.roleChangedBy, 'failover from my-redis-replica-0 at offset 42'),
    ],
    [
      'failovers and switchovers only, oldest first',
      () =>
        assert.deepEqual(
          v.failovers.map((e) => e.reason),
          ['FailoverCompleted', 'Switchover'],
        ),
    ],
    [
      'backups of this Redis only',
      () =>
        assert.deepEqual(
          v.backups.map((b) => b.name),
          ['b1'],
        ),
    ],
    [
      "offset and lag from the sidecar's replication annotation; none without it",
      () => {
        assert.deepEqual(v.pods[1]!.replication, { offset: 900, lagBytes: 1572864, at: '2026-12-03T10:00:05.000Z' });
        assert.deepEqual(v.pods[0]!.replication, { offset: 2473764, lagBytes: null, at: '2026-12-03T10:00:04.000Z' });
        assert.equal(statusView(redis, [pod('p', 'replica', true, 'up')], [], []).pods[0]!.replication, null);
        assert.equal(
          statusView(redis, [pod('p', 'replica', true, 'up', { 'redis.example.com/replication': 'garbage' })], [], [])
            .pods[0]!.replication,
          null,
        );
      },
    ],
    [
      'a pod without the role label is "none"',
      () => assert.equal(statusView(redis, [pod('p', null, false, null)], [], []).pods[0]!.role, 'none'),
    ],
    [
      'a Redis without status is Unknown',
      () => assert.equal(statusView({ metadata: { name: 'x' } }, [], [], []).phase, 'Unknown'),
    ],
    ['-o json round-trips', () => assert.deepEqual(JSON.parse(JSON.stringify(v)).master, 'my-redis-master-0')],
  ];
  for (const [name, check] of cases) await t.test(name, check);
});

test('statusLines', async (t) => {
  const v = statusView(redis, pods, events, backups);
  const cases: Array<[string, string[], (lines: string[]) => void]> = [
    ['plain text has no escape codes', statusLines(v, plain), (l) => assert.ok(!l.join('\n').includes('\x1b['))],
    ['colour has escape codes', statusLines(v, coloured), (l) => assert.ok(l.join('\n').includes('\x1b['))],
    [
      'colour and plain say the same words',
      statusLines(v, coloured),
      (l) => assert.equal(stripVTControlCharacters(l.join('\n')), statusLines(v, plain).join('\n')),
    ],
    [
      'the header names phase, master and replicas ready of wanted',
      statusLines(v, plain),
      (l) => assert.equal(l[0], 'Redis apps/my-redis  phase Running  master my-redis-master-0  replicas 0/1'),
    ],
    [
      'each pod on a line with its role',
      statusLines(v, plain),
      (l) => {
        assert.ok(l.some((x) => /my-redis-master-0\s+master\s+yes\s+up/.test(x)));
        assert.ok(l.some((x) => /my-redis-replica-0\s+replica\s+no\s+down/.test(x)));
      },
    ],
    [
      'each pod shows its offset, lag and when they were read',
      statusLines(v, plain),
      (l) => {
        assert.ok(
          l.some((x) => /my-redis-master-0\s+master\s+yes\s+up\s+2473764\s+-\s+2026-12-03T10:00:04.000Z/.test(x)),
        );
        assert.ok(
          l.some((x) => /my-redis-replica-0\s+replica\s+no\s+down\s+900\s+1\.5 MiB\s+2026-12-03T10:00:05.000Z/.test(x)),
        );
      },
    ],
    [
      'the pods table lists the Redis pods only, a backup Job pod present',
      statusLines(v, plain),
      (l) => {
        assert.ok(!l.some((x) => x.includes('backup-29384720')), l.join('\n'));
        const start = l.findIndex((x) => x === 'Pods');
        assert.deepEqual(
          l.slice(start + 2, start + 4).map((x) => x.trim().split(/\s+/)[0]),
          ['my-redis-master-0', 'my-redis-replica-0'],
        );
        assert.equal(l[start + 4], '', 'two pods, then the next section');
      },
    ],
    [
      'the sidecar leading this Redis, and where its log is',
      statusLines(
        statusView(redis, pods, events, backups, {
          ok: true,
          view: {
            lease: 'redis-operator-sidecar-shard-1',
            namespace: 'redis-operator',
            shard: 1,
            shards: 4,
            shardsFrom: 'deployment',
            state: 'held',
            holder: 'op-b',
            renewedSecondsAgo: 2,
          },
        }),
        plain,
      ),
      (l) => {
        assert.deepEqual(l.slice(1, 5), [
          '',
          'Operator',
          '  op-b leads it (Lease redis-operator/redis-operator-sidecar-shard-1, shard 1 of 4, renewed 2s ago)',
          '  its log: kubectl logs -n redis-operator op-b -c sidecar',
        ]);
      },
    ],
    [
      'rollout progress',
      statusLines(v, plain),
      (l) => assert.ok(l.some((x) => x.includes('1/2 updated; stale: my-redis-replica-0'))),
    ],
    [
      'the backup with size and offset',
      statusLines(v, plain),
      (l) => assert.ok(l.some((x) => /b1\s+Completed\s+10 bytes\s+offset 7/.test(x))),
    ],
  ];
  for (const [name, lines, check] of cases) await t.test(name, () => check(lines));
});

test('events', async (t) => {
  await t.test('oldest first', () =>
    assert.deepEqual(
      eventViews(events).map((e) => e.reason),
      ['FailoverCompleted', 'Switchover', 'RolloutStep'],
    ),
  );
  await t.test('none says so', () => assert.match(eventLines([], plain)[0]!, /no events/));
  await t.test('one line each', () => assert.equal(eventLines(eventViews(events), plain).length, 3));
});

test('bytes', async (t) => {
  for (const [n, text] of [
    [0, '0 B'],
    [1023, '1023 B'],
    [1536, '1.5 KiB'],
    [12 * 1024 * 1024, '12.0 MiB'],
  ] as const)
    await t.test(text, () => assert.equal(bytes(n), text));
});
