// Decision tables for hibernation (decide/hibernation.ts): the mode from the spec, the reshard
// record and the hook's Hibernated condition; and a waking round, where a node whose pod has not
// started yet must not be taken for gone (no forget, no forced failover) while meeting and
// attaching go on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reshardRecord, readReshardRecord, type ReshardRecord } from '../../../../src/api/rediscluster-names.ts';
import { hibernationMode, wakingRound } from '../../../../src/sidecar/rediscluster/decide/hibernation.ts';
import { planRound } from '../../../../src/sidecar/rediscluster/decide/plan.ts';
import type { PodObservation } from '../../../../src/sidecar/rediscluster/decide/types.ts';
import { healthy, id, SPEC3, THREE, world, type NodeSpec } from './fixtures.ts';

const record = (state: ReshardRecord['state']) =>
  readReshardRecord(
    reshardRecord({ from: 3, to: 4, state, moved: 1, total: 4096, at: '2026-12-01T10:00:00Z', why: '' }),
  );

const NO_MEMORY = { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() };

const mode = (over: Partial<Parameters<typeof hibernationMode>[0]>) =>
  hibernationMode({
    hibernate: false,
    reshard: null,
    conditionReason: undefined,
    expectedPods: 6,
    shards: 3,
    pods: world(healthy(3, THREE)),
    ...over,
  });

test('the mode of a round', async (t) => {
  const someSilent = world(healthy(3, THREE).map((n, i) => (i === 0 ? { ...n, silent: true } : n)));
  const cases: Array<[string, Partial<Parameters<typeof hibernationMode>[0]>, string]> = [
    ['never hibernated', {}, 'awake'],
    ['the hook says Awake', { conditionReason: 'Awake' }, 'awake'],
    ['spec.hibernate true', { hibernate: true }, 'hibernating'],
    ['spec.hibernate true, an old reshard Done', { hibernate: true, reshard: record('Done') }, 'hibernating'],
    ['spec.hibernate true, a reshard Refused', { hibernate: true, reshard: record('Refused') }, 'hibernating'],
    [
      'spec.hibernate true while a reshard runs: it finishes first',
      { hibernate: true, reshard: record('Running') },
      'awake',
    ],
    ['woken, the hook still says Hibernated, every pod answers', { conditionReason: 'Hibernated' }, 'waking complete'],
    ['woken, the hook still says Hibernating', { conditionReason: 'Hibernating', pods: [] }, 'waking incomplete'],
    ['waking, a pod silent', { conditionReason: 'Waking', pods: someSilent }, 'waking incomplete'],
    [
      "waking, a shard's pods not created yet",
      { conditionReason: 'Waking', pods: world(healthy(2, THREE)) },
      'waking incomplete',
    ],
    [
      'a hibernation that waited for a reshard, called off: never asleep',
      { conditionReason: 'WaitingForReshard' },
      'awake',
    ],
  ];
  for (const [name, over, want] of cases)
    await t.test(name, () => {
      const m = mode(over);
      const got = m.kind === 'waking' ? `waking ${m.complete ? 'complete' : 'incomplete'}` : m.kind;
      assert.equal(got, want);
    });
});

test('a pod with no address or marked for deletion counts as not answering; leaving shards do not count', () => {
  const pods = world(healthy(3, THREE));
  const noIp: PodObservation[] = pods.map((p, i) => (i === 5 ? { ...p, ip: null, probe: null } : p));
  assert.equal((mode({ conditionReason: 'Waking', pods: noIp }) as { complete: boolean }).complete, false);
  const leaving = world(healthy(4, [...THREE, []]));
  assert.equal((mode({ conditionReason: 'Waking', pods: leaving }) as { complete: boolean }).complete, true);
});

/**
 * A wake half done: shards 0 and 1 back at new addresses, shard 2's pods not created yet (the
 * others flag its nodes failed: nothing answers at their old addresses).
 */
function halfAwake(): NodeSpec[] {
  return healthy(3, THREE).map((n, i) => (i >= 4 ? { ...n, pod: undefined, fail: true } : n));
}

test('waking: the round would forget a replica whose pod is not back yet; waking holds it, quietly', () => {
  const plan = planRound({
    pods: world(halfAwake()),
    spec: SPEC3,
    remembered: new Map([
      [id('m2'), 2],
      [id('r2'), 2],
    ]),
    failover: { failingSince: new Map([[id('m2'), 0]]), forcedAt: new Map(), lastKeys: new Map() },
    now: 100_000,
  });
  assert.ok(
    plan.steps.some((s) => s.kind === 'forget'),
    `without the hold a node still starting is forgotten: ${JSON.stringify(plan.steps.map((s) => s.kind))}`,
  );
  const m = mode({ conditionReason: 'Waking', pods: world(halfAwake()) });
  assert.equal(m.kind, 'waking');
  if (m.kind !== 'waking') return;
  const held = wakingRound(
    m,
    plan.steps,
    [...plan.holds, { key: 'x', reason: 'slots unserved', warn: true }],
    world(halfAwake()),
  );
  assert.deepEqual(
    held.steps.filter((s) => s.kind === 'forget' || s.kind === 'failover' || s.kind === 'reset'),
    [],
  );
  assert.ok(held.holds.some((h) => h.key === 'waking/forget' && /4 of 6 pods answer/.test(h.reason)));
  assert.ok(
    held.holds.every((h) => !h.warn),
    'no Warning while waking',
  );
});

