// Prometheus metrics of the sidecar and the small HTTP server that serves them with the probes.
// Invariants: one prom-client Registry per SidecarMetrics (never the global default), so tests
// can run several managers in one process; per-pod series are removed when the pod or its Redis
// goes away (a deleted pod must not report "up" forever); the status series (phase, conditions,
// backup times: what the Redis's status says) exist exactly while the Redis does, every phase and
// condition status present as 0 or 1 so an alert on "not Running" needs no absent(); the HTTP
// server answers /healthz from
// the moment it listens (before the Kubernetes side is ready) because the Deployment's probes
// hit it from start-up.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { CONDITION_STATUSES, CONDITION_TYPES, PHASES, type StatusSeries } from './core/decide/status-series.ts';

type RedisLabels = 'namespace' | 'redis';
type PodLabels = 'namespace' | 'redis' | 'pod';
const REDIS_LABELS: readonly RedisLabels[] = ['namespace', 'redis'];
const POD_LABELS: readonly PodLabels[] = ['namespace', 'redis', 'pod'];

export interface SidecarMetrics {
  registry: Registry;
  failovers: Counter<RedisLabels>;
  lastFailoverDuration: Gauge<RedisLabels>;
  podUp: Gauge<PodLabels>;
  podRole: Gauge<PodLabels>;
  podLinkUp: Gauge<PodLabels>;
  replicationLag: Gauge<PodLabels>;
  leader: Gauge;
  shards: Gauge;
  shardsHeld: Gauge;
  steps: Counter<RedisLabels | 'kind' | 'outcome'>;
  specValid: Gauge<RedisLabels>;
  /** Sets the status series of a Redis from its status (every instance does: they watch alike). */
  observeStatus(namespace: string, redis: string, series: StatusSeries): void;
  /**
   * The Redis is gone: its status series go too (the manager's, not a worker's: a worker of a replaced object stops
   * later).
   */
  forgetStatus(namespace: string, redis: string): void;
  forgetPod(namespace: string, redis: string, pod: string): void;
  forgetRedis(namespace: string, redis: string): void;
}

/**
 * Defines series on one registry (never the global default): a series differs from the next only
 * in name, help and label names. /metrics lists them in the order defined.
 */
export function metricDefiner(registry: Registry) {
  const registers = [registry];
  return {
    gauge: <L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Gauge<L>({ name, help, labelNames, registers }),
    counter: <L extends string = string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers }),
  };
}

