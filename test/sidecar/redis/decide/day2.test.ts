// Pure: the day-2 decisions. A rolling update step by step (rollout.ts) and switchovers on demand
// (switchover.ts), as tables. No Redis, no address contacted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decideMaster } from '../../../../src/sidecar/redis/decide/master.ts';
import { decideRollout } from '../../../../src/sidecar/redis/decide/rollout.ts';
import { CAUGHT_UP_BYTES, decideRequest, parseRequest } from '../../../../src/sidecar/redis/decide/switchover.ts';
import type { PodObservation } from '../../../../src/sidecar/redis/decide/types.ts';
import { facts, H2, input, ip, online, pod, type FactsSpec, type PodSpec } from './fixtures.ts';

const master = (updated: boolean | null = true, s: Partial<PodSpec> = {}, f: FactsSpec = {}): PodObservation => ({
  ...pod({
    name: 'master-0',
    label: 'master',
    link: 'up',
    facts: facts({ role: 'master', offset: 5000, replicas: online(ip(11), ip(12)), ...f }),
    ...s,
  }),
  updated,
});
const replica = (
  n: number,
  updated: boolean | null = true,
  f: FactsSpec = {},
  s: Partial<PodSpec> = {},
): PodObservation => ({
  ...pod({ name: `replica-${n}`, label: 'replica', link: 'up', facts: facts({ of: ip(1), offset: 5000, ...f }), ...s }),
  updated,
});

test('decideRollout: one pod at a time, replicas first, the master last and never while master', async (t) => {
  const cases: Array<{ name: string; pods: PodObservation[]; replicas?: number; want: string; reason?: RegExp }> = [
    { name: 'every pod current: idle', pods: [master(), replica(0), replica(1)], want: 'idle' },
    {
      name: 'all stale: the highest replica goes first',
      pods: [master(false), replica(0, false), replica(1, false)],
      want: 'delete cache-replica-1',
    },
    {
      name: 'then the next replica',
      pods: [master(false), replica(0, false), replica(1, true)],
      want: 'delete cache-replica-0',
    },
    {
      name: 'only the master stale: switchover to the most advanced updated replica',
      pods: [master(false), replica(0, true, { offset: 4990 }), replica(1, true, { offset: 5000 })],
      want: 'switchover cache-replica-1',
    },
    {
      name: 'after the switchover the old master pod is an ordinary stale replica',
      pods: [
        { ...replica(0, true, { role: 'master', offset: 6000, replicas: online(ip(1), ip(12)) }), roleLabel: 'master' },
        { ...master(false, { label: 'replica' }, { role: 'replica', of: ip(11), offset: 6000 }) },
        replica(1, true, { of: ip(11), offset: 6000 }),
      ],
      want: 'delete cache-master-0',
    },
    {
      name: 'a new pod not linked yet: wait, naming it',
      pods: [master(false), replica(0, false), replica(1, true, { link: 'down' }, { ready: false })],
      want: 'wait cache-replica-1',
      reason: /cache-replica-0 waits: cache-replica-1 is not Ready/,
    },
    {
      name: 'a replica far behind: wait',
      pods: [master(false), replica(0, false), replica(1, true, { offset: 5000 - CAUGHT_UP_BYTES - 1 })],
      want: 'wait cache-replica-1',
      reason: /bytes behind the master/,
    },
    {
      name: 'a pod being deleted: wait',
      pods: [master(false), replica(0, false), replica(1, true, {}, { deleting: true })],
      want: 'wait cache-replica-1',
    },
    { name: 'a pod missing: wait for it', pods: [master(false), replica(0, false)], want: 'wait cache-replica-1' },
    {
      name: 'a revision not known yet: wait',
      pods: [master(null), replica(0, false), replica(1, false)],
      want: 'wait -',
    },
    {
      name: 'a stale replica that is not Ready goes first, whatever else',
      pods: [master(false), replica(0, false, { link: 'down' }, { ready: false }), replica(1, false)],
      want: 'delete cache-replica-0',
    },
    {
      name: 'no replica: the master is never restarted by the rollout',
      pods: [master(false, {}, { replicas: [] })],
      replicas: 0,
      want: 'wait cache-master-0',
      reason: /spec.replicas is 0/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = decideRollout(
        input(c.pods, { replicas: c.replicas ?? 2 }),
        c.pods.find((p) => p.roleLabel === 'master')!.name,
      );
      const brief =
        d.kind === 'delete'
          ? `delete ${d.pod}`
          : d.kind === 'switchover'
            ? `switchover ${d.target}`
            : d.kind === 'wait'
              ? `wait ${d.blockedOn ?? '-'}`
              : 'idle';
      assert.equal(brief, c.want, d.reason);
      if (c.reason) assert.match(d.reason, c.reason);
    });
  }
});

