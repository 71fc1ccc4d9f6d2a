// The sidecar's Kubernetes adapter, the one module the rest of the code imports from: the
// KubeClient facade over the call modules beside it, and their exports.
//   config.ts     where the KubeConfig comes from
//   errors.ts     classifying a failed call (kubeFailure, isNotFound, isConflict, isReplaced)
//   request.ts    the timeout and patch content type every call carries
//   informers.ts  what the sidecar watches (Redis and RedisCluster resources, their pods)
//   pods.ts       the pod metadata patch, deleting a pod a rollout replaces
//   events.ts     Events on the Redis         redis-object.ts  annotations on the Redis
//   secrets.ts    the generated auth Secret   leases.ts   the Lease for leader election
//   volumes.ts    claims, StorageClasses and replacing a StatefulSet, for volume expansion
//   api-calls.ts  the table of every call above (verb, resource, where): the RBAC is cut from it
// Invariants: the adapter decides nothing (no policy, only calls and their classification), and
// every call is bounded by the client's request timeout.
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  StorageV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1Lease,
  type V1PersistentVolumeClaim,
  type V1Pod,
  type V1Secret,
  type V1StatefulSet,
  type V1StorageClass,
} from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import type { RedisObject } from '../../../api/schema.ts';
import { reuseDispatchers } from './dispatcher.ts';
import { emitEvent } from './events.ts';
import {
  clusterPodInformer,
  leaseInformer,
  listRedis,
  podInformer,
  redisClusterInformer,
  redisInformer,
  statefulSetInformer,
  type MultiInformer,
  type RedisClusterObject,
  type WatchScope,
} from './informers.ts';
import { KubeLeaseClient, type LeaseClient } from './leases.ts';
import { deletePod, patchPodMetadata, type PodMetadataChanges } from './pods.ts';
import { patchRedisAnnotations } from './redis-object.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, type CoreCalls, type RedisRef } from './request.ts';
import type { AuthSecretRef } from '../../../api/auth.ts';
import {
  createAuthSecret,
  ensureAuthSecret,
  getSecret,
  readSecretValue,
  readSecretValues,
  type GeneratedSecret,
  type SecretOwner,
} from './secrets.ts';
import { REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL } from '../../../api/rediscluster-names.ts';
import { GROUP, VERSION } from '../../../api/labels.ts';
import { mergePatchOptions } from './request.ts';
import {
  deleteStatefulSetOrphan,
  getStatefulSet,
  listRedisClaims,
  listStorageClasses,
  patchClaim,
  type ClaimChanges,
  type VolumeCalls,
} from './volumes.ts';

export { loadKubeConfig, type KubeConfigSource } from './config.ts';
export { isConflict, isNotFound, isReplaced, kubeFailure, type KubeFailure } from './errors.ts';
export { REPORTING_CONTROLLER } from './events.ts';
export {
  CLUSTER_POD_SELECTOR,
  POD_SELECTOR,
  type MultiInformer,
  type RedisClusterObject,
  type WatchVerb,
} from './informers.ts';
export { KubeLeaseClient, LeaseConflictError, type LeaseClient } from './leases.ts';
export type { PodMetadataChanges } from './pods.ts';
export { DEFAULT_REQUEST_TIMEOUT_MS, mergePatchOptions, timeoutOptions, type RedisRef } from './request.ts';
export { secretValue, type GeneratedSecret, type SecretOwner } from './secrets.ts';
export { claimSelector, type ClaimChanges } from './volumes.ts';

export interface KubeClientOptions {
  /** Namespaces to watch; empty = all namespaces. */
  namespaces?: string[];
  /** POD_NAME of this sidecar: the reportingInstance of its Events. */
  identity: string;
  requestTimeoutMs?: number;
  /** Delay before an informer that failed restarts (default 1000 ms). */
  informerRestartDelayMs?: number;
  logger?: Logger;
}

export class KubeClient {
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly coordination: CoordinationV1Api;
  private readonly identity: string;
  private readonly calls: CoreCalls;
  private readonly volumeCalls: VolumeCalls;
  private readonly scope: WatchScope;

