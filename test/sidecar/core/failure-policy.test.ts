// The shared failure policy (src/sidecar/core/failure-policy.ts): which failures are temporary, the
// back-off of a step that keeps failing, and its episodes, keyed by each kind's step identity.
// Pure: time is passed in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  classifyKubeFailure,
  classifyRedisFailure,
  FailurePolicy,
  type FailurePolicyConfig,
} from '../../../src/sidecar/core/failure-policy.ts';
import { redisStepKey } from '../../../src/sidecar/redis/manager/steps.ts';
import type { Step } from '../../../src/sidecar/redis/decide/index.ts';
import type { RedisFailure } from '../../../src/sidecar/adapters/redis/index.ts';

const CONFIG: FailurePolicyConfig = { initialBackoffMs: 100, maxTemporaryBackoffMs: 1000, permanentBackoffMs: 30_000 };
const ep = (host: string) => ({ host, port: 6379 });
const promote: Step = { kind: 'promote', pod: 'r-replica-0', endpoint: ep('10.0.0.2'), critical: true, reason: 'test' };
const repoint = (host: string): Step => ({
  kind: 'replicaof',
  pod: 'r-replica-1',
  endpoint: ep('10.0.0.3'),
  master: ep(host),
  demote: false,
  critical: false,
  reason: 'test',
});
const temporary = { class: 'temporary' as const, detail: 'timeout' };
const permanent = { class: 'permanent' as const, detail: 'ERR unknown command' };

test('Redis failures: permanent only when Redis refused the command itself', async (t) => {
  const cases: Array<[string, RedisFailure, 'temporary' | 'permanent']> = [
    ['timeout', { kind: 'timeout', message: 'no answer in 500 ms' }, 'temporary'],
    ['refused', { kind: 'refused', message: 'ECONNREFUSED' }, 'temporary'],
    ['auth (the Secret is re-read)', { kind: 'auth', message: 'WRONGPASS' }, 'temporary'],
    ['loading', { kind: 'loading', message: 'LOADING' }, 'temporary'],
    ['a state error', { kind: 'other', message: 'ERR FAILOVER target replica is not online' }, 'temporary'],
    ['unknown command', { kind: 'other', message: "ERR unknown command 'FAILOVER'" }, 'permanent'],
    ['unknown parameter', { kind: 'other', message: 'ERR Unsupported CONFIG parameter: foo' }, 'permanent'],
    ['wrong arity', { kind: 'other', message: "ERR wrong number of arguments for 'config|set' command" }, 'permanent'],
  ];
  for (const [name, failure, want] of cases)
    await t.test(name, () => assert.equal(classifyRedisFailure(failure), want));
});

test('API failures: no answer, conflicts, throttling and server errors are temporary; other refusals permanent', async (t) => {
  const cases: Array<[number | undefined, 'temporary' | 'permanent']> = [
    [undefined, 'temporary'],
    [409, 'temporary'],
    [429, 'temporary'],
    [500, 'temporary'],
    [503, 'temporary'],
    [400, 'permanent'],
    [401, 'permanent'],
    [403, 'permanent'],
    [422, 'permanent'],
  ];
  for (const [code, want] of cases)
    await t.test(String(code ?? 'no answer'), () => assert.equal(classifyKubeFailure(code), want));
});

test('a temporary failure is retried at the next round once, then backs off doubling up to the cap', () => {
  const f = new FailurePolicy(redisStepKey, CONFIG);
  const retryDelays: number[] = [];
  let now = 0;
  for (let i = 0; i < 7; i++) {
    const v = f.failed(promote, temporary, now);
    assert.equal(v.kind, i === 0 ? 'started' : 'continues', `failure ${i + 1}`);
    retryDelays.push(v.episode.retryAt - now);
    now = v.episode.retryAt;
  }
  assert.deepEqual(retryDelays, [0, 100, 200, 400, 800, 1000, 1000]);
});

test('a deferred step is not due before its back-off ran out, and is at that moment', () => {
  const f = new FailurePolicy(redisStepKey, CONFIG);
  f.failed(promote, temporary, 0);
  assert.equal(f.deferred(promote, 0), null, 'the first retry is at the next round');
  f.failed(promote, temporary, 10);
  assert.equal(f.deferred(promote, 109)?.failures, 2);
  assert.equal(f.deferred(promote, 110), null);
});

test('a permanent failure waits the permanent back-off', () => {
  const f = new FailurePolicy(redisStepKey, CONFIG);
  const v = f.failed(promote, permanent, 1000);
  assert.equal(v.episode.retryAt, 31_000);
  assert.ok(f.deferred(promote, 30_999));
});

test('a step is its kind, pod and target: a re-pointing to another master is a new step, not backed off', () => {
  const f = new FailurePolicy(redisStepKey, CONFIG);
  f.failed(repoint('10.0.0.1'), temporary, 0);
  f.failed(repoint('10.0.0.1'), temporary, 0);
  assert.ok(f.deferred(repoint('10.0.0.1'), 50));
  assert.equal(f.deferred(repoint('10.0.0.9'), 50), null);
  assert.notEqual(redisStepKey(repoint('10.0.0.1')), redisStepKey(repoint('10.0.0.9')));
});

test('an episode ends once: when its step succeeds, or when the plan no longer has it', () => {
  const f = new FailurePolicy(redisStepKey, CONFIG);
  f.failed(promote, temporary, 0);
  f.failed(promote, temporary, 50);
  const r = f.succeeded(promote, 250);
  assert.deepEqual(
    { failures: r?.episode.failures, afterMs: r?.afterMs, how: r?.how },
    { failures: 2, afterMs: 250, how: 'succeeded' },
  );
  assert.equal(f.succeeded(promote, 300), null, 'nothing to recover from any more');
  assert.equal(f.failed(promote, temporary, 400).kind, 'started', 'a new failure is a new episode');

  f.failed(repoint('10.0.0.1'), temporary, 400);
  const ended = f.retain([promote], 1000);
  assert.deepEqual(
    ended.map((e) => [e.episode.key, e.how]),
    [[redisStepKey(repoint('10.0.0.1')), 'no longer planned']],
  );
  assert.deepEqual(
    f.open.map((e) => e.key),
    [redisStepKey(promote)],
  );
});

test('a new term of leadership starts without the back-off of an earlier one', () => {
  const f = new FailurePolicy(redisStepKey, CONFIG);
  f.failed(promote, permanent, 1000);
  assert.ok(f.deferred(promote, 2000), 'backed off while it leads');
  f.reset();
  assert.equal(f.deferred(promote, 2000), null, 'due at once after reset()');
  assert.equal(f.failed(promote, temporary, 2000).kind, 'started', 'a new failure opens a new episode (told again)');
});
