// Loopback octet: 127.0.47.x (the real manager bootstrapping after a full restart from RDB, and after
// a wake from hibernation, while the pod with the most data is late: its volume bound but its pod
// Pending, then its Redis LOADING; and the bootstrap-without way out for a pod that never comes back).
// The Kubernetes side is a real kube-apiserver (claims are objects there, Bound by a status write as
// the volume controller would); Redis is real redis-server processes. A LOADING node is made
// deterministic with key-load-delay (a sleep per key while loading) and undone with CONFIG SET,
// which Redis serves while loading; nothing here waits on a timer to decide an outcome. The
// manager runs with maxPartialWaitMs 0, so a bootstrap that still had a timer would choose at once.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import {
  BOOTSTRAP_STATUS_ANNOTATION,
  BOOTSTRAP_WITHOUT_ANNOTATION,
  podSelectorLabels,
} from '../../../../src/api/labels.ts';
import type { Step } from '../../../../src/sidecar/redis/decide/index.ts';
import type { RedisHooks } from '../../../../src/sidecar/redis/manager/index.ts';
import { addr, startRedis, type RedisServer } from '../../../support/redis-server.ts';
import { Cluster, NS, redisCall, redisClient, until, missingKeys, type Instance } from './harness.ts';

const N = 47;
Cluster.shareApiServer();
// Events served every 1 KiB read while loading: a node slowed by key-load-delay (20 ms a key, 60 s
// for 3000 keys) still answers INFO within a probe's timeout, and stays LOADING until CONFIG SET.
// Uncompressed, so every key is 2 KiB on disk too.
const extra = {
  'repl-diskless-sync-delay': '0',
  'loading-process-events-interval-bytes': '1024',
  rdbcompression: 'no',
};
const NAMES = ['master-0', 'replica-0', 'replica-1'];

/**
 * `n` keys of 2 KiB each (a delayed load serves clients between keys), each its own value as
 * missingKeys expects, then WAIT for both replicas.
 */
async function write(ip: string, n: number, prefix: string): Promise<string[]> {
  const c = redisClient(ip, undefined, 10_000);
  await c.connect();
  const keys = Array.from({ length: n }, (_, i) => `${prefix}${i}:`.padEnd(1024, '.'));
  const p = c.pipeline();
  for (const k of keys) p.set(k, k);
  await p.exec();
  await c.call('WAIT', '2', '5000');
  c.disconnect();
  return keys;
}

function recordSteps(): { steps: Step[]; hooks: RedisHooks } {
  const steps: Step[] = [];
  return { steps, hooks: { afterStep: (_r, step, ok) => void (ok && steps.push(step)) } };
}

async function claim(cluster: Cluster, pod: string, phase: 'Bound' | 'Pending'): Promise<void> {
  await cluster.store.create('persistentvolumeclaims', {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: `data-cache-${pod}`, namespace: NS, labels: podSelectorLabels('cache') },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    status: { phase },
  });
}

const annotations = (cluster: Cluster) => cluster.store.get('redises', NS, 'cache')?.metadata.annotations ?? {};

/**
 * A linked set with RDB on and a Bound claim per pod; `early` keys snapshotted by master-0 and
 * replica-0, `late` keys only by replica-1 (it has the most data). Then everything goes down, the
 * operator with it, and master-0 and replica-0 come back at new addresses while replica-1's pod is
 * Pending (its volume bound, not attached yet). Returns the servers and the keys.
 */
async function fullRestartWithReplica1Late(t: TestContext, cluster: Cluster, base: number) {
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache', { persistence: { enableRdb: true } });
  for (const n of NAMES) await claim(cluster, n, 'Bound');
  const servers = await Promise.all([1, 2, 3].map((i) => startRedis(t, { ip: addr(N, base + i), extra })));
  await cluster.addPods('cache', servers);
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250) });
  await until('a linked set', () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  });
  const master = cluster.masterIp('cache')!;
  const early = await write(master, 3000, 'e');
  for (const s of servers.slice(0, 2)) assert.equal(await redisCall(s.ip, 'SAVE'), 'OK');
  const late = await write(master, 20, 'l');
  assert.equal(await redisCall(servers[2]!.ip, 'SAVE'), 'OK');
  await a.crash();
  for (const s of servers) await s.kill();
  for (const [i, s] of servers.slice(0, 2).entries()) {
    await s.restart({ ip: addr(N, base + 4 + i) });
    await cluster.recreatePod('cache', NAMES[i]!, s.ip);
  }
  await cluster.recreatePod('cache', 'replica-1', null);
  return { servers, early, late };
}

