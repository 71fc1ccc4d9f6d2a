// The local cluster stand-in's public surface (index.ts starts it): the options, the Cluster
// handle's interface, and the fixed paths and names it shares with the system tests.
// Invariant: types and constants only; importing this starts nothing.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { KubeApiServer, KubeObject, ObjectStore, StoredObject } from '../support/kube-api/index.ts';
import type { EventRecord } from '../support/cluster-views.ts';
import type { PrinterColumn } from './kubectl.ts';
import type { Metacontroller } from './metacontroller/index.ts';
import type { Workloads } from './workloads/index.ts';
import type { ProcessGroup } from './workloads/processes.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CRD_PATH = path.join(REPO_ROOT, 'manifests/crd.yaml');
export const CLUSTER_CRD_PATH = path.join(REPO_ROOT, 'manifests/rediscluster-crd.yaml');
export const CLUSTER_CONTROLLER_PATH = path.join(REPO_ROOT, 'metacontroller/rediscluster-controller.yaml');
export const EXAMPLE_PATH = path.join(REPO_ROOT, 'manifests/examples/redis.yaml');
/** Where the operator's Deployment runs (manifests/namespace.yaml): the sidecars' Lease lives here. */
export const OPERATOR_NAMESPACE = 'redis-operator';
export const LEASE_NAME = 'redis-operator-sidecar';

export interface ClusterOptions {
  /** Third octet N: pods on 127.0.N.2+, sidecars' source addresses 127.0.N.250+. One per test file. */
  subnet: number;
  /** A directory for PVCs, pod files, logs and kubeconfigs (default: a fresh temp dir, removed by stop()). */
  dataRoot?: string;
  /** The kubelet's time scale (probe periods, back-off, grace periods); default 1 = the pod spec's own figures. */
  timeScale?: number;
  /** Sidecar instances on one Lease (default 2: sidecar-a, sidecar-b). 0 runs none. */
  sidecars?: number;
  /** The stand-ins' logs (Metacontroller, workloads, the in-process hook); default silent. */
  logger?: Logger;
  /** `inline` (default): buildApp in this process on a random port; `process`: `node src/server/main.ts`. */
  hook?: 'inline' | 'process';
  /** LOG_LEVEL of the sidecar processes (default info; their logs go to <dataRoot>/logs). */
  sidecarLogLevel?: string;
  /** Extra environment for every sidecar (e.g. timings). */
  sidecarEnv?: Record<string, string>;
  /** Metacontroller's periodic resync (default: the CompositeController's resyncPeriodSeconds). */
  resyncPeriodMs?: number;
  /** Wait for every sidecar's /readyz and a Lease holder before returning (default true). */
  waitForSidecars?: boolean;
  /** Keep dataRoot after stop() (for post-mortems); also when KEEP_CLUSTER_DATA=1. */
  keepData?: boolean;
}

export interface Sidecar {
  readonly name: string;
  /** Of the process running when sidecar() was called (each start binds its own); 0 until it logged it. */
  readonly metricsPort: number;
  readonly sourceIp: string;
  readonly logFile: string;
  readonly kubeconfig: string;
  alive(): boolean;
  /** The running process (undefined after it exited). */
  readonly process: ProcessGroup | undefined;
}

export interface Endpoint {
  pod: string;
  ip: string;
}

export type { EventRecord } from '../support/cluster-views.ts';

export interface Cluster {
  readonly subnet: number;
  readonly api: KubeApiServer;
  readonly store: ObjectStore;
  readonly workloads: Workloads;
  readonly metacontroller: Metacontroller;
  readonly hookUrl: string;
  readonly dataRoot: string;
  readonly sidecars: readonly Sidecar[];
  readonly printerColumns: PrinterColumn[];
  /** kubectl apply: YAML (one or more documents) or objects; creates, or merge-patches what exists. */
  apply(input: string | KubeObject | KubeObject[]): Promise<StoredObject[]>;
  get(resource: string, name: string, namespace?: string): StoredObject | undefined;
  list(resource: string, options?: { namespace?: string; labelSelector?: string }): StoredObject[];
  /** kubectl delete (the object's finalizers and the kubelet's graceful termination apply). */
  delete(resource: string, name: string, namespace?: string): void;
  deletePod(name: string, namespace?: string): void;
  /** kubectl scale redis <name> --replicas=N: a merge PATCH of the scale subresource over HTTP. */
  /** Through the scale subresource of a Redis (default) or a RedisCluster (its shards). */
  scale(name: string, replicas: number, namespace?: string, resource?: 'redis' | 'rediscluster'): Promise<void>;
  /** Polls `check` (every 25 ms) until it returns a truthy value; on timeout throws with a dump of the cluster. */
  waitFor<T>(check: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs: number, description: string): Promise<T>;
  /** `my-redis 7.2 Ready 2 Running` (the printer columns without AGE); undefined when the Redis is gone. */
  redisRow(name: string, namespace?: string): string | undefined;
  /** The same as redisRow (the name the brief uses). */
  getRedisRow(name: string, namespace?: string): string | undefined;
  /** The pod (and IP) the <name>-master Service routes to right now; undefined unless exactly one. */
  masterEndpoint(name: string, namespace?: string): Endpoint | undefined;
  /** Pods of a Redis labelled master right now (should never be more than one). */
  masterLabelled(name: string, namespace?: string): string[];
  /** The Redis' pods, sorted by name. */
  pods(name: string, namespace?: string): StoredObject[];
  /** The Redis password (the Secret the pods read). */
  password(name: string, namespace?: string): string | undefined;
  /** A fail-fast Redis client for a pod address, authenticated with the Redis' password. */
  redis(ip: string, name: string, namespace?: string): Redis;
  /** Core Events, oldest first (optionally only those about the object `name`). */
  events(filter?: { namespace?: string; name?: string; reason?: string }): EventRecord[];
  /** The sidecar holding the Lease right now (by the Lease object), if any. */
  leader(): string | undefined;
  sidecar(name: string): Sidecar;
  /** Signals a sidecar process; resolves when it exited (for SIGKILL/SIGTERM/SIGINT). */
  killSidecar(name: string, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a sidecar again (its container restarting), same identity. */
  restartSidecar(name: string): Promise<void>;
  /** The last lines a sidecar logged. */
  sidecarLog(name: string, lines?: number): string[];
  /** kubectl-like tables of the Redis, its pods and recent events. */
  describe(name?: string, namespace?: string): string;
  /** Everything a failure message needs. */
  dump(): string;
  stop(): Promise<void>;
}
