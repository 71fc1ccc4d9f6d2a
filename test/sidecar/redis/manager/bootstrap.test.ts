// Loopback octet: 127.0.20.x (the real manager: bootstrap, generated auth Secret, steady-state
// quiet, re-pointing after a replica or the master changed address, choosing by data when no pod
// is labelled master: the master's pod recreated while the operator was away, a full restart
// from RDB).
// The Kubernetes side is a real kube-apiserver; Redis is real redis-server processes whose pods
// are Pod objects there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LINK_ANNOTATION, ROLE_LABEL, ROLE_SINCE_ANNOTATION } from '../../../../src/api/labels.ts';
import type { Step } from '../../../../src/sidecar/redis/decide/index.ts';
import type { RedisHooks } from '../../../../src/sidecar/redis/manager/index.ts';
import { addr, startRedis, TEST_PASSWORD } from '../../../support/redis-server.ts';
import { Cluster, NS, redisCall, redisClient, replicationOf, sleep, until, missingKeys } from './harness.ts';

const N = 20;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

async function write(ip: string, n: number, prefix: string, password = TEST_PASSWORD): Promise<string[]> {
  const c = redisClient(ip, password);
  await c.connect();
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const k = `${prefix}${i}`;
    await c.set(k, k);
    keys.push(k);
  }
  await c.call('WAIT', '2', '2000');
  c.disconnect();
  return keys;
}

/** Hooks recording every step the manager carried out, with the reason it gave. */
function recordSteps(): { steps: Step[]; hooks: RedisHooks } {
  const steps: Step[] = [];
  const afterStep: RedisHooks['afterStep'] = (_redis, step, ok) => {
    if (ok) steps.push(step);
  };
  return { steps, hooks: { afterStep } };
}

function linkedAll(cluster: Cluster): boolean {
  const r = Object.values(cluster.roles('cache'));
  return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
}

