// Pure: the rollout's planned switchover during a move between engines goes onto a replica whose
// node already answers with the target engine, the most advanced of those, and waits (naming the
// engine) when there is none. Tables; no Redis contacted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEngine } from '../../../../src/api/node-engine.ts';
import { decideRollout, rolloutEngine } from '../../../../src/sidecar/redis/decide/rollout.ts';
import type { PodObservation } from '../../../../src/sidecar/redis/decide/types.ts';
import { facts, input, ip, online, pod, type FactsSpec } from './fixtures.ts';

const R = 'redis 7.2.6';
const V = 'valkey 8.0.1';

const master = (engine: string | null, updated = false): PodObservation => ({
  ...pod({
    name: 'master-0',
    label: 'master',
    link: 'up',
    facts: {
      ...facts({ role: 'master', offset: 5000, replicas: online(ip(11), ip(12)) }),
      engine: readEngine(engine ?? ''),
    },
  }),
  updated,
});
const replica = (n: number, engine: string | null, updated: boolean, f: FactsSpec = {}): PodObservation => ({
  ...pod({
    name: `replica-${n}`,
    label: 'replica',
    link: 'up',
    facts: { ...facts({ of: ip(1), offset: 5000, ...f }), engine: readEngine(engine ?? '') },
  }),
  updated,
});

test('a move between engines: the master goes onto a replica already running the target engine', async (t) => {
  const cases: Array<{ name: string; engine?: string; pods: PodObservation[]; want: string; reason?: RegExp }> = [
    {
      name: 'spec.engine valkey: the most advanced valkey replica',
      engine: 'valkey',
      pods: [master(R), replica(0, V, true, { offset: 4990 }), replica(1, V, true, { offset: 5000 })],
      want: 'switchover cache-replica-1',
    },
    {
      name: 'a more advanced updated replica that answers as another engine is passed over',
      engine: 'valkey',
      pods: [master(R), replica(0, V, true, { offset: 4990 }), replica(1, R, true, { offset: 5000 })],
      want: 'switchover cache-replica-0',
    },
    {
      name: 'no replica runs the target: wait, saying which engine',
      engine: 'valkey',
      pods: [master(R), replica(0, R, true), replica(1, R, true)],
      want: 'wait cache-master-0',
      reason: /cannot be moved onto a replica running valkey: no replica to switch over to/,
    },
    {
      name: 'a valkey replica not linked: the master waits, naming it (never moved onto a node that may lack writes)',
      engine: 'valkey',
      pods: [master(R), replica(0, V, true), replica(1, V, true, { link: 'down' })],
      want: 'wait cache-replica-1',
      reason: /the master moves last: cache-replica-1 is not a replica linked to the master/,
    },
    {
      name: 'no spec.engine (spec.image): the engine of the updated pods',
      pods: [master(R), replica(0, V, true, { offset: 4990 }), replica(1, V, true, { offset: 5000 })],
      want: 'switchover cache-replica-1',
    },
    {
      name: 'the way back: onto a redis replica',
      engine: 'redis',
      pods: [master(V), replica(0, R, true, { offset: 5000 }), replica(1, R, true, { offset: 4000 })],
      want: 'switchover cache-replica-0',
    },
    {
      name: 'no engine reported anywhere (an older probe): as before, the most advanced updated replica',
      pods: [master(null), replica(0, null, true, { offset: 4990 }), replica(1, null, true, { offset: 5000 })],
      want: 'switchover cache-replica-1',
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = decideRollout(input(c.pods, c.engine ? { engine: c.engine } : {}), 'cache-master-0');
      const brief =
        d.kind === 'switchover' ? `switchover ${d.target}` : d.kind === 'wait' ? `wait ${d.blockedOn ?? '-'}` : d.kind;
      assert.equal(brief, c.want, d.reason);
      if (c.reason) assert.match(d.reason, c.reason);
    });
  }
});

test('rolloutEngine: spec.engine, else what the answering updated pods run', async (t) => {
  const cases: Array<{ name: string; engine?: string; pods: PodObservation[]; want: string | null }> = [
    { name: 'the spec says it', engine: 'valkey', pods: [master(R)], want: 'valkey' },
    { name: 'the updated pods say it', pods: [master(R), replica(0, V, true)], want: 'valkey' },
    { name: 'nothing says it', pods: [master(R), replica(0, R, false)], want: null },
  ];
  for (const c of cases)
    await t.test(c.name, () =>
      assert.equal(rolloutEngine(input(c.pods, c.engine ? { engine: c.engine } : {})), c.want),
    );
});
