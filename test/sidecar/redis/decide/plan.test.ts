// Pure: re-point, fencing, labels and the ordered plan. Table-driven. No Redis, no address contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planRound } from '../../../../src/sidecar/redis/decide/plan.ts';
import { decideMaster } from '../../../../src/sidecar/redis/decide/master.ts';
import { planReplication, desiredFencing, planFencing } from '../../../../src/sidecar/redis/decide/replication.ts';
import { planLabels } from '../../../../src/sidecar/redis/decide/labels.ts';
import type { PodObservation, Step, SpecView } from '../../../../src/sidecar/redis/decide/types.ts';
import {
  facts,
  H1,
  H2,
  input,
  ip,
  LINK_ANNOTATION,
  online,
  pod,
  ROLE_LABEL,
  type FactsSpec,
  type PodSpec,
} from './fixtures.ts';
import { ROLE_SINCE_ANNOTATION } from '../../../../src/api/labels.ts';

const master = (s: Partial<PodSpec> = {}, f: FactsSpec = {}) =>
  pod({
    name: 'master-0',
    label: 'master',
    link: 'up',
    facts: facts({ role: 'master', offset: 1000, replicas: online(ip(11), ip(12)), ...f }),
    ...s,
  });
const replica = (n: number, f: FactsSpec = {}, s: Partial<PodSpec> = {}) =>
  pod({ name: `replica-${n}`, label: 'replica', link: 'up', facts: facts({ of: ip(1), offset: 1000, ...f }), ...s });

const brief = (steps: Step[]) =>
  steps.map((s) => {
    switch (s.kind) {
      case 'promote':
        return `promote ${s.pod}`;
      case 'switchover':
        return `switchover ${s.from.pod}->${s.pod}`;
      case 'replicaof':
        return `${s.demote ? 'demote' : 'replicaof'} ${s.pod}->${s.master.host}`;
      case 'config':
        return `config ${s.pod} min-replicas-to-write=${s.settings['min-replicas-to-write']}`;
      case 'label':
        return `label ${s.pod} ${JSON.stringify(s.patch.metadata.labels ?? {})}${s.critical ? '!' : ''}`;
    }
  });

