// What the system scenarios need of a cluster: the REAL one (test/k8s/real-cluster.ts: control
// plane, CoreDNS, real nodes with containerd, runc, CNI and kube-proxy, the real Metacontroller,
// the operator's Deployment from its own image), seen through test/k8s/system-cluster.ts.
// Where it cannot run here (not Linux, not root, no ../shared, parts not built), startSystemCluster
// is not called: `missing()` says why in one line and the scenario skips.
import type { TestContext } from 'node:test';
import type { Redis } from 'ioredis';
import type { ControlPlane } from '../k8s/control-plane.ts';
import type { InstallWith } from '../k8s/operator.ts';
import type { Faults } from '../k8s/faults.ts';
import type { KubeObject, StoredObject } from '../support/kube-client/objects.ts';
import type { EventFilter, EventRecord } from '../support/cluster-views.ts';

export type { EventRecord } from '../support/cluster-views.ts';

export interface Endpoint {
  pod: string;
  ip: string;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface WatchEventLike {
  type: string;
  object: StoredObject;
}

export interface LinkCut {
  restore(): Promise<void>;
}

export interface SystemCluster {
  readonly controlPlane: ControlPlane;
  readonly kubeconfig: string;
  /** A host address on the cluster's bridge that pods reach (for servers a test runs, such as S3). */
  readonly hostAddress: string;
  readonly dataRoot: string;
  /** API faults for one in-cluster client, named by its pod (`client: c.leader(NAME)`). */
  readonly faults: Faults;
  /** The real kubectl as cluster-admin; resolves with stdout. */
  kubectl(args: string[], input?: string): Promise<string>;
  /** kubectl apply's effect: creates, or merge-patches what exists (fields left out are kept). */
  apply(input: string | KubeObject | KubeObject[]): Promise<unknown[]>;
  get(resource: string, name: string, namespace?: string): StoredObject | undefined;
  list(resource: string, options?: WatchOptions): StoredObject[];
  delete(resource: string, name: string, namespace?: string): Promise<void>;
  deletePod(name: string, namespace?: string): Promise<void>;
  /** `kubectl scale <resource> name --replicas=N` (a Redis by default; a RedisCluster scales its shards). */
  scale(name: string, replicas: number, namespace?: string, resource?: 'redis' | 'rediscluster'): Promise<void>;
  /** The Redis' scale subresource (autoscaling/v1 Scale). */
  getScale(name: string, namespace?: string): Promise<Record<string, unknown>>;
  watch(resource: string, options: WatchOptions, cb: (ev: WatchEventLike) => void): { stop(): void };
  /** Polls `check` until it returns a truthy value; on timeout throws with a dump of the cluster. */
  waitFor<T>(
    check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
    timeoutMs: number,
    description: string,
  ): Promise<T>;
  /**
   * `my-redis 7.2 Ready 2 Running`: version, master readiness, spec.replicas, phase (kubectl-tables.ts redisRow);
   * undefined when the Redis is gone.
   */
  redisRow(name: string, namespace?: string): string | undefined;
  /** The pod (and IP) the <name>-master Service routes to right now; undefined unless exactly one. */
  masterEndpoint(name: string, namespace?: string): Endpoint | undefined;
  /** Pods a Service routes to right now. */
  serviceEndpoints(namespace: string, service: string): string[];
  /** Pods of a Redis labelled master right now (should never be more than one). */
  masterLabelled(name: string, namespace?: string): string[];
  /** The Redis' pods. */
  pods(name: string, namespace?: string): StoredObject[];
  password(name: string, namespace?: string): string | undefined;
  /** A fail-fast Redis client for a pod address, authenticated with the Redis' password. */
  redis(ip: string, name: string, namespace?: string): Redis;
  events(filter?: EventFilter): EventRecord[];
  /** The operator pod acting for this Redis (the holder of its shard's Lease), if any. */
  leader(name: string, namespace?: string): string | undefined;
  /** Every shard Lease's holder ('' where none). */
  leaseHolders(): string[];
  /** The operator's pods (each runs a hook and a sidecar), by name. */
  sidecarNames(): string[];
  sidecarAlive(name: string): boolean;
  /** The sidecar's /readyz answers 200. */
  sidecarReady(name: string): Promise<boolean>;
  sidecarLog(name: string, lines?: number): string[];
  /**
   * The sidecar container stops at once, as under SIGKILL, and stays stopped until
   * restartSidecar: its processes are frozen (the cgroup freezer), so the kubelet does not start
   * it again meanwhile. Its TCP connections stay open but silent, as with a process that hangs.
   */
  killSidecar(name: string): Promise<void>;
  /** SIGKILL to the sidecar's process (thawed if frozen); the kubelet restarts the container, same pod. */
  restartSidecar(name: string): Promise<void>;
  /** Signals the main process of a pod's container (default `redis`) through its node's containerd. */
  killPodProcess(namespace: string, pod: string, signal?: NodeJS.Signals, container?: string): Promise<boolean>;
  /** What the pod's containers logged (every restart's file, oldest first). */
  podLog(namespace: string, pod: string): string;
  /** The host directory behind a claim's volume. */
  claimPath(namespace: string, claim: string): string | undefined;
  /** Containers of pods in `namespace` that still run (or are frozen) on any node. */
  containers(namespace: string): Promise<string[]>;
  /**
   * Drops every packet between two pod addresses (inside both pods' network namespaces) until restore() or the test's
   * end.
   */
  cutLink(t: TestContext | undefined, a: string, b: string): Promise<LinkCut>;
  describe(name?: string, namespace?: string): string;
  dump(): string;
  /**
   * Back as installed: everything a scenario made deleted, the operator as applied, every sidecar ready
   * (test/k8s/system-reset.ts); resolves with each step's time.
   */
  reset(): Promise<string>;
  stop(): Promise<void>;
}

export interface SystemClusterOptions {
  /**
   * Third octet of this cluster's ranges: 198.18.N.0/24 (bridge, nodes, pods), 198.19.N.0/24 (Services). One per test
   * file.
   */
  subnet: number;
  /** Real nodes (default 1: a node costs a containerd, a kubelet and a kube-proxy on two cores). */
  nodes?: number;
  /** The sidecar container's env, set in the Deployment before it is applied (a user's patch). */
  sidecarEnv?: Record<string, string>;
  /** Install the chart with Helm instead of manifests/ with kubectl. */
  install?: InstallWith;
  /** Wait for every sidecar's /readyz and every shard Lease held (default true). */
  waitForSidecars?: boolean;
  /** Image recipes (images.ts) beyond the default install's. */
  images?: string[];
  /** CRD files applied and Established before Metacontroller starts. */
  extraCrds?: string[];
  onProgress?: (line: string) => void;
}

export { missing, startSystemCluster } from '../k8s/system-cluster.ts';
