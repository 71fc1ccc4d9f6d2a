// What the sidecar watches: Redis resources, the operator's pods and StatefulSets, each through one or more
// client-node informers (one per watched namespace, or one for all) behind one cache.
// Invariants:
// - A failed list/watch is logged, reported to onError callbacks, and restarted after a delay
//   until stop(): an informer that died silently would freeze every decision on stale data.
// - The pod informer selects only the Redis kind's pods (name=redis, managed-by=redis-operator),
//   the cluster pod informer only RedisCluster pods (name=redis-cluster): neither manager ever
//   sees the other kind's pods. Which Redis a pod belongs to is decided later
//   (api/membership.ts), never here.
// - An informer over a kind the API server does not serve (its CRD not installed: 404) retries
//   slowly (NOT_SERVED_RETRY_MS), not every second.
// - Lists are bounded by the request timeout like every other call.
// - A watch the server closed cleanly is renewed at once (at most one per second): never the
//   up-to-30 s wait client-node would add, during which a dead pod would go unseen.
import {
  ListWatch,
  Watch,
  type AppsV1Api,
  type CoordinationV1Api,
  type CoreV1Api,
  type CustomObjectsApi,
  type Informer,
  type KubeConfig,
  type KubernetesObject,
  type ObjectCache,
  type V1Lease,
  type V1Pod,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  REDIS_CLUSTER_APP_NAME as CLUSTER_APP_NAME,
  REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL,
} from '../../../api/rediscluster-names.ts';
import type { RedisClusterSpec, RedisClusterStatus } from '../../../api/rediscluster-schema.ts';
import { APP_NAME, GROUP, MANAGED_BY, MANAGED_BY_LABEL, NAME_LABEL, PLURAL, VERSION } from '../../../api/labels.ts';
import type { RedisObject } from '../../../api/schema.ts';
import { kubeFailure } from './errors.ts';
import { reconnectPacer } from './reconnect.ts';
import { timeoutOptions } from './request.ts';

/** A watch closed cleanly is renewed at once if it lived this long, else after the rest of it. */
export const WATCH_MIN_INTERVAL_MS = 1000;

/** The Redis pods the replication manager watches (every pod of every Redis carries these labels). */
export const POD_SELECTOR = `${NAME_LABEL}=${APP_NAME},${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** The RedisCluster pods the cluster manager watches. */
export const CLUSTER_POD_SELECTOR = `${NAME_LABEL}=${CLUSTER_APP_NAME},${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** The operator's StatefulSets (of both kinds): their update revision drives Redis rollouts. */
export const SET_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** A kind the API server does not serve (404 on list) is listed again this often. */
export const NOT_SERVED_RETRY_MS = 30_000;

/** A RedisCluster as the sidecar reads it (spec validated later, status as the hook wrote it). */
export interface RedisClusterObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    annotations?: Record<string, string>;
    resourceVersion?: string;
  };
  spec?: Partial<RedisClusterSpec> | Record<string, unknown>;
  status?: RedisClusterStatus;
}

export type WatchVerb = 'add' | 'update' | 'delete';

/** Several informers (one per namespace, or one for all) behind one cache and one set of callbacks. */
export interface MultiInformer<T extends KubernetesObject> {
  on(verb: WatchVerb, cb: (obj: T) => void): void;
  /** Called when a list/watch fails; the informer restarts itself after `restartDelayMs`. */
  onError(cb: (err: unknown) => void): void;
  list(namespace?: string): T[];
  get(name: string, namespace: string): T | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface InformerSpec<T extends KubernetesObject> {
  path: string;
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
  labelSelector?: string;
}

/** What to watch and how: the namespaces (empty = all) and the clients to list with. */
export interface WatchScope {
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  apps: AppsV1Api;
  coordination: CoordinationV1Api;
  namespaces: readonly string[];
  timeoutMs: number;
  restartDelayMs: number;
  logger: Logger;
}

function multiInformer<T extends KubernetesObject>(
  kc: KubeConfig,
  specs: InformerSpec<T>[],
  restartDelayMs: number,
  logger: Logger,
): MultiInformer<T> {
  // ListWatch rather than makeInformer: only it takes a delayFn, and its default waits up to
  // 30 s after a clean close (see reconnect.ts).
  const informers: Array<Informer<T> & ObjectCache<T>> = specs.map(
    (s) =>
      new ListWatch<T>(s.path, new Watch(kc), s.list as () => Promise<never>, false, s.labelSelector, undefined, {
        delayFn: reconnectPacer({ minIntervalMs: WATCH_MIN_INTERVAL_MS }).delay,
      }),
  );
  const errorCbs: Array<(err: unknown) => void> = [];
  let stopped = true;
  const timers = new Set<NodeJS.Timeout>();
  informers.forEach((inf, i) => {
    inf.on('error', (err: unknown) => {
      const f = kubeFailure(err);
      logger.warn(
        { path: specs[i]!.path, code: f.code, reason: f.reason, err: f.message },
        'informer failed; restarting',
      );
      for (const cb of errorCbs) cb(err);
      if (stopped) return;
      const delay = f.code === 404 ? Math.max(restartDelayMs, NOT_SERVED_RETRY_MS) : restartDelayMs;
      const t = setTimeout(() => {
        timers.delete(t);
        if (!stopped) inf.start().catch(() => undefined);
      }, delay);
      timers.add(t);
    });
  });
  return {
    on: (verb, cb) => informers.forEach((inf) => inf.on(verb, cb)),
    onError: (cb) => {
      errorCbs.push(cb);
    },
    list: (namespace) => informers.flatMap((inf) => inf.list(namespace)),
    get: (name, namespace) => {
      for (const inf of informers) {
        const found = inf.get(name, namespace);
        if (found) return found;
      }
      return undefined;
    },
    start: async () => {
      stopped = false;
      await Promise.all(informers.map((inf) => inf.start()));
    },
    stop: async () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await Promise.all(informers.map((inf) => inf.stop()));
    },
  };
}

