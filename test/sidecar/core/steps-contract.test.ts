// The shared executor's contract (src/sidecar/core/executor.ts) on synthetic steps, the way each
// kind uses it: critical steps end a round and non-critical ones do not, a step passed over,
// the time budget, steps in flight at once, an attempt that stops half-way, and the reporter
// told every outcome. Time is a fake clock the steps advance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  applySteps,
  oneByOne,
  type Attempted,
  type StepKind,
  type StepOutcome,
} from '../../../src/sidecar/core/executor.ts';
import { FailurePolicy } from '../../../src/sidecar/core/failure-policy.ts';

interface S {
  name: string;
  critical: boolean;
  /** How the attempt ends. */
  ends?: 'ok' | 'failed' | 'stopped';
  /** ms the attempt takes on the fake clock. */
  ms?: number;
}

function world(concurrent = false) {
  let now = 0;
  const calls: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const kind: StepKind<S> = {
    critical: (s) => s.critical,
    describe: (s) => s.name,
    attempt: async (s): Promise<Attempted<S> | 'stopped'> => {
      calls.push(s.name);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (concurrent) await new Promise((r) => setImmediate(r));
      now += s.ms ?? 0;
      inFlight--;
      if (s.ends === 'stopped') return 'stopped';
      if (s.ends === 'failed')
        return { step: s, result: 'failed', line: s.name, failure: { class: 'temporary', detail: 'no answer' } };
      return { step: s, result: 'ok', line: s.name };
    },
  };
  return { kind, calls, now: () => now, maxInFlight: () => maxInFlight };
}

const step = (name: string, critical: boolean, ends: S['ends'] = 'ok', ms = 0): S => ({ name, critical, ends, ms });

test('what ends a round', async (t) => {
  const cases: Array<{ name: string; steps: S[]; calls: string[]; stopped: string | null }> = [
    { name: 'all work', steps: [step('a', true), step('b', false)], calls: ['a', 'b'], stopped: null },
    {
      name: 'a failed critical step',
      steps: [step('a', true, 'failed'), step('b', false)],
      calls: ['a'],
      stopped: 'critical',
    },
    {
      name: 'a failed non-critical step',
      steps: [step('a', false, 'failed'), step('b', true)],
      calls: ['a', 'b'],
      stopped: null,
    },
    {
      name: 'an attempt that stopped half-way',
      steps: [step('a', false, 'stopped'), step('b', false)],
      calls: ['a'],
      stopped: 'not-leader',
    },
  ];
  for (const c of cases) {
    await t.test(c.name, async () => {
      const w = world();
      const applied = await applySteps(oneByOne(c.steps), w.kind, { canAct: () => true, now: w.now });
      assert.deepEqual(w.calls, c.calls);
      assert.equal(applied.stopped, c.stopped);
    });
  }
});

test('a step passed over is neither attempted nor reported; a deferred non-critical one lets the round go on', async () => {
  const w = world();
  const policy = new FailurePolicy<S>((s) => s.name, {
    initialBackoffMs: 100,
    maxTemporaryBackoffMs: 1000,
    permanentBackoffMs: 30_000,
  });
  const b = step('b', false);
  policy.failed(b, { class: 'permanent', detail: 'refused' }, 0);
  const told: string[] = [];
  const applied = await applySteps(oneByOne([step('a', false), b, step('c', false)]), w.kind, {
    canAct: () => true,
    now: w.now,
    policy,
    reporter: { step: (o: StepOutcome<S>) => told.push(`${o.step.name}:${o.result}`) },
    skip: (s) => s.name === 'a',
  });
  assert.deepEqual(w.calls, ['c']);
  assert.deepEqual(told, ['b:deferred', 'c:ok']);
  assert.equal(applied.stopped, null);
  assert.match(applied.outcomes[0]!.line, /^b: backing off after 1 failure\(s\), next try in 30000 ms$/);
});

test('no step starts once the round is over its time budget', async () => {
  const w = world();
  const steps = [step('a', false, 'ok', 60), step('b', false, 'ok', 60), step('c', false)];
  const applied = await applySteps(oneByOne(steps), w.kind, { canAct: () => true, now: w.now, budgetMs: 100 });
  assert.deepEqual(w.calls, ['a', 'b']);
  assert.equal(applied.stopped, 'budget');
});

test('with concurrency, that many steps are in flight at once; a batch runs its steps together', async (t) => {
  await t.test('concurrency', async () => {
    const w = world(true);
    const steps = ['a', 'b', 'c', 'd', 'e'].map((n) => step(n, false));
    const applied = await applySteps(oneByOne(steps), w.kind, { canAct: () => true, now: w.now, concurrency: 2 });
    assert.equal(w.maxInFlight(), 2);
    assert.equal(applied.outcomes.length, 5);
  });
  await t.test('one batch', async () => {
    const w = world(true);
    await applySteps([[step('a', false), step('b', false), step('c', false)]], w.kind, {
      canAct: () => true,
      now: w.now,
    });
    assert.equal(w.maxInFlight(), 3);
  });
});

test('losing the lead stops before the next step; the hooks see each attempted step', async () => {
  const w = world();
  let leader = true;
  const seen: string[] = [];
  const applied = await applySteps(oneByOne([step('a', false), step('b', false), step('c', false)]), w.kind, {
    canAct: () => leader,
    now: w.now,
    before: (s) => {
      seen.push(`before ${s.name}`);
      if (s.name === 'b') leader = false;
    },
    after: (s, ok) => {
      seen.push(`after ${s.name} ${ok}`);
    },
  });
  assert.deepEqual(w.calls, ['a']);
  assert.deepEqual(seen, ['before a', 'after a true', 'before b']);
  assert.equal(applied.stopped, 'not-leader');
});