test('bootstrap: generated auth Secret, master-0 promoted, replicas re-pointed, labels/annotations/events once, then quiet', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250) });
  await until('leader', () => a.elector.isLeader());
  const redis = await cluster.createRedis('cache');

  // No spec.auth: the leader creates <name>-auth with a random password, owned by the Redis.
  const secret = await until('the generated secret', () => cluster.store.get('secrets', NS, 'cache-auth'));
  const owner = secret.metadata.ownerReferences?.[0];
  assert.equal(owner?.uid, redis.metadata.uid);
  assert.equal(owner?.kind, 'Redis');
  assert.equal(owner?.controller, true);
  const password = Buffer.from(
    (secret as unknown as { data: { password: string } }).data.password,
    'base64',
  ).toString();
  assert.match(password, /^[0-9a-f]{64}$/);

  // The pods start with it (the hook's template reads it from the Secret).
  const servers = await Promise.all([1, 2, 3].map((i) => startRedis(t, { ip: addr(N, i), password, extra })));
  await cluster.addPod('cache', 'master-0', servers[0]!.ip);
  await cluster.addPod('cache', 'replica-0', servers[1]!.ip);
  await cluster.addPod('cache', 'replica-1', servers[2]!.ip);
  const masters = cluster.watchMasters('cache');

  await until('labels and links', () => {
    const r = cluster.roles('cache');
    return (
      r['cache-master-0'] === 'master/up' &&
      r['cache-replica-0'] === 'replica/up' &&
      r['cache-replica-1'] === 'replica/up'
    );
  });
  for (const s of servers.slice(1)) {
    const c = redisClient(s.ip, password);
    await c.connect();
    const info = String(await c.call('INFO', 'replication'));
    c.disconnect();
    assert.match(info, new RegExp(`master_host:${servers[0]!.ip.replace(/\./g, '\\.')}\\r\\n`));
    assert.match(info, /master_link_status:up/);
  }
  assert.match(
    cluster.pod('cache-master-0')!.metadata.annotations?.[ROLE_SINCE_ANNOTATION] ?? '',
    /^bootstrap at offset \d+$/,
  );

  const events = await until('events', () => {
    const e = cluster.events('cache');
    return (
      e.some((x) => x.reason === 'Bootstrap') && e.filter((x) => x.reason === 'ReplicaRepointed').length === 2 && e
    );
  });
  const boot = events.filter((e) => e.reason === 'Bootstrap');
  assert.equal(boot.length, 1);
  assert.match(
    boot[0]!.message,
    /^cache-master-0 is the master: fresh set \(every node empty\): starting from cache-master-0/,
  );
  assert.equal(boot[0]!.instance, 'sidecar-a');
  assert.deepEqual(
    events
      .filter((e) => e.reason === 'ReplicaRepointed')
      .map((e) => e.message)
      .sort(),
    [
      `cache-replica-0 now replicates from cache-master-0 (${servers[0]!.ip})`,
      `cache-replica-1 now replicates from cache-master-0 (${servers[0]!.ip})`,
    ],
  );

  // Data written to the master reaches both replicas.
  const keys = await write(servers[0]!.ip, 50, 'b', password);
  for (const s of servers.slice(1)) {
    const c = redisClient(s.ip, password);
    await c.connect();
    assert.equal(await c.dbsize(), 50);
    c.disconnect();
  }
  assert.equal(keys.length, 50);

  // Steady state: no label patch, no event, no Redis write, over a few seconds of ticks every 100 ms.
  // It starts once the leader's one engine annotation per pod has landed.
  await until('every pod says the engine its node runs', () => cluster.enginesWritten());
  const from = cluster.api.requests.length;
  const eventsBefore = cluster.events('cache').length;
  const appliedLines = () => a.logs.filter((l) => (JSON.parse(l) as { msg?: string }).msg === 'applied');
  const appliedBefore = appliedLines().length;
  await sleep(3000);
  assert.deepEqual(cluster.podPatches(from), [], 'no pod patch on steady ticks');
  assert.equal(cluster.events('cache').length, eventsBefore, 'no event on steady ticks');
  assert.deepEqual(appliedLines().slice(appliedBefore), [], 'no step of any kind on steady ticks');
  // Fencing is lowered while the replicas cannot acknowledge yet; linked, it is back at the spec value.
  const admin = redisClient(servers[0]!.ip, password);
  await admin.connect();
  assert.deepEqual(await admin.call('CONFIG', 'GET', 'min-replicas-to-write'), ['min-replicas-to-write', '1']);
  admin.disconnect();

  // Metrics of the leader.
  const text = await a.metrics.registry.metrics();
  for (const pod of ['cache-master-0', 'cache-replica-0', 'cache-replica-1']) {
    assert.match(text, new RegExp(`redis_operator_pod_up\\{namespace="${NS}",redis="cache",pod="${pod}"\\} 1`));
    assert.match(text, new RegExp(`redis_operator_pod_link_up\\{namespace="${NS}",redis="cache",pod="${pod}"\\} 1`));
    assert.match(
      text,
      new RegExp(
        `redis_operator_pod_role\\{namespace="${NS}",redis="cache",pod="${pod}"\\} ${pod.includes('master') ? 1 : 0}`,
      ),
    );
  }
  assert.match(
    text,
    /redis_operator_replication_lag_bytes\{namespace="redis-test",redis="cache",pod="cache-replica-0"\} \d+/,
  );
  assert.match(text, /redis_operator_leader 1/);
  assert.match(text, /redis_operator_spec_valid\{namespace="redis-test",redis="cache"\} 1/);
  assert.deepEqual(masters.violations, []);
  assert.equal(masters.maxSeen, 1);
  // Every log line about the Redis names it.
  const lines = a.logs
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['msg'] === 'applied' || l['msg'] === 'decision');
  assert.ok(lines.length > 0);
  for (const l of lines) assert.deepEqual([l['namespace'], l['name']], [NS, 'cache']);
});