/** Redis resources in the watched namespaces (all when none configured). */
export async function listRedis(scope: WatchScope): Promise<RedisObject[]> {
  const t = timeoutOptions(scope.timeoutMs);
  const crd = { group: GROUP, version: VERSION, plural: PLURAL };
  if (scope.namespaces.length === 0) {
    const list = (await scope.custom.listClusterCustomObject(crd, t)) as { items: RedisObject[] };
    return list.items;
  }
  const lists = await Promise.all(
    scope.namespaces.map(
      (namespace) =>
        scope.custom.listNamespacedCustomObject({ ...crd, namespace }, t) as Promise<{ items: RedisObject[] }>,
    ),
  );
  return lists.flatMap((l) => l.items);
}

/** An informer over Redis resources (one watch per namespace, or one for all). Call start(). */
export function redisInformer(scope: WatchScope): MultiInformer<RedisObject & KubernetesObject> {
  const t = () => timeoutOptions(scope.timeoutMs);
  const crd = { group: GROUP, version: VERSION, plural: PLURAL };
  type R = RedisObject & KubernetesObject;
  const specs: InformerSpec<R>[] =
    scope.namespaces.length === 0
      ? [
          {
            path: `/apis/${GROUP}/${VERSION}/${PLURAL}`,
            list: () => scope.custom.listClusterCustomObject(crd, t()) as Promise<{ items: R[] }>,
          },
        ]
      : scope.namespaces.map((namespace) => ({
          path: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
          list: () => scope.custom.listNamespacedCustomObject({ ...crd, namespace }, t()) as Promise<{ items: R[] }>,
        }));
  return multiInformer(scope.kc, specs, scope.restartDelayMs, scope.logger);
}

/** An informer over every pod managed by the operator (label app.kubernetes.io/managed-by=redis-operator). */
export function podInformer(scope: WatchScope, labelSelector = POD_SELECTOR): MultiInformer<V1Pod> {
  const t = () => timeoutOptions(scope.timeoutMs);
  const specs: InformerSpec<V1Pod>[] =
    scope.namespaces.length === 0
      ? [
          {
            path: '/api/v1/pods',
            labelSelector,
            list: () => scope.core.listPodForAllNamespaces({ labelSelector }, t()),
          },
        ]
      : scope.namespaces.map((namespace) => ({
          path: `/api/v1/namespaces/${namespace}/pods`,
          labelSelector,
          list: () => scope.core.listNamespacedPod({ namespace, labelSelector }, t()),
        }));
  return multiInformer(scope.kc, specs, scope.restartDelayMs, scope.logger);
}

/** An informer over the pods of every RedisCluster (never a Redis pod). Call start(). */
export function clusterPodInformer(scope: WatchScope): MultiInformer<V1Pod> {
  return podInformer(scope, CLUSTER_POD_SELECTOR);
}

/** An informer over RedisCluster resources (one watch per namespace, or one for all). Call start(). */
export function redisClusterInformer(scope: WatchScope): MultiInformer<RedisClusterObject & KubernetesObject> {
  const t = () => timeoutOptions(scope.timeoutMs);
  const crd = { group: GROUP, version: VERSION, plural: CLUSTER_PLURAL };
  type R = RedisClusterObject & KubernetesObject;
  const specs: InformerSpec<R>[] =
    scope.namespaces.length === 0
      ? [
          {
            path: `/apis/${GROUP}/${VERSION}/${CLUSTER_PLURAL}`,
            list: () => scope.custom.listClusterCustomObject(crd, t()) as Promise<{ items: R[] }>,
          },
        ]
      : scope.namespaces.map((namespace) => ({
          path: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${CLUSTER_PLURAL}`,
          list: () => scope.custom.listNamespacedCustomObject({ ...crd, namespace }, t()) as Promise<{ items: R[] }>,
        }));
  return multiInformer(scope.kc, specs, scope.restartDelayMs, scope.logger);
}

/**
 * An informer over the operator's StatefulSets (same label as the pods): their update revision
 * tells which pods a rollout must still replace.
 */
export function statefulSetInformer(scope: WatchScope): MultiInformer<V1StatefulSet> {
  const t = () => timeoutOptions(scope.timeoutMs);
  const labelSelector = SET_SELECTOR;
  const specs: InformerSpec<V1StatefulSet>[] =
    scope.namespaces.length === 0
      ? [
          {
            path: '/apis/apps/v1/statefulsets',
            labelSelector,
            list: () => scope.apps.listStatefulSetForAllNamespaces({ labelSelector }, t()),
          },
        ]
      : scope.namespaces.map((namespace) => ({
          path: `/apis/apps/v1/namespaces/${namespace}/statefulsets`,
          labelSelector,
          list: () => scope.apps.listNamespacedStatefulSet({ namespace, labelSelector }, t()),
        }));
  return multiInformer(scope.kc, specs, scope.restartDelayMs, scope.logger);
}

/**
 * An informer over the Leases of one namespace (the operator's): the sharded sidecars learn from
 * it which instances are alive and when each shard's Lease last changed, without polling.
 */
export function leaseInformer(scope: WatchScope, namespace: string): MultiInformer<V1Lease> {
  const t = () => timeoutOptions(scope.timeoutMs);
  const spec: InformerSpec<V1Lease> = {
    path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
    list: () => scope.coordination.listNamespacedLease({ namespace }, t()),
  };
  return multiInformer(scope.kc, [spec], scope.restartDelayMs, scope.logger);
}