test('decideRequest: a switchover on demand is checked, done once, or refused with the reason', async (t) => {
  const healthy = [master(), replica(0, true, { offset: 4000 }), replica(1, true, { offset: 5000 })];
  const cases: Array<{
    name: string;
    value: string | undefined;
    handled?: string;
    pods?: PodObservation[];
    master?: string | null;
    want: string;
    message?: RegExp;
  }> = [
    { name: 'no request', value: undefined, want: 'none' },
    { name: 'a named, fit target', value: 'cache-replica-0', want: 'switchover cache-replica-0' },
    { name: 'any: the most advanced replica', value: 'any', want: 'switchover cache-replica-1' },
    { name: 'the same request again: nothing', value: 'any', handled: 'any', want: 'none' },
    { name: 'a distinct repeat', value: 'any@2', handled: 'any', want: 'switchover cache-replica-1' },
    { name: 'already master', value: 'cache-master-0', want: 'done', message: /already the master/ },
    { name: 'no such pod', value: 'cache-replica-7', want: 'refuse', message: /no pod cache-replica-7/ },
    {
      name: 'a target of another history',
      value: 'cache-replica-0',
      pods: [master(), replica(0, true, { replid: H2 }), replica(1)],
      want: 'refuse',
      message: /another replication history/,
    },
    {
      name: 'a target not linked',
      value: 'cache-replica-0',
      pods: [master(), replica(0, true, { link: 'down' }), replica(1)],
      want: 'refuse',
      message: /not a replica linked/,
    },
    {
      name: 'a target being deleted',
      value: 'cache-replica-0',
      pods: [master(), replica(0, true, {}, { deleting: true }), replica(1)],
      want: 'refuse',
      message: /being deleted/,
    },
    {
      name: 'a target too far behind',
      value: 'cache-replica-0',
      pods: [master(), replica(0, true, { offset: 5000 - CAUGHT_UP_BYTES - 1 }), replica(1)],
      want: 'refuse',
      message: /bytes behind/,
    },
    { name: 'no settled master', value: 'any', master: null, want: 'refuse', message: /not healthy/ },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = decideRequest(
        input(c.pods ?? healthy),
        c.master === undefined ? 'cache-master-0' : c.master,
        parseRequest(c.value),
        c.handled ?? null,
      );
      const brief = d.kind === 'switchover' ? `switchover ${d.target}` : d.kind;
      assert.equal(brief, c.want, JSON.stringify(d));
      if (c.message && (d.kind === 'refuse' || d.kind === 'done')) assert.match(d.message, c.message);
    });
  }
});

test('decideMaster honours switchoverTo only from a healthy master to a fit target', async (t) => {
  await t.test('fit: a switchover decision', () => {
    const d = decideMaster({ ...input([master(), replica(0), replica(1)]), switchoverTo: 'cache-replica-0' }).decision;
    assert.deepEqual([d.kind, d.master], ['switchover', 'cache-replica-0']);
  });
  await t.test('unfit (link down): the master is kept', () => {
    const d = decideMaster({
      ...input([master(), replica(0, true, { link: 'down' }), replica(1)]),
      switchoverTo: 'cache-replica-0',
    }).decision;
    assert.deepEqual([d.kind, d.master], ['keep', 'cache-master-0']);
  });
});
