// Loopback octet: 127.0.28.x (the real manager applying spec.config's runtime-managed directives:
// a change reaches every node with CONFIG SET and no restart, a restarted node gets it as it
// joins, a removal resets the Redis default, a value Redis refuses is a StepFailed and nothing
// else; the rounds in between are quiet).
// The Kubernetes side is a real kube-apiserver; Redis is real redis-server processes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addr, startRedis, type RedisServer } from '../../../support/redis-server.ts';
import { Cluster, NS, redisCall, sleep, until } from './harness.ts';

const N = 28;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

async function configOf(ip: string, name: string): Promise<string> {
  const reply = await redisCall(ip, 'CONFIG', 'GET', name);
  return (JSON.parse(reply) as string[])[1] ?? '';
}

async function runId(ip: string): Promise<string> {
  return /run_id:([0-9a-f]+)/.exec(await redisCall(ip, 'INFO', 'server'))?.[1] ?? '';
}

async function everyNode(servers: RedisServer[], name: string, value: string): Promise<boolean> {
  const values = await Promise.all(servers.map((s) => configOf(s.ip, name)));
  return values.every((v) => v === value);
}

async function setConfig(cluster: Cluster, config: Record<string, string> | null): Promise<void> {
  // A merge patch replaces the whole map only when it is null first: clear, then set.
  await cluster.store.patch('redises', NS, 'cache', { spec: { config: null } }, { type: 'merge' });
  if (config) await cluster.store.patch('redises', NS, 'cache', { spec: { config } }, { type: 'merge' });
}

test('dynamic config: applied to every node without a restart, to a restarted node as it joins, reset on removal; a refused value is a StepFailed', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  const servers = await Promise.all([1, 2, 3].map((i) => startRedis(t, { ip: addr(N, i), extra })));
  await cluster.addPods('cache', servers);
  const masters = cluster.watchMasters('cache');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250) });
  const linked = () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  };
  await until('a linked set', linked);
  assert.equal(await everyNode(servers, 'maxmemory-policy', 'noeviction'), true);
  const before = await Promise.all(servers.map((s) => runId(s.ip)));
  const configLines = () =>
    a.logs.filter((l) => l.includes('"msg":"applied"') && l.includes('config cache-') && l.includes('maxmemory-policy'))
      .length;

  // 1. spec.config changes: every node takes it at runtime, none restarts.
  await setConfig(cluster, { 'maxmemory-policy': 'ALLKEYS-LRU', timeout: '300' });
  await until('every node on allkeys-lru', () => everyNode(servers, 'maxmemory-policy', 'allkeys-lru'));
  await until('every node on timeout 300', () => everyNode(servers, 'timeout', '300'));
  assert.deepEqual(await Promise.all(servers.map((s) => runId(s.ip))), before, 'same run_id: no restart');
  assert.equal(linked(), true);

  // ... and then the rounds are quiet: no further CONFIG SET once every node reports the value.
  await sleep(300);
  const applied = configLines();
  await sleep(1500);
  assert.equal(configLines(), applied, 'no config step once the nodes match');

  // 2. A restarted node starts from a redis.conf without it (as an older ConfigMap would): it
  // gets it as it joins.
  await servers[2]!.restart();
  const restarted = await runId(servers[2]!.ip);
  assert.notEqual(restarted, before[2]);
  await until(
    'the restarted node on allkeys-lru',
    async () => (await configOf(servers[2]!.ip, 'maxmemory-policy')) === 'allkeys-lru',
  );
  await until('a linked set again', linked);

  // 3. Removed from spec.config: back to Redis' default, still without a restart.
  await setConfig(cluster, null);
  await until('every node back on noeviction', () => everyNode(servers, 'maxmemory-policy', 'noeviction'));
  await until('every node back on timeout 0', () => everyNode(servers, 'timeout', '0'));
  assert.deepEqual(
    await Promise.all(servers.map((s) => runId(s.ip))),
    [before[0], before[1], restarted],
    'same run_id: no restart',
  );

  // 4. A value Redis refuses: one StepFailed per node (told once), the nodes keep their value and
  // keep running, the rest of the round goes on (the set stays linked).
  const eventsBefore = cluster.events('cache').length;
  await setConfig(cluster, { 'maxmemory-policy': 'bogus' });
  const failed = await until('a StepFailed per node', () => {
    const e = cluster
      .events('cache')
      .slice(eventsBefore)
      .filter((x) => x.reason === 'StepFailed');
    return e.length >= 3 && e;
  });
  for (const e of failed) assert.match(e.message, /^config on cache-(master-0|replica-[01]) failed .*maxmemory-policy/);
  await sleep(1500);
  assert.equal(
    cluster
      .events('cache')
      .slice(eventsBefore)
      .filter((x) => x.reason === 'StepFailed').length,
    3,
    'told once per node',
  );
  assert.equal(await everyNode(servers, 'maxmemory-policy', 'noeviction'), true);
  assert.equal(linked(), true);

  // Fixed: applied at once (a changed step is a new step, not held back by the old one's back-off).
  await setConfig(cluster, { 'maxmemory-policy': 'volatile-lru' });
  await until('every node on volatile-lru', () => everyNode(servers, 'maxmemory-policy', 'volatile-lru'));
  assert.deepEqual(await Promise.all(servers.map((s) => runId(s.ip))), [before[0], before[1], restarted]);
  assert.deepEqual(masters.violations, []);
});
