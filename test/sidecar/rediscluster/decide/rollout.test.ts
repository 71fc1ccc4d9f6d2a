// The RedisCluster's rolling update and its switchover requests, as tables over small worlds:
// the order (stale replicas of every shard first, each shard's master last after a switchover),
// what makes it wait, and which replica a switchover goes to.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CAUGHT_UP_BYTES, parseRequest } from '../../../../src/sidecar/core/decide/switchover.ts';
import {
  decideClusterRollout,
  type ClusterRolloutDecision,
  type RolloutPod,
} from '../../../../src/sidecar/rediscluster/decide/rollout.ts';
import { decideClusterRequest } from '../../../../src/sidecar/rediscluster/decide/switchover.ts';
import { buildTopology } from '../../../../src/sidecar/rediscluster/decide/topology.ts';
import type { ClusterSpecView } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import { healthy, id, SPEC3, THREE, world, type NodeSpec } from './fixtures.ts';

const podName = (shard: number, ordinal: number) => `c-shard-${shard}-${ordinal}`;

/** Every pod Ready; `stale` on the old template, `unknown` of unknown revision, `notReady` not Ready. */
function kubeOf(
  nodes: NodeSpec[],
  o: { stale?: string[] | 'all'; unknown?: string[]; notReady?: string[] } = {},
): Map<string, RolloutPod> {
  const out = new Map<string, RolloutPod>();
  for (const n of nodes) {
    if (!n.pod) continue;
    const name = podName(...n.pod);
    const stale = o.stale === 'all' || (o.stale ?? []).includes(name);
    out.set(name, {
      ready: !(o.notReady ?? []).includes(name),
      updated: (o.unknown ?? []).includes(name) ? null : !stale,
    });
  }
  return out;
}

const change = (nodes: NodeSpec[], name: string, patch: Partial<NodeSpec>) =>
  nodes.map((n) => (n.id === id(name) ? { ...n, ...patch } : n));

/** Shard 0's replica r0 took over: it serves the slots, m0 replicates it. */
const switched = (nodes: NodeSpec[]) =>
  change(change(nodes, 'r0', { role: 'master', master: undefined, slots: THREE[0], epoch: 7 }), 'm0', {
    role: 'replica',
    master: id('r0'),
    slots: [],
  });

/** Shard 0 with a second replica, r0b (pod 2), ahead of r0. */
const twoReplicas = (nodes: NodeSpec[], r0Offset: number, r0bOffset: number) => [
  ...change(nodes, 'r0', { offset: r0Offset }),
  {
    id: id('r0b'),
    pod: [0, 2] as [number, number],
    ip: '10.0.0.3',
    role: 'replica' as const,
    master: id('m0'),
    offset: r0bOffset,
  },
];

function decide(
  nodes: NodeSpec[],
  kube: Map<string, RolloutPod>,
  o: { busy?: string; spec?: ClusterSpecView; extra?: Parameters<typeof world>[2] } = {},
): ClusterRolloutDecision {
  return decideClusterRollout({
    topology: buildTopology(world(nodes, 'c', o.extra ?? [])),
    spec: o.spec ?? SPEC3,
    kube,
    busy: o.busy ?? null,
  });
}

const summary = (d: ClusterRolloutDecision) =>
  d.kind === 'delete'
    ? `delete ${d.pod}`
    : d.kind === 'switchover'
      ? `switchover shard ${d.shard}: ${d.master} -> ${d.target}`
      : d.kind === 'wait'
        ? `wait ${d.blockedOn ?? '-'}`
        : 'idle';

