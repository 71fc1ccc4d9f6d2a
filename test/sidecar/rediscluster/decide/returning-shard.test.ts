// A shard that comes back on the claims a scale-down kept (decide/formation.ts attachReplicas):
// its nodes restart with their old nodes.conf (old ids, old roles, every address old), the others
// forgot them. Redis updates a node's address from gossip without re-pointing the replication of
// that node's replicas, so a replica can name the right master and still replicate from the
// address the master left, its link down for good: the round must tell it to REPLICATE again, and
// only once it knows the master's current address.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRound } from '../../../../src/sidecar/rediscluster/decide/plan.ts';
import type { ClusterStep } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import { healthy, id, nameOf, THREE, world, type NodeSpec } from './fixtures.ts';

const SPEC4 = { shards: 4, replicasPerShard: 2, failoverTimeoutMs: 10_000 };
const NO_MEMORY = { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() };
const OLD_MASTER_IP = '10.0.3.1';

const replicate = (steps: ClusterStep[]) =>
  steps.flatMap((s) => (s.kind === 'replicate' ? [`${s.pod} -> ${nameOf(s.masterId)}`] : []));

/** Shard 3 back: its master m3 and replicas p3, q3 at new addresses, the replicas as `replica` says. */
function back(replica: (r: NodeSpec) => NodeSpec = (r) => r): NodeSpec[] {
  const m3: NodeSpec = { id: id('m3'), pod: [3, 0], ip: '10.0.3.11', epoch: 4, keys: 0 };
  const replicas = ['p3', 'q3'].map((name, i): NodeSpec =>
    replica({
      id: id(name),
      pod: [3, i + 1],
      ip: `10.0.3.${12 + i}`,
      role: 'replica',
      master: m3.id,
      keys: 0,
      linkUp: false,
      masterHost: OLD_MASTER_IP,
    }),
  );
  return [...healthy(3, THREE), m3, ...replicas];
}

function round(nodes: NodeSpec[]) {
  return planRound({ pods: world(nodes), spec: SPEC4, remembered: new Map(), failover: NO_MEMORY, now: 100_000 });
}

test('replicas of a shard back on kept claims are linked to their master at its current address', async (t) => {
  const cases: Array<{ name: string; nodes: NodeSpec[]; replicate: string[]; hold?: RegExp }> = [
    {
      name: 'each knows the master at its new address but replicates from the old one: REPLICATE again',
      nodes: back(),
      replicate: ['c-shard-3-1 -> m3', 'c-shard-3-2 -> m3'],
    },
    {
      name: 'the same with the link reported up (the old address answers: some other pod has it now)',
      nodes: back((r) => ({ ...r, linkUp: true })),
      replicate: ['c-shard-3-1 -> m3', 'c-shard-3-2 -> m3'],
    },
    {
      name: 'one still knows the master at the old address: it waits for gossip (REPLICATE would point there)',
      nodes: back((r) => (r.id === id('p3') ? { ...r, sees: { [id('m3')]: OLD_MASTER_IP } } : r)),
      replicate: ['c-shard-3-2 -> m3'],
      hold: /c-shard-3-1 knows c-shard-3-0 \(\w+\) at 10\.0\.3\.1, not 10\.0\.3\.11 yet/,
    },
    {
      name: 'replication follows the new address, the link still coming up: nothing to do',
      nodes: back((r) => ({ ...r, masterHost: '10.0.3.11' })),
      replicate: [],
    },
    {
      name: 'linked at the new address: nothing to do',
      nodes: back((r) => ({ ...r, masterHost: '10.0.3.11', linkUp: true })),
      replicate: [],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const plan = round(c.nodes);
      assert.deepEqual(replicate(plan.steps), c.replicate);
      if (c.hold) assert.match(plan.holds.map((h) => h.reason).join('\n'), c.hold);
      if (c.replicate.length > 0)
        assert.match(plan.steps.find((s) => s.kind === 'replicate')!.reason, /replicates from 10\.0\.3\.1/);
    });
  }
});

test('a node made a replica for the first time waits until it knows its master at the current address', () => {
  // q3 came back as a master of nothing (empty), its table still holding m3's old address.
  const nodes = back().map((n) =>
    n.id === id('q3')
      ? { ...n, role: 'master' as const, master: undefined, linkUp: undefined, sees: { [id('m3')]: OLD_MASTER_IP } }
      : n,
  );
  const plan = round(nodes);
  assert.deepEqual(replicate(plan.steps), ['c-shard-3-1 -> m3']);
  assert.match(plan.holds.map((h) => h.reason).join('\n'), /c-shard-3-2 knows c-shard-3-0 \(\w+\) at 10\.0\.3\.1/);
  const learnt = round(nodes.map((n) => (n.id === id('q3') ? { ...n, sees: {} } : n)));
  assert.deepEqual(replicate(learnt.steps), ['c-shard-3-1 -> m3', 'c-shard-3-2 -> m3']);
});
