// `kubectl redis status` of a RedisCluster: the header (phase, masters and replicas ready of
// wanted, slots), the shards, the pods with role, link and slots from the sidecar's node record,
// only the cluster's own pods (a backup Job's pod and a Redis of the same name present), its
// master changes and the sidecar that leads it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stripVTControlCharacters } from 'node:util';
import {
  CLUSTER_NODE_ANNOTATION,
  redisClusterBackupSelectorLabels as clusterBackupSelectorLabels,
  clusterNodeRecord,
  redisClusterPodSelectorLabels as clusterPodSelectorLabels,
  SHARD_LABEL,
  type ClusterNodeRecord,
} from '../../src/api/rediscluster-names.ts';
import { podSelectorLabels } from '../../src/api/labels.ts';
import { clusterStatusLines, clusterStatusView } from '../../src/plugin/cluster-view.ts';
import type { LeaderLookup } from '../../src/plugin/leader.ts';
import { coloured, plain, type Paint } from '../../src/plugin/view.ts';

const NAME = 'shop';
const id = (s: number, o: number) => `${s}${o}`.padEnd(40, 'a');
const record = (s: number, o: number): ClusterNodeRecord => ({
  id: id(s, o),
  role: o === 0 ? 'master' : 'replica',
  slots: o === 0 ? [s === 0 ? [0, 8191] : [8192, 16383]] : [],
  masterId: o === 0 ? null : id(s, 0),
  linkUp: !(s === 1 && o === 1),
  usedMemory: 2 * 1024 * 1024,
  maxMemory: 64 * 1024 * 1024,
  keys: 10,
  at: '2026-12-06T09:00:00.000Z',
});
const pod = (s: number, o: number, labels: Record<string, string> = clusterPodSelectorLabels(NAME)) => ({
  metadata: {
    name: `${NAME}-shard-${s}-${o}`,
    labels: { ...labels, [SHARD_LABEL]: String(s) },
    annotations: { [CLUSTER_NODE_ANNOTATION]: clusterNodeRecord(record(s, o)) },
  },
  status: { conditions: [{ type: 'Ready', status: 'True' }] },
});
const backupPod = {
  ...pod(0, 0, clusterBackupSelectorLabels(NAME)),
  metadata: {
    ...pod(0, 0).metadata,
    name: `${NAME}-shard-0-backup-2938-abcde`,
    labels: { ...clusterBackupSelectorLabels(NAME), [SHARD_LABEL]: '0' },
  },
};
const redisPod = {
  metadata: { name: `${NAME}-master-0`, labels: podSelectorLabels(NAME) },
  status: { conditions: [] },
};
const cluster = {
  metadata: { name: NAME, namespace: 'apps' },
  status: {
    phase: 'Running' as const,
    summary: { masters: '2/2', replicas: '1/2' },
    slotsCovered: 16384,
    shardStatus: [
      {
        index: 0,
        master: `${NAME}-shard-0-0`,
        replicas: [`${NAME}-shard-0-1`],
        slots: '0-8191',
        slotCount: 8192,
        health: 'Healthy' as const,
      },
      {
        index: 1,
        master: `${NAME}-shard-1-0`,
        replicas: [],
        slots: '8192-16383',
        slotCount: 8192,
        health: 'Degraded' as const,
      },
    ],
    conditions: [
      {
        type: 'Ready',
        status: 'False' as const,
        reason: 'ReplicasMissing',
        message: 'shard 1: 0 of 1 replicas Ready and linked',
      },
    ],
  },
};
const events = [
  {
    type: 'Normal',
    reason: 'MasterChanged',
    message: 'shard 1: shop-shard-1-0 is master',
    lastTimestamp: new Date('2026-12-06T08:00:00Z'),
  },
  { type: 'Normal', reason: 'SlotsAssigned', message: 'x', lastTimestamp: new Date('2026-12-06T08:01:00Z') },
];
const operator: LeaderLookup = {
  ok: true,
  view: {
    lease: 'redis-operator-sidecar-shard-3',
    namespace: 'redis-operator',
    shard: 3,
    shards: 4,
    shardsFrom: 'deployment',
    state: 'held',
    holder: 'op-a',
    renewedSecondsAgo: 1,
  },
};
const pods = [pod(1, 1), backupPod, redisPod, pod(0, 0), pod(0, 1), pod(1, 0)];

