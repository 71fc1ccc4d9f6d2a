// Pure: whom to promote, whom to start from. Table-driven. No Redis, no address contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chooseBootstrap, choosePromotion } from '../../../../src/sidecar/redis/decide/choose.ts';
import type { PodObservation, SpecView } from '../../../../src/sidecar/redis/decide/types.ts';
import { facts, H1, H2, H3, input, ip, online, pod, type FactsSpec, type PodSpec } from './fixtures.ts';

/** The failed master: killed 1.5 s ago, last seen with replicas 10.0.0.11 and .12 online. */
const deadMaster = (s: Partial<PodSpec> = {}) =>
  pod({
    name: 'master-0',
    label: 'master',
    error: 'refused',
    okAgo: 1500,
    facts: facts({ role: 'master', offset: 1000, replid: H1, replicas: online(ip(11), ip(12)) }),
    ...s,
  });
/** A replica of the dead master with `f` overrides. */
const rep = (n: number, f: FactsSpec = {}, s: Partial<PodSpec> = {}) =>
  pod({
    name: `replica-${n}`,
    label: 'replica',
    facts: facts({
      of: ip(1),
      link: 'down',
      linkDownSince: 1,
      offset: 1000,
      replid: H1,
      runId: `${n}`.repeat(40),
      ...f,
    }),
    ...s,
  });

