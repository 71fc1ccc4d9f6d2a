// The Sentinel endpoint on the REAL replication manager (a real kube-apiserver, real redis-server processes, the
// manager's own informers, the Redis's own password Secret, wired as main.ts wires it): ioredis's Sentinel support
// finds the master the operator made, keeps writing through a real failover (the master SIGKILLed, the operator
// promotes a replica and labels it) and is moved by the +switch-master the endpoint publishes; a second operator
// instance, standing by, answers the same.
// Loopback octet: 127.0.214.x (.1-.3 the Redis nodes, .100/.101 the endpoints, .250/.251 the instances' sources).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { addr, startRedis, TEST_PASSWORD } from '../../support/redis-server.ts';
import { Cluster, until, type Instance } from '../redis/manager/harness.ts';
import { until as untilDump } from '../../support/until.ts';
import { sentinelEndpoint, type SentinelEndpoint } from '../../../src/sidecar/sentinel/index.ts';

const N = 214;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

/** The endpoint beside one instance, fed by its manager as main.ts feeds it. */
async function withEndpoint(
  cluster: Cluster,
  id: string,
  host: number,
): Promise<{ instance: Instance; endpoint: SentinelEndpoint }> {
  let endpoint: ReturnType<typeof sentinelEndpoint> | null = null;
  const instance = await cluster.startInstance({
    id,
    sourceIp: addr(N, 250 + host - 100),
    onObserved: () => endpoint?.changed(),
  });
  const e = sentinelEndpoint({
    host: addr(N, host),
    port: 0,
    podName: id,
    sources: { observed: () => instance.manager.observed() },
    readSecretValue: (namespace, name, key) => instance.kube.readSecretValue(namespace, name, key),
    secretRefreshMs: 10_000,
    logger: pino({ level: 'silent' }),
  });
  endpoint = e;
  await e.start();
  return { instance, endpoint: e };
}

function sentinelClient(host: string, port: number): Redis {
  return new Redis({
    sentinels: [{ host, port }],
    name: 'mymaster',
    sentinelPassword: TEST_PASSWORD,
    password: TEST_PASSWORD,
    failoverDetector: true,
    maxRetriesPerRequest: 1,
  });
}

test('ioredis through the endpoint follows a real failover of the operator, on every instance', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache', { sentinel: { enabled: true, masterName: 'mymaster' } });
  const servers = await Promise.all(
    [1, 2, 3].map((h) => startRedis(t, { ip: addr(N, h), extra, minReplicasToWrite: 0 })),
  );
  await cluster.addPods('cache', servers);
  const a = await withEndpoint(cluster, 'sidecar-a', 100);
  t.after(() => a.endpoint.close());
  const b = await withEndpoint(cluster, 'sidecar-b', 101);
  t.after(() => b.endpoint.close());
  await until('a linked set', () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  });
  const firstIp = cluster.masterIp('cache')!;

  const client = sentinelClient(addr(N, 100), a.endpoint.port!);
  t.after(() => client.disconnect());
  await until('a write through the endpoint', async () => {
    try {
      await client.set('k', '0');
      return true;
    } catch {
      return false;
    }
  });
  assert.equal(client.stream.remoteAddress, firstIp, 'the client writes where the operator made the master');

  await t.test('the standby instance answers the same address', async () => {
    const probe = new Redis({ host: addr(N, 101), port: b.endpoint.port!, password: TEST_PASSWORD, lazyConnect: true });
    t.after(() => probe.disconnect());
    await probe.connect();
    await until('the standby sees the master', async () => {
      const addrOf = (await probe.call('SENTINEL', 'get-master-addr-by-name', 'mymaster')) as string[] | null;
      return addrOf?.[0] === firstIp;
    });
  });

  await t.test('a SIGKILLed master: the client moves to the master the operator promotes', async () => {
    const old = servers.find((s) => s.ip === firstIp)!;
    const killed = performance.now();
    await old.kill();
    let written = 0;
    let lastError = '';
    const newIp = await untilDump(
      'a write on the promoted master',
      async () => {
        try {
          await client.set('k', String(++written));
          return client.stream.remoteAddress !== firstIp && client.stream.remoteAddress;
        } catch (err) {
          lastError = err instanceof Error ? err.message : String(err);
          return false;
        }
      },
      30_000,
      { dump: () => `roles: ${JSON.stringify(cluster.roles('cache'))}; last error: ${lastError}` },
    );
    t.diagnostic(
      `sentinel_client_failover_ms=${(performance.now() - killed).toFixed(0)} (kill -> first write on the new master)`,
    );
    assert.equal(newIp, cluster.masterIp('cache'), 'the promoted master, as the operator labelled it');
  });
});
