// Pure: runtime-managed config (decide/runtime-config.ts) and where its steps sit in planRound().
// Table-driven. No Redis, no address contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desiredRuntimeConfig } from '../../../../src/api/config-directives.ts';
import { planRound } from '../../../../src/sidecar/redis/decide/plan.ts';
import { planRuntimeConfig, runtimeConfigChanges } from '../../../../src/sidecar/redis/decide/runtime-config.ts';
import type { PodObservation, Step } from '../../../../src/sidecar/redis/decide/types.ts';
import { facts, input, ip, online, pod, type FactsSpec, type PodSpec } from './fixtures.ts';

/** What a node started without spec.config reports (every table default). */
const DEFAULTS = desiredRuntimeConfig(undefined);
const LRU = desiredRuntimeConfig({ 'maxmemory-policy': 'allkeys-lru' });

const master = (rc: Record<string, string> = DEFAULTS, s: Partial<PodSpec> = {}, f: FactsSpec = {}) =>
  pod({
    name: 'master-0',
    label: 'master',
    link: 'up',
    facts: facts({ role: 'master', offset: 1000, replicas: online(ip(11), ip(12)), runtimeConfig: rc, ...f }),
    ...s,
  });
const replica = (n: number, rc: Record<string, string> = DEFAULTS, s: Partial<PodSpec> = {}, f: FactsSpec = {}) =>
  pod({
    name: `replica-${n}`,
    label: 'replica',
    link: 'up',
    facts: facts({ of: ip(1), offset: 1000, runtimeConfig: rc, ...f }),
    ...s,
  });

