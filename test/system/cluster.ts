// What the system scenarios need of a cluster, whichever runs underneath:
// - `real` (the default): the REAL control plane built from source (test/k8s/system-cluster.ts):
//   etcd, kube-apiserver, controller-manager, scheduler, the node agent, Metacontroller (the real
//   binary with METACONTROLLER_BIN, else our stand-in against the real API), real RBAC;
// - `stand-in` (SYSTEM_CLUSTER=stand-in): the local cluster stand-in (test/cluster/index.ts).
// The scenarios are written once against this face; where the two backends differ, the real one
// is right (README.md in this folder lists what the stand-in does not model).
import type { TestContext } from 'node:test';
import { cutLink } from '../support/redis-server.ts';
import type { Faults } from '../support/kube-api/faults.ts';
import type { KubeObject } from '../support/kube-api/index.ts';
import type { Metacontroller } from '../cluster/metacontroller/index.ts';
import { startCluster, type Cluster, type ClusterOptions } from '../cluster/index.ts';
import { missingSharedReason, type InstallWith } from '../k8s/operator.ts';
import { unavailableReason } from '../k8s/pod-network.ts';
import { startRealSystemCluster } from '../k8s/system-cluster.ts';

export type { Endpoint } from '../cluster/index.ts';

export type { EventRecord } from '../support/cluster-views.ts';

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface WatchEventLike {
  type: string;
  object: unknown;
}

/** The read side both backends answer alike (signatures as the stand-in's Cluster declares them). */
type SharedFace = Pick<
  Cluster,
  | 'get'
  | 'list'
  | 'waitFor'
  | 'redisRow'
  | 'masterEndpoint'
  | 'masterLabelled'
  | 'pods'
  | 'password'
  | 'redis'
  | 'events'
  | 'leader'
  | 'describe'
  | 'dump'
  | 'stop'
>;

export interface SystemCluster extends SharedFace {
  readonly backend: 'real' | 'stand-in';
  /** Our Metacontroller stand-in's handle (undefined when the real Metacontroller runs). */
  readonly metacontroller: Metacontroller | undefined;
  /** API faults for one client (`client: 'sidecar-a'`): the stand-in's own, or the fault proxy in front of the real API server. */
  readonly faults: Faults;
  /** kubectl apply's effect: creates, or merge-patches what exists (fields left out are kept). */
  apply(input: string | KubeObject | KubeObject[]): Promise<unknown[]>;
  delete(resource: string, name: string, namespace?: string): Promise<void>;
  deletePod(name: string, namespace?: string): Promise<void>;
  /** `kubectl scale <resource> name --replicas=N` (a Redis by default; a RedisCluster scales its shards). */
  scale(name: string, replicas: number, namespace?: string, resource?: 'redis' | 'rediscluster'): Promise<void>;
  /** The Redis' scale subresource (autoscaling/v1 Scale). */
  getScale(name: string, namespace?: string): Promise<Record<string, unknown>>;
  watch(resource: string, options: WatchOptions, cb: (ev: WatchEventLike) => void): { stop(): void };
  /** Pods a Service routes to right now. */
  serviceEndpoints(namespace: string, service: string): string[];
  sidecarNames(): string[];
  sidecarAlive(name: string): boolean;
  /** The sidecar's /readyz answers 200. */
  sidecarReady(name: string): Promise<boolean>;
  sidecarLog(name: string, lines?: number): string[];
  killSidecar(name: string, signal?: NodeJS.Signals): Promise<void>;
  restartSidecar(name: string): Promise<void>;
  killPodProcess(namespace: string, pod: string, signal?: NodeJS.Signals): boolean;
  podLog(namespace: string, pod: string): string;
  claimPath(namespace: string, claim: string): string | undefined;
  processes(): unknown[];
  /** Drops every packet between two pod addresses until restore() (or the test's end). */
  cutLink(t: TestContext | undefined, a: string, b: string): { restore(): void };
  /** Backend-specific handles for diagnostics. */
  readonly local?: unknown;
}

