// The RedisCluster's rollout during a move between engines: a shard's master goes onto a replica
// of the shard whose node already answers with the target engine (the most advanced of those),
// and waits, naming the engine, when the shard has none. Tables over a one-shard world.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readEngine } from '../../../../src/api/node-engine.ts';
import {
  clusterRolloutEngine,
  decideClusterRollout,
  type ClusterRolloutDecision,
  type RolloutPod,
} from '../../../../src/sidecar/rediscluster/decide/rollout.ts';
import { buildTopology } from '../../../../src/sidecar/rediscluster/decide/topology.ts';
import type { PodObservation } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import { healthy, id, SPEC3, world, type NodeSpec } from './fixtures.ts';

const R = 'redis 7.2.6';
const V = 'valkey 8.0.1';
const SPEC = { ...SPEC3, shards: 1, replicasPerShard: 2 };

/** Shard 0: master m0 (pod 0), replicas r0 (pod 1) and r0b (pod 2) at the given offsets. */
function shard(r0Offset: number, r0bOffset: number): NodeSpec[] {
  const base = healthy(1, [[[0, 16383]]]).map((n) => (n.id === id('r0') ? { ...n, offset: r0Offset } : n));
  return [
    ...base,
    { id: id('r0b'), pod: [0, 2], ip: '10.0.0.3', role: 'replica', master: id('m0'), offset: r0bOffset },
  ];
}

/** The world with each pod's node answering as `engines` says (by ordinal; null: no engine said). */
function withEngines(pods: PodObservation[], engines: Array<string | null>): PodObservation[] {
  return pods.map((p) => {
    const engine = engines[p.ordinal] ?? null;
    if (!p.probe?.ok) return p;
    return { ...p, probe: { ...p.probe, info: { ...p.probe.info, engine: readEngine(engine ?? '') } } };
  });
}

/** Every pod Ready; the master (ordinal 0) on the old template, the replicas on the new one. */
function kubeOf(pods: PodObservation[]): Map<string, RolloutPod> {
  return new Map(pods.map((p) => [p.name, { ready: true, updated: p.ordinal !== 0 }]));
}

function decide(nodes: NodeSpec[], engines: Array<string | null>, engine?: string): ClusterRolloutDecision {
  const pods = withEngines(world(nodes), engines);
  return decideClusterRollout({
    topology: buildTopology(pods),
    spec: engine ? { ...SPEC, engine } : SPEC,
    kube: kubeOf(pods),
    busy: null,
  });
}

const summary = (d: ClusterRolloutDecision) =>
  d.kind === 'switchover' ? `switchover ${d.target}` : d.kind === 'wait' ? `wait ${d.blockedOn ?? '-'}` : d.kind;

test("a move between engines: the shard's master goes onto a replica running the target engine", async (t) => {
  const cases: Array<{
    name: string;
    nodes: NodeSpec[];
    engines: Array<string | null>;
    engine?: string;
    want: string;
    reason?: RegExp;
  }> = [
    {
      name: 'both replicas on valkey: the most advanced',
      nodes: shard(90, 100),
      engines: [R, V, V],
      engine: 'valkey',
      want: 'switchover c-shard-0-2',
    },
    {
      name: 'the more advanced replica answers as redis: passed over',
      nodes: shard(90, 100),
      engines: [R, V, R],
      engine: 'valkey',
      want: 'switchover c-shard-0-1',
    },
    {
      name: 'no replica on valkey: wait, naming the engine',
      nodes: shard(90, 100),
      engines: [R, R, R],
      engine: 'valkey',
      want: 'wait c-shard-0-0',
      reason: /cannot be moved onto a replica running valkey: shard 0 has no replica to move to/,
    },
    {
      name: 'no spec.engine: the engine of the updated pods',
      nodes: shard(100, 90),
      engines: [R, V, V],
      want: 'switchover c-shard-0-1',
    },
    {
      name: 'the way back',
      nodes: shard(100, 90),
      engines: [V, R, V],
      engine: 'redis',
      want: 'switchover c-shard-0-1',
    },
    {
      name: 'no engine said anywhere: as before, the most advanced updated replica',
      nodes: shard(90, 100),
      engines: [null, null, null],
      want: 'switchover c-shard-0-2',
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = decide(c.nodes, c.engines, c.engine);
      assert.equal(summary(d), c.want, d.reason);
      if (c.reason) assert.match(d.reason, c.reason);
    });
  }
});

test('clusterRolloutEngine: spec.engine, else what the answering updated pods run', () => {
  const pods = withEngines(world(shard(100, 100)), [R, V, null]);
  const input = (engine?: string) => ({
    topology: buildTopology(pods),
    spec: engine ? { ...SPEC, engine } : SPEC,
    kube: kubeOf(pods),
    busy: null,
  });
  assert.equal(clusterRolloutEngine(input('redis')), 'redis');
  assert.equal(clusterRolloutEngine(input()), 'valkey');
});