export function createSidecarMetrics(options: { defaultMetrics?: boolean } = {}): SidecarMetrics {
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  const { gauge, counter } = metricDefiner(registry);
  const failovers = counter(
    'redis_operator_failovers_total',
    'Completed failovers (a new master promoted after the previous one failed), per Redis.',
    REDIS_LABELS,
  );
  const lastFailoverDuration = gauge(
    'redis_operator_last_failover_duration_seconds',
    "Duration of the last failover: from the old master's first unanswered probe to the master label on the new one.",
    REDIS_LABELS,
  );
  const podUp = gauge(
    'redis_operator_pod_up',
    "1 when the pod's Redis answers the sidecar's probes, 0 otherwise.",
    POD_LABELS,
  );
  const podRole = gauge(
    'redis_operator_pod_role',
    "1 when the pod's Redis reports role master, 0 when replica (as last answered). More than one 1 per Redis is a split brain.",
    POD_LABELS,
  );
  const podLinkUp = gauge(
    'redis_operator_pod_link_up',
    '1 for the master and for replicas whose link to the current master is up, 0 otherwise.',
    POD_LABELS,
  );
  const replicationLag = gauge(
    'redis_operator_replication_lag_bytes',
    "Replication offset of the master minus the replica's, as last probed (replicas linked to the current master only).",
    POD_LABELS,
  );
  const leader = gauge(
    'redis_operator_leader',
    '1 while this instance holds the leader Lease (or a shard Lease) and may act.',
  );
  const shards = gauge(
    'redis_operator_shards',
    'How many shards the Redis objects are divided into (SHARDS; 1: one leader Lease for all).',
  );
  const shardsHeld = gauge('redis_operator_shards_held', 'Shard Leases this instance holds and may act on.');
  const steps = counter(
    'redis_operator_steps_total',
    'Steps the leader applied (promote, switchover, replicaof, config, label), by outcome (ok, failed).',
    ['namespace', 'redis', 'kind', 'outcome'] as const,
  );
  const specValid = gauge(
    'redis_operator_spec_valid',
    '1 when the Redis spec is valid and managed, 0 when it is refused (nothing is done to it).',
    REDIS_LABELS,
  );
  const phase = gauge(
    'redis_operator_redis_phase',
    '1 for the current status.phase of the Redis or RedisCluster (Pending, Running, Failed, Hibernated, Resharding), 0 for the others.',
    ['namespace', 'redis', 'phase'] as const,
  );
  const condition = gauge(
    'redis_operator_redis_condition',
    'Status conditions of the Redis: 1 for the status (True, False, Unknown) each condition type has now, 0 for the others.',
    ['namespace', 'redis', 'type', 'status'] as const,
  );
  const backupSuccess = gauge(
    'redis_operator_backup_last_success_timestamp_seconds',
    'When the last successful backup of the Redis finished (status.backup.lastSuccessful.time), in Unix seconds.',
    REDIS_LABELS,
  );
  const backupFailure = gauge(
    'redis_operator_backup_last_failure_timestamp_seconds',
    'When the last failed backup run ended, present only while it is newer than the last success (status.backup.lastFailure), in Unix seconds.',
    REDIS_LABELS,
  );
  const forgetStatus = (namespace: string, redis: string) => {
    for (const p of PHASES) phase.remove({ namespace, redis, phase: p });
    for (const type of CONDITION_TYPES)
      for (const status of CONDITION_STATUSES) condition.remove({ namespace, redis, type, status });
    backupSuccess.remove({ namespace, redis });
    backupFailure.remove({ namespace, redis });
  };
  leader.set(0);
  shards.set(1);
  shardsHeld.set(0);
  const perPod = [podUp, podRole, podLinkUp, replicationLag];
  return {
    registry,
    failovers,
    lastFailoverDuration,
    podUp,
    podRole,
    podLinkUp,
    replicationLag,
    leader,
    shards,
    shardsHeld,
    steps,
    specValid,
    forgetStatus,
    observeStatus(namespace, redis, series) {
      // The first failover must be an increase from 0, not a series born at 1 that increase() misses.
      failovers.inc({ namespace, redis }, 0);
      for (const p of PHASES) {
        if (series.phase === undefined) phase.remove({ namespace, redis, phase: p });
        else phase.set({ namespace, redis, phase: p }, p === series.phase ? 1 : 0);
      }
      for (const type of CONDITION_TYPES) {
        const now = series.conditions.find((c) => c.type === type)?.status;
        for (const status of CONDITION_STATUSES) {
          if (now === undefined) condition.remove({ namespace, redis, type, status });
          else condition.set({ namespace, redis, type, status }, status === now ? 1 : 0);
        }
      }
      for (const [gauge, value] of [
        [backupSuccess, series.lastBackupSuccess],
        [backupFailure, series.lastBackupFailure],
      ] as const) {
        if (value === undefined) gauge.remove({ namespace, redis });
        else gauge.set({ namespace, redis }, value);
      }
    },
    forgetPod(namespace, redis, pod) {
      for (const g of perPod) g.remove({ namespace, redis, pod });
    },
    // Per-pod series are removed by the worker pod by pod (prom-client removes exact label sets only).
    forgetRedis(namespace, redis) {
      for (const m of [failovers, lastFailoverDuration, specValid]) m.remove({ namespace, redis });
      for (const kind of ['promote', 'switchover', 'replicaof', 'config', 'label']) {
        for (const outcome of ['ok', 'failed']) steps.remove({ namespace, redis, kind, outcome });
      }
    },
  };
}

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

export interface MetricsServerOptions {
  host: string;
  port: number;
  registry: Registry;
  /** /readyz answers 200 only while this is true (the informers have synced, not shutting down). */
  ready: () => boolean;
}

/** Serves /metrics, /healthz (the process runs) and /readyz on a plain node:http server. */
export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (code: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
    if (path === '/healthz' || path === '/livez') return send(200, 'ok\n');
    if (path === '/readyz') return options.ready() ? send(200, 'ok\n') : send(503, 'not ready\n');
    if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => send(200, text, options.registry.contentType),
        (err: unknown) => send(500, `metrics failed: ${String(err)}\n`),
      );
      return;
    }
    send(404, 'not found\n');
  });
  // A scraper that holds a connection open must not keep the process alive on shutdown.
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
