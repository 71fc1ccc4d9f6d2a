// The day-2 runner (src/sidecar/redis/manager/day2.ts) with the Kubernetes writes faked: what it
// remembers between rounds. A pod it deleted counts as going until the informer shows it; a
// switchover request is recorded once, with an Event; nothing happens while hibernating or for a
// standby. The decisions themselves are tested in test/sidecar/redis/decide/day2.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import type { V1StatefulSet } from '@kubernetes/client-node';
import { validateSpec } from '../../../../src/api/validate.ts';
import { SWITCHOVER_ANNOTATION, SWITCHOVER_STATUS_ANNOTATION } from '../../../../src/api/labels.ts';
import type { MasterDecision, PodObservation } from '../../../../src/sidecar/redis/decide/index.ts';
import { Day2, handledRequest } from '../../../../src/sidecar/redis/manager/day2.ts';
import type { EventToSend } from '../../../../src/sidecar/redis/manager/events.ts';
import type { PodView } from '../../../../src/sidecar/redis/manager/pods.ts';
import {
  VOLUME_CHECK_INTERVAL_MS,
  VOLUME_SETTLED_INTERVAL_MS,
  type VolumeExpander,
} from '../../../../src/sidecar/redis/manager/volumes.ts';
import { facts, input, ip, online, pod } from '../decide/fixtures.ts';

const master = (updated: boolean): PodObservation => ({
  ...pod({
    name: 'master-0',
    label: 'master',
    link: 'up',
    facts: facts({ role: 'master', offset: 100, replicas: online(ip(11), ip(12)) }),
  }),
  updated,
});
const replica = (n: number, updated: boolean): PodObservation => ({
  ...pod({ name: `replica-${n}`, label: 'replica', link: 'up', facts: facts({ of: ip(1), offset: 100 }) }),
  updated,
});
const view = (p: PodObservation, deleting = false): PodView => ({
  uid: `uid-${p.name}`,
  name: p.name,
  namespace: 'default',
  resourceVersion: '1',
  component: p.component,
  ip: p.ip,
  phase: 'Running',
  ready: true,
  deleting,
  redisContainerGone: false,
  labels: {},
  annotations: {},
});
const SPEC = (() => {
  const v = validateSpec('cache', {});
  if (!v.ok) throw new Error('the default spec is valid');
  return v.spec;
})();
const keep: MasterDecision = { kind: 'keep', master: 'cache-master-0', reason: 'healthy' };

function harness(leader = true, clock = { now: 0 }) {
  const deleted: string[] = [];
  const patched: Array<Record<string, string | null>> = [];
  const events: EventToSend[] = [];
  const day2 = new Day2({
    ref: { namespace: 'default', name: 'cache', uid: 'u1' },
    log: pino({ level: 'silent' }),
    kube: {
      deletePod: async (_ns, name) => void deleted.push(name),
      patchRedisAnnotations: async (_ref, a) => void patched.push(a),
    },
    statefulSets: () => [] as V1StatefulSet[],
    isLeader: () => leader,
    event: (e) => events.push(e),
    now: () => clock.now,
    stallAfterMs: 60_000,
  });
  return { day2, deleted, patched, events };
}

test('a rollout deletes one pod, then waits until the informer shows it going before the next', async () => {
  const h = harness();
  h.day2.update({}, SPEC);
  const pods = [master(false), replica(0, false), replica(1, false)];
  const views = pods.map((p) => view(p));
  assert.equal(await h.day2.steady(input(pods), keep, views), null);
  assert.deepEqual(h.deleted, ['cache-replica-1']);
  // The informer has not caught up: the same pods, nobody deleting. No second deletion.
  await h.day2.steady(input(pods), keep, views);
  assert.deepEqual(h.deleted, ['cache-replica-1']);
  // Now it shows the pod deleting, then gone and recreated (updated, new uid): the next one goes.
  const going = [pods[0]!, pods[1]!, { ...pods[2]!, deleting: true }];
  await h.day2.steady(input(going), keep, [views[0]!, views[1]!, view(pods[2]!, true)]);
  assert.deepEqual(h.deleted, ['cache-replica-1']);
  const after = [master(false), replica(0, false), replica(1, true)];
  await h.day2.steady(input(after), keep, [
    ...after.slice(0, 2).map((p) => view(p)),
    { ...view(after[2]!), uid: 'uid-new' },
  ]);
  assert.deepEqual(h.deleted, ['cache-replica-1', 'cache-replica-0']);
  assert.equal(h.events.filter((e) => e.reason === 'RolloutStep').length, 2);
});