test('clusterStatusView', async (t) => {
  const v = clusterStatusView(cluster, pods, events, operator);
  await t.test("the cluster's own pods only, sorted: no backup Job pod, no pod of a Redis of the same name", () =>
    assert.deepEqual(
      v.pods.map((p) => p.name),
      ['shop-shard-0-0', 'shop-shard-0-1', 'shop-shard-1-0', 'shop-shard-1-1'],
    ),
  );
  await t.test("role, link and slots from the sidecar's node record", () =>
    assert.deepEqual(
      v.pods.map((p) => [p.shard, p.role, p.link, p.slots]),
      [
        ['0', 'master', 'up', '0-8191'],
        ['0', 'replica', 'up', '-'],
        ['1', 'master', 'up', '8192-16383'],
        ['1', 'replica', 'down', '-'],
      ],
    ),
  );
  await t.test('no record yet: role none, link unknown', () => {
    const bare = pod(0, 0);
    bare.metadata.annotations = {} as typeof bare.metadata.annotations;
    assert.deepEqual(
      clusterStatusView(cluster, [bare], [], null).pods.map((p) => [p.role, p.link]),
      [['none', 'unknown']],
    );
  });
  await t.test('master changes only', () =>
    assert.deepEqual(
      v.failovers.map((e) => e.reason),
      ['MasterChanged'],
    ),
  );
  await t.test('-o json carries the summary and the leader', () => {
    const j = JSON.parse(JSON.stringify(v)) as { masters: string; replicas: string; operator: LeaderLookup };
    assert.equal(j.masters, '2/2');
    assert.equal(j.replicas, '1/2');
    assert.deepEqual(j.operator, operator);
  });
});

test('clusterStatusLines', async (t) => {
  const v = clusterStatusView(cluster, pods, events, operator);
  const l = clusterStatusLines(v, plain);
  await t.test('the header: phase, masters and replicas ready of wanted, slots', () =>
    assert.equal(l[0], 'RedisCluster apps/shop  phase Running  masters 2/2  replicas 1/2  slots 16384/16384'),
  );
  await t.test('phase Hibernated is no fault: green, as Running', () => {
    const colour: Paint = (c, text) => `<${c}>${text}`;
    const asleep = clusterStatusLines({ ...v, phase: 'Hibernated' }, colour)[0]!;
    assert.match(asleep, /phase <green>Hibernated/);
    assert.match(clusterStatusLines({ ...v, phase: 'Pending' }, colour)[0]!, /phase <red>Pending/);
  });
  await t.test('the leading sidecar and its log command', () => {
    assert.ok(
      l.includes('  op-a leads it (Lease redis-operator/redis-operator-sidecar-shard-3, shard 3 of 4, renewed 1s ago)'),
      l.join('\n'),
    );
    assert.ok(l.includes('  its log: kubectl logs -n redis-operator op-a -c sidecar'));
  });
  await t.test('a line per shard with its health', () =>
    assert.ok(l.some((x) => /^ {2}1\s+shop-shard-1-0\s+-\s+8192-16383\s+Degraded$/.test(x))),
  );
  await t.test('a line per pod, no backup pod', () => {
    assert.ok(
      l.some((x) =>
        /^ {2}shop-shard-1-1\s+1\s+replica\s+yes\s+down\s+-\s+2\.0 MiB \/ 64\.0 MiB\s+10\s+2026-12-06T09:00:00\.000Z$/.test(
          x,
        ),
      ),
      l.join('\n'),
    );
    assert.ok(!l.some((x) => x.includes('backup') || x.includes('shop-master-0')));
  });
  await t.test('colour says the same words', () =>
    assert.equal(stripVTControlCharacters(clusterStatusLines(v, coloured).join('\n')), l.join('\n')),
  );
});
