// Pure: which pods a bootstrap waits for (bootstrap-wait.ts), and what chooseBootstrap makes of it.
// Table-driven; no Redis, no address contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bootstrapWaits, parseBootstrapWithout } from '../../../../src/sidecar/redis/decide/bootstrap-wait.ts';
import { chooseBootstrap } from '../../../../src/sidecar/redis/decide/choose.ts';
import type { ClaimFact, PodObservation, SpecView } from '../../../../src/sidecar/redis/decide/types.ts';
import { facts, H1, input, pod, type FactsSpec, type PodSpec } from './fixtures.ts';

const node = (name: string, f: FactsSpec = {}, s: Partial<PodSpec> = {}) => pod({ name, facts: facts(f), ...s });
const bound = (...pods: string[]): ClaimFact[] =>
  pods.map((p) => ({ name: `data-cache-${p}`, phase: 'Bound', deleting: false }));
/** Answering for an hour: far beyond any timer the old code had. */
const old = { firstOkAgo: 3_600_000 };

interface Case {
  name: string;
  pods: PodObservation[];
  spec?: Partial<SpecView>;
  claims?: ClaimFact[];
  without?: string[];
  /** The pods waited for, as `pod (why)`. */
  waits: string[];
  /** chooseBootstrap's pick (null: it waits). */
  want: string | null;
  reason?: RegExp;
}

const persistent = { persistence: true };
const threeBound = bound('master-0', 'replica-0', 'replica-1');