test('choosePromotion: table', async (t) => {
  const cases: Array<{
    name: string;
    pods: PodObservation[];
    includeMaster?: boolean;
    want: string | null;
    reason?: RegExp;
    spec?: Partial<SpecView>;
  }> = [
    {
      name: 'highest offset wins',
      pods: [deadMaster(), rep(0, { offset: 900 }), rep(1, { offset: 1000 })],
      want: 'cache-replica-1',
    },
    {
      name: 'lower replica-priority beats offset (Sentinel order)',
      pods: [deadMaster(), rep(0, { offset: 900, priority: 10 }), rep(1, { offset: 1000 })],
      want: 'cache-replica-0',
    },
    {
      name: 'priority 0 is never promoted',
      pods: [deadMaster(), rep(0, { offset: 900 }), rep(1, { offset: 1000, priority: 0 })],
      want: 'cache-replica-0',
      reason: /replica-priority 0/,
    },
    {
      name: 'another history is never promoted (restarted empty, or a stranger)',
      pods: [deadMaster(), rep(0, { offset: 900 }), rep(1, { offset: 5000, replid: H3 })],
      want: 'cache-replica-0',
      reason: /another replication history/,
    },
    {
      name: 'the promoted one keeps the old id as replid2',
      pods: [deadMaster(), rep(0, { offset: 900 }), rep(1, { role: 'master', replid: H2, replid2: H1, offset: 1200 })],
      want: 'cache-replica-1',
      reason: /already promoted/,
    },
    {
      name: 'already promoted by an earlier leader beats a higher priority elsewhere',
      pods: [
        deadMaster(),
        rep(0, { offset: 1000, priority: 1 }),
        rep(1, { role: 'master', replid: H2, replid2: H1, offset: 1000 }),
      ],
      want: 'cache-replica-1',
    },
    {
      name: 'a link down since long before the master died disqualifies',
      pods: [deadMaster(), rep(0, { offset: 400, linkDownSince: 600 }), rep(1, { offset: 300 })],
      want: 'cache-replica-1',
      reason: /link has been down 600 s/,
    },
    {
      name: 'tie on offset: smallest run id',
      pods: [deadMaster(), rep(1, { runId: 'b'.repeat(40) }), rep(0, { runId: 'a'.repeat(40) })],
      want: 'cache-replica-0',
    },
    {
      name: 'a loading replica is not promoted (and, online before, it is waited for)',
      pods: [deadMaster(), rep(0, { offset: 900 }), rep(1, { offset: 1000, loading: true }, {})],
      want: null,
      reason: /cache-replica-1 cannot be read.*excluded cache-replica-1: still loading/,
    },
    {
      name: 'a replica in a full sync is not promoted',
      pods: [deadMaster(), rep(0, { sync: true, offset: 0 }), rep(1, { offset: 800 })],
      want: 'cache-replica-1',
    },
    {
      name: 'partial view: a replica that was online is unreadable -> wait',
      pods: [deadMaster(), rep(0, { offset: 900 }), rep(1, {}, { error: 'timeout', okAgo: 1400 })],
      want: null,
      reason: /cache-replica-1 cannot be read and may hold writes/,
    },
    {
      name: 'partial view: after maxPartialWaitMs, proceed and say so',
      pods: [
        deadMaster({ okAgo: 40_000 }),
        rep(0, { offset: 900, linkDownSince: 39 }),
        rep(1, {}, { error: 'timeout', okAgo: 40_000 }),
      ],
      want: 'cache-replica-0',
      reason: /gave up waiting for cache-replica-1/,
    },
    {
      name: "partial view: a replica that was NOT online in the master's last view cannot be ahead",
      pods: [
        deadMaster({ facts: facts({ role: 'master', offset: 1000, replid: H1, replicas: online(ip(11)) }) }),
        rep(0, { offset: 900 }),
        rep(1, {}, { error: 'timeout', okAgo: 60_000 }),
      ],
      want: 'cache-replica-0',
    },
    {
      name: 'partial view: an online replica whose pod we cannot see at all',
      pods: [
        deadMaster({ facts: facts({ role: 'master', offset: 1000, replid: H1, replicas: online(ip(11), ip(55)) }) }),
        rep(0, { offset: 900 }),
      ],
      want: null,
      reason: /10\.0\.0\.55 that matches no pod/,
    },
    {
      name: 'restarted master competes: it wins a tie (no label move)',
      pods: [
        deadMaster({
          error: undefined,
          okAgo: 0,
          facts: facts({ replid: H1, offset: 1000 }),
          lastMaster: { replid: H1, offset: 1000, online: [ip(11)] },
        }),
        rep(0, { offset: 1000 }),
      ],
      includeMaster: true,
      want: 'cache-master-0',
    },
    {
      name: 'restarted master with older RDB data loses to the replica',
      pods: [
        deadMaster({
          error: undefined,
          okAgo: 0,
          facts: facts({ replid: H1, offset: 700 }),
          lastMaster: { replid: H1, offset: 1000, online: [ip(11)] },
        }),
        rep(0, { offset: 1000 }),
      ],
      includeMaster: true,
      want: 'cache-replica-0',
    },
    {
      name: 'restarted master came back EMPTY: never chosen over the replica',
      pods: [
        deadMaster({
          error: undefined,
          okAgo: 0,
          facts: facts({ replid: H3, offset: 0, keys: 0 }),
          lastMaster: { replid: H1, offset: 1000, online: [ip(11)] },
        }),
        rep(0, { offset: 1000 }),
      ],
      includeMaster: true,
      want: 'cache-replica-0',
    },
    {
      name: 'replicas=0: the restarted master (AOF: new id) is the only data, re-promoted',
      pods: [
        deadMaster({
          error: undefined,
          okAgo: 0,
          facts: facts({ replid: H3, offset: 0, keys: 50 }),
          lastMaster: { replid: H1, offset: 1000, online: [] },
        }),
      ],
      includeMaster: true,
      spec: { replicas: 0, persistence: true },
      want: 'cache-master-0',
      reason: /choosing by data/,
    },
    {
      name: 'no memory of the master: history from the replicas that follow its address',
      pods: [
        deadMaster({ lastMaster: undefined, facts: facts({ of: ip(1) }), error: 'refused' }),
        rep(0, { offset: 900 }),
        rep(1, { offset: 2000, replid: H3 }),
      ],
      want: 'cache-replica-0',
    },
    {
      name: 'nobody answers',
      pods: [deadMaster(), rep(0, {}, { error: 'refused', okAgo: 60_000 })],
      want: null,
      reason: /no candidate/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const master = c.pods[0]!;
      // A master without remembered facts: drop lastMasterFacts to exercise the fallback.
      if (c.name.startsWith('no memory')) master.redis!.lastMasterFacts = null;
      const choice = choosePromotion(input(c.pods, c.spec), master, c.includeMaster ?? false);
      assert.equal(choice.ok ? choice.pod.name : null, c.want, `${c.name}: ${choice.reason}`);
      if (c.reason) assert.match(choice.reason, c.reason, c.name);
    });
  }
});

const node = (name: string, f: FactsSpec = {}, s: Partial<PodSpec> = {}) => pod({ name, facts: facts(f), ...s });

