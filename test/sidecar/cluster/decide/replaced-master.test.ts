// A master that comes back after its replica took its shard over: it still answers as a master,
// with the slots and the open slot its nodes.conf kept, until gossip makes it a replica. Nothing
// may be finished towards it (a slot given to it would split its shard between two masters), and
// a shard already split that way is brought back to one master.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRound } from '../../../../src/sidecar/cluster/decide/plan.ts';
import type { ClusterStep, PodObs } from '../../../../src/sidecar/cluster/decide/types.ts';
import { healthy, id, SPEC3, world, type NodeSpec } from './fixtures.ts';

const NO_MEMORY = { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() };
const SPEC4 = { ...SPEC3, shards: 4 };
const round = (pods: PodObs[]) => planRound({ pods, spec: SPEC4, remembered: new Map(), failover: NO_MEMORY, now: 100_000 });
const moves = (steps: ClusterStep[]) => steps.flatMap((s) => (s.kind === 'move' ? [s] : []));

/** Four shards; shard 3's master m3 restarted after its replica r3 was promoted (epoch 9 over m3's 4). */
function restarted(m3: Partial<NodeSpec>, r3: Partial<NodeSpec> = {}): NodeSpec[] {
  const base = healthy(3, [[[0, 4095]], [[4096, 8191]], [[8192, 12287]]]);
  return [
    ...base,
    { id: id('r3'), pod: [3, 1], ip: '10.0.3.2', slots: [[12288, 16383]], epoch: 9, offset: 100, ...r3 },
    { id: id('m3'), pod: [3, 0], ip: '10.0.3.1', slots: [[12288, 16383]], epoch: 4, ...m3 },
  ];
}

test('a slot left migrating to a master that restarted after its replica replaced it', async (t) => {
  const open = (nodes: NodeSpec[]) => nodes.map((n) => (n.id === id('m0') ? { ...n, migrating: [[100, id('m3')]] as Array<[number, string]> } : n));
  await t.test('is finished towards the replica that replaced it, not towards the node that answers as a master', () => {
    const p = round(world(open(restarted({ importing: [[100, id('m0')]] }))));
    const m = moves(p.steps);
    assert.deepEqual(
      m.map((s) => `${s.slot} ${s.from} -> ${s.to}`),
      ['100 c-shard-0-0 -> c-shard-3-1'],
    );
    assert.match(m[0]!.reason, /left migrating to c-shard-3-0, which restarted after it was replaced: finished towards c-shard-3-1/);
  });
  await t.test('while that master still serves its shard (nobody replaced it): finished towards it', () => {
    const nodes = open(restarted({ importing: [[100, id('m0')]], epoch: 10 }, { role: 'replica', master: id('m3'), slots: [] }));
    assert.deepEqual(
      moves(round(world(nodes)).steps).map((s) => `${s.slot} ${s.from} -> ${s.to}`),
      ['100 c-shard-0-0 -> c-shard-3-0'],
    );
  });
});