test('planReplication: table', async (t) => {
  const M = master();
  const cases: Array<{ name: string; pods: PodObservation[]; want: string[] }> = [
    { name: 'all following the master: nothing', pods: [M, replica(0), replica(1)], want: [] },
    {
      name: 'new/restarted pod on the placeholder',
      pods: [M, replica(0, { of: '127.0.0.1' })],
      want: ['replicaof cache-replica-0->10.0.0.1'],
    },
    {
      name: 'stale address (master pod got a new IP)',
      pods: [M, replica(0, { of: ip(99), link: 'down' })],
      want: ['replicaof cache-replica-0->10.0.0.1'],
    },
    {
      name: 'old master returning as master',
      pods: [M, replica(0, { role: 'master', replid: H2 })],
      want: ['demote cache-replica-0->10.0.0.1'],
    },
    { name: 'loading: left alone until loaded', pods: [M, replica(0, { of: '127.0.0.1', loading: true })], want: [] },
    { name: 'deleting: left alone', pods: [M, replica(0, { of: '127.0.0.1' }, { deleting: true })], want: [] },
    {
      name: 'not answering: left alone',
      pods: [M, replica(0, { of: '127.0.0.1' }, { error: 'timeout', okAgo: 3000 })],
      want: [],
    },
  ];
  for (const c of cases)
    await t.test(c.name, () => assert.deepEqual(brief(planReplication(input(c.pods), M, ip(1))), c.want, c.name));
  const [step] = planReplication(input([M, replica(0, { of: ip(99) })]), M, ip(1));
  assert.match(step!.reason, /replicates from 10\.0\.0\.99:6379, not the master's address/);
});

test('desiredFencing: table', async (t) => {
  const M = master();
  const cases: Array<{ name: string; pods: PodObservation[]; spec?: Partial<SpecView>; want: number }> = [
    { name: 'two replicas following', pods: [M, replica(0), replica(1)], want: 1 },
    { name: 'spec 0 turns it off', pods: [M, replica(0), replica(1)], spec: { minReplicasToWrite: 0 }, want: 0 },
    { name: 'capped at spec.replicas', pods: [M, replica(0), replica(1)], spec: { minReplicasToWrite: 3 }, want: 2 },
    {
      name: 'replicas cut off from the master still count (isolated master stays fenced)',
      pods: [M, replica(0, { link: 'down', lastIo: 9 }), replica(1, { link: 'down' })],
      want: 1,
    },
    {
      name: 'replicas of the previous master being re-pointed count',
      pods: [M, replica(0, { of: ip(99), link: 'down' })],
      spec: { replicas: 1 },
      want: 1,
    },
    {
      name: 'replicas=1 after failover: the only other pod is dead -> 0 (writes accepted)',
      pods: [M, replica(0, {}, { error: 'refused', okAgo: 5000 })],
      spec: { replicas: 1 },
      want: 0,
    },
    {
      name: 'the old pod returned empty on the placeholder: not yet',
      pods: [M, replica(0, { of: '127.0.0.1' })],
      spec: { replicas: 1 },
      want: 0,
    },
    {
      name: '...and during its first full sync: not yet',
      pods: [M, replica(0, { link: 'down', sync: true })],
      spec: { replicas: 1 },
      want: 0,
    },
    { name: '...linked: raised again', pods: [M, replica(0)], spec: { replicas: 1 }, want: 1 },
  ];
  for (const c of cases)
    await t.test(c.name, () => assert.equal(desiredFencing(input(c.pods, c.spec), M).count, c.want, c.name));
  assert.equal(planFencing(input([M, replica(0), replica(1)]), M, ip(1)), null, 'already right: no step');
  const M2 = master({}, { minReplicas: 1, maxLag: 10 });
  const s2 = planFencing(input([M2, replica(0)]), M2, ip(1));
  assert.deepEqual(s2?.kind === 'config' && s2.settings, { 'min-replicas-to-write': 1, 'min-replicas-max-lag': 5 });
});

test('planLabels: transitions only; the master label leaves before it arrives', () => {
  const steady = [master(), replica(0), replica(1)];
  assert.deepEqual(
    planLabels(input(steady), { master: 'cache-master-0', masterIp: ip(1) }),
    [],
    'steady state: no patch at all',
  );

  const dead = master({ error: 'refused', okAgo: 1500 });
  const r0 = replica(0, { link: 'down' });
  const r1 = replica(1, { link: 'down' });
  const steps = planLabels(input([r1, r0, dead]), {
    master: 'cache-replica-0',
    masterIp: ip(11),
    promotion: { cause: 'failover', previous: 'cache-master-0', offset: 1000 },
  });
  assert.deepEqual(brief(steps), [
    'label cache-master-0 {"cache-master-0" === "x"}'.replace(
      '{"cache-master-0" === "x"}',
      JSON.stringify({ [ROLE_LABEL]: 'replica' }),
    ) + '!',
    `label cache-replica-0 ${JSON.stringify({ [ROLE_LABEL]: 'master' })}!`,
    'label cache-replica-1 {}',
  ]);
  const give = steps[1]!;
  assert.ok(give.kind === 'label');
  assert.equal(give.patch.metadata.annotations?.[ROLE_SINCE_ANNOTATION], 'failover from cache-master-0 at offset 1000');
  assert.equal(give.patch.metadata.annotations?.[LINK_ANNOTATION], undefined, 'link already up: not repeated');
  const take = steps[0]!;
  assert.ok(take.kind === 'label');
  assert.equal(take.patch.metadata.annotations?.[LINK_ANNOTATION], 'down');

  const fresh = pod({ name: 'replica-2', facts: facts({ of: '127.0.0.1' }) });
  const s2 = planLabels(input([master(), fresh]), { master: 'cache-master-0', masterIp: ip(1) });
  assert.deepEqual(
    s2.map((s) => s.kind === 'label' && s.patch),
    [{ metadata: { labels: { [ROLE_LABEL]: 'replica' }, annotations: { [LINK_ANNOTATION]: 'down' } } }],
    'a new pod: labelled replica, link down until it syncs',
  );

  const gone = replica(1, {}, { error: 'timeout', okAgo: 400 });
  assert.deepEqual(
    planLabels(input([master(), gone]), { master: 'cache-master-0', masterIp: ip(1) }),
    [],
    'briefly silent: untouched',
  );
  const long = replica(1, {}, { error: 'timeout', okAgo: 4000 });
  assert.deepEqual(
    planLabels(input([master(), long]), { master: 'cache-master-0', masterIp: ip(1) }).map(
      (s) => s.kind === 'label' && s.patch,
    ),
    [{ metadata: { annotations: { [LINK_ANNOTATION]: 'down' } } }],
    'silent past downAfter: link down, role kept',
  );
});

test('planRound: end to end, in the order the manager must apply', async (t) => {
  const deadM = master({ error: 'refused', okAgo: 1500 });
  const cases: Array<{ name: string; pods: PodObservation[]; spec?: Partial<SpecView>; kind: string; want: string[] }> =
    [
      { name: 'healthy steady state: nothing to do', pods: [master(), replica(0), replica(1)], kind: 'keep', want: [] },
      {
        name: 'master killed: promote, re-point, then labels (old off, new on)',
        pods: [
          deadM,
          replica(0, { link: 'down', linkDownSince: 1, offset: 900 }, { witnessFor: 1000 }),
          replica(1, { link: 'down', linkDownSince: 1, offset: 1000 }, { witnessFor: 1000 }),
        ],
        kind: 'promote',
        want: [
          'promote cache-replica-1',
          'replicaof cache-replica-0->10.0.0.12',
          `label cache-master-0 ${JSON.stringify({ [ROLE_LABEL]: 'replica' })}!`,
          `label cache-replica-1 ${JSON.stringify({ [ROLE_LABEL]: 'master' })}!`,
          'label cache-replica-0 {}',
        ],
      },
      {
        name: 'replicas=1, master killed: the new master is unfenced until the old pod returns',
        pods: [
          master({ error: 'refused', okAgo: 1500 }, { replicas: online(ip(11)) }),
          replica(0, { link: 'down', linkDownSince: 1 }, { witnessFor: 1000 }),
        ],
        spec: { replicas: 1 },
        kind: 'promote',
        want: [
          'promote cache-replica-0',
          'config cache-replica-0 min-replicas-to-write=0',
          `label cache-master-0 ${JSON.stringify({ [ROLE_LABEL]: 'replica' })}!`,
          `label cache-replica-0 ${JSON.stringify({ [ROLE_LABEL]: 'master' })}!`,
        ],
      },
      {
        name: 'only the sidecar lost the master: nothing happens',
        pods: [master({ error: 'timeout', okAgo: 8000 }), replica(0), replica(1)],
        kind: 'wait',
        want: [],
      },
      {
        name: 'old master returns still claiming master (was hung): demoted; its label already says replica',
        pods: [
          pod({
            name: 'master-0',
            label: 'replica',
            link: 'down',
            facts: facts({ role: 'master', offset: 900, replid: H1 }),
          }),
          pod({
            name: 'replica-0',
            label: 'master',
            link: 'up',
            facts: facts({ role: 'master', replid: H2, replid2: H1, offset: 1100, replicas: online(ip(12)) }),
          }),
          replica(1, { of: ip(11), replid: H2 }),
        ],
        kind: 'keep',
        want: ['demote cache-master-0->10.0.0.11'],
      },
      {
        name: 'old master returns empty (placeholder): re-pointed, never chosen',
        pods: [
          pod({
            name: 'master-0',
            label: 'replica',
            link: 'down',
            facts: facts({ of: '127.0.0.1', replid: '9'.repeat(40) }),
          }),
          pod({
            name: 'replica-0',
            label: 'master',
            link: 'up',
            facts: facts({ role: 'master', replid: H2, replid2: H1, offset: 1100, replicas: online(ip(12)) }),
          }),
          replica(1, { of: ip(11), replid: H2 }),
        ],
        kind: 'keep',
        want: ['replicaof cache-master-0->10.0.0.11'],
      },
      {
        name: 'leader crashed after promoting, before labelling: adopt, no second promotion',
        pods: [
          pod({
            name: 'master-0',
            label: 'replica',
            error: 'refused',
            okAgo: 5000,
            facts: facts({ role: 'master', replid: H1 }),
          }),
          pod({
            name: 'replica-0',
            label: 'replica',
            facts: facts({ role: 'master', replid: H2, replid2: H1, offset: 1100 }),
          }),
          replica(1, { of: ip(1), link: 'down', replid: H1 }),
        ],
        kind: 'promote',
        want: [
          'replicaof cache-replica-1->10.0.0.11',
          `label cache-replica-0 ${JSON.stringify({ [ROLE_LABEL]: 'master' })}!`,
          'label cache-master-0 {}',
          'label cache-replica-1 {}',
        ],
      },
      {
        name: 'bootstrap of a fresh set',
        pods: [
          pod({ name: 'master-0', facts: facts() }),
          pod({ name: 'replica-0', facts: facts() }),
          pod({ name: 'replica-1', facts: facts() }),
        ],
        kind: 'promote',
        want: [
          'promote cache-master-0',
          'replicaof cache-replica-0->10.0.0.1',
          'replicaof cache-replica-1->10.0.0.1',
          // Nobody can acknowledge yet (both start their first sync): unfenced until one is linked.
          'config cache-master-0 min-replicas-to-write=0',
          `label cache-master-0 ${JSON.stringify({ [ROLE_LABEL]: 'master' })}!`,
          `label cache-replica-0 ${JSON.stringify({ [ROLE_LABEL]: 'replica' })}`,
          `label cache-replica-1 ${JSON.stringify({ [ROLE_LABEL]: 'replica' })}`,
        ],
      },
      {
        name: "scale-down removes the master's pod: planned switchover first",
        pods: [
          pod({ name: 'master-0', label: 'replica', link: 'up', facts: facts({ of: ip(13), offset: 1000 }) }),
          replica(0, { of: ip(13) }),
          pod({
            name: 'replica-2',
            label: 'master',
            link: 'up',
            facts: facts({ role: 'master', offset: 1000, replicas: online(ip(1), ip(11)) }),
          }),
        ],
        spec: { replicas: 2 },
        kind: 'switchover',
        want: [
          'switchover cache-replica-2->cache-master-0',
          'demote cache-replica-2->10.0.0.1',
          'replicaof cache-replica-0->10.0.0.1',
          `label cache-replica-2 ${JSON.stringify({ [ROLE_LABEL]: 'replica' })}!`,
          `label cache-master-0 ${JSON.stringify({ [ROLE_LABEL]: 'master' })}!`,
          'label cache-replica-0 {}',
        ],
      },
      {
        name: 'scale-down to 1 with the master on replica-2: the switchover target is a pod that stays, even when one that goes is further ahead',
        pods: [
          pod({ name: 'master-0', label: 'replica', link: 'up', facts: facts({ of: ip(13), offset: 990 }) }),
          replica(0, { of: ip(13), offset: 990 }),
          replica(1, { of: ip(13), offset: 1000 }),
          pod({
            name: 'replica-2',
            label: 'master',
            link: 'up',
            facts: facts({ role: 'master', offset: 1000, replicas: online(ip(1), ip(11), ip(12)) }),
          }),
        ],
        spec: { replicas: 1 },
        kind: 'switchover',
        want: [
          'switchover cache-replica-2->cache-master-0',
          'demote cache-replica-2->10.0.0.1',
          'replicaof cache-replica-0->10.0.0.1',
          'replicaof cache-replica-1->10.0.0.1',
          `label cache-replica-2 ${JSON.stringify({ [ROLE_LABEL]: 'replica' })}!`,
          `label cache-master-0 ${JSON.stringify({ [ROLE_LABEL]: 'master' })}!`,
          'label cache-replica-0 {}',
          'label cache-replica-1 {}',
        ],
      },
    ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const p = planRound(input(c.pods, c.spec));
      assert.equal(p.decision.kind, c.kind, `${c.name}: ${p.decision.reason}`);
      assert.deepEqual(brief(p.steps), c.want, `${c.name}: ${p.decision.reason}`);
    });
  }
});

