// What a RedisCluster worker needs from outside: the Kubernetes calls it makes (KubeClient
// implements them), the leadership it checks before every write, and the test seams.
import type { KubernetesObject, V1Pod, V1Secret, V1StatefulSet } from '@kubernetes/client-node';
import type { AuthSecretRef } from '../../../api/auth.ts';
import type {
  GeneratedSecret,
  MultiInformer,
  RedisClusterObject,
  RedisRef,
  SecretOwner,
} from '../../adapters/kube/client.ts';
import type { ClusterStep } from '../decide/types.ts';
import type { EventSink } from '../../core/events.ts';
import type { PodPatcher } from '../../core/pod-labels.ts';

export type { EventToSend } from '../../core/events.ts';
export type { LeaderView } from '../../core/leader.ts';

export interface ClusterKube extends PodPatcher, EventSink {
  redisClusterInformer(): MultiInformer<RedisClusterObject & KubernetesObject>;
  clusterPodInformer(): MultiInformer<V1Pod>;
  patchClusterAnnotations(
    ref: RedisRef,
    annotations: Record<string, string | null>,
    resourceVersion?: string,
  ): Promise<void>;
  scaleCluster(ref: RedisRef, shards: number): Promise<void>;
  /** A rollout replaces one pod at a time (uid precondition); absent in test fakes: no pod is deleted. */
  deletePod?(namespace: string, name: string, uid: string): Promise<void>;
  /** The StatefulSets' update revisions drive rollouts; absent in test fakes: no rollout starts. */
  statefulSetInformer?(): MultiInformer<V1StatefulSet>;
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  /** The whole Secret (the report on the RedisCluster's Secrets); absent in test fakes: no report. */
  getSecret?(namespace: string, name: string): Promise<V1Secret | null>;
  ensureAuthSecret(
    ref: RedisRef & { uid: string },
    secret?: AuthSecretRef,
    owner?: SecretOwner,
  ): Promise<GeneratedSecret>;
}

/** Test seams: a test stops a worker at a chosen point (a crash mid-migration). */
export interface RedisClusterHooks {
  beforeStep?(ref: RedisRef, step: ClusterStep): void | Promise<void>;
  /** After each MIGRATE batch of a slot move (the slot is open on both ends then). */
  afterBatch?(ref: RedisRef, slot: number, keys: number): void | Promise<void>;
}
