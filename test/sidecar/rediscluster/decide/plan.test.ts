// Decision tables of one round (decide/plan.ts and the parts it composes): bring-up, re-attaching
// a recreated pod, open slots left by an interrupted move, forgetting, and the reshard decision.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRound, type RoundInput } from '../../../../src/sidecar/rediscluster/decide/plan.ts';
import type { ClusterStep, PodObservation } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import { healthy, id, nameOf, SPEC3, THREE, world, type NodeSpec } from './fixtures.ts';

const NO_MEMORY = { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() };

function round(pods: PodObservation[], over: Partial<RoundInput> = {}) {
  return planRound({ pods, spec: SPEC3, remembered: new Map(), failover: NO_MEMORY, now: 100_000, ...over });
}

const brief = (s: ClusterStep) => {
  switch (s.kind) {
    case 'addslots':
      return `addslots ${s.pod} ${s.ranges.map((r) => r.join('-')).join(',')} epoch=${s.configEpoch}`;
    case 'meet':
      return `meet ${s.pod} -> ${s.target}`;
    case 'replicate':
      return `replicate ${s.pod} -> ${nameOf(s.masterId)}`;
    case 'failover':
      return `failover ${s.pod}`;
    case 'forget':
      return `forget ${nameOf(s.id)} on ${s.pods.join(',')}`;
    case 'reset':
      return `reset ${s.pod}`;
    case 'move':
      return `move ${s.slot} ${s.from} -> ${s.to}${s.cold ? ' cold' : ''}`;
    case 'stable':
      return `stable ${s.slot} ${s.pods.join(',')}`;
  }
};

/** Six fresh nodes, each knowing only itself. */
function fresh(answering: (shard: number, ordinal: number) => boolean = () => true): NodeSpec[] {
  const nodes: NodeSpec[] = [];
  for (let s = 0; s < 3; s++)
    for (let o = 0; o < 2; o++)
      nodes.push({ id: id(`${s}${o}`), pod: [s, o], ip: `10.0.${s}.${o + 1}`, silent: !answering(s, o) });
  return nodes.map((n) => ({ ...n, unknown: nodes.filter((x) => x.id !== n.id).map((x) => x.id) }));
}

test('bring-up', async (t) => {
  const cases: Array<{ name: string; nodes: NodeSpec[]; steps: string[]; holds?: RegExp }> = [
    {
      name: 'six fresh nodes: each pod 0 gets its even range and its own epoch, every other node meets pod 0 of shard 0',
      nodes: fresh(),
      steps: [
        'addslots c-shard-0-0 0-5461 epoch=1',
        'addslots c-shard-1-0 5462-10922 epoch=2',
        'addslots c-shard-2-0 10923-16383 epoch=3',
        'meet c-shard-0-0 -> c-shard-0-1',
        'meet c-shard-0-0 -> c-shard-1-0',
        'meet c-shard-0-0 -> c-shard-1-1',
        'meet c-shard-0-0 -> c-shard-2-0',
        'meet c-shard-0-0 -> c-shard-2-1',
      ],
    },
    {
      name: "shard 1's pod 0 does not answer yet: no slot is given to anyone, the others still meet",
      nodes: fresh((s, o) => !(s === 1 && o === 0)),
      steps: [
        'meet c-shard-0-0 -> c-shard-0-1',
        'meet c-shard-0-0 -> c-shard-1-1',
        'meet c-shard-0-0 -> c-shard-2-0',
        'meet c-shard-0-0 -> c-shard-2-1',
      ],
      holds: /not every pod answers/,
    },
    {
      name: 'slots assigned and every node met: the pod 1s replicate their shard master',
      nodes: [0, 1, 2].flatMap((s): NodeSpec[] => [
        { id: id(`${s}0`), pod: [s, 0], ip: `10.0.${s}.1`, slots: THREE[s], epoch: s + 1 },
        { id: id(`${s}1`), pod: [s, 1], ip: `10.0.${s}.2` },
      ]),
      steps: ['replicate c-shard-0-1 -> 00', 'replicate c-shard-1-1 -> 10', 'replicate c-shard-2-1 -> 20'],
    },
    {
      name: 'a pod 1 that has not learnt of its master yet (gossip) waits for it',
      nodes: [0, 1, 2].flatMap((s): NodeSpec[] => [
        { id: id(`${s}0`), pod: [s, 0], ip: `10.0.${s}.1`, slots: THREE[s], epoch: s + 1 },
        { id: id(`${s}1`), pod: [s, 1], ip: `10.0.${s}.2`, unknown: s === 2 ? [id('20')] : [] },
      ]),
      steps: ['replicate c-shard-0-1 -> 00', 'replicate c-shard-1-1 -> 10'],
      holds: /does not know .*shard-2-0/,
    },
    {
      name: 'formed and attached: nothing to do, the reshard is balanced',
      nodes: healthy(3, THREE),
      steps: [],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const p = round(world(c.nodes));
      assert.deepEqual(p.steps.map(brief), c.steps);
      if (c.holds) assert.match(p.holds.map((h) => h.reason).join('\n'), c.holds);
      if (c.steps.length === 0) assert.equal(p.reshard.kind, 'balanced');
    });
  }
});

