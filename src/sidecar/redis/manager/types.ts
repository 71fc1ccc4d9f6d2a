// What a worker needs from outside: its options, the Kubernetes calls it makes, the leadership it
// checks before every write, and the test seams around each step. KubeClient implements KubeWriter.
import type { V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AuthSecretRef } from '../../../api/auth.ts';
import type { ManagerTiming } from '../../config.ts';
import type { SidecarMetrics } from '../../metrics.ts';
import type { FailurePolicyConfig } from '../../core/failure-policy.ts';
import type { Step } from '../decide/index.ts';
import type { GeneratedSecret, RedisRef } from '../../adapters/kube/client.ts';
import type { EventSink } from '../../core/events.ts';
import type { PodPatcher } from '../../core/pod-labels.ts';
import type { LeaderView } from '../../core/leader.ts';
import type { Sleep } from '../../core/sleep.ts';

export type { LeaderView } from '../../core/leader.ts';

/** The Kubernetes calls a worker makes (KubeClient implements them). */
export interface KubeWriter extends PodPatcher, EventSink {
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  readSecretValues(namespace: string, name: string, keys: readonly string[]): Promise<Record<string, string> | null>;
  ensureAuthSecret(redis: RedisRef & { uid: string }, ref?: AuthSecretRef): Promise<GeneratedSecret>;
}

/** Test seams: called around every step the leader applies (after its leader check). */
export interface RedisHooks {
  beforeStep?(redis: RedisRef, step: Step): void | Promise<void>;
  afterStep?(redis: RedisRef, step: Step, ok: boolean): void | Promise<void>;
}

export interface RedisWorkerOptions {
  namespace: string;
  name: string;
  kube: KubeWriter;
  leader: LeaderView;
  logger: Logger;
  metrics: SidecarMetrics;
  timing: ManagerTiming;
  /** The pods the informer holds (any Redis); the worker keeps its own. */
  pods: () => V1Pod[];
  /** The StatefulSets the informer holds (any Redis): their update revision drives rollouts. */
  statefulSets?: (() => V1StatefulSet[]) | undefined;
  redisLocalAddress?: string | undefined;
  hooks?: RedisHooks | undefined;
  failurePolicy?: FailurePolicyConfig | undefined;
  /** Monotonic ms (default performance.now). */
  now?: (() => number) | undefined;
  /** Waits ms, or until its signal aborts (default core/sleep.ts). */
  sleep?: Sleep | undefined;
}
