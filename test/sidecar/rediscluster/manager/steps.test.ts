// The RedisCluster kind's steps on the shared executor (src/sidecar/rediscluster/manager/steps.ts),
// against a fake adapter: no step is critical (a failure never stops the round), one failed move
// passes over the moves after it, StepFailed goes out at a step's third failure in a row, a move
// stopped half-way ends the round, and what worked is counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { ClusterAdapter } from '../../../../src/sidecar/adapters/redis/rediscluster.ts';
import { FailurePolicy } from '../../../../src/sidecar/core/failure-policy.ts';
import type { Topology } from '../../../../src/sidecar/rediscluster/decide/topology.ts';
import type { ClusterStep } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import type { EventToSend } from '../../../../src/sidecar/rediscluster/manager/types.ts';
import {
  applyRedisClusterSteps,
  redisClusterStepKey,
  type RedisClusterExecutorContext,
} from '../../../../src/sidecar/rediscluster/manager/steps.ts';

const PODS = ['c-0', 'c-1', 'c-2'];
const topology = {
  byId: new Map(PODS.map((name, i) => [`id${i}`, { name, ip: `10.0.0.${i}` }])),
  nodes: new Map(),
} as unknown as Topology;

const meet = (pod: string): ClusterStep => ({
  kind: 'meet',
  pod,
  ip: '10.0.0.9',
  target: 'c-9',
  reason: `meet ${pod}`,
});
const replicate = (pod: string): ClusterStep => ({ kind: 'replicate', pod, masterId: 'id0', reason: `attach ${pod}` });
const failover = (pod: string): ClusterStep => ({ kind: 'failover', pod, failedId: 'id0', reason: `force ${pod}` });
/** A move whose ends have no address in the topology: it fails before any Redis call. */
const move = (slot: number, from = 'gone-a'): ClusterStep => ({
  kind: 'move',
  slot,
  from,
  to: 'gone-b',
  cold: false,
  reason: `move ${slot}`,
});

function setup(failing: Set<string>) {
  const calls: string[] = [];
  const answer = async (what: string, ip: string) => {
    const pod = PODS[Number(ip.split('.')[3])]!;
    calls.push(`${what} ${pod}`);
    return failing.has(pod)
      ? { ok: false as const, error: { kind: 'timeout' as const, message: 'no answer' } }
      : { ok: true as const, value: 'OK' };
  };
  const redis = {
    meet: (ip: string) => answer('meet', ip),
    replicate: (ip: string) => answer('replicate', ip),
    failover: (ip: string) => answer('failover', ip),
    reset: (ip: string) => answer('reset', ip),
  } as unknown as ClusterAdapter;
  const events: EventToSend[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const counted = { moved: 0, forced: 0 };
  let now = 0;
  const policy = new FailurePolicy(redisClusterStepKey, {
    initialBackoffMs: 100,
    maxTemporaryBackoffMs: 1000,
    permanentBackoffMs: 30_000,
  });
  const ctx: RedisClusterExecutorContext = {
    redis,
    topology,
    policy,
    log: pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) }),
    canAct: () => true,
    event: (e) => events.push(e),
    now: () => now,
    onMoved: () => counted.moved++,
    onForcedFailover: () => counted.forced++,
  };
  return { ctx, calls, events, lines, counted, policy, at: (ms: number) => (now = ms) };
}

test('no RedisCluster step is critical: a failure never stops the round', async () => {
  const w = setup(new Set(['c-0']));
  const applied = await applyRedisClusterSteps(w.ctx, [meet('c-0'), replicate('c-1'), failover('c-2')]);
  assert.deepEqual(w.calls, ['meet c-0', 'replicate c-1', 'failover c-2']);
  assert.equal(applied.stopped, null);
  assert.deepEqual(
    applied.done.map((s) => s.kind),
    ['replicate', 'failover'],
  );
  assert.equal(applied.failed, 1);
  assert.equal(w.counted.forced, 1, 'the forced failover is counted');
  assert.deepEqual(
    w.lines.filter((l) => l['msg'] === 'cluster step applied').map((l) => l['step']),
    ['replicate', 'failover'],
  );
  assert.deepEqual(
    w.lines.filter((l) => l['msg'] === 'cluster step failed').map((l) => [l['step'], l['err'], l['class']]),
    [['meet/c-0/10.0.0.9', 'CLUSTER MEET: no answer', 'temporary']],
  );
});

test('one failed move passes over the moves of later groups, not the other steps', async () => {
  const w = setup(new Set());
  const applied = await applyRedisClusterSteps(w.ctx, [move(1), move(2, 'gone-c'), replicate('c-1')]);
  assert.equal(applied.failed, 1, 'the second move (another source: another group) was not attempted');
  assert.deepEqual(
    applied.outcomes.map((o) => `${o.step.kind}:${o.result}`),
    ['move:failed', 'replicate:ok'],
  );
  assert.equal(w.counted.moved, 0);
});

test('the moves of one group are attempted together: each has its own outcome', async () => {
  const w = setup(new Set());
  const applied = await applyRedisClusterSteps(w.ctx, [move(1), move(2), move(3, 'gone-c')]);
  assert.deepEqual(
    applied.outcomes.map((o) => `${o.step.kind === 'move' ? o.step.slot : ''}:${o.result}`),
    ['1:failed', '2:failed'],
    'slots 1 and 2 (same ends) went together; slot 3 was passed over',
  );
});

test('StepFailed goes out at the third failure in a row, once; the step backs off in between', async () => {
  const w = setup(new Set(['c-1']));
  let t = 0;
  for (let round = 0; round < 12; round++) {
    w.at((t += 1000));
    await applyRedisClusterSteps(w.ctx, [replicate('c-1')]);
  }
  assert.equal(w.calls.length, 12, 'each round after the back-off ran out');
  assert.deepEqual(w.events, [
    {
      type: 'Warning',
      reason: 'StepFailed',
      message: 'attach c-1: failing (CLUSTER REPLICATE: no answer); retried with back-off',
    },
  ]);
  assert.equal(w.lines.filter((l) => l['msg'] === 'cluster step failed').length, 1, 'one line per episode');
});

test("a step's recovery is logged; an episode whose step is no longer planned ends silently", async () => {
  const failing = new Set(['c-1']);
  const w = setup(failing);
  await applyRedisClusterSteps(w.ctx, [replicate('c-1')]);
  failing.clear();
  w.at(1);
  await applyRedisClusterSteps(w.ctx, [replicate('c-1')]);
  const [line] = w.lines.filter((l) => l['msg'] === 'step works again');
  assert.deepEqual([line?.['step'], line?.['failures']], ['replicate/c-1/id0', 1]);
  failing.add('c-2');
  await applyRedisClusterSteps(w.ctx, [meet('c-2')]);
  assert.deepEqual(w.policy.retain([], 2).length, 1);
  assert.equal(w.lines.filter((l) => l['msg'] === 'a failing step is no longer planned').length, 0);
});

test('a sidecar that lost its Lease stops before the next step', async () => {
  const w = setup(new Set());
  let leader = true;
  w.ctx.canAct = () => leader;
  w.ctx.beforeStep = (s) => {
    if (s.kind === 'replicate') leader = false;
  };
  const applied = await applyRedisClusterSteps(w.ctx, [meet('c-0'), replicate('c-1'), failover('c-2')]);
  assert.deepEqual(w.calls, ['meet c-0']);
  assert.equal(applied.stopped, 'not-leader');
});
