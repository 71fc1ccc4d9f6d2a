// What the manager tells the user and when (pure): FailoverBlocked once per episode and only once
// a hung master would have been confirmed, failover episodes, re-point dedupe. No network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MasterDecision, MasterHealth } from '../../../../src/sidecar/redis/decide/index.ts';
import {
  blockedAfterMs,
  blockedFailover,
  EventMemory,
  isFailover,
} from '../../../../src/sidecar/redis/manager/index.ts';

const config = { downAfterMs: 1000, silentAfterSeconds: 2, witnessConfirmMs: 300 };
const wait = (reason = 'x'): MasterDecision => ({ kind: 'wait', master: 'r-master-0', reason });
const hear = (silentMs: number): MasterHealth => ({
  state: 'suspect',
  silentMs,
  reason:
    'r-master-0 has not answered the sidecar for 4000 ms, but r-replica-0 still hears it: the sidecar lost contact',
});

test("blockedAfterMs: the later of downAfter and the replicas' confirmation, plus a second", () => {
  assert.equal(blockedAfterMs(config), 3300);
  assert.equal(blockedAfterMs({ ...config, downAfterMs: 10_000 }), 11_000);
});

const cases: Array<[string, MasterDecision, MasterHealth | null, string | null]> = [
  ['replicas still hear it, long enough', wait(), hear(3300), 'r-master-0/replicas-hear-master'],
  ['replicas still hear it, but a hang would not be confirmed yet', wait(), hear(2500), null],
  [
    'silent, no evidence, long enough',
    wait(),
    { state: 'suspect', silentMs: 5000, reason: 'no answering replica follows it' },
    'r-master-0/no-agreeing-evidence',
  ],
  [
    'failed but nobody can take over',
    wait(),
    { state: 'failed', silentMs: 4000, evidence: ['e'], reason: 'r' },
    'r-master-0/no-candidate',
  ],
  ['failed, still choosing', wait(), { state: 'failed', silentMs: 1200, evidence: ['e'], reason: 'r' }, null],
  ['alive but unreadable', wait(), { state: 'unreadable', reason: 'auth' }, 'r-master-0/unreadable'],
  ['not probed yet', wait(), { state: 'suspect', silentMs: null, reason: 'r' }, null],
  ['keep', { kind: 'keep', master: 'r-master-0', reason: 'ok' }, { state: 'healthy', reason: 'ok' }, null],
  ['bootstrap wait (no master)', { kind: 'wait', master: null, reason: 'partial view' }, null, null],
];

for (const [name, decision, health, key] of cases) {
  test(`blockedFailover: ${name}`, () => {
    assert.equal(blockedFailover(decision, health, config)?.key ?? null, key);
  });
}

test('FailoverBlocked once per episode; re-armed when the decision leaves wait', () => {
  const m = new EventMemory();
  const seen: string[] = [];
  const tick = (d: MasterDecision, h: MasterHealth | null) => {
    const e = m.noteDecision(d, h, config);
    if (e) seen.push(`${e.reason}:${e.type}`);
  };
  for (let i = 0; i < 20; i++) tick(wait(), hear(3300 + i * 100));
  assert.deepEqual(seen, ['FailoverBlocked:Warning']);
  tick(wait(), { state: 'unreadable', reason: 'auth' });
  assert.equal(seen.length, 2, 'another cause is another episode');
  tick({ kind: 'keep', master: 'r-master-0', reason: 'ok' }, { state: 'healthy', reason: 'ok' });
  tick(wait(), hear(4000));
  assert.equal(seen.length, 3);
});

test('a failover episode: started once, completed once with its duration from the first unanswered probe', () => {
  const m = new EventMemory();
  const d: MasterDecision = {
    kind: 'promote',
    cause: 'failover',
    master: 'r-replica-0',
    previous: 'r-master-0',
    reason: 'r-master-0 failed',
  };
  assert.ok(isFailover(d));
  if (!isFailover(d)) return;
  assert.equal(m.startFailover(d, 2000, 900)?.reason, 'FailoverStarted');
  assert.equal(m.startFailover(d, 2100, 900), null, 'the same failover on the next tick');
  assert.equal(m.completeFailover('r-replica-1', 2200), null, 'a label on another pod ends nothing');
  const done = m.completeFailover('r-replica-0', 2150);
  assert.equal(done?.durationMs, 1250);
  assert.match(
    done!.event.message,
    /^failover from r-master-0 to r-replica-0 completed in 1250 ms \(.*150 ms after the decision\)$/,
  );
  assert.equal(m.completeFailover('r-replica-0', 2300), null);
  const adopt: MasterDecision = {
    kind: 'promote',
    cause: 'adopt',
    master: 'r-replica-0',
    previous: 'r-master-0',
    reason: 'already promoted',
  };
  if (!isFailover(adopt)) return assert.fail('adopt from a previous master is a failover');
  assert.match(m.startFailover(adopt, 5000, null)!.message, /finishing a promotion an earlier leader started/);
  assert.equal(m.completeFailover('r-replica-0', 5040)?.durationMs, 40, 'no failing time known: from the decision');
});

test('isFailover: bootstrap and re-promoting the same pod are not failovers', () => {
  assert.equal(isFailover({ kind: 'promote', cause: 'bootstrap', master: 'a', previous: null, reason: '' }), false);
  assert.equal(isFailover({ kind: 'promote', cause: 'failover', master: 'a', previous: 'a', reason: '' }), false);
  assert.equal(isFailover({ kind: 'keep', master: 'a', reason: '' }), false);
});

test('ReplicaRepointed once per pod and master address', () => {
  const m = new EventMemory();
  assert.equal(
    m.repoint('r-replica-0', 'r-master-0', '10.0.0.1', false)?.message,
    'r-replica-0 now replicates from r-master-0 (10.0.0.1)',
  );
  assert.equal(m.repoint('r-replica-0', 'r-master-0', '10.0.0.1', false), null);
  assert.match(m.repoint('r-replica-0', 'r-master-0', '10.0.0.9', true)!.message, /claimed to be master; demoted/);
  m.forgetPod('r-replica-0');
  assert.notEqual(m.repoint('r-replica-0', 'r-master-0', '10.0.0.9', false), null);
});