test('a recreated pod is re-attached to its shard and the dead node forgotten', async (t) => {
  // Shard 0's master m0 died; r0 (pod 1) was promoted and serves shard 0's slots; pod 0 came back empty with a new id.
  const ghost: NodeSpec = { id: id('m0'), ip: '10.0.0.1', fail: true, epoch: 1 };
  const promoted: NodeSpec = {
    id: id('r0'),
    pod: [0, 1],
    ip: '10.0.0.2',
    slots: THREE[0],
    epoch: 4,
    offset: 100,
    keys: 10,
  };
  const rest = healthy(3, THREE).filter((n) => n.id !== id('m0') && n.id !== id('r0'));
  const newbie = (knownByAll: boolean): NodeSpec => ({
    id: id('n0'),
    pod: [0, 0],
    ip: '10.0.0.9',
    unknown: knownByAll ? [] : [ghost.id, promoted.id, ...rest.map((n) => n.id)],
  });
  const hide = (nodes: NodeSpec[], from: string) =>
    nodes.map((n) => (n.id === from ? n : { ...n, unknown: [...(n.unknown ?? []), id('n0')] }));
  const cases: Array<{ name: string; nodes: NodeSpec[]; steps: string[] }> = [
    {
      name: 'the new node knows nobody: it is met (the dead one is forgotten on the nodes that know it)',
      nodes: hide([ghost, promoted, ...rest, newbie(false)], id('n0')),
      steps: [
        'meet c-shard-0-1 -> c-shard-0-0',
        'forget m0 on c-shard-0-1,c-shard-1-0,c-shard-1-1,c-shard-2-0,c-shard-2-1',
      ],
    },
    {
      name: 'met: it replicates the promoted master; the dead node is forgotten everywhere',
      nodes: [ghost, promoted, ...rest, newbie(true)],
      steps: [
        'replicate c-shard-0-0 -> r0',
        'forget m0 on c-shard-0-0,c-shard-0-1,c-shard-1-0,c-shard-1-1,c-shard-2-0,c-shard-2-1',
      ],
    },
    {
      name: 'a pod still silent: nothing is forgotten (it might be the dead node coming back)',
      nodes: [ghost, promoted, ...rest.map((n) => (n.id === id('r2') ? { ...n, silent: true } : n)), newbie(true)],
      steps: ['replicate c-shard-0-0 -> r0'],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      assert.deepEqual(round(world(c.nodes)).steps.map(brief), c.steps);
    });
  }
  await t.test('before the failover: the new pod 0 waits, its empty node never becomes the source of a sync', () => {
    const master = { ...ghost, slots: THREE[0] };
    const replica: NodeSpec = {
      id: id('r0'),
      pod: [0, 1],
      ip: '10.0.0.2',
      role: 'replica',
      master: ghost.id,
      offset: 100,
      keys: 10,
    };
    const p = round(world([master, replica, ...rest, newbie(true)]));
    assert.deepEqual(p.steps.map(brief), []);
    assert.match(p.holds.map((h) => h.reason).join('\n'), /c-shard-0-0 waits: shard 0's master .* failing or silent/);
  });
});