test('bootstrap waits: table', async (t) => {
  const cases: Case[] = [
    {
      name: 'a loading pod (LOADING error) with the most data is waited for, an hour on',
      pods: [
        node('master-0', { offset: 500 }, old),
        node('replica-0', { offset: 800 }, old),
        node('replica-1', { offset: 9000 }, { error: 'loading', okAgo: 0 }),
      ],
      spec: persistent,
      claims: threeBound,
      waits: ['cache-replica-1 (loading its data set)'],
      want: null,
      reason: /bootstrap waits for cache-replica-1 \(loading its data set\): it may hold data the answering pods lack/,
    },
    {
      name: 'a pod answering INFO with loading:1 is waited for',
      pods: [
        node('master-0', { offset: 500 }, old),
        node('replica-0', { offset: 800 }, old),
        node('replica-1', { offset: 9000, loading: true }, old),
      ],
      spec: persistent,
      claims: threeBound,
      waits: ['cache-replica-1 (loading its data set)'],
      want: null,
    },
    {
      name: 'ephemeral storage: a loading pod is waited for too',
      pods: [
        node('master-0', { offset: 500 }, old),
        node('replica-0', { offset: 800 }, old),
        node('replica-1', {}, { error: 'loading' }),
      ],
      waits: ['cache-replica-1 (loading its data set)'],
      want: null,
    },
    {
      name: 'a bound claim whose pod does not exist yet',
      pods: [node('master-0', { offset: 500 }, old), node('replica-0', { offset: 800 }, old)],
      spec: persistent,
      claims: threeBound,
      waits: ['cache-replica-1 (volume bound, no pod yet)'],
      want: null,
    },
    {
      name: 'a bound claim whose pod is Pending (scheduling, attaching its volume, creating its container)',
      pods: [
        node('master-0', { offset: 500 }, old),
        node('replica-0', { offset: 800 }, old),
        pod({ name: 'replica-1', ip: null, phase: 'Pending', never: true }),
      ],
      spec: persistent,
      claims: threeBound,
      waits: ['cache-replica-1 (volume bound, pod Pending)'],
      want: null,
    },
    {
      name: 'a bound claim whose pod crash-loops (container gone)',
      pods: [
        node('master-0', { offset: 500 }, old),
        node('replica-0', { offset: 800 }, old),
        node('replica-1', {}, { error: 'refused', okAgo: 60_000, containerGone: true }),
      ],
      spec: persistent,
      claims: threeBound,
      waits: ['cache-replica-1 (volume bound, redis container not running)'],
      want: null,
    },
    {
      name: 'a bound claim whose pod is being replaced',
      pods: [
        node('master-0', { offset: 500 }, old),
        node('replica-0', { offset: 800 }, old),
        node('replica-1', { offset: 900 }, { deleting: true }),
      ],
      spec: persistent,
      claims: threeBound,
      waits: ['cache-replica-1 (volume bound, pod being replaced)'],
      want: null,
    },
    {
      name: 'claims Pending (never had a volume), Lost, being deleted or absent hold nothing: choose',
      pods: [
        node('master-0', { offset: 500 }, old),
        node('replica-0', { offset: 800 }, old),
        pod({ name: 'replica-1', ip: null, phase: 'Pending', never: true }),
      ],
      spec: { persistence: true, replicas: 4 },
      claims: [
        ...bound('master-0', 'replica-0'),
        { name: 'data-cache-replica-1', phase: 'Pending', deleting: false },
        { name: 'data-cache-replica-2', phase: 'Lost', deleting: false },
        { name: 'data-cache-replica-3', phase: 'Bound', deleting: true },
      ],
      waits: [],
      want: 'cache-replica-0',
      reason: /no master: cache-replica-0 .* has the most data/,
    },
    {
      name: 'a claim a scale-down left behind (no pod, beyond spec.replicas) is not waited for',
      pods: [node('master-0', { offset: 500 }), node('replica-0', { offset: 800 }), node('replica-1', { offset: 700 })],
      spec: persistent,
      claims: [...threeBound, ...bound('replica-5')],
      waits: [],
      want: 'cache-replica-0',
    },
    {
      name: 'a fresh set with a bound claim whose pod never started waits (cannot be told from a pod with data)',
      pods: [node('master-0'), node('replica-0'), pod({ name: 'replica-1', ip: null, phase: 'Pending', never: true })],
      spec: persistent,
      claims: threeBound,
      waits: ['cache-replica-1 (volume bound, pod Pending)'],
      want: null,
    },
    {
      name: 'claims not listed yet, persistence on: every pod counts as bound',
      pods: [node('master-0', { offset: 500 }), node('replica-0', { offset: 800 })],
      spec: persistent,
      waits: ['cache-replica-1 (volume bound, no pod yet)'],
      want: null,
    },
    {
      name: 'ephemeral storage: pods not running hold nothing, the most data among the running wins',
      pods: [
        node('master-0', { offset: 500 }),
        node('replica-0', { offset: 800 }),
        pod({ name: 'replica-1', ip: null, phase: 'Pending', never: true }),
      ],
      claims: [],
      waits: [],
      want: 'cache-replica-0',
    },
    {
      name: 'ephemeral storage: a running pod that does not answer may hold data in memory',
      pods: [
        node('master-0', { offset: 500 }),
        node('replica-0', { offset: 800 }),
        node('replica-1', { offset: 900 }, { error: 'timeout', okAgo: 60_000 }),
      ],
      claims: [],
      waits: ['cache-replica-1 (running, not answering)'],
      want: null,
    },
    {
      name: 'ephemeral storage, persistence off: a pod whose redis container is gone restarts empty',
      pods: [
        node('master-0', { offset: 500 }),
        node('replica-0', { offset: 800 }),
        node('replica-1', {}, { error: 'refused', okAgo: 60_000, containerGone: true }),
      ],
      claims: [],
      waits: [],
      want: 'cache-replica-0',
    },
    {
      name: 'persistence on without claims (an emptyDir): a restarting container keeps its files',
      pods: [
        node('master-0', { offset: 500 }),
        node('replica-0', { offset: 800 }),
        node('replica-1', {}, { error: 'refused', okAgo: 60_000, containerGone: true }),
      ],
      spec: persistent,
      claims: [],
      waits: ['cache-replica-1 (running, redis container restarting)'],
      want: null,
    },
    {
      name: 'hibernating: the StatefulSets run no pod, so no claim is waited for; no master is chosen either',
      pods: [],
      spec: { persistence: true, hibernate: true },
      claims: threeBound,
      waits: [],
      want: null,
      reason: /no pod answers/,
    },
    {
      name: 'woken: every pod with a bound claim is waited for again',
      pods: [node('master-0', { offset: 500 }, old)],
      spec: { persistence: true, hibernate: false },
      claims: threeBound,
      waits: ['cache-replica-0 (volume bound, no pod yet)', 'cache-replica-1 (volume bound, no pod yet)'],
      want: null,
    },
    {
      name: 'the way out releases exactly the pods named: one named, the other still waited for',
      pods: [node('master-0', { offset: 500 }, old), node('replica-0', {}, { error: 'loading' })],
      spec: persistent,
      claims: threeBound,
      without: ['cache-replica-1'],
      waits: ['cache-replica-0 (loading its data set)'],
      want: null,
    },
    {
      name: 'the way out: every waited pod named, choose among the answering, and say who was given up',
      pods: [node('master-0', { offset: 500 }, old), node('replica-0', { offset: 100 }, old)],
      spec: persistent,
      claims: threeBound,
      without: ['cache-replica-1'],
      waits: [],
      want: 'cache-master-0',
      reason:
        /cache-master-0 .* has the most data.*gave up on cache-replica-1 \(volume bound, no pod yet\) as redis\.example\.com\/bootstrap-without asks/,
    },
    {
      name: 'the way out names an answering pod: it stays a candidate (nothing to give up)',
      pods: [node('master-0', { offset: 500 }), node('replica-0', { offset: 800 }), node('replica-1', { offset: 100 })],
      spec: persistent,
      claims: threeBound,
      without: ['cache-replica-0'],
      waits: [],
      want: 'cache-replica-0',
    },
    {
      name: 'an earlier leader promoted a node and crashed before labelling: adopted without waiting',
      pods: [
        node('master-0', { role: 'master', replid: H1, offset: 500 }),
        node('replica-0', { of: '10.0.0.1', offset: 500 }),
      ],
      spec: persistent,
      claims: threeBound,
      waits: ['cache-replica-1 (volume bound, no pod yet)'],
      want: 'cache-master-0',
      reason: /adopting/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const i = { ...input(c.pods, c.spec), claims: c.claims, bootstrapWithout: c.without };
      const w = bootstrapWaits(i);
      assert.deepEqual(
        w.waitFor.map((h) => `${h.pod} (${h.why})`),
        c.waits,
      );
      for (const r of w.released) assert.ok(c.without?.includes(r.pod), `${r.pod} released without being named`);
      const choice = chooseBootstrap(i);
      assert.equal(choice.ok ? choice.pod.name : null, c.want, choice.reason);
      if (c.reason) assert.match(choice.reason, c.reason);
    });
  }
});

test('bootstrap-without: only names of this Redis pods are kept (an allow-list)', async (t) => {
  const cases: Array<[string | undefined, string[], number]> = [
    [undefined, [], 0],
    ['cache-replica-2', ['cache-replica-2'], 0],
    [' cache-replica-2 , cache-master-0,,cache-replica-2', ['cache-master-0', 'cache-replica-2'], 0],
    ['other-replica-2,cache-replica-x,cache-replica-01,cache-replica-2\nx,*,cache', [], 6],
    ['cache-sentinel-0,cache-replica-1', ['cache-replica-1'], 1],
  ];
  for (const [value, pods, invalid] of cases) {
    await t.test(JSON.stringify(value), () =>
      assert.deepEqual(parseBootstrapWithout(value, 'cache'), { pods, invalid }),
    );
  }
  await t.test('any string: every kept entry is a pod name of this Redis', () => {
    fc.assert(
      fc.property(fc.string(), (value) => {
        for (const p of parseBootstrapWithout(value, 'cache').pods)
          assert.match(p, /^cache-(master|replica)-(0|[1-9][0-9]*)$/);
      }),
    );
  });
});
