// A master that comes back after its replica took its shard over: it still answers as a master,
// with the slots and the open slot its nodes.conf kept, until gossip makes it a replica. Nothing
// may be finished towards it (a slot given to it would split its shard between two masters), and
// a shard already split that way is brought back to one master.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRound } from '../../../../src/sidecar/rediscluster/decide/plan.ts';
import { MERGE_MOVES_PER_ROUND } from '../../../../src/sidecar/rediscluster/decide/split-shard.ts';
import type { ClusterStep, PodObservation } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import { healthy, id, SPEC3, world, type NodeSpec } from './fixtures.ts';

const NO_MEMORY = { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() };
const SPEC4 = { ...SPEC3, shards: 4 };
const round = (pods: PodObservation[]) =>
  planRound({ pods, spec: SPEC4, remembered: new Map(), failover: NO_MEMORY, now: 100_000 });
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
  const open = (nodes: NodeSpec[]) =>
    nodes.map((n) => (n.id === id('m0') ? { ...n, migrating: [[100, id('m3')]] as Array<[number, string]> } : n));
  await t.test(
    'is finished towards the replica that replaced it, not towards the node that answers as a master',
    () => {
      const p = round(world(open(restarted({ importing: [[100, id('m0')]] }))));
      const m = moves(p.steps);
      assert.deepEqual(
        m.map((s) => `${s.slot} ${s.from} -> ${s.to}`),
        ['100 c-shard-0-0 -> c-shard-3-1'],
      );
      assert.match(
        m[0]!.reason,
        /left migrating to c-shard-3-0, which restarted after it was replaced: finished towards c-shard-3-1/,
      );
    },
  );
  await t.test('while that master still serves its shard (nobody replaced it): finished towards it', () => {
    const nodes = open(
      restarted({ importing: [[100, id('m0')]], epoch: 10 }, { role: 'replica', master: id('m3'), slots: [] }),
    );
    assert.deepEqual(
      moves(round(world(nodes)).steps).map((s) => `${s.slot} ${s.from} -> ${s.to}`),
      ['100 c-shard-0-0 -> c-shard-3-0'],
    );
  });
});

test('a shard served by two masters is merged into the one serving most of its slots', async (t) => {
  // m3 was given slot 12288 after r3 replaced it: its epoch (10) beats r3's (9) for that slot.
  const split = (m3: Partial<NodeSpec> = {}, r3: Partial<NodeSpec> = {}) =>
    restarted({ slots: [[12288, 12288]], epoch: 10, keys: 5, ...m3 }, { slots: [[12289, 16383]], ...r3 });
  const merges = (steps: ClusterStep[]) =>
    moves(steps).map((s) => `${s.slot} ${s.from} -> ${s.to}${s.quiet ? ' quiet' : ''}`);
  const holds = (nodes: NodeSpec[]) => round(world(nodes)).holds.filter((h) => h.key.startsWith('split/'));
  await t.test('its slot moves live to that master, quietly: one Warning tells the whole', () => {
    const p = round(world(split()));
    assert.deepEqual(merges(p.steps), ['12288 c-shard-3-0 -> c-shard-3-1 quiet']);
    assert.equal(moves(p.steps)[0]!.cold, false);
    const h = p.holds.filter((x) => x.key.startsWith('split/'));
    assert.equal(h.length, 1);
    assert.equal(h[0]!.warn, true);
    assert.match(
      h[0]!.reason,
      /shard 3 is served by two masters, c-shard-3-1 \(\w+\) and c-shard-3-0 \(\w+\): c-shard-3-0 \(\w+\)'s slots move to c-shard-3-1/,
    );
    assert.equal(p.reshard.kind, 'balanced', 'the shard still holds its share');
  });
  await t.test(`at most ${MERGE_MOVES_PER_ROUND} slots a round, the lowest first`, () => {
    const m = merges(round(world(split({ slots: [[12288, 12387]] }, { slots: [[12388, 16383]] }))).steps);
    assert.equal(m.length, MERGE_MOVES_PER_ROUND);
    assert.equal(m[0], '12288 c-shard-3-0 -> c-shard-3-1 quiet');
  });
  const waits: Array<{ name: string; nodes: NodeSpec[]; why: RegExp }> = [
    {
      name: 'a slot open elsewhere',
      nodes: split().map((n) =>
        n.id === id('m0')
          ? { ...n, migrating: [[100, id('m1')]] }
          : n.id === id('m1')
            ? { ...n, importing: [[100, id('m0')]] }
            : n,
      ),
      why: /merged once no slot is open/,
    },
    {
      name: 'the two do not know each other yet',
      nodes: split({ unknown: [id('r3')] }),
      why: /merged once they know each other/,
    },
  ];
  for (const c of waits) {
    await t.test(`${c.name}: told, nothing merged yet`, () => {
      assert.deepEqual(
        merges(round(world(c.nodes)).steps).filter((s) => s.endsWith('quiet')),
        [],
      );
      const h = holds(c.nodes);
      assert.equal(h.length, 1);
      assert.equal(h[0]!.warn, true);
      assert.match(h[0]!.reason, c.why);
    });
  }
  await t.test('the second master silent: not a split (the failover decides about a failing master)', () => {
    const nodes = split({ silent: true });
    assert.deepEqual(holds(nodes), []);
    assert.deepEqual(merges(round(world(nodes)).steps), []);
  });
  await t.test('a healthy shard (one master, its replica) is not a split', () => {
    assert.deepEqual(holds(healthy(4, [[[0, 4095]], [[4096, 8191]], [[8192, 12287]], [[12288, 16383]]])), []);
  });
});
