// Test harness for the REAL replication manager: a real kube-apiserver (test/k8s/api-server.ts:
// etcd, the CRDs, the operator's RBAC; client-node's real code paths run: informers, merge
// patches, Leases, Events, Secrets), real redis-server processes whose "pods" are Pod objects
// there (status.podIP = the server's loopback address, written as a kubelet would; no kubelet,
// scheduler or controller runs), manager instances with their own identity, Lease client and Redis
// source address, and a writer that finds the master the way a client of the master Service
// would (the pod labelled master, its podIP). Used by test/sidecar/redis/manager/*.test.ts and by
// bench/failover.ts.
// Invariants: nothing here talks to anything but 127.0.0.0/8; every instance, watcher and writer
// registers its own cleanup; the split-brain watcher sees EVERY pod write in the API server's
// order, so "two pods labelled master at once" is checked at each step, not sampled.
// Modules: harness-cluster.ts (the API server, pods, manager instances), harness-redis.ts
// (fail-fast Redis clients), harness-writer.ts (the writer through the master Service); this one
// re-exports them and holds the small helpers every test uses.
import type { RedisServer } from '../../../support/redis-server.ts';
import { until as untilPolled, type Polled } from '../../../support/until.ts';

export {
  Cluster,
  LEASE_NAME,
  LEASE_NS,
  NS,
  runningStatus,
  TEST_LEADER,
  type Instance,
  type InstanceOptions,
  type Pod,
} from './harness-cluster.ts';
export { authWorks, missingKeys, redisCall, redisClient, replicationOf, settle } from './harness-redis.ts';
export { Writer } from './harness-writer.ts';

/** The tests' one `until` (test/support/until.ts), polling every 20 ms unless told otherwise. */
export function until<T>(
  what: string,
  check: () => Polled<T> | Promise<Polled<T>>,
  timeoutMs = 15_000,
  everyMs = 20,
): Promise<T> {
  return untilPolled(what, check, timeoutMs, { everyMs });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The servers of a three-node set, for tests that name them. */
export interface NodeSet {
  master: RedisServer;
  replicas: RedisServer[];
}