test('a rollout of a RedisCluster: one pod at a time, replicas first, each master last after a switchover', async (t) => {
  const base = healthy(3, THREE);
  const replicasFresh = { stale: ['c-shard-0-0', 'c-shard-1-0', 'c-shard-2-0'] };
  const cases: Array<{
    name: string;
    nodes: NodeSpec[];
    kube: Map<string, RolloutPod>;
    busy?: string;
    spec?: ClusterSpecView;
    want: string;
    reason?: RegExp;
  }> = [
    { name: 'every pod current', nodes: base, kube: kubeOf(base), want: 'idle' },
    {
      name: 'the cluster has work of its own (a reshard, a repair): it comes first',
      nodes: base,
      kube: kubeOf(base, { stale: 'all' }),
      busy: 'the reshard waits: 2 slot(s) are open',
      want: 'wait -',
      reason: /the cluster comes first: the reshard waits/,
    },
    {
      name: 'a pod of unknown revision (its StatefulSet not settled)',
      nodes: base,
      kube: kubeOf(base, { stale: ['c-shard-0-1'], unknown: ['c-shard-2-1'] }),
      want: 'wait -',
      reason: /revision of c-shard-2-1 is not known/,
    },
    {
      name: 'a pod being deleted',
      nodes: change(base, 'r1', { deleting: true }),
      kube: kubeOf(base, { stale: 'all' }),
      want: 'wait c-shard-1-1',
    },
    {
      name: 'a shard short of a pod (the replacement not created yet)',
      nodes: base.filter((n) => n.id !== id('r2')),
      kube: kubeOf(base, { stale: 'all' }),
      want: 'wait -',
      reason: /shard 2 has 1 of 2 pods/,
    },
    {
      name: "everything stale: the first shard's replica first",
      nodes: base,
      kube: kubeOf(base, { stale: 'all' }),
      want: 'delete c-shard-0-1',
      reason: /0 of 6 pods updated/,
    },
    {
      name: 'a stale replica that is not Ready goes before the others, whatever else waits',
      nodes: change(base, 'r1', { linkUp: false }),
      kube: kubeOf(base, { stale: 'all', notReady: ['c-shard-2-1'] }),
      want: 'delete c-shard-2-1',
    },
    {
      name: "the replacement of shard 0's replica is not linked yet: nothing else goes",
      nodes: change(base, 'r0', { linkUp: false }),
      kube: kubeOf(base, { stale: ['c-shard-1-1', 'c-shard-2-1', ...replicasFresh.stale] }),
      want: 'wait c-shard-0-1',
      reason: /c-shard-1-1 waits: c-shard-0-1 is not a replica linked/,
    },
    {
      name: 'the replacement is still in a full sync',
      nodes: change(base, 'r0', { syncing: true }),
      kube: kubeOf(base, { stale: ['c-shard-1-1'] }),
      want: 'wait c-shard-0-1',
    },
    {
      name: 'the replacement is not Ready yet',
      nodes: base,
      kube: kubeOf(base, { stale: ['c-shard-1-1'], notReady: ['c-shard-0-1'] }),
      want: 'wait c-shard-0-1',
    },
    {
      name: 'a replica too far behind its master',
      nodes: change(change(base, 'm2', { offset: 10 + CAUGHT_UP_BYTES + 1 }), 'r2', { offset: 10 }),
      kube: kubeOf(base, { stale: ['c-shard-0-1'] }),
      want: 'wait c-shard-2-1',
      reason: /bytes behind/,
    },
    {
      name: "only the masters are stale: shard 0's master moves to its updated replica first",
      nodes: base,
      kube: kubeOf(base, replicasFresh),
      want: 'switchover shard 0: c-shard-0-0 -> c-shard-0-1',
      reason: /the master c-shard-0-0 of shard 0 runs an old template: c-shard-0-1 is the most advanced linked replica/,
    },
    {
      name: 'after the switchover the old master is a stale replica: its pod goes',
      nodes: switched(base),
      kube: kubeOf(base, replicasFresh),
      want: 'delete c-shard-0-0',
    },
    {
      name: 'the master of a shard whose replica is not linked waits (no switchover to a node behind)',
      nodes: change(base, 'r0', { linkUp: false }),
      kube: kubeOf(base, { stale: ['c-shard-0-0'] }),
      want: 'wait c-shard-0-1',
    },
    {
      name: 'spec.replicas 2 while shards 1 and 2 have one replica each: their pods come first',
      nodes: twoReplicas(base, 90, 100),
      kube: kubeOf(twoReplicas(base, 90, 100), replicasFresh),
      spec: { ...SPEC3, replicasPerShard: 2 },
      want: 'wait -',
      reason: /shard 1 has 2 of 3 pods/,
    },
    {
      name: 'no replica at all (spec.replicas 0): the master cannot be moved and the rollout says so',
      nodes: base.filter((n) => n.role !== 'replica'),
      kube: kubeOf(base, { stale: 'all' }),
      spec: { ...SPEC3, replicasPerShard: 0 },
      want: 'wait c-shard-0-0',
      reason: /cannot be moved: shard 0 has no replica to move to \(spec.replicas is 0/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = decide(c.nodes, c.kube, { busy: c.busy, spec: c.spec });
      assert.equal(summary(d), c.want, d.reason);
      if (c.reason) assert.match(d.reason, c.reason);
    });
  }
});

