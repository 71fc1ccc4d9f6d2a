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
import { addr, startRedis, TEST_PASSWORD } from '../../support/redis-server.ts';
import { Cluster, NS, until } from '../redis/manager/harness.ts';
import { until as untilDump } from '../../support/until.ts';
import { withEndpoint } from './endpoint-harness.ts';

const N = 214;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

/**
 * failoverDetector: subscribe to +switch-master and reconnect on it. ioredis 5 (5.11.1 here) ends the client for good
 * when that message arrives while it is already reconnecting (SentinelConnector's `!this.connecting` check throws
 * "Connection is closed"), which a killed master makes likely; so the switchover, where the connection stays up and
 * only the message can move the client, uses it, and the kill uses ioredis's default (reconnect when the connection
 * breaks, asking the endpoint again).
 */
function sentinelClient(host: string, port: number, failoverDetector: boolean): Redis {
  return new Redis({
    sentinels: [{ host, port }],
    name: 'mymaster',
    sentinelPassword: TEST_PASSWORD,
    password: TEST_PASSWORD,
    failoverDetector,
    maxRetriesPerRequest: 1,
  });
}

/** Writes until one lands on a master other than `not`; its address. */
function writesElsewhere(client: Redis, not: string, timeoutMs: number, dump: () => string): Promise<string> {
  let lastError = '';
  let n = 0;
  return untilDump(
    `a write on a master other than ${not}`,
    async () => {
      try {
        await client.set('k', String(++n));
        return client.stream.remoteAddress !== not && client.stream.remoteAddress;
      } catch (err) {
        lastError = err instanceof Error ? err.message : String(err);
        return false;
      }
    },
    timeoutMs,
    { dump: () => `${dump()}; client ${client.status}; last error: ${lastError}` },
  );
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
  const a = await withEndpoint(cluster, 'sidecar-a', N, 100);
  t.after(() => a.endpoint.close());
  const b = await withEndpoint(cluster, 'sidecar-b', N, 101);
  t.after(() => b.endpoint.close());
  await until('a linked set', () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  });
  const firstIp = cluster.masterIp('cache')!;

  const roles = () => `roles: ${JSON.stringify(cluster.roles('cache'))}`;
  const watcher = sentinelClient(addr(N, 100), a.endpoint.port!, true);
  const plain = sentinelClient(addr(N, 101), b.endpoint.port!, false);
  t.after(() => watcher.disconnect());
  t.after(() => plain.disconnect());
  for (const c of [watcher, plain]) {
    await until('a write through the endpoint', async () => {
      try {
        await c.set('k', '0');
        return true;
      } catch {
        return false;
      }
    });
    assert.equal(c.stream.remoteAddress, firstIp, 'the client writes where the operator made the master');
  }

  await t.test('the standby instance answers the same address', async () => {
    const probe = new Redis({ host: addr(N, 101), port: b.endpoint.port!, password: TEST_PASSWORD, lazyConnect: true });
    t.after(() => probe.disconnect());
    await probe.connect();
    await until('the standby sees the master', async () => {
      const addrOf = (await probe.call('SENTINEL', 'get-master-addr-by-name', 'mymaster')) as string[] | null;
      return addrOf?.[0] === firstIp;
    });
  });

  let secondIp = '';
  await t.test('a switchover: the old master stays up, +switch-master alone moves the client', async () => {
    const target = cluster.masters('cache')[0] === 'cache-replica-0' ? 'cache-replica-1' : 'cache-replica-0';
    const asked = performance.now();
    await cluster.store.patch(
      'redises',
      NS,
      'cache',
      { metadata: { annotations: { 'redis.example.com/switchover': target } } },
      { type: 'merge' },
    );
    secondIp = await writesElsewhere(watcher, firstIp, 30_000, roles);
    t.diagnostic(
      `sentinel_client_switchover_ms=${(performance.now() - asked).toFixed(0)} (request -> first write on the new master)`,
    );
    assert.equal(secondIp, cluster.masterIp('cache'), 'the master the operator made');
    assert.ok(servers.find((s) => s.ip === firstIp)!.running, 'the old master never went away');
  });

  await t.test('a SIGKILLed master: the client moves to the master the operator promotes', async () => {
    watcher.disconnect();
    // Without the detector, a client leaves a demoted master only when its connection breaks: Sentinel breaks it
    // (CLIENT KILL on the old master), the operator's switchover does not, so the test reconnects it.
    plain.disconnect(true);
    await until('the plain client on the new master', async () => {
      try {
        await plain.set('k', 'x');
        return plain.stream.remoteAddress === secondIp;
      } catch {
        return false;
      }
    });
    const killed = performance.now();
    await servers.find((s) => s.ip === secondIp)!.kill();
    const thirdIp = await writesElsewhere(plain, secondIp, 30_000, roles);
    t.diagnostic(
      `sentinel_client_failover_ms=${(performance.now() - killed).toFixed(0)} (kill -> first write on the new master)`,
    );
    assert.equal(thirdIp, cluster.masterIp('cache'), 'the promoted master, as the operator labelled it');
  });
});