test('slots left open by an interrupted move are finished or rolled back', async (t) => {
  const base = healthy(4, [[[0, 4095]], [[4096, 8191]], [[8192, 12287]], [[12288, 16383]]]);
  const set = (nodes: NodeSpec[], which: string, patch: Partial<NodeSpec>) =>
    nodes.map((n) => (n.id === id(which) ? { ...n, ...patch } : n));
  const cases: Array<{ name: string; nodes: NodeSpec[]; steps: string[] }> = [
    {
      name: 'migrating 100 from m0 to m3, m3 importing it: finished towards m3',
      nodes: set(set(base, 'm0', { migrating: [[100, id('m3')]] }), 'm3', { importing: [[100, id('m0')]] }),
      steps: ['move 100 c-shard-0-0 -> c-shard-3-0'],
    },
    {
      name: 'migrating to m3, which restarted and lost its importing state: still finished towards m3 (it is opened again)',
      nodes: set(base, 'm0', { migrating: [[100, id('m3')]] }),
      steps: ['move 100 c-shard-0-0 -> c-shard-3-0'],
    },
    {
      name: 'migrating to a node that is gone with nobody replacing it: rolled back, m0 keeps the slot',
      nodes: [...set(base, 'm0', { migrating: [[100, id('zz')]] })],
      steps: ['stable 100 c-shard-0-0'],
    },
    {
      name: 'only importing on m3 (m0 already closed its side): whatever m3 holds goes back to m0, cold',
      nodes: set(base, 'm3', { importing: [[100, id('m0')]] }),
      steps: ['move 100 c-shard-3-0 -> c-shard-0-0 cold'],
    },
    {
      name: 'importing on the node that owns the slot already: closed there',
      nodes: set(
        set(base, 'm3', {
          importing: [[100, id('m0')]],
          slots: [
            [100, 100],
            [12288, 16383],
          ],
          epoch: 9,
        }),
        'm0',
        {
          slots: [
            [0, 99],
            [101, 4095],
          ],
        },
      ),
      steps: ['stable 100 c-shard-3-0'],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const p = round(world(c.nodes), { spec: { ...SPEC3, shards: 4 } });
      assert.deepEqual(p.steps.map(brief), c.steps);
      assert.equal(p.reshard.kind, 'wait', 'no reshard while a slot is open');
    });
  }
  // Valkey 8 replicates CLUSTER SETSLOT: replicas show their master's open slots, and keep one
  // their master refused (NOREPLICAS when a replica acknowledged too late). Only masters count.
  await t.test("a replica's copy of its master's open slot is not another open slot: one move", () => {
    const nodes = set(
      set(set(base, 'm0', { migrating: [[100, id('m3')]] }), 'r0', { migrating: [[100, id('m3')]] }),
      'r3',
      { importing: [[100, id('m0')]] },
    );
    const p = round(world(nodes), { spec: { ...SPEC3, shards: 4 } });
    assert.deepEqual(p.steps.map(brief), ['move 100 c-shard-0-0 -> c-shard-3-0']);
  });
  await t.test('open slots only replicas show (their masters refused them): nothing to finish, nothing waits', () => {
    const nodes = set(set(base, 'r0', { migrating: [[100, id('m3')]] }), 'r3', { importing: [[100, id('m0')]] });
    const p = round(world(nodes), { spec: { ...SPEC3, shards: 4 } });
    const clean = round(world(base), { spec: { ...SPEC3, shards: 4 } });
    assert.deepEqual(p.steps.map(brief), []);
    assert.deepEqual(p.reshard, clean.reshard);
    assert.deepEqual(p.holds, clean.holds);
  });
  // m3 died mid-move; its replica r3 was promoted and holds what m3 took. Its shard is known from
  // the worker's memory, or from m3's pod (still there, silent) whose record names it.
  const died = [
    ...set(base, 'm0', { migrating: [[100, id('m3')]] }).filter((n) => n.id !== id('m3') && n.id !== id('r3')),
    { id: id('m3'), ip: '10.0.3.1', fail: true, epoch: 4 },
    {
      id: id('r3'),
      pod: [3, 1] as [number, number],
      ip: '10.0.3.2',
      slots: [[12288, 16383]] as Array<[number, number]>,
      epoch: 9,
      offset: 100,
    },
  ];
  await t.test('migrating to m3, which died; its replica took over shard 3 (remembered): finished towards it', () => {
    const p = round(world(died), { spec: { ...SPEC3, shards: 4 }, remembered: new Map([[id('m3'), 3]]) });
    assert.deepEqual(p.steps.map(brief).slice(0, 1), ['move 100 c-shard-0-0 -> c-shard-3-1']);
  });
  await t.test(
    "the same seen by a new instance, from m3's silent pod and its record: finished towards r3, m3 not forgotten yet",
    () => {
      const pods = world([...died, { id: id('x3'), pod: [3, 0], ip: '10.0.3.1', silent: true }]);
      const pod = pods.find((p) => p.name === 'c-shard-3-0')!;
      pod.record = {
        id: id('m3'),
        role: 'master',
        slots: [],
        masterId: null,
        linkUp: false,
        usedMemory: 0,
        maxMemory: 0,
        keys: 0,
        at: '2026-01-01T00:00:00.000Z',
      };
      const p = round(pods, { spec: { ...SPEC3, shards: 4 } });
      assert.deepEqual(p.steps.map(brief), ['move 100 c-shard-0-0 -> c-shard-3-1']);
    },
  );
});

