// core/name-refusal.ts: a parent refused its names (by its status, or by an older rival this
// sidecar's informer shows) is told once in a Warning Event, only while this instance leads it
// (a new leader tells what was not told), forgotten when the refusal is lifted; and the facts
// read from a parent object match what the hook compares (RFC 3339 to the second).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { NAME_CONFLICT_REASON, type ParentFacts } from '../../../src/api/name-conflict.ts';
import { NameRefusals, parentFacts } from '../../../src/sidecar/core/name-refusal.ts';

interface Sent {
  ref: { namespace: string; name: string; uid?: string | undefined };
  type: string;
  reason: string;
  message: string;
  kind: string | undefined;
}

function setup(rivals: ParentFacts[] = [], kind: 'Redis' | 'RedisCluster' = 'RedisCluster') {
  const sent: Sent[] = [];
  const kube = {
    emitEvent: async (ref: Sent['ref'], type: string, reason: string, message: string, k?: string) => {
      sent.push({ ref, type, reason, message, kind: k });
      return true;
    },
  };
  const refusals = new NameRefusals({ kind, kube, logger: pino({ level: 'silent' }), rivals: () => rivals });
  return { sent, refusals };
}

const refusedStatus = (message: string) => ({
  conditions: [{ type: 'Ready', status: 'False', reason: NAME_CONFLICT_REASON, message }],
});
const ref = { namespace: 'ns', name: 'x', uid: 'uid-c' };
const meta = { name: 'x', uid: 'uid-c', creationTimestamp: '2026-02-01T00:00:00Z' };

test('refused by its status: one Warning Event with the hook message, while leading only', () => {
  const { sent, refusals } = setup();
  let leading = false;
  const leader = { isLeader: () => leading };
  assert.equal(refusals.check(ref, meta, refusedStatus('Redis x is older'), leader), true);
  assert.deepEqual(sent, [], 'a standby tells nothing');
  assert.equal(refusals.isRefused(ref), true);
  leading = true;
  refusals.leadershipChanged();
  assert.deepEqual(sent, [
    { ref, type: 'Warning', reason: NAME_CONFLICT_REASON, message: 'Redis x is older', kind: 'RedisCluster' },
  ]);
  assert.equal(refusals.check(ref, meta, refusedStatus('Redis x is older'), leader), true);
  refusals.leadershipChanged();
  assert.equal(sent.length, 1, 'told once per object');
});

test('refused by an older rival its own informer shows, before the hook has judged it', async (t) => {
  const leader = { isLeader: () => true };
  await t.test('an older Redis of the same name refuses a RedisCluster', () => {
    const { sent, refusals } = setup([
      { kind: 'Redis', name: 'x', creationTimestamp: '2026-01-01T00:00:00Z', uid: 'uid-r' },
    ]);
    assert.equal(refusals.check(ref, meta, undefined, leader), true);
    assert.match(sent[0]?.message ?? '', /^Redis x is older/);
  });
  await t.test('a younger one does not', () => {
    const { sent, refusals } = setup([
      { kind: 'Redis', name: 'x', creationTimestamp: '2026-03-01T00:00:00Z', uid: 'uid-r' },
    ]);
    assert.equal(refusals.check(ref, meta, undefined, leader), false);
    assert.deepEqual(sent, []);
  });
  await t.test('a Redis is refused by an older RedisCluster the same way', () => {
    const { refusals } = setup(
      [{ kind: 'RedisCluster', name: 'x', creationTimestamp: '2026-01-01T00:00:00Z', uid: 'uid-c' }],
      'Redis',
    );
    const redisMeta = { name: 'x', uid: 'uid-r', creationTimestamp: '2026-02-01T00:00:00Z' };
    assert.equal(refusals.check({ ...ref, uid: 'uid-r' }, redisMeta, undefined, leader), true);
  });
});

test('a lifted refusal is forgotten, and a new one is told again', () => {
  const { sent, refusals } = setup();
  const leader = { isLeader: () => true };
  assert.equal(refusals.check(ref, meta, refusedStatus('first'), leader), true);
  assert.equal(refusals.check(ref, meta, { conditions: [] }, leader), false);
  assert.equal(refusals.isRefused(ref), false);
  assert.equal(refusals.check(ref, meta, refusedStatus('second'), leader), true);
  assert.deepEqual(
    sent.map((s) => s.message),
    ['first', 'second'],
  );
  refusals.forget({ ...ref, uid: 'someone else' });
  assert.equal(refusals.isRefused(ref), true, 'forget of another uid keeps it');
  refusals.forget(ref);
  assert.equal(refusals.isRefused(ref), false);
});

test('parentFacts: the time as the API server writes it, whether the client gave a Date or a string', () => {
  assert.deepEqual(parentFacts('Redis', { name: 'x', uid: 'u', creationTimestamp: new Date('2026-01-01T00:00:05Z') }), {
    kind: 'Redis',
    name: 'x',
    creationTimestamp: '2026-01-01T00:00:05Z',
    uid: 'u',
  });
  assert.equal(
    parentFacts('Redis', { creationTimestamp: '2026-01-01T00:00:05Z' }).creationTimestamp,
    '2026-01-01T00:00:05Z',
  );
  assert.deepEqual(parentFacts('RedisCluster', {}), {
    kind: 'RedisCluster',
    name: '',
    creationTimestamp: undefined,
    uid: undefined,
  });
});
