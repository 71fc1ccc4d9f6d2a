// Pure: folding probes into tracks. No Redis, no address contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  isAnswering,
  silentForMs,
  track,
  reportsMasterDown,
  isBeyondScale,
  expectedPodNames,
} from '../../../../src/sidecar/redis/decide/observe.ts';
import type { ProbeResult } from '../../../../src/sidecar/adapters/redis/types.ts';
import { facts, H1, H2, ip, NOW, online, pod } from './fixtures.ts';

const cfg = { silentAfterSeconds: 2, offsetStallMs: 1000 };
const ok = (f = facts()): ProbeResult => ({ ok: true, facts: f, latencyMs: 1 });
const fail = (kind: 'timeout' | 'refused' = 'timeout'): ProbeResult => ({
  ok: false,
  error: { kind, message: kind },
  latencyMs: 500,
});

test('track: answering, failing streaks, and a new IP starting afresh', () => {
  let t = track(null, ip(1), ok(facts({ role: 'master', offset: 5, replid: H1, replicas: online(ip(11)) })), 100, cfg);
  assert.equal(t.okAt, 100);
  assert.equal(t.firstOkAt, 100);
  assert.deepEqual(t.lastMasterFacts?.onlineReplicaIps, [ip(11)]);
  t = track(t, ip(1), fail(), 200, cfg);
  t = track(t, ip(1), fail(), 300, cfg);
  assert.equal(t.failingSince, 200, 'streak starts at the first failure');
  assert.equal(t.okAt, 100, 'last answer kept');
  assert.equal(t.facts?.replication.role, 'master', 'last facts kept');
  t = track(t, ip(1), ok(facts({ of: '127.0.0.1', replid: H2 })), 400, cfg);
  assert.equal(t.failingSince, null);
  assert.equal(t.lastMasterFacts?.replid, H1, 'remembers its history as master after restarting as a replica');
  const moved = track(t, ip(2), ok(), 500, cfg);
  assert.equal(moved.firstSeenAt, 500);
  assert.equal(moved.lastMasterFacts, null, 'a new IP is a new incarnation');
});

test('track: witness streaks need continuous down/silent reports about the same master', () => {
  const down = facts({ of: ip(1), link: 'down', linkDownSince: 1 });
  const silent = facts({ of: ip(1), link: 'up', lastIo: 2 });
  const fine = facts({ of: ip(1), link: 'up', lastIo: 0 });
  let t = track(null, ip(11), ok(fine), 0, cfg);
  assert.equal(t.witnessDownSince, null);
  t = track(t, ip(11), ok(silent), 100, cfg);
  t = track(t, ip(11), ok(down), 200, cfg);
  assert.equal(t.witnessDownSince, 100);
  t = track(t, ip(11), ok(fine), 300, cfg);
  assert.equal(t.witnessDownSince, null, 'one contrary report resets it');
  t = track(t, ip(11), ok(down), 400, cfg);
  t = track(t, ip(11), ok(facts({ of: ip(2), link: 'down' })), 500, cfg);
  assert.equal(t.witnessDownSince, 500, 're-pointed: the streak is about another master');
});

test('reportsMasterDown: link down, silence, and a full sync that is still flowing', async (t) => {
  const cases: Array<[string, Parameters<typeof facts>[0], boolean]> = [
    ['link up, fresh I/O', { of: ip(1), lastIo: 1 }, false],
    ['link up, 2 s without a ping', { of: ip(1), lastIo: 2 }, true],
    ['link down', { of: ip(1), link: 'down' }, true],
    ['full sync with fresh transfer I/O', { of: ip(1), link: 'down', sync: true, syncLastIo: 0 }, false],
    ['full sync stalled', { of: ip(1), link: 'down', sync: true, syncLastIo: 5 }, true],
    ['a master is never a witness', { role: 'master' }, false],
  ];
  for (const [name, spec, want] of cases)
    await t.test(name, () => assert.equal(reportsMasterDown(facts(spec), cfg), want, name));
  const stalls: Array<[string, number | null, boolean]> = [
    ['link up, fresh I/O by the seconds, but the offset still for a second: a missed ping', 1000, true],
    ['the offset still for less than a second (pings come every second)', 999, false],
    ['stall not known', null, false],
  ];
  for (const [name, stalled, want] of stalls)
    await t.test(name, () =>
      assert.equal(reportsMasterDown(facts({ of: ip(1), lastIo: 1 }), cfg, stalled), want, name),
    );
});