  constructor(kc: KubeConfig, options: KubeClientOptions) {
    this.kc = reuseDispatchers(kc);
    this.core = kc.makeApiClient(CoreV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    this.coordination = kc.makeApiClient(CoordinationV1Api);
    this.identity = options.identity;
    const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const logger = options.logger ?? pino({ level: 'silent' });
    this.calls = { core: this.core, timeoutMs, logger };
    const apps = kc.makeApiClient(AppsV1Api);
    this.volumeCalls = { ...this.calls, storage: kc.makeApiClient(StorageV1Api), apps };
    this.scope = {
      kc,
      core: this.core,
      custom: this.custom,
      apps,
      coordination: this.coordination,
      namespaces: [...new Set((options.namespaces ?? []).filter(Boolean))],
      timeoutMs,
      restartDelayMs: options.informerRestartDelayMs ?? 1000,
      logger,
    };
  }

  /** Redis resources in the watched namespaces (all when none configured). */
  listRedis(): Promise<RedisObject[]> {
    return listRedis(this.scope);
  }

  /** An informer over Redis resources (one watch per namespace, or one for all). Call start(). */
  redisInformer(): MultiInformer<RedisObject & KubernetesObject> {
    return redisInformer(this.scope);
  }

  /** An informer over every pod managed by the operator (label app.kubernetes.io/managed-by=redis-operator). */
  podInformer(): MultiInformer<V1Pod> {
    return podInformer(this.scope);
  }

  /** An informer over RedisCluster resources. Call start(). */
  redisClusterInformer(): MultiInformer<RedisClusterObject & KubernetesObject> {
    return redisClusterInformer(this.scope);
  }

  /** An informer over the pods of every RedisCluster (app.kubernetes.io/name=redis-cluster). Call start(). */
  clusterPodInformer(): MultiInformer<V1Pod> {
    return clusterPodInformer(this.scope);
  }

  /**
   * Merge-patches annotations of a RedisCluster (null removes), guarded by its uid (the reshard
   * record) and, when given, by its resourceVersion (409 if it changed since).
   */
  patchClusterAnnotations(
    cluster: RedisRef,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<void> {
    return patchRedisAnnotations(
      this.custom,
      this.calls.timeoutMs,
      cluster,
      annotations,
      CLUSTER_PLURAL,
      resourceVersion,
    );
  }

  /** Sets a RedisCluster's shard count through its scale subresource, as an HPA does. */
  async scaleCluster(cluster: RedisRef, shards: number): Promise<void> {
    await this.custom.patchNamespacedCustomObjectScale(
      {
        group: GROUP,
        version: VERSION,
        plural: CLUSTER_PLURAL,
        namespace: cluster.namespace,
        name: cluster.name,
        body: { spec: { replicas: shards } },
      },
      mergePatchOptions(this.calls.timeoutMs),
    );
  }

  /** An informer over the operator's StatefulSets (their update revision drives rollouts). Call start(). */
  statefulSetInformer(): MultiInformer<V1StatefulSet> {
    return statefulSetInformer(this.scope);
  }

  /** Deletes one pod with a uid precondition (a rollout step). See pods.ts. */
  deletePod(namespace: string, name: string, uid: string): Promise<void> {
    return deletePod(this.calls, namespace, name, uid);
  }

  /** Merge-patches annotations of a Redis (null removes), guarded by its uid. See redis-object.ts. */
  patchRedisAnnotations(redis: RedisRef, annotations: Record<string, string | null>): Promise<void> {
    return patchRedisAnnotations(this.custom, this.calls.timeoutMs, redis, annotations);
  }

  /** One JSON merge patch of pod labels/annotations (null removes); `uid` guards the incarnation. See pods.ts. */
  patchPodMetadata(namespace: string, name: string, changes: PodMetadataChanges): Promise<V1Pod> {
    return patchPodMetadata(this.calls, namespace, name, changes);
  }

  /**
   * Records an Event on the Redis (or on another of our kinds). Best effort: returns false (and logs) instead of
   * throwing.
   */
  emitEvent(
    redis: RedisRef,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
    kind?: string,
  ): Promise<boolean> {
    return emitEvent(this.calls, this.identity, redis, type, reason, message, kind);
  }

  /** The Secret, or null when it does not exist. */
  getSecret(namespace: string, name: string): Promise<V1Secret | null> {
    return getSecret(this.calls, namespace, name);
  }

  /** The decoded value of one key of a Secret; null when the Secret or the key is missing. */
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null> {
    return readSecretValue(this.calls, namespace, name, key);
  }

  /** The decoded values of several keys of one Secret, in one read; null when the Secret is missing. */
  readSecretValues(namespace: string, name: string, keys: readonly string[]): Promise<Record<string, string> | null> {
    return readSecretValues(this.calls, namespace, name, keys);
  }

  /** Creates the generated auth Secret; AlreadyExists yields the existing password. See secrets.ts. */
  createAuthSecret(redis: RedisRef & { uid: string }, ref?: AuthSecretRef): Promise<GeneratedSecret> {
    return createAuthSecret(this.calls, redis, ref);
  }

  /** Reads a generated Secret (the auth one by default), creating it when absent (idempotent; safe to race). */
  ensureAuthSecret(
    redis: RedisRef & { uid: string },
    ref?: AuthSecretRef,
    owner?: SecretOwner,
  ): Promise<GeneratedSecret> {
    return ensureAuthSecret(this.calls, redis, ref, owner);
  }

  /** The PersistentVolumeClaims of one Redis (by its pod selector labels, which its claims carry). See volumes.ts. */
  listRedisClaims(namespace: string, name: string): Promise<V1PersistentVolumeClaim[]> {
    return listRedisClaims(this.volumeCalls, namespace, name);
  }

  /** Every StorageClass (whether each allows volume expansion). */
  listStorageClasses(): Promise<V1StorageClass[]> {
    return listStorageClasses(this.volumeCalls);
  }

  /** One JSON merge patch of a claim's storage request and/or annotations; `uid` guards the incarnation. */
  patchClaim(namespace: string, name: string, changes: ClaimChanges): Promise<V1PersistentVolumeClaim> {
    return patchClaim(this.volumeCalls, namespace, name, changes);
  }

  /** The StatefulSet, or null when it does not exist. */
  getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | null> {
    return getStatefulSet(this.volumeCalls, namespace, name);
  }

  /** Deletes a StatefulSet with propagationPolicy Orphan (its pods keep running) and a uid precondition. */
  deleteStatefulSetOrphan(namespace: string, name: string, uid: string): Promise<void> {
    return deleteStatefulSetOrphan(this.volumeCalls, namespace, name, uid);
  }

  /** An informer over the Leases of one namespace (sharded leadership). Call start(). */
  leaseInformer(namespace: string): MultiInformer<V1Lease> {
    return leaseInformer(this.scope, namespace);
  }

  /** A LeaseClient (for LeaderElector) on namespace/name with its own request timeout. */
  leaseClient(namespace: string, name: string, requestTimeoutMs: number): LeaseClient {
    return new KubeLeaseClient(this.coordination, namespace, name, requestTimeoutMs);
  }
}