test('never two pods labelled master: after any plan is applied, at most one carries the label', async (t) => {
  const scenarios: Array<[string, PodObservation[]]> = [
    [
      'the master refuses connections and both replicas report the link down',
      [
        master({ error: 'refused', okAgo: 1500 }),
        replica(0, { link: 'down' }, { witnessFor: 1000 }),
        replica(1, { link: 'down', offset: 1200 }, { witnessFor: 1000 }),
      ],
    ],
    [
      'two pods labelled master, one the promoted successor',
      [
        master({ label: 'master' }),
        pod({
          name: 'replica-0',
          label: 'master',
          facts: facts({ role: 'master', replid: H2, replid2: H1, offset: 2000 }),
        }),
      ],
    ],
    [
      'a fresh set: no labels, every node on the placeholder',
      [pod({ name: 'master-0', facts: facts() }), pod({ name: 'replica-0', facts: facts() })],
    ],
  ];
  for (const [name, pods] of scenarios) {
    await t.test(name, () => {
      const p = planRound(input(pods));
      const labels = new Map(pods.map((x) => [x.name, x.roleLabel]));
      for (const s of p.steps) {
        if (s.kind !== 'label') continue;
        const v = s.patch.metadata.labels?.[ROLE_LABEL];
        if (v !== undefined) labels.set(s.pod, v);
        assert.ok(
          [...labels.values()].filter((l) => l === 'master').length <= 1,
          `two masters midway: ${p.decision.reason}`,
        );
      }
      assert.equal([...labels.values()].filter((l) => l === 'master').length, p.master ? 1 : 0, p.decision.reason);
    });
  }
});

test('decideMaster: reasons name the situation', () => {
  const d = decideMaster(input([master({ error: 'timeout', okAgo: 8000 }), replica(0), replica(1)])).decision;
  assert.equal(d.kind, 'wait');
  assert.match(d.reason, /sidecar lost contact/);
  const two = decideMaster(
    input([
      master(),
      pod({
        name: 'replica-0',
        label: 'master',
        facts: facts({ role: 'master', replid: H2, replid2: H1, offset: 2000 }),
      }),
    ]),
  ).decision;
  assert.equal(two.kind, 'keep');
  assert.equal(two.kind === 'keep' && two.master, 'cache-replica-0', 'of two labelled masters, the successor');
});
