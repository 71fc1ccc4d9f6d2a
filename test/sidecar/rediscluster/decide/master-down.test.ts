// A gone master failed over at once (decide/master-down.ts through decide/failover.ts): crashed
// (its port refuses or its container is not running, and its replicas saw the link drop) or hung
// (it answers nobody, and most of the other nodes, a master among them, wait for its pong), and
// never when only the sidecar lost it. Durations are given in the observations; no clock is read.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decideForcedFailovers } from '../../../../src/sidecar/rediscluster/decide/failover.ts';
import { HUNG_PING_MS, masterDown } from '../../../../src/sidecar/rediscluster/decide/master-down.ts';
import { buildTopology } from '../../../../src/sidecar/rediscluster/decide/topology.ts';
import type { PodObservation, ProbeOutcome } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import { healthy, id, nameOf, THREE, world, type NodeSpec } from './fixtures.ts';

const TIMEOUT = 10_000;
const NOW = 100_000;
/** Every viewer's clock when it answered (ms since the epoch). */
const CLOCK = 1_800_000_000_000;
const M0 = id('m0');

const REFUSED: ProbeOutcome = { ok: false, kind: 'refused', message: 'connect ECONNREFUSED 10.0.0.1:6379' };
const TIMEOUT_PROBE: ProbeOutcome = { ok: false, kind: 'timeout', message: 'Command timed out' };

/** How a viewer (by node name) sees m0 on the bus: a ping pending this long, a pong this long ago, flags. */
interface Bus {
  waiting?: number;
  heard?: number;
  pfail?: boolean;
}

interface World {
  probe?: ProbeOutcome;
  silentForMs?: number;
  refusedForMs?: number;
  redisGone?: boolean;
  /** m0's pod carries its record (it was seen as m0). */
  record?: boolean;
  replica?: Partial<NodeSpec>;
  bus?: Record<string, Bus>;
  /** Nodes that do not answer besides m0 (by name). */
  silent?: string[];
}

function build(w: World) {
  const nodes = healthy(3, THREE).map((n): NodeSpec => {
    if (n.id === M0) return { ...n, silent: true, keys: 900 };
    if (nameOf(n.id) === 'r0') return { ...n, linkUp: false, offset: 500, keys: 900, ...w.replica };
    return (w.silent ?? []).includes(nameOf(n.id)) ? { ...n, silent: true } : n;
  });
  const pods = world(nodes).map((p): PodObservation => {
    if (p.ip === '10.0.0.1') {
      return {
        ...p,
        record:
          w.record === false
            ? null
            : {
                id: M0,
                role: 'master',
                slots: THREE[0]!,
                masterId: null,
                linkUp: true,
                usedMemory: 0,
                maxMemory: 0,
                keys: 900,
                at: '2026-01-01T00:00:00Z',
              },
        probe: w.probe ?? REFUSED,
        silentForMs: w.silentForMs ?? (w.probe?.ok === false && w.probe.kind === 'loading' ? null : 0),
        refusedForMs: (w.probe ?? REFUSED) === REFUSED ? (w.refusedForMs ?? 0) : null,
        redisGone: w.redisGone ?? false,
      };
    }
    if (!p.probe?.ok) return p;
    const viewer = nameOf(p.probe.nodes.find((n) => n.myself)!.id);
    const bus = w.bus?.[viewer] ?? { heard: 1000 };
    const nodeLines = p.probe.nodes.map((l) =>
      l.id === M0
        ? {
            ...l,
            pfail: bus.pfail ?? false,
            pingSent: bus.waiting === undefined ? 0 : CLOCK - bus.waiting,
            pongRecv: bus.heard === undefined ? CLOCK - 5000 : CLOCK - bus.heard,
          }
        : l,
    );
    return { ...p, probe: { ok: true, nodes: nodeLines, info: { ...p.probe.info, clockMs: CLOCK } } };
  });
  return buildTopology(pods);
}

function decide(w: World, opts: { crashConfirmMs?: number; forced?: number; lastKeys?: number } = {}) {
  return decideForcedFailovers(
    build(w),
    TIMEOUT,
    {
      failingSince: new Map(),
      forcedAt: new Map(opts.forced === undefined ? [] : [[M0, opts.forced]]),
      lastKeys: new Map(opts.lastKeys === undefined ? [] : [[M0, opts.lastKeys]]),
    },
    NOW,
    opts.crashConfirmMs ?? 0,
  );
}