test('nothing happens while hibernating, or for a standby', async () => {
  const pods = [master(false), replica(0, false), replica(1, false)];
  const hibernating = harness();
  hibernating.day2.update({}, { ...SPEC, hibernate: true });
  await hibernating.day2.steady(
    input(pods),
    keep,
    pods.map((p) => view(p)),
  );
  const standby = harness(false);
  standby.day2.update({}, SPEC);
  await standby.day2.steady(
    input(pods),
    keep,
    pods.map((p) => view(p)),
  );
  assert.deepEqual([hibernating.deleted, standby.deleted], [[], []]);
});

test('a switchover request is handed to the worker, then recorded once as Done with an Event', async () => {
  const h = harness();
  h.day2.update({ [SWITCHOVER_ANNOTATION]: 'cache-replica-0' }, SPEC);
  const pods = [master(true), replica(0, true), replica(1, true)];
  assert.equal(
    await h.day2.steady(
      input(pods),
      keep,
      pods.map((p) => view(p)),
    ),
    'cache-replica-0',
  );
  const moved: MasterDecision = { kind: 'keep', master: 'cache-replica-0', reason: 'healthy' };
  assert.equal(
    await h.day2.steady(
      input(pods),
      moved,
      pods.map((p) => view(p)),
    ),
    null,
  );
  assert.equal(h.patched.length, 1);
  assert.match(
    String(h.patched[0]![SWITCHOVER_STATUS_ANNOTATION]),
    /^cache-replica-0: Done: cache-replica-0 is master$/,
  );
  // Seen again before the informer shows the record: still nothing.
  assert.equal(
    await h.day2.steady(
      input(pods),
      moved,
      pods.map((p) => view(p)),
    ),
    null,
  );
  assert.equal(h.patched.length, 1);
  assert.deepEqual(
    h.events.map((e) => e.reason),
    ['SwitchoverDone'],
  );
});

test('handledRequest reads the request back from the record', () => {
  assert.equal(handledRequest('any@2: Done: x is master'), 'any@2');
  assert.equal(handledRequest(undefined), null);
});

test('a rollout waiting on the same pod past stallAfterMs is told once with a RolloutStalled Warning; it stays stopped', async () => {
  const clock = { now: 0 };
  const h = harness(true, clock);
  h.day2.update({}, SPEC);
  // cache-replica-1 was replaced and its new pod never becomes Ready.
  const stuck = { ...replica(1, true), ready: false };
  const pods = [master(false), replica(0, false), stuck];
  for (const at of [0, 30_000, 60_000, 90_000]) {
    clock.now = at;
    await h.day2.steady(
      input(pods),
      keep,
      pods.map((p) => view(p)),
    );
  }
  assert.deepEqual(h.deleted, [], 'no other pod is taken down');
  const stalled = h.events.filter((e) => e.reason === 'RolloutStalled');
  assert.equal(stalled.length, 1);
  assert.match(stalled[0]!.message, /waited 60 s: .*cache-replica-1 is not Ready/);
});