test('re-point: a replica following an address where nothing listens, a replica recreated at a new address, the master back at a new address: everyone follows the published master', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  const servers = await Promise.all([11, 12, 13].map((i) => startRedis(t, { ip: addr(N, i), extra })));
  await cluster.addPod('cache', 'master-0', servers[0]!.ip);
  await cluster.addPod('cache', 'replica-0', servers[1]!.ip);
  await cluster.addPod('cache', 'replica-1', servers[2]!.ip);
  const masters = cluster.watchMasters('cache');
  const { steps, hooks } = recordSteps();
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), hooks });
  await until('a linked set', () => linkedAll(cluster));
  const keys = await write(servers[0]!.ip, 100, 'r');

  // 1. Someone (or a stale config) points replica-0 at an address where nothing listens.
  const before = steps.length;
  assert.equal(await redisCall(servers[1]!.ip, 'REPLICAOF', addr(N, 99), '6379'), 'OK');
  const fixed = await until('replica-0 re-pointed at the master', () =>
    steps.slice(before).find((s) => s.kind === 'replicaof' && s.pod === 'cache-replica-0'),
  );
  assert.match(fixed.reason, /replicates from 127\.\d+\.20\.99:6379, not the master's address/);
  await until('replica-0 linked to the master again', async () => {
    const r = await replicationOf(servers[1]!.ip);
    return r['master_host'] === servers[0]!.ip && r['master_link_status'] === 'up';
  });

  // 2. replica-1's pod is recreated with a new IP (same volume, no labels): re-pointed.
  await servers[2]!.restart({ ip: addr(N, 23) });
  await cluster.recreatePod('cache', 'replica-1', addr(N, 23));
  await until('replica-1 re-pointed', async () => {
    const r = await replicationOf(addr(N, 23));
    return r['master_host'] === servers[0]!.ip && r['master_link_status'] === 'up';
  });
  await until('replica-1 labelled', () => cluster.roles('cache')['cache-replica-1'] === 'replica/up');
  assert.deepEqual(await missingKeys(addr(N, 23), keys), [], 'replica-1 has every key after its move');

  // 3. The master's process comes back at a new address (with its RDB, saved just before), and
  //    the API shows the new podIP: nobody may keep following the stale address.
  const oldIp = servers[0]!.ip;
  assert.equal(await redisCall(oldIp, 'SAVE'), 'OK');
  await servers[0]!.restart({ ip: addr(N, 21) });
  await cluster.setPodStatus('cache-master-0', addr(N, 21), true);
  await until('every replica follows the published master at its current address', async () => {
    const ip = cluster.masterIp('cache');
    if (!ip || ip === oldIp) return false;
    const others = [addr(N, 21), servers[1]!.ip, addr(N, 23)].filter((x) => x !== ip);
    for (const o of others) {
      const r = await replicationOf(o);
      if (r['master_host'] !== ip || r['master_link_status'] !== 'up') return false;
    }
    return true;
  });
  await until('links up', () => linkedAll(cluster));
  for (const ip of [addr(N, 21), servers[1]!.ip, addr(N, 23)])
    assert.deepEqual(await missingKeys(ip, keys), [], `${ip} has every key`);
  await cluster.eventsWhen('cache', `a replica told re-pointed away from ${oldIp}`, (e) =>
    e.some((x) => x.reason === 'ReplicaRepointed' && !x.message.includes(oldIp)),
  );
  assert.deepEqual(masters.violations, []);
  const r = cluster.roles('cache');
  assert.equal(Object.values(r).filter((v) => v.startsWith('master/')).length, 1);
  assert.equal(cluster.pod('cache-master-0')!.metadata.annotations?.[LINK_ANNOTATION] !== undefined, true);
  assert.ok(cluster.pod('cache-replica-1')!.metadata.labels?.[ROLE_LABEL]);
  // The master's new address was seen through the pod (not guessed): its track follows the new IP.
  assert.equal(a.manager.worker(NS, 'cache')!.trackOf('cache-master-0')?.ip, addr(N, 21));
});