test('chooseBootstrap: table', async (t) => {
  const cases: Array<{
    name: string;
    pods: PodObservation[];
    want: string | null;
    reason?: RegExp;
    spec?: Partial<SpecView>;
  }> = [
    {
      name: 'fresh set: master-0',
      pods: [node('replica-1'), node('master-0'), node('replica-0')],
      want: 'cache-master-0',
      reason: /fresh set/,
    },
    {
      name: 'fresh set but master-0 is up and unreadable: it may hold the data, wait',
      pods: [
        node('master-0', {}, { error: 'timeout', okAgo: 5000, firstOkAgo: 5000 }),
        node('replica-0'),
        node('replica-1'),
      ],
      want: null,
      reason: /bootstrap waits for cache-master-0 \(running, not answering\)/,
    },
    {
      name: 'fresh set, no persistence, a pod not created yet cannot hold data',
      pods: [node('master-0'), node('replica-0')],
      want: 'cache-master-0',
    },
    {
      name: 'fresh set, no persistence, master-0 not up yet: the others wait up to maxPartialWaitMs for it',
      pods: [node('replica-0', {}, { firstOkAgo: 1000 }), node('replica-1', {}, { firstOkAgo: 1000 })],
      want: null,
      reason: /cache-master-0 not up yet: waiting \(up to 30000 ms\)/,
    },
    {
      name: 'fresh set, no persistence, master-0 never comes: past maxPartialWaitMs the set starts without it',
      pods: [node('replica-0', {}, { firstOkAgo: 31_000 }), node('replica-1', {}, { firstOkAgo: 31_000 })],
      want: 'cache-replica-0',
      reason: /fresh set/,
    },
    {
      name: 'persistence, claims not listed yet: a pod not created yet may bring a volume with data: wait',
      pods: [
        node('master-0', { offset: 500, replid: H1 }, { firstOkAgo: 1000 }),
        node('replica-0', { offset: 800, replid: H1 }, { firstOkAgo: 1000 }),
      ],
      spec: { persistence: true },
      want: null,
      reason: /bootstrap waits for cache-replica-1 \(volume bound, no pod yet\)/,
    },
    {
      name: 'persistence: long past maxPartialWaitMs, still waiting (no timer at bootstrap)',
      pods: [
        node('master-0', { offset: 500 }, { firstOkAgo: 3_600_000 }),
        node('replica-0', { offset: 800 }, { firstOkAgo: 3_600_000 }),
      ],
      spec: { persistence: true },
      want: null,
      reason: /bootstrap waits for cache-replica-1/,
    },
    {
      name: 'full restart from RDB: highest offset',
      pods: [node('master-0', { offset: 500 }), node('replica-0', { offset: 900 }), node('replica-1', { offset: 700 })],
      spec: { persistence: true },
      want: 'cache-replica-0',
      reason: /most data/,
    },
    {
      name: 'full restart from AOF (offset 0, new ids): most keys',
      pods: [
        node('master-0', { keys: 10, replid: H1 }),
        node('replica-0', { keys: 30, replid: H2 }),
        node('replica-1', { keys: 20, replid: H3 }),
      ],
      want: 'cache-replica-0',
    },
    {
      name: 'an empty master-0 never wins over a replica with data',
      pods: [node('master-0'), node('replica-0', { offset: 100 }), node('replica-1')],
      want: 'cache-replica-0',
    },
    {
      name: 'adopt: an earlier leader promoted replica-1 and crashed before labelling',
      pods: [
        node('master-0', { of: ip(12) }),
        node('replica-0', { of: ip(1), offset: 1000 }),
        node('replica-1', { role: 'master', replid: H2, replid2: H1, offset: 1000 }),
      ],
      want: 'cache-replica-1',
      reason: /adopting/,
    },
    {
      name: 'adopt: of two masters, the one that superseded the other',
      pods: [
        node('master-0', { role: 'master', replid: H1, offset: 5000 }),
        node('replica-0', { role: 'master', replid: H2, replid2: H1, offset: 1000 }),
      ],
      want: 'cache-replica-0',
      reason: /cache-master-0 will be demoted/,
    },
    {
      name: 'priority 0 is never started from',
      pods: [node('master-0', { priority: 0 }), node('replica-0'), node('replica-1')],
      want: 'cache-replica-0',
    },
    {
      name: 'nobody answers',
      pods: [node('master-0', {}, { error: 'refused', okAgo: 9000 })],
      want: null,
      reason: /no pod answers/,
    },
    {
      name: 'a loading node is missing, not a candidate',
      pods: [node('master-0', { offset: 100, loading: true }), node('replica-0', {}), node('replica-1', {})],
      want: null,
      reason: /bootstrap waits for cache-master-0 \(loading its data set\)/,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const choice = chooseBootstrap(input(c.pods, c.spec));
      assert.equal(choice.ok ? choice.pod.name : null, c.want, `${c.name}: ${choice.reason}`);
      if (c.reason) assert.match(choice.reason, c.reason, c.name);
    });
  }
});