const configSteps = (steps: Step[]) => steps.filter((s): s is Extract<Step, { kind: 'config' }> => s.kind === 'config');
const brief = (steps: Step[]) =>
  configSteps(steps).map(
    (s) =>
      `${s.pod} ${Object.entries(s.settings)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
  );

test('runtimeConfigChanges: table', async (t) => {
  const cases: Array<[string, Record<string, string>, Record<string, string>, string[]]> = [
    ['equal: nothing', { 'maxmemory-policy': 'allkeys-lru' }, { 'maxmemory-policy': 'allkeys-lru' }, []],
    [
      'equal once normalised: nothing',
      { 'maxmemory-policy': 'allkeys-lru', 'repl-backlog-size': '1048576' },
      { 'maxmemory-policy': 'ALLKEYS-LRU', 'repl-backlog-size': '1mb' },
      [],
    ],
    [
      'differs',
      { 'maxmemory-policy': 'allkeys-lru', timeout: '0' },
      { 'maxmemory-policy': 'noeviction', timeout: '0' },
      ['maxmemory-policy'],
    ],
    ['several, sorted by name', { timeout: '60', hz: '20' }, { timeout: '0', hz: '10' }, ['hz', 'timeout']],
    [
      'not reported by the node (older Redis, CONFIG GET refused): left alone',
      { 'maxmemory-policy': 'allkeys-lru' },
      {},
      [],
    ],
    ['nothing desired: nothing', {}, { 'maxmemory-policy': 'noeviction' }, []],
    [
      'empty value differs from a set one',
      { 'notify-keyspace-events': '' },
      { 'notify-keyspace-events': 'AKE' },
      ['notify-keyspace-events'],
    ],
  ];
  for (const [name, desired, reported, want] of cases) {
    await t.test(name, () =>
      assert.deepEqual(
        runtimeConfigChanges(desired, reported).map((c) => c.name),
        want,
      ),
    );
  }
});

test('planRuntimeConfig: which nodes get a step', async (t) => {
  const cases: Array<{ name: string; pods: PodObservation[]; want: string[] }> = [
    { name: 'every node already right: no step', pods: [master(LRU), replica(0, LRU), replica(1, LRU)], want: [] },
    {
      name: 'spec changed: master and replicas alike, only the differing directive',
      pods: [master(), replica(0), replica(1)],
      want: [
        'cache-master-0 maxmemory-policy=allkeys-lru',
        'cache-replica-0 maxmemory-policy=allkeys-lru',
        'cache-replica-1 maxmemory-policy=allkeys-lru',
      ],
    },
    {
      name: 'a new pod started from an older redis.conf',
      pods: [master(LRU), replica(0, LRU), replica(1)],
      want: ['cache-replica-1 maxmemory-policy=allkeys-lru'],
    },
    { name: 'deleting: left alone', pods: [master(LRU), replica(0, DEFAULTS, { deleting: true })], want: [] },
    {
      name: 'loading: left alone until loaded',
      pods: [master(LRU), replica(0, DEFAULTS, {}, { loading: true })],
      want: [],
    },
    {
      name: 'not answering now: left alone',
      pods: [master(LRU), replica(0, DEFAULTS, { error: 'timeout', okAgo: 3000 })],
      want: [],
    },
    { name: 'no IP: left alone', pods: [master(LRU), replica(0, DEFAULTS, { ip: null })], want: [] },
    {
      name: 'a node reporting none of them (CONFIG GET refused): left alone',
      pods: [master(LRU), replica(0, {})],
      want: [],
    },
  ];
  for (const c of cases)
    await t.test(c.name, () =>
      assert.deepEqual(brief(planRuntimeConfig(input(c.pods, { runtimeConfig: LRU }))), c.want),
    );

  await t.test('removed from spec.config: back to the default', () => {
    assert.deepEqual(brief(planRuntimeConfig(input([master(LRU), replica(0, LRU)], { runtimeConfig: DEFAULTS }))), [
      'cache-master-0 maxmemory-policy=noeviction',
      'cache-replica-0 maxmemory-policy=noeviction',
    ]);
  });
  await t.test('the value sent is the normal form; the reason names each directive, from and to', () => {
    const want = desiredRuntimeConfig({
      'maxmemory-policy': 'ALLKEYS-LRU',
      'notify-keyspace-events': 'KEA',
      timeout: '60',
    });
    const [step] = configSteps(planRuntimeConfig(input([master()], { runtimeConfig: want })));
    assert.deepEqual(step?.settings, {
      'maxmemory-policy': 'allkeys-lru',
      'notify-keyspace-events': 'AKE',
      timeout: '60',
    });
    assert.equal(step?.critical, false);
    assert.equal(step?.endpoint.host, ip(1));
    assert.match(
      step?.reason ?? '',
      /^cache-master-0: maxmemory-policy noeviction -> allkeys-lru, notify-keyspace-events "" -> AKE, timeout 0 -> 60 /,
    );
    assert.match(step?.reason ?? '', /no restart/);
  });
  await t.test('an empty spec view manages nothing', () => {
    assert.deepEqual(planRuntimeConfig(input([master(LRU), replica(0)], { runtimeConfig: {} })), []);
  });
});

test('planRound(): a healthy set whose config matches is an empty plan', () => {
  const p = planRound(input([master(LRU), replica(0, LRU), replica(1, LRU)], { runtimeConfig: LRU }));
  assert.equal(p.decision.kind, 'keep');
  assert.deepEqual(p.steps, []);
});

test('planRound(): runtime config after re-pointing and fencing, before the label steps', () => {
  // replica-1 is new (placeholder, no labels) with the old config; the master's fencing is off.
  const M = master(DEFAULTS, {}, { minReplicas: 0 });
  const fresh = pod({ name: 'replica-1', facts: facts({ runtimeConfig: DEFAULTS }) });
  const p = planRound(input([M, replica(0, LRU), fresh], { runtimeConfig: LRU }));
  const kinds = p.steps.map(
    (s) => `${s.kind} ${s.pod}${s.kind === 'config' ? ` ${Object.keys(s.settings).join(',')}` : ''}`,
  );
  assert.deepEqual(kinds, [
    'replicaof cache-replica-1',
    'config cache-master-0 min-replicas-to-write,min-replicas-max-lag',
    'config cache-master-0 maxmemory-policy',
    'config cache-replica-1 maxmemory-policy',
    'label cache-replica-1',
  ]);
});

test('planRound(): no master (wait): no runtime config step', () => {
  // The labelled master stopped answering a moment ago (suspect, not failed yet): the replica
  // answers with the old config but nothing moves in Redis until there is a master again.
  const waiting = planRound(
    input([master(DEFAULTS, { error: 'timeout', okAgo: 600 }), replica(0)], { runtimeConfig: LRU }),
  );
  assert.equal(waiting.decision.kind, 'wait');
  assert.deepEqual(configSteps(waiting.steps), []);
});
