// Configuration of the replication-manager sidecar, read from the environment once at start-up.
// Invariants: loadSidecarConfig is a pure function of the env object it is given (no
// process.env access), never throws, and reports EVERY bad variable at once, each error naming
// the variable and the value it refused. An empty or blank variable counts as unset (Kubernetes
// renders an unset ConfigMap key as ""). Leader-election timings are checked together with
// settingsProblems: the "never two leaders" invariant depends on their relation, not on each value.
import { integerIn, ipField, logLevel, present, refuse, type Env, type Field, type LogLevel } from '../runtime/env.ts';
import { DEFAULT_DECIDE_CONFIG } from './redis/decide/types.ts';
import { DEFAULT_LEADER_SETTINGS, settingsProblems, type LeaderSettings } from './adapters/kube/lease-decision.ts';

export { LOG_LEVELS, type Env, type LogLevel } from '../runtime/env.ts';

import { DEFAULT_LEASE_NAME } from '../api/shards.ts';
export { DEFAULT_LEASE_NAME };
export const DEFAULT_METRICS_PORT = 9121;
export const DEFAULT_METRICS_HOST = '0.0.0.0';

/** How often things happen; all in ms. Defaults are sized for a failover in about a second. */
export interface ManagerTiming {
  /** Each pod's Redis is probed this often (in its own loop) by the instance that acts on it. */
  probeIntervalMs: number;
  /**
   * A Redis at rest (nothing changed for IDLE_AFTER_MS: every pod answers as before, no step, no
   * pod event) has its pods probed this often instead, and its rounds run this often. Anything
   * that stirs it (a probe that fails or shows a change, a connection the node closed, a pod
   * event, a step) brings back probeIntervalMs at once. Equal to probeIntervalMs: never idle.
   */
  idleProbeIntervalMs: number;
  /** Each Redis is re-planned this often (and at once on a pod or Redis event). */
  tickIntervalMs: number;
  /** TCP connect bound for Redis connections. */
  redisConnectTimeoutMs: number;
  /** Bound on every Redis command (a hung node accepts TCP but never answers). */
  redisCommandTimeoutMs: number;
  /** Bound on every Kubernetes request of the manager (label patches, events, secrets). */
  kubeRequestTimeoutMs: number;
  /**
   * Secrets are polled this often by the acting instance, and reported on the parent (decide/secret-reads.ts,
   * decide/secret-report.ts).
   */
  secretRefreshMs: number;
  /** A replica's down/silent testimony counts after holding this long (see decide/types.ts). */
  witnessConfirmMs: number;
  /** A probe older than this no longer counts as "answering now". */
  staleAfterMs: number;
  /**
   * Failover only: how long to wait for pods we cannot read before choosing on a partial view (a bootstrap has no
   * limit).
   */
  maxPartialWaitMs: number;
  /** A refused master port counts as a crash after this long (see decide/types.ts); 0: at once. */
  crashConfirmMs: number;
  /** A rollout waiting on the same pod this long gets a RolloutStalled Warning (it stays stopped either way). */
  rolloutStallMs: number;
}

export const DEFAULT_TIMING: ManagerTiming = {
  probeIntervalMs: 100,
  idleProbeIntervalMs: 1000,
  tickIntervalMs: 100,
  redisConnectTimeoutMs: 500,
  redisCommandTimeoutMs: 500,
  kubeRequestTimeoutMs: 2000,
  secretRefreshMs: 10_000,
  // The decision thresholds the environment may override: their defaults are the decide layer's.
  witnessConfirmMs: DEFAULT_DECIDE_CONFIG.witnessConfirmMs,
  staleAfterMs: DEFAULT_DECIDE_CONFIG.staleAfterMs,
  maxPartialWaitMs: DEFAULT_DECIDE_CONFIG.maxPartialWaitMs,
  crashConfirmMs: DEFAULT_DECIDE_CONFIG.crashConfirmMs,
  rolloutStallMs: 300_000,
};

export interface SidecarConfig {
  /** Empty: all namespaces. */
  watchNamespaces: string[];
  podName: string;
  podNamespace: string | undefined;
  leaseName: string;
  leaseNamespace: string;
  metricsPort: number;
  metricsHost: string;
  logLevel: LogLevel;
  kubeconfig: string | undefined;
  leader: LeaderSettings;
  /** SHARDS: the Redis objects are divided into this many shards, one Lease each; 1: one Lease for all. */
  shards: number;
  timing: ManagerTiming;
  /** Source address of our Redis connections (tests give the sidecar its own loopback address). */
  redisLocalAddress: string | undefined;
  /** SENTINEL_PORT (0 or unset: off) and SENTINEL_HOST: the Sentinel endpoint (src/sidecar/sentinel). */
  sentinel: { port: number; host: string } | null;
}

