// The Sentinel endpoint beside one instance of the real replication manager, fed by its manager as main.ts feeds it
// (manager.test.ts, bench/sentinel.ts).
// Invariants: the endpoint listens on <octet>.<host> (any free port), the instance's source address is
// <octet>.<250 + host - 100>; the caller closes the endpoint (the Cluster closes the instance).
import { pino } from 'pino';
import { addr } from '../../support/redis-server.ts';
import type { Cluster, Instance } from '../redis/manager/harness.ts';
import { sentinelEndpoint, type SentinelEndpoint } from '../../../src/sidecar/sentinel/index.ts';

export async function withEndpoint(
  cluster: Cluster,
  id: string,
  octet: number,
  host: number,
): Promise<{ instance: Instance; endpoint: SentinelEndpoint }> {
  let endpoint: ReturnType<typeof sentinelEndpoint> | null = null;
  const instance = await cluster.startInstance({
    id,
    sourceIp: addr(octet, 250 + host - 100),
    onObserved: () => endpoint?.changed(),
  });
  const e = sentinelEndpoint({
    host: addr(octet, host),
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
