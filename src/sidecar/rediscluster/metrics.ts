// Prometheus series of the RedisCluster worker, registered on the sidecar's own registry.
// Invariants: every series is per RedisCluster (namespace, rediscluster) and removed when the
// RedisCluster goes; counters start at 0 so increase() sees the first event. A shard's master
// changing also counts in the sidecar's redis_operator_failovers_total{redis=<cluster name>}, the
// series the FrequentFailovers alert of a RedisCluster reads (hook/rediscluster/monitoring/rules.ts).
import type { Counter, Gauge, Registry } from 'prom-client';
import { metricDefiner } from '../metrics.ts';

type Labels = 'namespace' | 'rediscluster';

export interface ClusterMetrics {
  slotsCovered: Gauge<Labels>;
  slotsMoved: Counter<Labels>;
  forcedFailovers: Counter<Labels>;
  nodes: Gauge<Labels | 'state'>;
  /** A shard's serving master changed (the cluster's election, or one the sidecar forced). */
  failover(namespace: string, rediscluster: string): void;
  started(namespace: string, rediscluster: string): void;
  forget(namespace: string, rediscluster: string): void;
}

export function createClusterMetrics(
  registry: Registry,
  shared?: { failovers: Counter<'namespace' | 'redis'> },
): ClusterMetrics {
  const { gauge, counter } = metricDefiner(registry);
  const labelNames = ['namespace', 'rediscluster'] as const;
  const slotsCovered = gauge(
    'redis_operator_cluster_slots_covered',
    'Hash slots (of 16384) served by a master that answers and is not failing, as the acting sidecar last saw them.',
    labelNames,
  );
  const slotsMoved = counter(
    'redis_operator_cluster_reshard_slots_moved_total',
    'Hash slots moved between shards by resharding.',
    labelNames,
  );
  const forcedFailovers = counter(
    'redis_operator_cluster_forced_failovers_total',
    "Elections forced (CLUSTER FAILOVER FORCE) because the cluster's own failover did not happen within failoverTimeout.",
    labelNames,
  );
  const nodes = gauge(
    'redis_operator_cluster_nodes',
    'Pods of the RedisCluster by what their node answered: up (answered), down (did not), pending (no address yet).',
    ['namespace', 'rediscluster', 'state'] as const,
  );
  return {
    slotsCovered,
    slotsMoved,
    forcedFailovers,
    nodes,
    failover(namespace, rediscluster) {
      shared?.failovers.inc({ namespace, redis: rediscluster });
    },
    started(namespace, rediscluster) {
      slotsMoved.inc({ namespace, rediscluster }, 0);
      forcedFailovers.inc({ namespace, rediscluster }, 0);
    },
    forget(namespace, rediscluster) {
      for (const m of [slotsCovered, slotsMoved, forcedFailovers]) m.remove({ namespace, rediscluster });
      for (const state of ['up', 'down', 'pending']) nodes.remove({ namespace, rediscluster, state });
    },
  };
}
