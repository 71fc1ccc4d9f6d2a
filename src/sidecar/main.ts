// Entry point of the replication-manager sidecar (second container of the operator Deployment): validated config from
// the environment, the metrics/probe HTTP server (listening from the first moment: the Deployment's probes hit it), the
// Kubernetes client, Lease leader election and the managers: Redis (manager/) and RedisCluster (cluster/), which share
// the Leases (SHARDS > 1: one Lease per shard, see kube/shard-leadership.ts; a Redis and a RedisCluster go by
// namespace/name). SIGTERM/SIGINT: stop acting, hand the Lease(s) back (a standby takes over at its next poll instead
// of waiting for expiry), close Redis connections and informers, exit 0. Exit codes: 0 after a clean shutdown; 1 for a
// bad configuration (every problem printed at once) or a shutdown that did not finish within 10 s.
import { KubeClient, loadKubeConfig } from './adapters/kube/client.ts';
import { LeaderElector } from './adapters/kube/leader.ts';
import { ShardLeadership } from './adapters/kube/shard-leadership.ts';
import { loadSidecarConfig } from './config.ts';
import { createLogger } from '../runtime/logger.ts';
import { RedisManager } from './redis/manager/index.ts';
import { RedisClusterManager } from './rediscluster/manager/manager.ts';
import { createSidecarMetrics, startMetricsServer, type MetricsServer } from './metrics.ts';
import { sentinelEndpoint, type SentinelEndpoint } from './sentinel/index.ts';

const loaded = loadSidecarConfig(process.env);
if (!loaded.ok) {
  process.stderr.write(
    `redis-operator sidecar: invalid configuration, not starting:\n${loaded.errors.map((e) => `  - ${e}`).join('\n')}\n`,
  );
  process.exit(1);
}
const config = loaded.config;
const logger = createLogger({ level: config.logLevel });

let kc: ReturnType<typeof loadKubeConfig>;
try {
  kc = loadKubeConfig({ env: process.env });
} catch (err) {
  logger.fatal({ err: err instanceof Error ? err.message : String(err) }, 'cannot load the Kubernetes configuration');
  process.stderr.write(
    `redis-operator sidecar: cannot load the Kubernetes configuration: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
}

const metrics = createSidecarMetrics({ defaultMetrics: true });
let manager: RedisManager | null = null;
let clusters: RedisClusterManager | null = null;
let sentinel: (SentinelEndpoint & { start(): Promise<void> }) | null = null;
let server: MetricsServer;
try {
  server = await startMetricsServer({
    host: config.metricsHost,
    port: config.metricsPort,
    registry: metrics.registry,
    ready: () =>
      (manager?.ready ?? false) && (clusters?.ready ?? false) && (config.sentinel === null || !!sentinel?.listening),
  });
} catch (err) {
  logger.fatal(
    { err: err instanceof Error ? err.message : String(err), port: config.metricsPort },
    'cannot listen for metrics and probes',
  );
  process.exit(1);
}
logger.info(
  { host: config.metricsHost, port: server.port },
  'metrics and probes listening (/metrics, /healthz, /readyz)',
);

const kube = new KubeClient(kc, {
  namespaces: config.watchNamespaces,
  identity: config.podName,
  requestTimeoutMs: config.timing.kubeRequestTimeoutMs,
  logger,
});
// The Leases get connections of their own (a KubeConfig of their own, so a dispatcher of their
// own): a renewal must never wait behind a burst of the manager's reads, or a busy leader would
// miss its renew deadline and stop acting.
const leaseKube = new KubeClient(loadKubeConfig({ env: process.env }), {
  identity: config.podName,
  requestTimeoutMs: config.leader.requestTimeoutMs,
  logger,
});
const leadership =
  config.shards > 1
    ? new ShardLeadership({
        identity: config.podName,
        shards: config.shards,
        leaseName: config.leaseName,
        settings: config.leader,
        leaseClient: (name) => leaseKube.leaseClient(config.leaseNamespace, name, config.leader.requestTimeoutMs),
        leases: leaseKube.leaseInformer(config.leaseNamespace),
        logger,
        onShardChanged: (shard, leading) => {
          manager?.leadershipChanged(leading, shard);
          clusters?.leadershipChanged(leading, shard);
        },
      })
    : new LeaderElector({
        client: leaseKube.leaseClient(config.leaseNamespace, config.leaseName, config.leader.requestTimeoutMs),
        identity: config.podName,
        settings: config.leader,
        logger,
        onStartedLeading: () => {
          manager?.leadershipChanged(true);
          clusters?.leadershipChanged(true);
        },
        onStoppedLeading: () => {
          manager?.leadershipChanged(false);
          clusters?.leadershipChanged(false);
        },
      });
metrics.shards.set(config.shards);
manager = new RedisManager({
  kube,
  leader: leadership,
  logger,
  metrics,
  timing: config.timing,
  redisLocalAddress: config.redisLocalAddress,
  // Each kind weighs its parents against the other's: the older of two whose children would share names keeps them.
  rivals: (namespace) => clusters?.parentsIn(namespace) ?? [],
  onRemoved: (namespace) => clusters?.recheckRefused(namespace),
  onObserved: () => sentinel?.changed(),
});
if (config.sentinel !== null) {
  const redisManager = manager;
  sentinel = sentinelEndpoint({
    ...config.sentinel,
    podName: config.podName,
    sources: { observed: () => redisManager.observed() },
    readSecretValue: (namespace, name, key) => kube.readSecretValue(namespace, name, key),
    secretRefreshMs: config.timing.secretRefreshMs,
    logger,
  });
}
clusters = new RedisClusterManager({
  kube,
  leader: leadership,
  logger,
  registry: metrics.registry,
  status: metrics,
  timing: config.timing,
  redisLocalAddress: config.redisLocalAddress,
  rivals: (namespace) => manager?.parentsIn(namespace) ?? [],
  onRemoved: (namespace) => manager?.recheckRefused(namespace),
});

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  logger.info({ signal }, 'shutting down: stop acting, release the lease, close connections');
  const hard = setTimeout(() => {
    logger.error('shutdown did not finish within 10 s; exiting anyway');
    process.exit(1);
  }, 10_000);
  hard.unref();
  // Stop acting first (isLeader() turns false), then hand the Lease back.
  await leadership.stop();
  await Promise.all([manager?.stop(), clusters?.stop(), sentinel?.close()]);
  await server.close();
  logger.info('stopped');
  process.exit(0);
}
process.once('SIGTERM', () => void shutdown('SIGTERM'));
process.once('SIGINT', () => void shutdown('SIGINT'));
process.on('unhandledRejection', (err) =>
  logger.error({ err: err instanceof Error ? err.stack : String(err) }, 'unhandled rejection'),
);

logger.info(
  {
    identity: config.podName,
    lease: `${config.leaseNamespace}/${config.leaseName}`,
    shards: config.shards,
    namespaces: config.watchNamespaces.length > 0 ? config.watchNamespaces : 'all',
    timing: config.timing,
    leaderElection: config.leader,
  },
  'starting the replication manager',
);
// The single elector starts at once; the sharded one once its Lease informer has listed.
const started = leadership.start();
const sentinelStarted = async (): Promise<void> => {
  try {
    await sentinel?.start();
  } catch (err) {
    logger.fatal(
      { err: err instanceof Error ? err.message : String(err), port: config.sentinel?.port },
      'cannot listen for Sentinel clients',
    );
    process.exit(1);
  }
};
await Promise.all([started, manager.start().then(sentinelStarted), clusters.start()]);
