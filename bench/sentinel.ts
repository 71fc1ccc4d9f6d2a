// Sentinel client vs Service client benchmark (a benchmark, not a test): `npm run bench:sentinel`.
// Loopback octet: 127.0.219.x (.1-.3 the Redis nodes, .100 the endpoint, .250 the instance's source address).
//
// The real replication manager (a real kube-apiserver, real redis-server processes, the manager's own informers, as
// test/sidecar/sentinel/manager.test.ts runs it) with the Sentinel endpoint beside it. Each round SIGKILLs the master
// with two clients writing (SET, every 5 ms), and times, from the kill to the first write that lands on the master
// the operator promoted:
// - the Sentinel client: ioredis with `sentinels:` through the endpoint (it reconnects when its connection breaks and
//   asks the endpoint for the master);
// - the Service client: a plain ioredis client at the master address that, when its connection breaks, connects
//   again to the address the master Service would route to (the pod labelled master), as a client through the
//   Service does. NOT modelled: kube-proxy's and the EndpointSlice controller's delay, which a real Service adds (so
//   on loopback the two figures differ only by how each client learns the new address).
// Then the killed server restarts (same address, empty) and the set re-forms before the next round.
// Prints sentinel_client_failover_ms_p50, service_client_failover_ms_p50 (and their max) on stdout, per-round details
// on stderr. Env: ROUNDS (5).
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { addr, RedisServer, TEST_PASSWORD } from '../test/support/redis-server.ts';
import { Cluster, median, sleep, until } from '../test/sidecar/redis/manager/harness.ts';
import { withEndpoint } from '../test/sidecar/sentinel/endpoint-harness.ts';

const N = 219;
const ROUNDS = Number(process.env['ROUNDS'] ?? 5);
const quiet = { maxRetriesPerRequest: 1, retryStrategy: () => 10, enableOfflineQueue: false } as const;

interface Timed {
  /** The client's current connection: where its writes land. */
  remote(): string | undefined;
  set(value: string): Promise<unknown>;
  close(): void;
}

function sentinelClient(port: number): Timed {
  const c = new Redis({
    ...quiet,
    sentinels: [{ host: addr(N, 100), port }],
    name: 'mymaster',
    sentinelPassword: TEST_PASSWORD,
    password: TEST_PASSWORD,
  });
  c.on('error', () => undefined);
  return { remote: () => c.stream?.remoteAddress, set: (v) => c.set('k', v), close: () => c.disconnect() };
}

/** Reconnects only when its connection breaks, to the address the master Service routes to right then. */
function serviceClient(cluster: Cluster): Timed {
  let c: Redis | null = null;
  const open = (ip: string): Redis => {
    const next = new Redis({ ...quiet, host: ip, port: 6379, password: TEST_PASSWORD, retryStrategy: () => null });
    next.on('error', () => undefined);
    next.on('end', () => {
      if (c === next) c = null;
    });
    return next;
  };
  return {
    remote: () => c?.stream?.remoteAddress,
    set: (v) => {
      // No pod labelled master: the Service has no endpoint, and a connection is refused.
      const ip = c === null ? cluster.masterIp('cache') : null;
      if (c === null && ip === null) return Promise.reject(new Error('the master Service has no endpoint'));
      return (c ??= open(ip!)).set('k', v);
    },
    close: () => c?.disconnect(),
  };
}

/** ms from `since` to the first write that lands on `target`. */
async function firstWriteOn(client: Timed, target: () => string | null, since: number): Promise<number> {
  for (let n = 0; performance.now() - since < 30_000; n++) {
    try {
      await client.set(String(n));
      const t = target();
      if (t !== null && client.remote() === t) return performance.now() - since;
    } catch {
      // A write that failed (connection gone, READONLY, not yet connected): try again.
    }
    await sleep(5);
  }
  throw new Error('no write on the new master within 30 s');
}

async function main(): Promise<void> {
  const cluster = await Cluster.start();
  const servers: RedisServer[] = [];
  let closeEndpoint = async (): Promise<void> => undefined;
  const clients: Timed[] = [];
  try {
    await cluster.createAuthSecret('cache');
    await cluster.createRedis('cache', { sentinel: { enabled: true, masterName: 'mymaster' } });
    const extra = { 'repl-diskless-sync-delay': '0' };
    for (const h of [1, 2, 3]) servers.push(await RedisServer.start({ ip: addr(N, h), extra, minReplicasToWrite: 0 }));
    await cluster.addPods('cache', servers);
    const { endpoint } = await withEndpoint(cluster, 'sidecar-a', N, 100);
    closeEndpoint = () => endpoint.close();
    const formed = (): Promise<unknown> =>
      until('a linked set', () => {
        const r = Object.values(cluster.roles('cache'));
        return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
      });
    await formed();
    const sentinel = sentinelClient(endpoint.port!);
    const service = serviceClient(cluster);
    clients.push(sentinel, service);
    const viaSentinel: number[] = [];
    const viaService: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const old = cluster.masterIp('cache')!;
      for (const c of [sentinel, service]) await firstWriteOn(c, () => old, performance.now());
      const promoted = (): string | null => {
        const ip = cluster.masterIp('cache');
        return ip !== old ? ip : null;
      };
      const killed = performance.now();
      await servers.find((s) => s.ip === old)!.kill();
      const [a, b] = await Promise.all([
        firstWriteOn(sentinel, promoted, killed),
        firstWriteOn(service, promoted, killed),
      ]);
      viaSentinel.push(a);
      viaService.push(b);
      console.error(`round ${round}: sentinel_client=${a.toFixed(0)} ms service_client=${b.toFixed(0)} ms`);
      await servers.find((s) => s.ip === old)!.restart();
      await formed();
    }
    const fmt = (xs: number[]): string => median(xs).toFixed(0);
    console.log(`sentinel_client_failover_ms_p50=${fmt(viaSentinel)}`);
    console.log(`service_client_failover_ms_p50=${fmt(viaService)}`);
    console.log(`sentinel_client_failover_ms_max=${Math.max(...viaSentinel).toFixed(0)}`);
    console.log(`service_client_failover_ms_max=${Math.max(...viaService).toFixed(0)}`);
    console.log(`rounds=${ROUNDS}`);
  } finally {
    for (const c of clients) c.close();
    await closeEndpoint();
    await cluster.close();
    for (const s of servers) s.cleanup();
  }
}

await main();