/** What both backends take (subnet: one per test file; the stand-in's 127.0.N.x, the real cluster's 198.18.N.x / 198.19.N.x). */
export type SystemClusterOptions = Pick<ClusterOptions, 'subnet' | 'sidecars' | 'sidecarEnv' | 'sidecarLogLevel' | 'waitForSidecars' | 'resyncPeriodMs'> & {
  /** Real control plane only: install the chart with Helm instead of manifests/ with kubectl. */
  install?: InstallWith;
};

/**
 * SYSTEM_CLUSTER=real|stand-in, default real. Where the real one cannot run here (not root, no
 * iproute2, no ../shared with Metacontroller's CRDs), the default falls back to the stand-in and says so on the test output.
 */
export function backend(): 'real' | 'stand-in' {
  const b = process.env['SYSTEM_CLUSTER'];
  if (b !== undefined && b !== 'real' && b !== 'stand-in') throw new Error(`SYSTEM_CLUSTER must be real or stand-in, got ${b}`);
  if (b) return b;
  const why = unavailableReason() ?? missingSharedReason();
  if (why === undefined) return 'real';
  console.log(`# system tests on the local cluster stand-in: ${why} (SYSTEM_CLUSTER=real to insist)`);
  return 'stand-in';
}

export async function startSystemCluster(options: SystemClusterOptions, which: 'real' | 'stand-in' = backend()): Promise<SystemCluster> {
  return which === 'real' ? startRealSystemCluster(options) : standInView(await startCluster(options));
}

/** The stand-in cluster behind the SystemCluster face. */
export function standInView(c: Cluster): SystemCluster {
  const wl = c.workloads;
  return {
    backend: 'stand-in',
    local: c,
    metacontroller: c.metacontroller,
    faults: c.api.faults,
    apply: (input) => c.apply(input),
    get: (r, n, ns) => c.get(r, n, ns),
    list: (r, o) => c.list(r, o),
    delete: async (r, n, ns) => c.delete(r, n, ns),
    deletePod: async (n, ns) => c.deletePod(n, ns),
    scale: (n, r, ns, resource) => c.scale(n, r, ns, resource),
    getScale: async (n, ns = 'default') => c.api.store.getScale('redises', ns, n),
    watch: (r, o, cb) => c.store.watch(r, o, cb),
    waitFor: (check, ms, what) => c.waitFor(check, ms, what),
    redisRow: (n, ns) => c.redisRow(n, ns),
    masterEndpoint: (n, ns) => c.masterEndpoint(n, ns),
    serviceEndpoints: (ns, svc) => wl.serviceEndpoints(ns, svc),
    masterLabelled: (n, ns) => c.masterLabelled(n, ns),
    pods: (n, ns) => c.pods(n, ns),
    password: (n, ns) => c.password(n, ns),
    redis: (ip, n, ns) => c.redis(ip, n, ns),
    events: (f) => c.events(f),
    leader: () => c.leader(),
    sidecarNames: () => c.sidecars.map((s) => s.name),
    sidecarAlive: (n) => c.sidecar(n).alive(),
    sidecarReady: (n) =>
      fetch(`http://127.0.0.1:${c.sidecar(n).metricsPort}/readyz`).then(
        (r) => r.ok,
        () => false,
      ),
    sidecarLog: (n, l) => c.sidecarLog(n, l),
    killSidecar: (n, s) => c.killSidecar(n, s),
    restartSidecar: (n) => c.restartSidecar(n),
    killPodProcess: (ns, p, s) => wl.killPodProcess(ns, p, s),
    podLog: (ns, p) => wl.podLog(ns, p),
    claimPath: (ns, claim) => wl.claimPath(ns, claim),
    processes: () => wl.processes(),
    cutLink: (t, a, b) => cutLink(t, a, b),
    describe: (n, ns) => c.describe(n, ns),
    dump: () => c.dump(),
    stop: () => c.stop(),
  };
}