test('a switchover goes to the most advanced linked replica of the shard', () => {
  const spec = { ...SPEC3, shards: 1, replicasPerShard: 2 };
  const nodes = twoReplicas(healthy(1, [[[0, 16383]]]), 90, 100);
  const kube = kubeOf(nodes, { stale: ['c-shard-0-0'] });
  assert.equal(summary(decide(nodes, kube, { spec })), 'switchover shard 0: c-shard-0-0 -> c-shard-0-2');
  const behind = twoReplicas(healthy(1, [[[0, 16383]]]), 100, 90);
  assert.equal(summary(decide(behind, kube, { spec })), 'switchover shard 0: c-shard-0-0 -> c-shard-0-1');
});

test('a switchover asked for on a RedisCluster', async (t) => {
  const base = healthy(3, THREE);
  const cases: Array<{
    name: string;
    value: string;
    nodes?: NodeSpec[];
    busy?: string;
    handled?: string;
    want: string;
  }> = [
    {
      name: "a replica pod: its shard's master moves to it",
      value: 'c-shard-1-1',
      want: 'switchover 1: c-shard-1-0 -> c-shard-1-1',
    },
    { name: 'a shard: its best replica', value: 'shard-2', want: 'switchover 2: c-shard-2-0 -> c-shard-2-1' },
    {
      name: 'repeated with a tag',
      value: 'shard-2@2',
      handled: 'shard-2',
      want: 'switchover 2: c-shard-2-0 -> c-shard-2-1',
    },
    { name: 'the request already handled', value: 'shard-2', handled: 'shard-2', want: 'none' },
    { name: 'the master itself', value: 'c-shard-1-0', want: 'done: c-shard-1-0 is already the master of shard 1' },
    {
      name: '`any` means nothing with a master per shard',
      value: 'any',
      want: 'refuse: a RedisCluster has a master per shard',
    },
    { name: 'no such shard', value: 'shard-7', want: 'refuse: shard 7 has no pod' },
    { name: 'no such pod', value: 'other-0', want: 'refuse: no pod other-0 belongs' },
    {
      name: 'the cluster is busy (a reshard)',
      value: 'shard-0',
      busy: 'the reshard waits: x',
      want: 'refuse: the cluster is not quiet: the reshard waits',
    },
    {
      name: 'a target not linked',
      value: 'c-shard-0-1',
      nodes: change(base, 'r0', { linkUp: false }),
      want: 'refuse: c-shard-0-1 is not a replica linked',
    },
    {
      name: 'a target too far behind',
      value: 'shard-0',
      nodes: change(base, 'm0', { offset: CAUGHT_UP_BYTES + 200 }),
      want: 'refuse: no replica can take over: c-shard-0-1 is',
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const nodes = c.nodes ?? base;
      const d = decideClusterRequest(
        buildTopology(world(nodes)),
        kubeOf(nodes),
        c.busy ?? null,
        parseRequest(c.value),
        c.handled ?? null,
      );
      const got =
        d.kind === 'switchover'
          ? `switchover ${d.shard}: ${d.master} -> ${d.target}`
          : d.kind === 'none'
            ? 'none'
            : `${d.kind}: ${d.message}`;
      assert.ok(got.startsWith(c.want), `${got} does not start with ${c.want}`);
    });
  }
});
