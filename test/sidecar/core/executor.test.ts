// The shared step executor (src/sidecar/core/executor.ts) with the Redis kind's steps
// (src/sidecar/redis/manager/steps.ts) on a recording StepIO: order, the parallel re-pointing batch,
// what ends a round, and the back-off of a failing step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRedisSteps, redisStepKey, type StepIO } from '../../../src/sidecar/redis/manager/steps.ts';
import { FailurePolicy } from '../../../src/sidecar/core/failure-policy.ts';
import type { RoundPlan, Step } from '../../../src/sidecar/redis/decide/index.ts';

const ep = (host: string) => ({ host, port: 6379 });
const MASTER = ep('10.0.0.1');
const promote: Step = { kind: 'promote', pod: 'r-replica-0', endpoint: MASTER, critical: true, reason: 'failover' };
const repoint = (pod: string, host: string): Step => ({
  kind: 'replicaof',
  pod,
  endpoint: ep(host),
  master: MASTER,
  demote: false,
  critical: false,
  reason: 'follow',
});
const label = (pod: string, critical: boolean): Step => ({
  kind: 'label',
  pod,
  patch: { metadata: { labels: { 'redis.example.com/role': 'master' } } },
  critical,
  reason: 'publish',
});
const planOf = (steps: Step[]): RoundPlan =>
  ({ decision: { kind: 'keep', master: 'r-replica-0', reason: 'test' }, master: null, steps }) as unknown as RoundPlan;

/** Records calls; `fail` names pods whose Redis calls fail (timeout) or whose label patch fails (500). */
function recorder(fail: Set<string> = new Set()) {
  const calls: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const redis = async (what: string, pod: string) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    calls.push(`${what} ${pod}`);
    await new Promise((r) => setTimeout(r, 5));
    inFlight--;
    return fail.has(pod)
      ? ({ ok: false, error: { kind: 'timeout', message: 'no answer' }, latencyMs: 5 } as const)
      : ({ ok: true, latencyMs: 5 } as const);
  };
  const pods = new Map([
    ['10.0.0.1', 'r-replica-0'],
    ['10.0.0.2', 'r-replica-1'],
    ['10.0.0.3', 'r-master-0'],
  ]);
  const io: StepIO = {
    replicaOf: (endpoint, master) => redis(master ? 'replicaof' : 'promote', pods.get(endpoint.host) ?? endpoint.host),
    switchover: async () => ({ ok: true, method: 'failover-command', ms: 1, offset: 0, demoted: true }),
    configSet: (endpoint) => redis('config', pods.get(endpoint.host) ?? endpoint.host),
    label: async (step) => {
      calls.push(`label ${step.pod}`);
      return fail.has(step.pod) ? { ok: false, code: 500, message: '500 InternalError' } : { ok: true };
    },
  };
  return { io, calls, maxInFlight: () => maxInFlight };
}

const ctx = (extra: Partial<Parameters<typeof applyRedisSteps>[2]> = {}) => ({
  canAct: () => true,
  now: () => 0,
  ...extra,
});

test('steps run in plan order; consecutive re-pointings run together; Redis writes are reported', async () => {
  const r = recorder();
  const applied = await applyRedisSteps(
    planOf([
      promote,
      repoint('r-replica-1', '10.0.0.2'),
      repoint('r-master-0', '10.0.0.3'),
      label('r-replica-0', true),
    ]),
    r.io,
    ctx(),
  );
  assert.deepEqual(r.calls, [
    'promote r-replica-0',
    'replicaof r-replica-1',
    'replicaof r-master-0',
    'label r-replica-0',
  ]);
  assert.equal(r.maxInFlight(), 2, 'the two re-pointings were in flight together');
  assert.deepEqual([...applied.wrote].sort(), ['r-master-0', 'r-replica-0', 'r-replica-1']);
  assert.equal(applied.changed, true);
  assert.equal(applied.stopped, null);
  assert.deepEqual(
    applied.outcomes.map((o) => o.result),
    ['ok', 'ok', 'ok', 'ok'],
  );
});

test('a failed critical step ends the round; a failed non-critical one does not', async (t) => {
  await t.test('critical', async () => {
    const r = recorder(new Set(['r-replica-0']));
    const applied = await applyRedisSteps(planOf([promote, repoint('r-replica-1', '10.0.0.2')]), r.io, ctx());
    assert.deepEqual(r.calls, ['promote r-replica-0']);
    assert.equal(applied.stopped, 'critical');
    assert.equal(applied.outcomes[0]?.failure?.class, 'temporary');
  });
  await t.test('not critical', async () => {
    const r = recorder(new Set(['r-replica-1']));
    const applied = await applyRedisSteps(
      planOf([repoint('r-replica-1', '10.0.0.2'), label('r-replica-0', false)]),
      r.io,
      ctx(),
    );
    assert.deepEqual(r.calls, ['replicaof r-replica-1', 'label r-replica-0']);
    assert.equal(applied.stopped, null);
    assert.deepEqual(
      applied.outcomes.map((o) => o.result),
      ['failed', 'ok'],
    );
  });
});

test('losing the lead stops before the next write, also after the beforeStep hook', async () => {
  const r = recorder();
  let leader = true;
  const applied = await applyRedisSteps(
    planOf([promote, label('r-replica-0', true)]),
    r.io,
    ctx({
      canAct: () => leader,
      before: (s) => {
        if (s.kind === 'label') leader = false;
      },
    }),
  );
  assert.deepEqual(r.calls, ['promote r-replica-0']);
  assert.equal(applied.stopped, 'not-leader');
});

test('a step that keeps failing is deferred during its back-off, then tried again; its success ends the episode', async () => {
  const fail = new Set(['r-replica-0']);
  const r = recorder(fail);
  const policy = new FailurePolicy(redisStepKey, {
    initialBackoffMs: 100,
    maxTemporaryBackoffMs: 1000,
    permanentBackoffMs: 30_000,
  });
  let now = 0;
  const seen: string[] = [];
  const run = () =>
    applyRedisSteps(
      planOf([label('r-replica-0', true)]),
      r.io,
      ctx({
        policy,
        now: () => now,
        reporter: {
          step: (o) =>
            seen.push(`${o.result}${o.verdict ? `/${o.verdict.kind}` : ''}${o.recovery ? '/recovered' : ''}`),
        },
      }),
    );
  await run(); // first failure: started, retried at the next round
  await run(); // second failure: continues, back-off 100 ms
  now = 50;
  const deferred = await run();
  assert.equal(deferred.stopped, 'critical', 'a deferred critical step ends the round too');
  now = 100;
  fail.clear();
  await run();
  assert.deepEqual(seen, ['failed/started', 'failed/continues', 'deferred', 'ok/recovered']);
  assert.deepEqual(
    r.calls,
    ['label r-replica-0', 'label r-replica-0', 'label r-replica-0'],
    'the deferred round made no call',
  );
  assert.deepEqual(policy.open, []);
});