export type ConfigResult = { ok: true; config: SidecarConfig } | { ok: false; errors: string[] };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function namespaceList(env: Env): Field<string[]> {
  const raw = present(env, 'WATCH_NAMESPACES');
  if (raw === undefined) return { ok: true, value: [] };
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = items.filter((ns) => !DNS_LABEL.test(ns));
  if (bad.length > 0)
    return refuse(
      'WATCH_NAMESPACES',
      raw,
      `${bad.map((b) => JSON.stringify(b)).join(', ')} ${bad.length === 1 ? 'is not a namespace name' : 'are not namespace names'} (comma-separated DNS labels; empty = all namespaces)`,
    );
  return { ok: true, value: [...new Set(items)] };
}

function named(env: Env, name: string, pattern: RegExp, what: string, fallback?: string): Field<string | undefined> {
  const raw = present(env, name);
  if (raw === undefined) return { ok: true, value: fallback };
  return pattern.test(raw) ? { ok: true, value: raw } : refuse(name, raw, `must be ${what}`);
}

export function loadSidecarConfig(env: Env): ConfigResult {
  const errors: string[] = [];
  function take<T>(f: Field<T>, fallback: T): T {
    if (f.ok) return f.value;
    errors.push(f.error);
    return fallback;
  }

  const watchNamespaces = take(namespaceList(env), []);
  const podName = take(named(env, 'POD_NAME', DNS_SUBDOMAIN, 'a pod name (DNS subdomain)'), undefined);
  if (present(env, 'POD_NAME') === undefined) {
    errors.push(
      "POD_NAME is required: it is this instance's identity in the leader-election Lease (set it from the downward API, fieldRef metadata.name); two instances with one identity would both lead",
    );
  }
  const podNamespace = take(named(env, 'POD_NAMESPACE', DNS_LABEL, 'a namespace name (DNS label)'), undefined);
  const leaseName =
    take(
      named(env, 'LEASE_NAME', DNS_SUBDOMAIN, 'a Lease name (DNS subdomain)', DEFAULT_LEASE_NAME),
      DEFAULT_LEASE_NAME,
    ) ?? DEFAULT_LEASE_NAME;
  const leaseNamespace = take(
    named(env, 'LEASE_NAMESPACE', DNS_LABEL, 'a namespace name (DNS label)', podNamespace),
    podNamespace,
  );
  if (
    leaseNamespace === undefined &&
    present(env, 'LEASE_NAMESPACE') === undefined &&
    present(env, 'POD_NAMESPACE') === undefined
  ) {
    errors.push(
      'POD_NAMESPACE or LEASE_NAMESPACE is required: the namespace of the leader-election Lease (set POD_NAMESPACE from the downward API, fieldRef metadata.namespace)',
    );
  }
  const metricsPort = take(integerIn(env, 'METRICS_PORT', DEFAULT_METRICS_PORT, 0, 65535), DEFAULT_METRICS_PORT);
  const metricsHost =
    take(ipField(env, 'METRICS_HOST', DEFAULT_METRICS_HOST), DEFAULT_METRICS_HOST) ?? DEFAULT_METRICS_HOST;
  const level = take(logLevel(env), 'info');
  const redisLocalAddress = take(ipField(env, 'REDIS_LOCAL_ADDRESS', undefined), undefined);

  const d = DEFAULT_LEADER_SETTINGS;
  const leader: LeaderSettings = {
    leaseDurationSeconds: take(
      integerIn(env, 'LEASE_DURATION_SECONDS', d.leaseDurationSeconds, 1, 3600),
      d.leaseDurationSeconds,
    ),
    renewDeadlineMs: take(
      integerIn(env, 'LEASE_RENEW_DEADLINE_MS', d.renewDeadlineMs, 1, 3_600_000),
      d.renewDeadlineMs,
    ),
    retryPeriodMs: take(integerIn(env, 'LEASE_RETRY_PERIOD_MS', d.retryPeriodMs, 1, 3_600_000), d.retryPeriodMs),
    requestTimeoutMs: take(
      integerIn(env, 'LEASE_REQUEST_TIMEOUT_MS', d.requestTimeoutMs, 1, 3_600_000),
      d.requestTimeoutMs,
    ),
  };
  for (const p of settingsProblems(leader))
    errors.push(
      `leader election (LEASE_DURATION_SECONDS, LEASE_RENEW_DEADLINE_MS, LEASE_RETRY_PERIOD_MS, LEASE_REQUEST_TIMEOUT_MS): ${p}`,
    );

  const shards = take(integerIn(env, 'SHARDS', 1, 1, 256), 1);
  const sentinelPort = take(integerIn(env, 'SENTINEL_PORT', 0, 0, 65535), 0);
  const sentinelHost = take(ipField(env, 'SENTINEL_HOST', DEFAULT_METRICS_HOST), undefined) ?? DEFAULT_METRICS_HOST;

  const t = DEFAULT_TIMING;
  const timing: ManagerTiming = {
    probeIntervalMs: take(integerIn(env, 'PROBE_INTERVAL_MS', t.probeIntervalMs, 10, 60_000), t.probeIntervalMs),
    idleProbeIntervalMs: take(
      integerIn(env, 'IDLE_PROBE_INTERVAL_MS', t.idleProbeIntervalMs, 10, 60_000),
      t.idleProbeIntervalMs,
    ),
    tickIntervalMs: take(integerIn(env, 'TICK_INTERVAL_MS', t.tickIntervalMs, 10, 60_000), t.tickIntervalMs),
    redisConnectTimeoutMs: take(
      integerIn(env, 'REDIS_CONNECT_TIMEOUT_MS', t.redisConnectTimeoutMs, 10, 60_000),
      t.redisConnectTimeoutMs,
    ),
    redisCommandTimeoutMs: take(
      integerIn(env, 'REDIS_COMMAND_TIMEOUT_MS', t.redisCommandTimeoutMs, 10, 60_000),
      t.redisCommandTimeoutMs,
    ),
    kubeRequestTimeoutMs: take(
      integerIn(env, 'KUBE_REQUEST_TIMEOUT_MS', t.kubeRequestTimeoutMs, 100, 120_000),
      t.kubeRequestTimeoutMs,
    ),
    secretRefreshMs: take(integerIn(env, 'SECRET_REFRESH_MS', t.secretRefreshMs, 100, 3_600_000), t.secretRefreshMs),
    witnessConfirmMs: take(integerIn(env, 'WITNESS_CONFIRM_MS', t.witnessConfirmMs, 0, 60_000), t.witnessConfirmMs),
    staleAfterMs: take(integerIn(env, 'STALE_AFTER_MS', t.staleAfterMs, 100, 600_000), t.staleAfterMs),
    maxPartialWaitMs: take(integerIn(env, 'MAX_PARTIAL_WAIT_MS', t.maxPartialWaitMs, 0, 3_600_000), t.maxPartialWaitMs),
    crashConfirmMs: take(integerIn(env, 'CRASH_CONFIRM_MS', t.crashConfirmMs, 0, 60_000), t.crashConfirmMs),
    rolloutStallMs: take(integerIn(env, 'ROLLOUT_STALL_MS', t.rolloutStallMs, 1000, 86_400_000), t.rolloutStallMs),
  };
  // A probe must be able to finish (connect + command) before its facts count as stale, or a
  // slow but healthy node would flap between answering and silent.
  if (
    errors.length === 0 &&
    timing.staleAfterMs <= timing.redisConnectTimeoutMs + timing.redisCommandTimeoutMs + timing.probeIntervalMs
  ) {
    errors.push(
      `STALE_AFTER_MS=${timing.staleAfterMs} must exceed REDIS_CONNECT_TIMEOUT_MS + REDIS_COMMAND_TIMEOUT_MS + PROBE_INTERVAL_MS (${timing.redisConnectTimeoutMs + timing.redisCommandTimeoutMs + timing.probeIntervalMs}): a slow but healthy node would look silent between probes`,
    );
  }
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    config: {
      watchNamespaces,
      podName: podName!,
      podNamespace,
      leaseName,
      leaseNamespace: leaseNamespace!,
      metricsPort,
      metricsHost,
      logLevel: level,
      kubeconfig: present(env, 'KUBECONFIG'),
      leader,
      shards,
      timing,
      redisLocalAddress,
      sentinel: sentinelPort === 0 ? null : { port: sentinelPort, host: sentinelHost },
    },
  };
}
