// From the informer's objects to the view's inputs: which Redises the Sentinel endpoint serves, under which name,
// with which password, and what each pod says of itself.
// Invariants: pure; a Redis is served only when its (validated) spec asks for it (spec.sentinel.enabled); a Redis
// with TLS is not served, since this endpoint speaks plaintext and clients would send its password in the clear
// (TLS on the endpoint is not built yet); the Sentinel password is the Redis's own password (the Secret of
// spec.auth or the generated <name>-auth): a client that may use the Redis may find its master, and no other.
import type { V1Pod } from '@kubernetes/client-node';
import { authSecretRef, type AuthSecretRef } from '../../../api/auth.ts';
import { REDIS_PORT, ROLE_LABEL, ROLE_MASTER, ROLE_REPLICA } from '../../../api/labels.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import type { SentinelPodInput, SentinelRedisInput } from './view.ts';

export function servesSentinel(spec: Pick<Partial<RedisSpec>, 'sentinel' | 'tls'>): boolean {
  return spec.sentinel?.enabled === true && spec.tls === undefined;
}

/** The Secret whose password Sentinel clients of this Redis give: the Redis's own. */
export function sentinelPasswordRef(name: string, spec: Pick<RedisSpec, 'auth'>): AuthSecretRef {
  return authSecretRef(name, spec);
}

export function podInput(pod: V1Pod): SentinelPodInput {
  const role = pod.metadata?.labels?.[ROLE_LABEL];
  const ready = (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  return {
    name: pod.metadata?.name ?? '',
    ip: pod.status?.podIP ?? '',
    // A pod on its way out is no master to send a client to, whatever its label still says.
    ready: ready && pod.metadata?.deletionTimestamp === undefined,
    role: role === ROLE_MASTER ? 'master' : role === ROLE_REPLICA ? 'replica' : undefined,
  };
}

/**
 * The view's input for one Redis, or null when it is not served. `password`: the Secret's value; null when the
 * Secret or key is missing (not served either: no password would mean no authentication), undefined while unread.
 */
export function sentinelInput(
  namespace: string,
  name: string,
  spec: Pick<Partial<RedisSpec>, 'sentinel' | 'tls'>,
  pods: readonly V1Pod[],
  password: string | null | undefined,
): SentinelRedisInput | null {
  if (!servesSentinel(spec) || password === null) return null;
  return {
    namespace,
    name,
    masterName: spec.sentinel?.masterName,
    password,
    port: REDIS_PORT,
    pods: pods.map(podInput).sort((a, b) => a.name.localeCompare(b.name)),
  };
}
