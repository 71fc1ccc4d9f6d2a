// The core Event sender (src/sidecar/core/events.ts) with a fake Kubernetes Event call: sent only
// while leading, the involved kind passed through, StepFailed limited when asked (fake clock).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventSender, type EventSenderOptions } from '../../../src/sidecar/core/events.ts';

function sender(over: Partial<EventSenderOptions> = {}) {
  const sent: unknown[][] = [];
  const tracked: Promise<unknown>[] = [];
  let leading = true;
  let now = 0;
  const s = new EventSender({
    ref: { namespace: 'ns', name: 'r' },
    kube: {
      emitEvent: async (...args: unknown[]) => {
        sent.push(args);
        return true;
      },
    },
    leader: { isLeader: () => leading },
    now: () => now,
    track: (p) => tracked.push(p),
    ...over,
  });
  return {
    s,
    sent,
    tracked,
    lead: (v: boolean) => (leading = v),
    at: (ms: number) => (now = ms),
  };
}

test('sent only while leading, each send tracked for stop(); no kind: the four-argument call', () => {
  const { s, sent, tracked, lead } = sender();
  s.send({ type: 'Normal', reason: 'Bootstrap', message: 'one' });
  lead(false);
  s.send({ type: 'Warning', reason: 'StepFailed', message: 'not told' });
  assert.deepEqual(sent, [[{ namespace: 'ns', name: 'r' }, 'Normal', 'Bootstrap', 'one']]);
  assert.equal(tracked.length, 1);
});

test('a kind goes to the call as its fifth argument', () => {
  const { s, sent } = sender({ kind: 'RedisCluster' });
  s.send({ type: 'Normal', reason: 'SlotsAssigned', message: 'm' });
  assert.deepEqual(sent[0]!.slice(1), ['Normal', 'SlotsAssigned', 'm', 'RedisCluster']);
});

test('without stepFailedEveryMs every StepFailed is sent', () => {
  const { s, sent } = sender();
  for (let i = 0; i < 3; i++) s.send({ type: 'Warning', reason: 'StepFailed', message: `f${i}` });
  assert.equal(sent.length, 3);
});

test('stepFailedEveryMs: one StepFailed per period, the others counted into the next; other reasons unaffected', () => {
  const { s, sent, at, lead } = sender({ stepFailedEveryMs: 30_000 });
  s.send({ type: 'Warning', reason: 'StepFailed', message: 'a' });
  at(10_000);
  s.send({ type: 'Warning', reason: 'StepFailed', message: 'b' });
  s.send({ type: 'Warning', reason: 'StepFailed', message: 'c' });
  s.send({ type: 'Warning', reason: 'FailoverForced', message: 'other' });
  lead(false);
  at(40_000);
  s.send({ type: 'Warning', reason: 'StepFailed', message: 'standby' });
  lead(true);
  s.send({ type: 'Warning', reason: 'StepFailed', message: 'd' });
  at(50_000);
  s.send({ type: 'Warning', reason: 'StepFailed', message: 'e' });
  assert.deepEqual(
    sent.map((a) => a[3]),
    ['a', 'other', 'd (and 2 more failing steps since the last such Event)'],
  );
});