/**
 * Until the BootstrapWaiting Event says it waits for exactly `what`; a master chosen meanwhile
 * (a bootstrap that gave up on the pod) fails at once, naming whom it chose.
 */
function waitingFor(cluster: Cluster, what: string): Promise<unknown> {
  return until(`the bootstrap waiting for ${what}`, () => {
    const chosen = cluster.masters('cache');
    if (chosen.length > 0)
      assert.fail(`${chosen.join(', ')} was made master while the bootstrap should wait for ${what}`);
    return cluster
      .events('cache')
      .some((x) => x.reason === 'BootstrapWaiting' && x.message.startsWith(`Bootstrap waiting for pods ${what}:`));
  });
}

test('full restart: the pod with the most data is waited for while its volume is bound and its pod Pending, then while it is LOADING, and becomes master with its newest writes', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  const { servers, early, late } = await fullRestartWithReplica1Late(t, cluster, 0);
  const masters = cluster.watchMasters('cache');
  const { steps, hooks } = recordSteps();
  const b: Instance = await cluster.startInstance({
    id: 'sidecar-b',
    sourceIp: addr(N, 251),
    hooks,
    timing: { maxPartialWaitMs: 0 },
  });

  // 1. Its volume is bound and its pod Pending: waited for, and said so.
  await waitingFor(cluster, 'cache-replica-1 (volume bound, pod Pending)');
  await until(
    'the wait recorded on the Redis',
    () => annotations(cluster)[BOOTSTRAP_STATUS_ANNOTATION] === 'Waiting: cache-replica-1 (volume bound, pod Pending)',
  );
  assert.deepEqual(cluster.masters('cache'), [], 'no master while a pod with a bound volume is not up');

  // 2. Its Redis starts and stays LOADING (a sleep per key) until the test lets it finish.
  const late1: RedisServer = servers[2]!;
  await late1.restart({ ip: addr(N, 6), waitFor: 'accept', extra: { 'key-load-delay': '20000' } });
  await cluster.setPodStatus('cache-replica-1', late1.ip, false);
  await waitingFor(cluster, 'cache-replica-1 (loading its data set)');
  assert.deepEqual(cluster.masters('cache'), [], 'no master while the pod with the most data is loading');
  assert.equal(steps.filter((s) => s.kind === 'promote').length, 0);
  assert.equal(b.manager.worker(NS, 'cache')!.trackOf('cache-replica-1')?.ip, late1.ip);

  // 3. It finishes loading: it has the most data and becomes master; nobody loses a key.
  assert.equal(await redisCall(late1.ip, 'CONFIG', 'SET', 'key-load-delay', '0'), 'OK');
  await until(
    'a linked set again',
    () => {
      const r = Object.values(cluster.roles('cache'));
      return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
    },
    30_000,
  );
  const promote = steps.find((s) => s.kind === 'promote');
  assert.equal(promote?.pod, 'cache-replica-1', promote?.reason);
  assert.match(promote.reason, /cache-replica-1 .* has the most data/);
  for (const ip of [servers[0]!.ip, servers[1]!.ip, late1.ip])
    assert.deepEqual(await missingKeys(ip, [...early, ...late]), [], `${ip} has every key`);
  await until('the wait record removed', () => annotations(cluster)[BOOTSTRAP_STATUS_ANNOTATION] === undefined);
  assert.deepEqual(masters.violations, []);
});

