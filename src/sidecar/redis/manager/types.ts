// What a worker needs from outside: the Kubernetes calls it makes, the leadership it checks
// before every write, and the test seams around each step. KubeClient implements KubeWriter.
import type { V1Pod } from '@kubernetes/client-node';
import type { AuthSecretRef } from '../../../api/auth.ts';
import type { Step } from '../decide/index.ts';
import type { GeneratedSecret, RedisRef } from '../../adapters/kube/client.ts';

/** The Kubernetes calls a worker makes (KubeClient implements them). */
export interface KubeWriter {
  patchPodMetadata(
    namespace: string,
    name: string,
    changes: { labels?: Record<string, string | null>; annotations?: Record<string, string | null>; uid?: string },
  ): Promise<V1Pod>;
  emitEvent(redis: RedisRef, type: 'Normal' | 'Warning', reason: string, message: string): Promise<boolean>;
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  readSecretValues(namespace: string, name: string, keys: readonly string[]): Promise<Record<string, string> | null>;
  ensureAuthSecret(redis: RedisRef & { uid: string }, ref?: AuthSecretRef): Promise<GeneratedSecret>;
}

export interface LeaderView {
  isLeader(): boolean;
}

/** Test seams: called around every step the leader applies (after its leader check). */
export interface ManagerHooks {
  beforeStep?(redis: RedisRef, step: Step): void | Promise<void>;
  afterStep?(redis: RedisRef, step: Step, ok: boolean): void | Promise<void>;
}
