// The worker's bootstrap companion (manager/bootstrap.ts) with a recording stand-in for the API and
// a clock the test moves: claims listed only while no master is labelled and at most once per
// CLAIMS_EVERY_MS, Events once per change of what is waited for, the status record written once per
// change, the bootstrap-without annotation removed once a master is labelled. No Redis, no server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { BootstrapWatch, CLAIMS_EVERY_MS, statusRecord } from '../../../../src/sidecar/redis/manager/bootstrap.ts';
import type { EventToSend } from '../../../../src/sidecar/redis/manager/events.ts';
import type { DecideInput, MasterDecision } from '../../../../src/sidecar/redis/decide/types.ts';
import { facts, input, pod } from '../decide/fixtures.ts';

function rig(leader = true) {
  let now = 0;
  const events: EventToSend[] = [];
  const lists: number[] = [];
  const patches: Array<Record<string, string | null>> = [];
  const pending: Array<Promise<unknown>> = [];
  const claims: V1PersistentVolumeClaim[] = [
    { metadata: { name: 'data-cache-replica-1' }, status: { phase: 'Bound' } },
  ];
  const api = { down: false };
  const watch = new BootstrapWatch({
    ref: { namespace: 'ns', name: 'cache', uid: 'u' },
    log: pino({ level: 'silent' }),
    kube: {
      listRedisClaims: async () => {
        lists.push(now);
        if (api.down) throw new Error('connect ECONNREFUSED');
        return claims;
      },
      patchRedisAnnotations: async (_r, a) => void patches.push(a),
    },
    isLeader: () => leader,
    event: (e) => events.push(e),
    now: () => now,
    track: (p) => pending.push(p),
  });
  return {
    watch,
    api,
    events,
    lists,
    patches,
    settle: () => Promise.all(pending.splice(0)),
    at: (ms: number) => (now = ms),
  };
}

const wait: MasterDecision = { kind: 'wait', master: null, reason: 'r' };
const node = (name: string) => pod({ name, facts: facts({ offset: 100 }) });
/** master-0 and replica-0 answer; replica-1's pod is Pending with a Bound claim (or `r1` instead). */
function world(
  claimsBound: boolean,
  r1 = pod({ name: 'replica-1', ip: null, phase: 'Pending', never: true }),
): DecideInput {
  return {
    ...input([node('master-0'), node('replica-0'), r1], { persistence: true }),
    claims: claimsBound ? [{ name: 'data-cache-replica-1', phase: 'Bound', deleting: false }] : [],
  };
}

test('claims: listed only while no master is labelled, by the leader, at most once per CLAIMS_EVERY_MS; unknown after a failure or between bootstraps', async () => {
  const r = rig();
  assert.equal(await r.watch.claims(false), undefined, 'a master is labelled: not listed');
  assert.deepEqual(r.lists, []);
  assert.deepEqual(await r.watch.claims(true), [{ name: 'data-cache-replica-1', phase: 'Bound', deleting: false }]);
  r.at(CLAIMS_EVERY_MS - 1);
  await r.watch.claims(true);
  assert.deepEqual(r.lists, [0], 'not again within CLAIMS_EVERY_MS');
  r.at(CLAIMS_EVERY_MS);
  await r.watch.claims(true);
  assert.deepEqual(r.lists, [0, CLAIMS_EVERY_MS]);
  // A failed list, or a master labelled in between: unknown again, never an old list.
  r.api.down = true;
  r.at(3 * CLAIMS_EVERY_MS);
  assert.equal(await r.watch.claims(true), undefined);
  r.api.down = false;
  r.at(4 * CLAIMS_EVERY_MS);
  assert.equal((await r.watch.claims(true))?.length, 1);
  assert.equal(await r.watch.claims(false), undefined);
  r.at(4 * CLAIMS_EVERY_MS + 1);
  assert.equal((await r.watch.claims(true))?.length, 1, 'listed afresh at once when a bootstrap may run again');
  assert.equal(r.lists.at(-1), 4 * CLAIMS_EVERY_MS + 1);
  const standby = rig(false);
  assert.equal(await standby.watch.claims(true), undefined);
  assert.deepEqual(standby.lists, [], 'a standby lists nothing');
});