const waiting = (ms: number): Bus => ({ waiting: ms, heard: ms + 1000 });
/** The hung master's usual witnesses: both other masters and one replica wait for its pong. */
const HUNG_BUS: Record<string, Bus> = { m1: waiting(400), m2: waiting(350), r1: waiting(HUNG_PING_MS) };

test('a gone master: failed over at once, or not, and why', async (t) => {
  const cases: Array<{
    name: string;
    world: World;
    opts?: { crashConfirmMs?: number; forced?: number; lastKeys?: number };
    force: boolean;
    hold?: RegExp;
    warn?: boolean;
  }> = [
    {
      name: 'crashed: its port refuses, its replica saw the link drop: FORCE on the replica at once',
      world: {},
      force: true,
    },
    {
      name: 'crashed, but refused for less than crashConfirmMs: not yet',
      world: { refusedForMs: 100 },
      opts: { crashConfirmMs: 300 },
      force: false,
    },
    {
      name: 'refused for crashConfirmMs: FORCE',
      world: { refusedForMs: 300 },
      opts: { crashConfirmMs: 300 },
      force: true,
    },
    {
      name: 'refused, but its replica still replicates from it: the sidecar lost it, no failover',
      world: { replica: { linkUp: true } },
      force: false,
      hold: /still replicates from it: no failover/,
    },
    {
      name: 'its redis container is not running (the API says so) while our probe times out: FORCE',
      world: { probe: TIMEOUT_PROBE, redisGone: true },
      force: true,
    },
    {
      name: 'a refusing pod with no record of the node (never seen as it): nothing on our word alone',
      world: { record: false },
      force: false,
    },
    {
      name: 'hung: our probe timed out, both other masters and a replica wait for its pong: FORCE',
      world: { probe: TIMEOUT_PROBE, bus: HUNG_BUS },
      force: true,
    },
    {
      name: 'hung: the other masters already flag it fail?: they agree',
      world: {
        probe: TIMEOUT_PROBE,
        silentForMs: 800,
        bus: { m1: { pfail: true }, m2: { pfail: true }, r2: waiting(500) },
      },
      force: true,
    },
    {
      name: 'hung: one master and one replica wait, the others have not pinged it since: FORCE (no view disagrees)',
      world: { probe: TIMEOUT_PROBE, silentForMs: 700, bus: { m1: waiting(400), r0: waiting(300) } },
      force: true,
    },
    {
      name: 'silent to us, only one other node waits for it: not yet (one broken path is not enough)',
      world: { probe: TIMEOUT_PROBE, silentForMs: 900, bus: { m1: waiting(900) } },
      force: false,
    },
    {
      name: `silent to us, pings pending under ${HUNG_PING_MS} ms (a live node answers in a millisecond): not yet`,
      world: {
        probe: TIMEOUT_PROBE,
        silentForMs: 700,
        bus: { m1: waiting(HUNG_PING_MS - 1), m2: waiting(150), r1: waiting(100) },
      },
      force: false,
    },
    {
      name: 'silent to us, three replicas wait but no master does: not yet (the voters have not seen it)',
      world: { probe: TIMEOUT_PROBE, silentForMs: 900, bus: { r0: waiting(400), r1: waiting(400), r2: waiting(400) } },
      force: false,
    },
    {
      name: 'silent to us for 1 s while m2 got its pong 200 ms ago: only the sidecar lost it, never a failover',
      world: {
        probe: TIMEOUT_PROBE,
        silentForMs: 1000,
        bus: { m1: waiting(400), r1: waiting(400), m2: { heard: 200 } },
      },
      force: false,
      hold: /c-shard-2-0 heard it since: the sidecar lost contact/,
    },
    {
      name: 'our first unanswered probe, m1 and r1 wait 600 ms, but r2 got a pong 100 ms ago: they lost their path, not it',
      world: { probe: TIMEOUT_PROBE, silentForMs: 0, bus: { m1: waiting(600), r1: waiting(600), r2: { heard: 100 } } },
      force: false,
      hold: /c-shard-2-1 heard it since/,
    },
    {
      name: 'our first unanswered probe, witnesses waiting 600 ms, the last pong anyone got 700 ms ago: FORCE',
      world: {
        probe: TIMEOUT_PROBE,
        silentForMs: 0,
        bus: { m1: waiting(600), r1: waiting(600), m2: { heard: 700 }, r0: { heard: 700 } },
      },
      force: true,
    },
    {
      // An answer, even an error, is no silence: the manager gives it no silentForMs.
      name: 'it answers with an error (LOADING): alive, no failover',
      world: { probe: { ok: false, kind: 'loading', message: 'LOADING' }, bus: HUNG_BUS },
      force: false,
    },
    {
      name: 'crashed while another master does not answer either: 1 of 3 masters answer, no election can win',
      world: { silent: ['m1'] },
      force: false,
      hold: /only 1 of 3 masters answer/,
      warn: true,
    },
    {
      name: 'crashed, its only replica empty while it held keys: never promoted over the data',
      world: { replica: { offset: 0, keys: 0 } },
      opts: { lastKeys: 900 },
      force: false,
      hold: /never promoted over the data/,
      warn: true,
    },
    {
      name: 'crashed, a forced election already sent 2 s ago: wait for it',
      world: {},
      opts: { forced: NOW - 2000 },
      force: false,
      hold: /forced election for shard 0 was sent/,
    },
    {
      name: 'crashed, its replica in a full sync: nobody to promote',
      world: { replica: { syncing: true } },
      force: false,
      hold: /in a full sync/,
      warn: true,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = decide(c.world, c.opts);
      assert.deepEqual(
        d.steps.map((s) => (s.kind === 'failover' ? [s.pod, s.failedId] : s.kind)),
        c.force ? [['c-shard-0-1', M0]] : [],
      );
      if (c.force) assert.match((d.steps[0] as { reason: string }).reason, /CLUSTER FAILOVER FORCE on c-shard-0-1/);
      if (c.hold) assert.match(d.holds.map((h) => h.reason).join('\n'), c.hold);
      if (c.warn !== undefined)
        assert.equal(
          d.holds.some((h) => h.warn),
          c.warn,
        );
      // Not flagged `fail` by the cluster: no failover timer was started for it.
      assert.equal(d.failingSince.size, 0);
    });
  }
});