test('bootstrap-without: a pod gone for good is given up on only when named, with a Warning, and the annotation is removed once a master is labelled', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  const { servers, early } = await fullRestartWithReplica1Late(t, cluster, 10);
  const { steps, hooks } = recordSteps();
  await cluster.startInstance({ id: 'sidecar-b', sourceIp: addr(N, 251), hooks, timing: { maxPartialWaitMs: 0 } });
  await waitingFor(cluster, 'cache-replica-1 (volume bound, pod Pending)');
  const waiting = cluster
    .events('cache')
    .find(
      (e) =>
        e.reason === 'BootstrapWaiting' &&
        e.message.startsWith('Bootstrap waiting for pods cache-replica-1 (volume bound'),
    );
  assert.match(
    waiting?.message ?? '',
    /kubectl annotate redis cache redis\.example\.com\/bootstrap-without=cache-replica-1 \(writes only it held are lost\)/,
  );

  // Naming another pod (and an entry that is no pod name of this Redis) releases nothing.
  await cluster.store.patch(
    'redises',
    NS,
    'cache',
    { metadata: { annotations: { [BOOTSTRAP_WITHOUT_ANNOTATION]: 'cache-replica-0,other-replica-1' } } },
    { type: 'merge' },
  );
  await cluster.eventsWhen('cache', 'the invalid entry told', (e) =>
    e.some((x) => x.reason === 'BootstrapWithoutInvalid' && /^1 entry of/.test(x.message)),
  );
  assert.deepEqual(cluster.masters('cache'), []);
  assert.equal(
    JSON.stringify(cluster.events('cache')).includes('other-replica-1'),
    false,
    'an invalid entry is never echoed',
  );

  await cluster.store.patch(
    'redises',
    NS,
    'cache',
    { metadata: { annotations: { [BOOTSTRAP_WITHOUT_ANNOTATION]: 'cache-replica-1' } } },
    { type: 'merge' },
  );
  const events = await cluster.eventsWhen('cache', 'given up and removed', (e) =>
    ['BootstrapGaveUp', 'Bootstrap', 'BootstrapWithoutRemoved'].every((r) => e.some((x) => x.reason === r)),
  );
  const gaveUp = events.find((e) => e.reason === 'BootstrapGaveUp')!;
  assert.equal(gaveUp.type, 'Warning');
  assert.match(
    gaveUp.message,
    /without cache-replica-1 \(volume bound, pod Pending\), as redis\.example\.com\/bootstrap-without asks: writes only they held are lost/,
  );
  const promote = steps.find((s) => s.kind === 'promote');
  assert.ok(promote && ['cache-master-0', 'cache-replica-0'].includes(promote.pod), promote?.reason);
  assert.match(promote.reason, /gave up on cache-replica-1/);
  await until('the annotations removed', () => {
    const a = annotations(cluster);
    return a[BOOTSTRAP_WITHOUT_ANNOTATION] === undefined && a[BOOTSTRAP_STATUS_ANNOTATION] === undefined;
  });
  for (const s of servers.slice(0, 2))
    assert.deepEqual(await missingKeys(s.ip, early), [], `${s.ip} has every early key`);
});

test('wake from hibernation, the operator running throughout: quiet while asleep, then the pod with the most data, back last, becomes master', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache', { persistence: { enableRdb: true } });
  for (const n of NAMES) await claim(cluster, n, 'Bound');
  const servers = await Promise.all([21, 22, 23].map((i) => startRedis(t, { ip: addr(N, i), extra })));
  await cluster.addPods('cache', servers);
  const { steps, hooks } = recordSteps();
  await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), hooks, timing: { maxPartialWaitMs: 0 } });
  await until('a linked set', () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  });
  const master = cluster.masterIp('cache')!;
  const early = await write(master, 200, 'e');
  for (const s of servers.slice(0, 2)) assert.equal(await redisCall(s.ip, 'SAVE'), 'OK');
  const late = await write(master, 20, 'l');
  assert.equal(await redisCall(servers[2]!.ip, 'SAVE'), 'OK');

  // Hibernate: the StatefulSets go to zero; the processes stop (replicas first, so no replica is
  // left to fail over to) and the pods go, the claims stay.
  const asleepFrom = cluster.events('cache').length;
  await cluster.store.patch('redises', NS, 'cache', { spec: { hibernate: true } }, { type: 'merge' });
  for (const s of [servers[1]!, servers[2]!, servers[0]!]) await s.kill();
  for (const n of NAMES) await cluster.store.delete('pods', NS, `cache-${n}`);
  const promotesBefore = steps.filter((s) => s.kind === 'promote').length;

  // Wake: master-0 and replica-0 first, replica-1 (the most data) still Pending.
  await cluster.store.patch('redises', NS, 'cache', { spec: { hibernate: false } }, { type: 'merge' });
  const awakeFrom = cluster.events('cache').length;
  for (const [i, s] of servers.slice(0, 2).entries()) {
    await s.restart({ ip: addr(N, 24 + i) });
    await cluster.addPod('cache', NAMES[i]!, s.ip);
  }
  await cluster.addPod('cache', 'replica-1', null);
  await waitingFor(cluster, 'cache-replica-1 (volume bound, pod Pending)');
  assert.deepEqual(
    cluster
      .events('cache')
      .slice(asleepFrom, awakeFrom)
      .filter((e) => e.reason.startsWith('Bootstrap')),
    [],
    'nothing told while asleep',
  );

  await servers[2]!.restart({ ip: addr(N, 26) });
  await cluster.setPodStatus('cache-replica-1', servers[2]!.ip, false);
  await until('a linked set again', () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  });
  const promote = steps.filter((s) => s.kind === 'promote')[promotesBefore];
  assert.equal(promote?.pod, 'cache-replica-1', promote?.reason);
  for (const s of servers) assert.deepEqual(await missingKeys(s.ip, [...early, ...late]), [], `${s.ip} has every key`);
});