test('waking: meeting nodes at their new addresses and attaching replicas go on', () => {
  // Every pod back; the cluster still knows shard 2's nodes at their old addresses.
  const nodes = healthy(3, THREE).map((n, i) => (i >= 4 ? { ...n, ip: `10.0.9.${i}` } : n));
  const pods = world(nodes).map((p) =>
    p.probe?.ok
      ? {
          ...p,
          probe: {
            ...p.probe,
            nodes: p.probe.nodes.map((l) => (l.ip.startsWith('10.0.9.') && !l.myself ? { ...l, ip: '10.0.2.99' } : l)),
          },
        }
      : p,
  );
  const plan = planRound({
    pods,
    spec: SPEC3,
    remembered: new Map(),
    failover: { failingSince: new Map(), forcedAt: new Map(), lastKeys: new Map() },
    now: 1,
  });
  const m = mode({ conditionReason: 'Waking', pods });
  assert.equal(m.kind, 'waking');
  if (m.kind !== 'waking') return;
  const held = wakingRound(m, plan.steps, plan.holds, pods);
  assert.deepEqual(
    held.steps.map((s) => s.kind),
    plan.steps.map((s) => s.kind),
  );
  assert.ok(
    held.steps.some((s) => s.kind === 'meet'),
    JSON.stringify(plan.steps),
  );
});

test('waking, every pod answering: a failover is held only while its failed master answers with keys', async (t) => {
  const nodes = healthy(3, THREE);
  const m = mode({ conditionReason: 'Waking', pods: world(nodes) });
  assert.equal(m.kind, 'waking');
  if (m.kind !== 'waking') return;
  const forget = { kind: 'forget' as const, pods: ['a'], id: id('gone'), reason: 'gone' };
  const failover = { kind: 'failover' as const, pod: 'c-shard-0-1', failedId: id('m0'), reason: 'flagged fail' };
  const cases: Array<[string, NodeSpec[], string[]]> = [
    ['its master answers with keys at its new address: held', nodes, ['forget']],
    [
      'its master came back empty while the replica holds the data: let through',
      nodes.map((n) => (n.id === id('m0') ? { ...n, keys: 0 } : n)),
      ['forget', 'failover'],
    ],
  ];
  for (const [name, world_, want] of cases)
    await t.test(name, () => {
      const r = wakingRound(m, [forget, failover], [], world(world_));
      assert.deepEqual(
        r.steps.map((s) => s.kind),
        want,
      );
      if (want.length === 1) assert.match(r.holds[0]!.reason, /answers with 10 keys at its new address/);
    });
});

test('a replica aimed at an address its master no longer has is re-pointed', async (t) => {
  // Linked or syncing makes no difference: an old address that answers is another node's (a
  // reused pod IP), so replication from it is never what the cluster says.
  const cases: Array<[string, { linkUp: boolean; masterHost?: string; syncing?: boolean }, boolean]> = [
    ['link down, aimed at the old address: CLUSTER REPLICATE again', { linkUp: false, masterHost: '10.0.7.7' }, true],
    ['link down, aimed at the right address: left to reconnect', { linkUp: false, masterHost: '10.0.0.1' }, false],
    ['link up at the old address (a reused IP): re-pointed', { linkUp: true, masterHost: '10.0.7.7' }, true],
    ['in a full sync from the old address: re-pointed', { linkUp: false, masterHost: '10.0.7.7', syncing: true }, true],
    ['master_host not said: nothing', { linkUp: false }, false],
  ];
  for (const [name, info, repoint] of cases)
    await t.test(name, () => {
      const pods = world(healthy(3, THREE)).map((p) => {
        if (p.name !== 'c-shard-0-1' || !p.probe?.ok) return p;
        const { masterHost: _none, ...base } = p.probe.info;
        return { ...p, probe: { ...p.probe, info: { ...base, ...info, syncing: info.syncing ?? false } } };
      });
      const plan = planRound({ pods, spec: SPEC3, remembered: new Map(), failover: NO_MEMORY, now: 1 });
      const steps = plan.steps.filter((s) => s.kind === 'replicate');
      assert.equal(steps.length, repoint ? 1 : 0, JSON.stringify(plan.steps));
      if (repoint) {
        assert.deepEqual(
          [steps[0]!.pod, steps[0]!.kind === 'replicate' && steps[0]!.masterId],
          ['c-shard-0-1', id('m0')],
        );
        assert.match(steps[0]!.reason, /again \(it replicates from 10\.0\.7\.7, an address its master left\)/);
      }
    });
});