test('BootstrapWaiting: one Event and one status record per change of what is waited for', async () => {
  const r = rig();
  for (let i = 0; i < 5; i++) {
    r.watch.report(world(true), wait);
    await r.settle();
  }
  assert.deepEqual(
    r.events.map((e) => e.reason),
    ['BootstrapWaiting'],
  );
  assert.match(
    r.events[0]!.message,
    /^Bootstrap waiting for pods cache-replica-1 \(volume bound, pod Pending\): .*bootstrap-without=cache-replica-1 \(writes only it held are lost\)$/,
  );
  assert.deepEqual(r.patches, [
    { 'redis.example.com/bootstrap-status': 'Waiting: cache-replica-1 (volume bound, pod Pending)' },
  ]);
  // The informer shows the record: nothing more to write.
  r.watch.update({ 'redis.example.com/bootstrap-status': 'Waiting: cache-replica-1 (volume bound, pod Pending)' });
  r.watch.report(world(true), wait);
  await r.settle();
  assert.equal(r.patches.length, 1);
  // The pod starts and is LOADING: a change, told once.
  const loading = world(true, pod({ name: 'replica-1', facts: facts(), error: 'loading' }));
  r.watch.report(loading, wait);
  r.watch.report(loading, wait);
  await r.settle();
  assert.deepEqual(
    r.events.map((e) => e.reason),
    ['BootstrapWaiting', 'BootstrapWaiting'],
  );
  assert.match(r.events[1]!.message, /cache-replica-1 \(loading its data set\)/);
  // Hibernating on purpose: nothing worth telling.
  const asleep = rig();
  asleep.watch.report({ ...world(true), spec: { ...world(true).spec, hibernate: true } }, wait);
  assert.deepEqual(asleep.events, []);
  // Only pods not probed yet: nothing worth telling.
  const fresh = rig();
  fresh.watch.report(world(true, pod({ name: 'replica-1', never: true })), wait);
  assert.deepEqual(fresh.events, []);
});

test('bootstrap-without: gave up told once, the annotation removed once a master is labelled, invalid entries counted not echoed', async () => {
  const r = rig();
  r.watch.update({ 'redis.example.com/bootstrap-without': 'cache-replica-1,evil\u0007name' });
  assert.deepEqual(r.watch.without, ['cache-replica-1']);
  const i = { ...world(true), bootstrapWithout: r.watch.without };
  const promote: MasterDecision = {
    kind: 'promote',
    cause: 'bootstrap',
    master: 'cache-replica-0',
    previous: null,
    reason: 'r',
  };
  r.watch.report(i, promote);
  r.watch.report(i, promote);
  await r.settle();
  assert.deepEqual(
    r.events.map((e) => e.reason),
    ['BootstrapWithoutInvalid', 'BootstrapGaveUp'],
  );
  assert.match(r.events[0]!.message, /^1 entry of redis\.example\.com\/bootstrap-without ignored/);
  assert.equal(r.events[0]!.message.includes('evil'), false);
  assert.match(
    r.events[1]!.message,
    /bootstrap chose cache-replica-0 without cache-replica-1 \(volume bound, pod Pending\)/,
  );

  // The master label landed: the annotation goes, told once.
  const labelled = {
    ...i,
    pods: i.pods.map((p) => (p.name === 'cache-replica-0' ? { ...p, roleLabel: 'master' } : p)),
  };
  const keep: MasterDecision = { kind: 'keep', master: 'cache-replica-0', reason: 'r' };
  r.watch.report(labelled, keep);
  r.watch.report(labelled, keep);
  await r.settle();
  assert.deepEqual(r.patches.at(-1), {
    'redis.example.com/bootstrap-without': null,
    'redis.example.com/bootstrap-status': null,
  });
  assert.equal(r.patches.filter((p) => 'redis.example.com/bootstrap-without' in p).length, 1);
  assert.equal(r.events.at(-1)?.reason, 'BootstrapWithoutRemoved');
  // Someone sets it again while a master exists: removed again (it would arm a later restart).
  r.watch.update({ 'redis.example.com/bootstrap-without': 'cache-replica-1' });
  r.watch.report(labelled, keep);
  await r.settle();
  assert.equal(r.patches.filter((p) => 'redis.example.com/bootstrap-without' in p).length, 2);
});

test('the status record stays within what the hook shows (2000 characters): a long list ends with "and N more"', () => {
  const many = Array.from({ length: 80 }, (_, i) => ({
    pod: `a-long-redis-name-replica-${i}`,
    why: 'volume bound, pod Pending',
  }));
  const record = statusRecord(many);
  assert.ok(record.length <= 1900, `${record.length}`);
  assert.match(record, /^Waiting: a-long-redis-name-replica-0 \(volume bound, pod Pending\), .*, and \d+ more$/);
  assert.equal(
    statusRecord(many.slice(0, 2)),
    'Waiting: a-long-redis-name-replica-0 (volume bound, pod Pending), a-long-redis-name-replica-1 (volume bound, pod Pending)',
  );
});
