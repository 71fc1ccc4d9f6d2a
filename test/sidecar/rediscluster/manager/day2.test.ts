// The RedisCluster's day-2 runner over fakes: what it sends and records for a switchover request
// and for rollout steps, round after round, and how it reads the pods' revisions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { SWITCHOVER_ANNOTATION, SWITCHOVER_STATUS_ANNOTATION } from '../../../../src/api/labels.ts';
import { SHARD_LABEL } from '../../../../src/api/rediscluster-names.ts';
import type { RolloutPod } from '../../../../src/sidecar/rediscluster/decide/rollout.ts';
import { buildTopology } from '../../../../src/sidecar/rediscluster/decide/topology.ts';
import { ClusterDay2, SWITCHOVER_TIMEOUT_MS } from '../../../../src/sidecar/rediscluster/manager/day2.ts';
import { healthy, id, SPEC3, THREE, world, type NodeSpec } from '../decide/fixtures.ts';

function harness(o: { failover?: string | null } = {}) {
  const calls: string[] = [];
  let now = 0;
  const day2 = new ClusterDay2({
    ref: { namespace: 'ns', name: 'c' },
    log: pino({ level: 'silent' }),
    isLeader: () => true,
    event: (e) => calls.push(`event ${e.reason}`),
    now: () => now,
    stallAfterMs: 60_000,
    statefulSets: () => [],
    deletePod: (name, uid) => {
      calls.push(`delete ${name} ${uid}`);
      return Promise.resolve();
    },
    patchAnnotations: (a) => {
      calls.push(`record ${a[SWITCHOVER_STATUS_ANNOTATION]}`);
      return Promise.resolve();
    },
    failover: (ip) => {
      calls.push(`CLUSTER FAILOVER at ${ip}`);
      return Promise.resolve(o.failover ?? null);
    },
  });
  return { day2, calls, tick: (ms: number) => (now += ms) };
}

const kubeOf = (nodes: NodeSpec[], stale: string[] = []) =>
  new Map<string, RolloutPod>(
    nodes
      .filter((n) => n.pod)
      .map((n) => {
        const name = `c-shard-${n.pod![0]}-${n.pod![1]}`;
        return [name, { ready: true, updated: !stale.includes(name) }];
      }),
  );
const t = (nodes: NodeSpec[]) => buildTopology(world(nodes));
/** Shard 1's replica took over. */
const moved = (nodes: NodeSpec[]) =>
  nodes.map((n) =>
    n.id === id('r1')
      ? { ...n, role: 'master' as const, master: undefined, slots: THREE[1], epoch: 9 }
      : n.id === id('m1')
        ? { ...n, role: 'replica' as const, master: id('r1'), slots: [] }
        : n,
  );

test('a switchover request: CLUSTER FAILOVER to the replica, then Done once it is the master; not run twice', async () => {
  const h = harness();
  const base = healthy(3, THREE);
  h.day2.update({ [SWITCHOVER_ANNOTATION]: 'shard-1' });
  assert.equal(await h.day2.quiet(t(base), SPEC3, kubeOf(base), null), true);
  assert.deepEqual(h.calls, ['CLUSTER FAILOVER at 10.0.1.2', 'event Switchover']);
  h.calls.length = 0;
  assert.equal(await h.day2.quiet(t(base), SPEC3, kubeOf(base), null), true, 'in flight: nothing else');
  assert.deepEqual(h.calls, []);
  await h.day2.quiet(t(moved(base)), SPEC3, kubeOf(base), null);
  assert.deepEqual(h.calls, ['event SwitchoverDone', 'record shard-1: Done: c-shard-1-1 is the master of shard 1']);
  h.calls.length = 0;
  await h.day2.quiet(t(moved(base)), SPEC3, kubeOf(base), null);
  assert.deepEqual(h.calls, [], 'the handled request is not run again');
});

test('a switchover that never completes is refused after SWITCHOVER_TIMEOUT_MS; one that fails to start at once', async () => {
  const h = harness();
  const base = healthy(3, THREE);
  h.day2.update({ [SWITCHOVER_ANNOTATION]: 'c-shard-2-1' });
  await h.day2.quiet(t(base), SPEC3, kubeOf(base), null);
  h.tick(SWITCHOVER_TIMEOUT_MS + 1);
  h.calls.length = 0;
  await h.day2.quiet(t(base), SPEC3, kubeOf(base), null);
  assert.deepEqual(h.calls, [
    'event SwitchoverRefused',
    'record c-shard-2-1: Refused: the switchover to c-shard-2-1 did not complete; the master of shard 2 is c-shard-2-0',
  ]);
  const f = harness({ failover: 'ERR You should send CLUSTER FAILOVER to a replica' });
  f.day2.update({ [SWITCHOVER_ANNOTATION]: 'shard-0' });
  await f.day2.quiet(t(base), SPEC3, kubeOf(base), null);
  assert.deepEqual(f.calls, [
    'CLUSTER FAILOVER at 10.0.0.2',
    'event SwitchoverRefused',
    'record shard-0: Refused: CLUSTER FAILOVER on c-shard-0-1 failed: ERR You should send CLUSTER FAILOVER to a replica',
  ]);
});

