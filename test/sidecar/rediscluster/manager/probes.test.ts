// The RedisCluster worker's probe memory: RoundProbes (a hung node read as still silent while its
// probe is in flight, never a node that answered or refused) and Silences (how long each pod has
// gone unanswered, and refused). Fake timers: no test waits on the clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RoundProbes, SILENT_WAIT_MS } from '../../../../src/sidecar/rediscluster/manager/probes.ts';
import { Silences } from '../../../../src/sidecar/rediscluster/manager/silences.ts';
import type { PodObservation, ProbeOutcome } from '../../../../src/sidecar/rediscluster/decide/types.ts';

const OK: ProbeOutcome = {
  ok: true,
  nodes: [],
  info: {
    role: 'master',
    linkUp: false,
    syncing: false,
    offset: 0,
    usedMemory: 0,
    maxMemory: 0,
    keys: 0,
    clusterOk: true,
  },
};
const TIMEOUT: ProbeOutcome = { ok: false, kind: 'timeout', message: 'Command timed out' };
const REFUSED: ProbeOutcome = { ok: false, kind: 'refused', message: 'ECONNREFUSED' };
const LOADING: ProbeOutcome = { ok: false, kind: 'loading', message: 'LOADING' };

/** A probe whose answers the test hands out one call at a time. */
function scripted() {
  const calls: Array<(o: ProbeOutcome) => void> = [];
  const probe = (_ip: string) => new Promise<ProbeOutcome>((resolve) => calls.push(resolve));
  return { probe, calls };
}

test('RoundProbes: a node that timed out is read as still silent while its next probe is in flight', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const s = scripted();
  const probes = new RoundProbes(s.probe);
  // First round: nothing known, the probe is awaited whatever it takes.
  const first = probes.get('10.0.0.1');
  s.calls[0]!(TIMEOUT);
  assert.deepEqual(await first, TIMEOUT);
  // Next round: a new probe; after SILENT_WAIT_MS without an answer the round reads the last timeout.
  const second = probes.get('10.0.0.1');
  assert.equal(s.calls.length, 2);
  t.mock.timers.tick(SILENT_WAIT_MS);
  assert.deepEqual(await second, TIMEOUT);
  // The round after: that probe is still in flight, so no second one is sent.
  const third = probes.get('10.0.0.1');
  assert.equal(s.calls.length, 2, 'one probe in flight per address');
  t.mock.timers.tick(SILENT_WAIT_MS);
  assert.deepEqual(await third, TIMEOUT);
  // It answers: the next round sends a fresh probe and, the last outcome being an answer, waits for it.
  s.calls[1]!(OK);
  await Promise.resolve();
  const fourth = probes.get('10.0.0.1');
  assert.equal(s.calls.length, 3);
  t.mock.timers.tick(SILENT_WAIT_MS * 10);
  s.calls[2]!(OK);
  assert.deepEqual(await fourth, OK);
});

test('RoundProbes: a node that refused or answered with an error is always awaited', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  for (const last of [REFUSED, LOADING, OK]) {
    const s = scripted();
    const probes = new RoundProbes(s.probe);
    const first = probes.get('10.0.0.2');
    s.calls[0]!(last);
    await first;
    let settled = false;
    const next = probes.get('10.0.0.2').then((o) => ((settled = true), o));
    t.mock.timers.tick(SILENT_WAIT_MS * 10);
    await Promise.resolve();
    assert.equal(settled, false, `after ${last.ok ? 'an answer' : last.kind} the round waits for the probe`);
    s.calls[1]!(TIMEOUT);
    assert.deepEqual(await next, TIMEOUT);
  }
});

test('RoundProbes: an address gone from the pod list is forgotten', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const s = scripted();
  const probes = new RoundProbes(s.probe);
  const first = probes.get('10.0.0.3');
  s.calls[0]!(TIMEOUT);
  await first;
  probes.retain(['10.0.0.4']);
  let settled = false;
  const next = probes.get('10.0.0.3').then((o) => ((settled = true), o));
  t.mock.timers.tick(SILENT_WAIT_MS * 10);
  await Promise.resolve();
  assert.equal(settled, false, 'nothing remembered of it: awaited');
  s.calls[1]!(OK);
  assert.deepEqual(await next, OK);
});

const pod = (probe: ProbeOutcome | null, ip: string | null = '10.0.0.1'): PodObservation => ({
  name: 'c-shard-0-0',
  uid: 'uid-0',
  shard: 0,
  ordinal: 0,
  ip,
  deleting: false,
  record: null,
  roleLabel: null,
  probe,
});

test('Silences: how long a pod has gone unanswered, and refused, round after round', async (t) => {
  const cases: Array<{
    name: string;
    rounds: Array<{ at: number; probe: ProbeOutcome | null; ip?: string }>;
    silent: number | null;
    refused: number | null;
  }> = [
    { name: 'answers: not silent', rounds: [{ at: 0, probe: OK }], silent: null, refused: null },
    {
      name: 'times out since 1000: silent 700 ms, never refused',
      rounds: [
        { at: 500, probe: OK },
        { at: 1000, probe: TIMEOUT },
        { at: 1700, probe: TIMEOUT },
      ],
      silent: 700,
      refused: null,
    },
    {
      name: 'refused since 1000: silent and refused 400 ms',
      rounds: [
        { at: 1000, probe: REFUSED },
        { at: 1400, probe: REFUSED },
      ],
      silent: 400,
      refused: 400,
    },
    {
      name: 'timed out, then refused: silent from the first, refused from the refusal',
      rounds: [
        { at: 1000, probe: TIMEOUT },
        { at: 1500, probe: REFUSED },
        { at: 1800, probe: REFUSED },
      ],
      silent: 800,
      refused: 300,
    },
    {
      name: 'refused, then a timeout: refusals no longer every probe since',
      rounds: [
        { at: 1000, probe: REFUSED },
        { at: 1500, probe: TIMEOUT },
      ],
      silent: 500,
      refused: null,
    },
    {
      name: 'an error reply (LOADING) is an answer: the silence ends',
      rounds: [
        { at: 1000, probe: TIMEOUT },
        { at: 1500, probe: LOADING },
      ],
      silent: null,
      refused: null,
    },
    {
      name: 'silent, answers, silent again: counted from the new silence',
      rounds: [
        { at: 1000, probe: TIMEOUT },
        { at: 1500, probe: OK },
        { at: 2000, probe: TIMEOUT },
        { at: 2100, probe: TIMEOUT },
      ],
      silent: 100,
      refused: null,
    },
    {
      name: 'a new address starts it again',
      rounds: [
        { at: 1000, probe: REFUSED },
        { at: 1500, probe: REFUSED, ip: '10.0.0.9' },
      ],
      silent: 0,
      refused: 0,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const silences = new Silences();
      let last: PodObservation | null = null;
      for (const r of c.rounds) {
        last = pod(r.probe, r.ip);
        silences.observe([last], r.at);
      }
      assert.equal(last!.silentForMs, c.silent);
      assert.equal(last!.refusedForMs, c.refused);
    });
  }
});