test("the master's pod recreated at a new address while the operator was away: no pod is labelled master, the node with the most data (a tie: master-0) is chosen, every replica leaves the old address", async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  const servers = await Promise.all([31, 32, 33].map((i) => startRedis(t, { ip: addr(N, i), extra })));
  await cluster.addPods('cache', servers);
  const masters = cluster.watchMasters('cache');
  const { steps, hooks } = recordSteps();
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), hooks });
  await until('a linked set', () => linkedAll(cluster));
  const keys = await write(servers[0]!.ip, 200, 'm');
  await a.stop();

  // The master's snapshot must hold exactly what the replicas hold: a replication PING sent after
  // it would put them a few bytes ahead, and the tie this test is about would not be one.
  const oldIp = servers[0]!.ip;
  assert.equal(await redisCall(oldIp, 'CONFIG', 'SET', 'repl-ping-replica-period', '3600'), 'OK');
  assert.equal(await redisCall(oldIp, 'SAVE'), 'OK');
  await servers[0]!.restart({ ip: addr(N, 34) });
  await cluster.recreatePod('cache', 'master-0', addr(N, 34));
  assert.deepEqual(cluster.masters('cache'), []);

  const before = steps.length;
  await cluster.startInstance({ id: 'sidecar-b', sourceIp: addr(N, 251), hooks });
  await until('a linked set again', () => linkedAll(cluster));
  const promote = steps.slice(before).find((s) => s.kind === 'promote');
  assert.equal(promote?.pod, 'cache-master-0', promote?.reason);
  assert.match(promote.reason, /has the most data/);
  const repoints = steps.slice(before).filter((s) => s.kind === 'replicaof');
  assert.deepEqual(repoints.map((s) => s.pod).sort(), ['cache-replica-0', 'cache-replica-1']);
  for (const s of repoints) assert.match(s.reason, new RegExp(`replicates from ${oldIp.replace(/\./g, '\\.')}:6379`));
  assert.equal(cluster.masterIp('cache'), addr(N, 34));
  for (const ip of [addr(N, 34), servers[1]!.ip, servers[2]!.ip])
    assert.deepEqual(await missingKeys(ip, keys), [], `${ip} has every key`);
  assert.deepEqual(masters.violations, []);
});

test('full restart from RDB: the node with the most data becomes master, nobody is wiped', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache', { persistence: { enableRdb: true } });
  const servers = await Promise.all([41, 42, 43].map((i) => startRedis(t, { ip: addr(N, i), extra })));
  const names = ['master-0', 'replica-0', 'replica-1'];
  await cluster.addPods('cache', servers);
  const masters = cluster.watchMasters('cache');
  const { steps, hooks } = recordSteps();
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), hooks });
  await until('a linked set', () => linkedAll(cluster));
  const early = await write(servers[0]!.ip, 50, 'e');
  // Snapshot master-0 and replica-0 now; replica-1 only after more writes: it has the most data.
  for (const s of servers.slice(0, 2)) assert.equal(await redisCall(s.ip, 'SAVE'), 'OK');
  const late = await write(servers[0]!.ip, 50, 'l');
  assert.equal(await redisCall(servers[2]!.ip, 'SAVE'), 'OK');

  // Everything goes down at once, the operator with it; the pods come back (new IPs, no labels),
  // each loading its RDB file, and then an operator that never saw the set before.
  await a.crash();
  for (const s of servers) await s.kill();
  for (const [i, s] of servers.entries()) {
    await s.restart({ ip: addr(N, 44 + i) });
    await cluster.recreatePod('cache', names[i]!, s.ip);
  }
  const before = steps.length;
  await cluster.startInstance({ id: 'sidecar-b', sourceIp: addr(N, 251), hooks });
  await until('a linked set again', () => linkedAll(cluster), 20_000);
  const promote = steps.slice(before).find((s) => s.kind === 'promote');
  assert.equal(promote?.pod, 'cache-replica-1', promote?.reason);
  assert.match(promote.reason, /most data/);
  assert.deepEqual(cluster.masters('cache'), ['cache-replica-1']);
  const boot = (
    await cluster.eventsWhen('cache', 'the bootstrap told', (e) => e.some((x) => x.reason === 'Bootstrap'))
  ).filter((e) => e.reason === 'Bootstrap');
  assert.match(
    boot.at(-1)?.message ?? '',
    /^cache-replica-1 is the master: no master: cache-replica-1 .* has the most data/,
  );
  for (const s of servers) assert.deepEqual(await missingKeys(s.ip, [...early, ...late]), [], `${s.ip} has every key`);
  assert.deepEqual(masters.violations, []);
  t.diagnostic(
    `after a full restart from RDB: ${await redisCall(servers[0]!.ip, 'DBSIZE')} keys on master-0, which now follows replica-1`,
  );
});