test('track: the offset stall counts from the first probe that saw the offset, on the same link only', () => {
  const at = (offset: number, s: Parameters<typeof facts>[0] = {}) => ok(facts({ of: ip(1), lastIo: 0, offset, ...s }));
  let t = track(null, ip(11), at(500), 0, cfg);
  assert.equal(t.offsetSince, 0);
  t = track(t, ip(11), at(514), 100, cfg);
  assert.equal(t.offsetSince, 100, 'a ping arrived: counts again from this probe');
  t = track(t, ip(11), fail(), 400, cfg);
  t = track(t, ip(11), at(514), 900, cfg);
  assert.equal(t.offsetSince, 100, 'a failed probe in between changes nothing: offsets only grow');
  assert.equal(t.witnessDownSince, null, '800 ms without a byte is normal');
  t = track(t, ip(11), at(514), 1100, cfg);
  assert.equal(t.witnessDownSince, 1100, 'a second without a byte: the replica testifies the master is silent');
  t = track(t, ip(11), at(528), 1200, cfg);
  assert.deepEqual([t.offsetSince, t.witnessDownSince], [1200, null], 'a byte came: no testimony');
  t = track(t, ip(11), at(528, { of: ip(2) }), 1300, cfg);
  assert.equal(t.offsetSince, 1300, 're-pointed: another link');
  t = track(t, ip(11), at(528, { of: ip(2), link: 'down' }), 1400, cfg);
  t = track(t, ip(11), at(528, { of: ip(2) }), 1500, cfg);
  assert.equal(t.offsetSince, 1500, 'the link went down and up: another link');
});

test('isAnswering / silentForMs', () => {
  assert.equal(isAnswering(pod({ name: 'replica-0' }), NOW, { staleAfterMs: 1500 }), true);
  assert.equal(isAnswering(pod({ name: 'replica-0', okAgo: 2000 }), NOW, { staleAfterMs: 1500 }), false, 'stale');
  assert.equal(
    isAnswering(pod({ name: 'replica-0', error: 'timeout', okAgo: 300 }), NOW, { staleAfterMs: 1500 }),
    false,
  );
  assert.equal(isAnswering(pod({ name: 'replica-0', never: true }), NOW, { staleAfterMs: 1500 }), false);
  const moved = pod({ name: 'replica-0' });
  moved.ip = ip(99);
  assert.equal(isAnswering(moved, NOW, { staleAfterMs: 1500 }), false, 'facts about another IP');
  assert.equal(silentForMs(pod({ name: 'replica-0', error: 'refused', okAgo: 1200 }), NOW), 1200);
  assert.equal(silentForMs(pod({ name: 'replica-0', never: true }), NOW), null);
});

test('expected pods and scale-down', () => {
  assert.deepEqual(expectedPodNames('cache', 2), ['cache-master-0', 'cache-replica-0', 'cache-replica-1']);
  assert.equal(isBeyondScale(pod({ name: 'replica-2' }), 'cache', 2), true);
  assert.equal(isBeyondScale(pod({ name: 'replica-1' }), 'cache', 2), false);
  assert.equal(isBeyondScale(pod({ name: 'master-0' }), 'cache', 0), false);
});

test('track: a refusal run starts at the first refused probe and ends with any other outcome', () => {
  const refused = fail('refused');
  const timeout = fail('timeout');
  let t = track(null, '10.0.0.1', timeout, 100, cfg);
  assert.equal(t.refusedSince, null, 'a timeout is not a refusal');
  t = track(t, '10.0.0.1', refused, 200, cfg);
  t = track(t, '10.0.0.1', refused, 300, cfg);
  assert.equal(t.refusedSince, 200);
  assert.equal(t.failingSince, 100, 'the failing streak is older than the refusal run');
  t = track(t, '10.0.0.1', timeout, 400, cfg);
  assert.equal(t.refusedSince, null, 'a timeout between refusals ends the run (something may listen again)');
  t = track(t, '10.0.0.2', refused, 500, cfg);
  assert.equal(t.refusedSince, 500, 'a new IP starts afresh');
});