test("a pod's revision counts only once both StatefulSets show the same template and their controller caught up", async (t) => {
  const set = (name: string, component: string, rev: string, hash: string, observed = 2): V1StatefulSet => ({
    metadata: { name, namespace: 'default', generation: 2 },
    spec: {
      selector: {},
      serviceName: 'x',
      template: {
        metadata: {
          labels: { 'app.kubernetes.io/component': component },
          annotations: { 'redis.example.com/config-hash': hash },
        },
      },
    },
    status: { replicas: 1, observedGeneration: observed, updateRevision: rev },
  });
  const podOf = (component: 'master-set' | 'replica-set', rev: string): PodView => ({
    ...view(component === 'master-set' ? master(true) : replica(0, true)),
    component,
    labels: { 'controller-revision-hash': rev },
  });
  const cases: Array<{ name: string; sets: V1StatefulSet[]; pod: PodView; want: boolean | null }> = [
    {
      name: 'both sets agree, pod current',
      sets: [set('cache-master', 'master-set', 'm2', 'h2'), set('cache-replica', 'replica-set', 'r2', 'h2')],
      pod: podOf('replica-set', 'r2'),
      want: true,
    },
    {
      name: 'both sets agree, pod stale',
      sets: [set('cache-master', 'master-set', 'm2', 'h2'), set('cache-replica', 'replica-set', 'r2', 'h2')],
      pod: podOf('master-set', 'm1'),
      want: false,
    },
    {
      name: 'the informer shows only the master set changed yet: unknown, not "only the master is stale"',
      sets: [set('cache-master', 'master-set', 'm2', 'h2'), set('cache-replica', 'replica-set', 'r1', 'h1')],
      pod: podOf('master-set', 'm1'),
      want: null,
    },
    {
      name: 'controller not caught up',
      sets: [set('cache-master', 'master-set', 'm2', 'h2', 1), set('cache-replica', 'replica-set', 'r2', 'h2')],
      pod: podOf('master-set', 'm1'),
      want: null,
    },
    {
      name: 'a set missing (being recreated)',
      sets: [set('cache-master', 'master-set', 'm2', 'h2')],
      pod: podOf('master-set', 'm2'),
      want: null,
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const day2 = new Day2({
        ref: { namespace: 'default', name: 'cache' },
        log: pino({ level: 'silent' }),
        kube: {},
        statefulSets: () => c.sets,
        isLeader: () => true,
        event: () => {},
        now: () => 0,
        stallAfterMs: 60_000,
      });
      assert.equal(day2.updated(c.pod), c.want);
    });
  }
});

test('volume passes: every VOLUME_CHECK_INTERVAL_MS while one finds work, every VOLUME_SETTLED_INTERVAL_MS once settled, at once after a size change', async () => {
  const clock = { now: 0 };
  const passes: number[] = [];
  let busy = true;
  const volumes = { reconcile: async () => (passes.push(clock.now), busy) } as unknown as VolumeExpander;
  const day2 = new Day2({
    ref: { namespace: 'default', name: 'cache', uid: 'u1' },
    log: pino({ level: 'silent' }),
    kube: { deletePod: async () => undefined, patchRedisAnnotations: async () => undefined },
    statefulSets: () => [] as V1StatefulSet[],
    isLeader: () => true,
    event: () => undefined,
    now: () => clock.now,
    stallAfterMs: 60_000,
    volumes,
  });
  day2.update({}, SPEC);
  const pods = [master(true), replica(0, true), replica(1, true)];
  const round = async (at: number) => {
    clock.now = at;
    await day2.steady(
      input(pods),
      keep,
      pods.map((p) => view(p)),
    );
    await new Promise((r) => setImmediate(r));
  };
  await round(0); // busy: the next one is due 5 s later
  await round(VOLUME_CHECK_INTERVAL_MS - 1);
  busy = false;
  await round(VOLUME_CHECK_INTERVAL_MS); // finds nothing: settled
  await round(VOLUME_CHECK_INTERVAL_MS * 3);
  await round(VOLUME_CHECK_INTERVAL_MS + VOLUME_SETTLED_INTERVAL_MS);
  const grown = validateSpec('cache', { persistence: { size: '20Gi' } });
  assert.ok(grown.ok);
  day2.update({}, grown.spec);
  await round(VOLUME_CHECK_INTERVAL_MS + VOLUME_SETTLED_INTERVAL_MS + 1);
  assert.deepEqual(passes, [
    0,
    VOLUME_CHECK_INTERVAL_MS,
    VOLUME_CHECK_INTERVAL_MS + VOLUME_SETTLED_INTERVAL_MS,
    VOLUME_CHECK_INTERVAL_MS + VOLUME_SETTLED_INTERVAL_MS + 1,
  ]);
});