test('masterDown says how the master went', () => {
  const node = (w: World) => {
    const topo = build(w);
    return masterDown(topo, topo.nodes.get(M0)!, 0);
  };
  const crash = node({});
  assert.equal(crash.down && crash.how, 'crashed');
  assert.match(
    crash.down ? crash.evidence.join('; ') : '',
    /refused connections .* every replica of it \(c-shard-0-1\) reports the link down/,
  );
  const hung = node({ probe: TIMEOUT_PROBE, silentForMs: 600, bus: HUNG_BUS });
  assert.equal(hung.down && hung.how, 'hung');
  assert.match(hung.down ? hung.evidence.join('; ') : '', /3 other nodes \(c-shard-1-0, c-shard-1-1, c-shard-2-0\)/);
  // A master that answers us is alive, whatever the bus says.
  const topo = build({ bus: HUNG_BUS });
  assert.deepEqual(masterDown(topo, topo.nodes.get(id('m1'))!, 0), { down: false, reason: null });
});

test('never a failover when the bus does not bear witness, or when a node heard the master since', () => {
  const viewers = ['m1', 'm2', 'r0', 'r1', 'r2'] as const;
  const bus = fc.record({
    waiting: fc.option(fc.integer({ min: 1, max: 4000 }), { nil: undefined }),
    heard: fc.integer({ min: 0, max: 6000 }),
    pfail: fc.boolean(),
  });
  const worlds = fc.record({
    silentForMs: fc.integer({ min: 0, max: 4000 }),
    bus: fc.record(Object.fromEntries(viewers.map((v) => [v, bus])) as Record<(typeof viewers)[number], typeof bus>),
  });
  fc.assert(
    fc.property(worlds, ({ silentForMs, bus: b }) => {
      const d = decide({ probe: TIMEOUT_PROBE, silentForMs, bus: b });
      const agrees = (x: Bus) => x.pfail === true || (x.waiting ?? 0) >= HUNG_PING_MS;
      const witnesses = viewers.filter((v) => agrees(b[v]));
      const longest = Math.max(0, ...witnesses.map((v) => b[v].waiting ?? 0));
      const heardSince = viewers.some(
        (v) => !agrees(b[v]) && (b[v].heard ?? Infinity) + 50 < Math.max(silentForMs, longest),
      );
      const masterWitness = witnesses.some((v) => v.startsWith('m'));
      if (witnesses.length < 2 || !masterWitness || heardSince) assert.deepEqual(d.steps, []);
      else assert.equal(d.steps.length, 1);
    }),
    { numRuns: 300 },
  );
});