test('rollout steps: one deletion, then nothing while the informer still shows that pod; a master after a switchover', async () => {
  const h = harness();
  const base = healthy(3, THREE);
  const stale = ['c-shard-1-1', 'c-shard-1-0'];
  await h.day2.quiet(t(base), SPEC3, kubeOf(base, stale), null);
  assert.deepEqual(h.calls, [`delete c-shard-1-1 uid-${id('r1').slice(0, 6)}`, 'event RolloutStep']);
  h.calls.length = 0;
  await h.day2.quiet(t(base), SPEC3, kubeOf(base, stale), null);
  assert.deepEqual(h.calls, [], 'the deleted pod still shows, not deleting: informer lag, no second step');
  // The informer shows the replacement (a new uid), updated and linked: the master moves next.
  const replaced = world(base).map((p) => (p.name === 'c-shard-1-1' ? { ...p, uid: 'new' } : p));
  await h.day2.quiet(buildTopology(replaced), SPEC3, kubeOf(base, ['c-shard-1-0']), null);
  assert.deepEqual(h.calls, ['CLUSTER FAILOVER at 10.0.1.2', 'event Switchover']);
  h.calls.length = 0;
  await h.day2.quiet(t(moved(base)), SPEC3, kubeOf(base, ['c-shard-1-0']), null);
  await h.day2.quiet(t(moved(base)), SPEC3, kubeOf(base, ['c-shard-1-0']), null);
  assert.deepEqual(h.calls, [`delete c-shard-1-0 uid-${id('m1').slice(0, 6)}`, 'event RolloutStep']);
  h.calls.length = 0;
  const done = world(moved(base)).map((p) => (p.name === 'c-shard-1-0' ? { ...p, uid: 'new-0' } : p));
  await h.day2.quiet(buildTopology(done), SPEC3, kubeOf(base), null);
  assert.deepEqual(h.calls, ['event RolloutCompleted']);
});

test("kubeView: a pod's revision is known once every shard StatefulSet shows the same template, settled", async (t) => {
  const template = (shard: number, cpu = '10m') => ({
    metadata: { labels: { [SHARD_LABEL]: String(shard) } },
    spec: {
      containers: [{ name: 'redis', resources: { requests: { cpu } } }],
      affinity: {
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: {
                topologyKey: 'kubernetes.io/hostname',
                labelSelector: { matchLabels: { [SHARD_LABEL]: String(shard) } },
              },
            },
          ],
        },
      },
    },
  });
  const set = (shard: number, revision: string, o: { cpu?: string; observed?: number } = {}): V1StatefulSet => ({
    metadata: { name: `c-shard-${shard}`, namespace: 'ns', generation: 2 },
    spec: { selector: {}, serviceName: 'c', template: template(shard, o.cpu) },
    status: { updateRevision: revision, observedGeneration: o.observed ?? 2, replicas: 3 },
  });
  const pod = (name: string, revision: string, ready = true): V1Pod => ({
    metadata: { name, labels: { 'controller-revision-hash': revision } },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  });
  const pods = [pod('c-shard-0-0', 'r2'), pod('c-shard-0-1', 'r1', false), pod('c-shard-1-0', 'r2')];
  const view = (sets: V1StatefulSet[]) =>
    Object.fromEntries(
      new ClusterDay2({
        ref: { namespace: 'ns', name: 'c' },
        log: pino({ level: 'silent' }),
        isLeader: () => true,
        event: () => undefined,
        now: () => 0,
        stallAfterMs: 1,
        statefulSets: () => sets,
        failover: () => Promise.resolve(null),
      }).kubeView(pods, (p) => Number(/shard-(\d+)/.exec(p.metadata!.name!)![1])),
    );
  const unknown = {
    'c-shard-0-0': { ready: true, updated: null },
    'c-shard-0-1': { ready: false, updated: null },
    'c-shard-1-0': { ready: true, updated: null },
  };
  const cases: Array<[string, V1StatefulSet[], object]> = [
    [
      "every set the same template but for its shard, settled: compared with each set's revision",
      [set(0, 'r2'), set(1, 'r2')],
      {
        'c-shard-0-0': { ready: true, updated: true },
        'c-shard-0-1': { ready: false, updated: false },
        'c-shard-1-0': { ready: true, updated: true },
      },
    ],
    [
      'the informer shows one set changed, not the other yet: nothing known',
      [set(0, 'r2', { cpu: '20m' }), set(1, 'r2')],
      unknown,
    ],
    [
      'a set its controller has not processed',
      [set(0, 'r2'), set(1, 'r2', { observed: 1 })],
      {
        ...unknown,
        'c-shard-0-0': { ready: true, updated: true },
        'c-shard-0-1': { ready: false, updated: false },
      },
    ],
    ['a set missing', [set(0, 'r2')], unknown],
  ];
  for (const [name, sets, want] of cases) await t.test(name, () => assert.deepEqual(view(sets), want));
});