test('reshard decisions', async (t) => {
  const up = [
    ...healthy(3, THREE),
    { id: id('m3'), pod: [3, 0] as [number, number], ip: '10.0.3.1' },
    { id: id('r3'), pod: [3, 1] as [number, number], ip: '10.0.3.2', role: 'replica' as const, master: id('m3') },
  ];
  const cases: Array<{
    name: string;
    nodes: NodeSpec[];
    shards: number;
    kind: string;
    detail?: RegExp;
    moves?: number;
  }> = [
    { name: '3 -> 4 with shard 3 ready: 4096 moves to its master', nodes: up, shards: 4, kind: 'move', moves: 4096 },
    {
      name: "3 -> 4 while shard 3's master does not serve queries yet: wait",
      nodes: up.map((n) => (n.id === id('m3') ? { ...n, clusterOk: false } : n)),
      shards: 4,
      kind: 'wait',
      detail: /does not serve queries yet/,
    },
    {
      name: "3 -> 4 while shard 3's replica is not linked: wait",
      nodes: up.map((n) => (n.id === id('r3') ? { ...n, linkUp: false } : n)),
      shards: 4,
      kind: 'wait',
      detail: /no linked replica/,
    },
    {
      name: '4 -> 3 that the data does not fit in: refused, nothing moves',
      nodes: healthy(4, [[[0, 4095]], [[4096, 8191]], [[8192, 12287]], [[12288, 16383]]]).map((n) => ({
        ...n,
        usedMemory: 80_000_000,
        maxMemory: 100_000_000,
      })),
      shards: 3,
      kind: 'refuse',
      detail: /spec.master.replicas 3 cannot hold the data.*at least 4 are needed/,
    },
    {
      name: '4 -> 3 that fits: shard 3 gives its 4096 slots',
      nodes: healthy(4, [[[0, 4095]], [[4096, 8191]], [[8192, 12287]], [[12288, 16383]]]).map((n) => ({
        ...n,
        usedMemory: 20_000_000,
        maxMemory: 100_000_000,
      })),
      shards: 3,
      kind: 'move',
      moves: 4096,
    },
    {
      name: 'a master silent: wait',
      nodes: healthy(4, [[[0, 4095]], [[4096, 8191]], [[8192, 12287]], [[12288, 16383]]]).map((n) =>
        n.id === id('m1') ? { ...n, silent: true } : n,
      ),
      shards: 3,
      kind: 'wait',
      detail: /slot 4096 is not served by a healthy master/,
    },
    {
      name: "only the leaving shard's replica silent: the reshard goes on (a receiving shard would wait for its replica)",
      nodes: healthy(4, [[[0, 4095]], [[4096, 8191]], [[8192, 12287]], [[12288, 16383]]]).map((n) =>
        n.id === id('r3') ? { ...n, silent: true } : n,
      ),
      shards: 3,
      kind: 'move',
      moves: 4096,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = round(world(c.nodes), { spec: { ...SPEC3, shards: c.shards } }).reshard;
      assert.equal(d.kind, c.kind, JSON.stringify(d).slice(0, 300));
      if (c.detail) assert.match('reason' in d ? d.reason : '', c.detail);
      if (c.moves !== undefined && d.kind === 'move') assert.equal(d.moves.length, c.moves);
    });
  }
});

test('a drained leaving shard goes once its pods terminate: forgotten by the others, then reset', async (t) => {
  const drained = healthy(4, [[[0, 5461]], [[5462, 10922]], [[10923, 16383]], []]);
  const spec = { ...SPEC3, shards: 3 };
  await t.test('pods still there: the nodes stay (they answer MOVED to old slot maps)', () => {
    assert.deepEqual(round(world(drained), { spec }).steps.map(brief), []);
  });
  await t.test('pods terminating: forgotten on the staying nodes, replica reset first', () => {
    const terminating = drained.map((n) => (n.pod?.[0] === 3 ? { ...n, deleting: true } : n));
    assert.deepEqual(round(world(terminating), { spec }).steps.map(brief), [
      'forget m3 on c-shard-0-0,c-shard-0-1,c-shard-1-0,c-shard-1-1,c-shard-2-0,c-shard-2-1',
      'forget r3 on c-shard-0-0,c-shard-0-1,c-shard-1-0,c-shard-1-1,c-shard-2-0,c-shard-2-1',
      'reset c-shard-3-1',
      'reset c-shard-3-0',
    ]);
  });
  await t.test('pods gone: their nodes forgotten at once (no need to wait for the failure flag)', () => {
    const gone = drained.map((n) => (n.pod?.[0] === 3 ? { ...n, pod: undefined } : n));
    const remembered = new Map([
      [id('m3'), 3],
      [id('r3'), 3],
    ]);
    const steps = round(world(gone), { spec, remembered }).steps.map(brief);
    assert.deepEqual(steps, [
      'forget m3 on c-shard-0-0,c-shard-0-1,c-shard-1-0,c-shard-1-1,c-shard-2-0,c-shard-2-1',
      'forget r3 on c-shard-0-0,c-shard-0-1,c-shard-1-0,c-shard-1-1,c-shard-2-0,c-shard-2-1',
    ]);
  });
});
