// What a worker needs from outside: the Kubernetes calls it makes, the leadership it checks
// before every write, and the test seams around each step. KubeClient implements KubeWriter.
import type { AuthSecretRef } from '../../../api/auth.ts';
import type { Step } from '../decide/index.ts';
import type { GeneratedSecret, RedisRef } from '../../adapters/kube/client.ts';
import type { EventSink } from '../../core/events.ts';
import type { PodPatcher } from '../../core/pod-labels.ts';

export type { LeaderView } from '../../core/leader.ts';

/** The Kubernetes calls a worker makes (KubeClient implements them). */
export interface KubeWriter extends PodPatcher, EventSink {
  readSecretValue(namespace: string, name: string, key: string): Promise<string | null>;
  readSecretValues(namespace: string, name: string, keys: readonly string[]): Promise<Record<string, string> | null>;
  ensureAuthSecret(redis: RedisRef & { uid: string }, ref?: AuthSecretRef): Promise<GeneratedSecret>;
}

/** Test seams: called around every step the leader applies (after its leader check). */
export interface ManagerHooks {
  beforeStep?(redis: RedisRef, step: Step): void | Promise<void>;
  afterStep?(redis: RedisRef, step: Step, ok: boolean): void | Promise<void>;
}
