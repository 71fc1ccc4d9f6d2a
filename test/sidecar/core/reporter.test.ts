// The shared step reporter (src/sidecar/core/reporter.ts): a failure episode told once (its line
// at the first failure, StepFailed at the kind's chosen failure), its end told once, deferred
// steps not told, and the kind's hooks for metrics and successes. Both kinds' settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { StepOutcome } from '../../../src/sidecar/core/executor.ts';
import { FailurePolicy, type StepFailure } from '../../../src/sidecar/core/failure-policy.ts';
import type { EventToSend } from '../../../src/sidecar/core/events.ts';
import { StepReporter } from '../../../src/sidecar/core/reporter.ts';

interface S {
  name: string;
}

function setup(stepFailedAt: number, dropped: string | undefined) {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  const events: EventToSend[] = [];
  const counted: string[] = [];
  const succeeded: string[] = [];
  const reporter = new StepReporter<S, object, string>({
    log,
    emit: (e) => events.push(e),
    fields: (s, key) => ({ step: s.name, key }),
    failedFields: (o) => ({ err: o.failure?.detail }),
    messages: { failed: 'step failed', recovered: 'step works again', ...(dropped ? { dropped } : {}) },
    stepFailedAt,
    stepFailedMessage: (o) => `${o.step.name} failing`,
    count: (o) => counted.push(`${o.step.name}:${o.result}`),
    succeeded: (o, round) => succeeded.push(`${o.step.name}@${round}`),
  });
  const policy = new FailurePolicy<S>((s) => s.name);
  const failure: StepFailure = { class: 'temporary', detail: 'no answer' };
  let now = 0;
  const fail = (s: S) => {
    now += 10;
    reporter.step({ step: s, result: 'failed', line: s.name, failure, verdict: policy.failed(s, failure, now) }, 'r');
  };
  const work = (s: S) => {
    now += 10;
    const recovery = policy.succeeded(s, now);
    reporter.step({ step: s, result: 'ok', line: s.name, ...(recovery ? { recovery } : {}) }, 'r');
  };
  const msgs = (m: string) => lines.filter((l) => l['msg'] === m);
  return { reporter, policy, events, counted, succeeded, fail, work, msgs, now: () => now };
}

test('StepFailed goes out once per episode, at the kind-chosen failure; the failure line at the first', async (t) => {
  for (const [kind, at] of [
    ['Redis: the first failure', 1],
    ['RedisCluster: the third failure', 3],
  ] as const) {
    await t.test(kind, () => {
      const r = setup(at, undefined);
      const a = { name: 'a' };
      for (let i = 0; i < 5; i++) r.fail(a);
      assert.equal(r.msgs('step failed').length, 1, 'one line for the episode');
      assert.deepEqual(r.msgs('step failed')[0], {
        ...r.msgs('step failed')[0],
        step: 'a',
        key: 'a',
        err: 'no answer',
      });
      assert.deepEqual(r.events, [{ type: 'Warning', reason: 'StepFailed', message: 'a failing' }]);
      assert.equal(r.counted.length, 5, 'every failure is counted');
    });
  }
});

test('a short episode under the RedisCluster setting sends no StepFailed', () => {
  const r = setup(3, undefined);
  const a = { name: 'a' };
  r.fail(a);
  r.fail(a);
  r.work(a);
  assert.deepEqual(r.events, []);
  assert.equal(r.msgs('step works again').length, 1);
});

test("a recovery is one line with the episode's failures and length; the kind's success hook sees the round", () => {
  const r = setup(1, undefined);
  const a = { name: 'a' };
  r.fail(a);
  r.fail(a);
  r.work(a);
  r.work(a);
  const [line, ...more] = r.msgs('step works again');
  assert.deepEqual(more, [], 'only the success that ended the episode');
  assert.equal(line?.['failures'], 2);
  assert.equal(line?.['afterMs'], 20);
  assert.deepEqual(r.succeeded, ['a@r', 'a@r']);
});

test('episodes dropped from the plan: logged when the kind names the line, silent when it does not', async (t) => {
  for (const [name, dropped] of [
    ['Redis', 'a failing step is no longer planned'],
    ['RedisCluster', undefined],
  ] as const) {
    await t.test(name, () => {
      const r = setup(1, dropped);
      r.fail({ name: 'a' });
      r.reporter.dropped(r.policy.retain([], r.now()));
      assert.equal(r.msgs('a failing step is no longer planned').length, dropped ? 1 : 0);
      assert.deepEqual(r.policy.open, []);
    });
  }
});

test('a deferred step is not told nor counted', () => {
  const r = setup(1, undefined);
  const o: StepOutcome<S> = { step: { name: 'a' }, result: 'deferred', line: 'a: backing off' };
  r.reporter.step(o, 'r');
  assert.deepEqual([r.counted, r.events, r.succeeded], [[], [], []]);
});
