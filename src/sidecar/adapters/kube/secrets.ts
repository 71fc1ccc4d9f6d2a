// Reading Secrets, and creating a Redis' generated Secrets: the auth Secret of a Redis without
// spec.auth, and the operator user's Secret every Redis has.
// Invariants:
// - Which Secrets and keys are generated is api/auth.ts's answer, never restated here.
// - Creating is safe to race: AlreadyExists means another sidecar (or an earlier run) won, and
//   its password is the one every sidecar then uses; a password is never overwritten.
// - A generated Secret is owned by the Redis (controller reference), so it goes with it; a
//   RedisCluster's by the RedisCluster.
import { randomBytes } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { generatedAuthSecretRef, type AuthSecretRef } from '../../../api/auth.ts';
import {
  API_VERSION,
  APP_NAME,
  INSTANCE_LABEL,
  KIND,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NAME_LABEL,
} from '../../../api/labels.ts';
import { isConflict, isNotFound } from './errors.ts';
import { timeoutOptions, type CoreCalls, type RedisRef } from './request.ts';

export type GeneratedSecret = { password: string; created: boolean };

/** Who owns a generated Secret: a Redis by default; a RedisCluster passes its kind and pod labels. */
export interface SecretOwner {
  kind: string;
  /** The Secret's labels (name, instance, managed-by). */
  labels: Record<string, string>;
}

const redisOwner = (name: string): SecretOwner => ({
  kind: KIND,
  labels: { [NAME_LABEL]: APP_NAME, [INSTANCE_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY },
});

export function secretValue(secret: V1Secret | null, key: string): string | null {
  const b64 = secret?.data?.[key];
  if (b64 === undefined) return null;
  return Buffer.from(b64, 'base64').toString('utf8');
}

/** The Secret, or null when it does not exist. */
export async function getSecret(calls: CoreCalls, namespace: string, name: string): Promise<V1Secret | null> {
  try {
    return await calls.core.readNamespacedSecret({ namespace, name }, timeoutOptions(calls.timeoutMs));
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

/** The decoded value of one key of a Secret; null when the Secret or the key is missing. */
export async function readSecretValue(
  calls: CoreCalls,
  namespace: string,
  name: string,
  key: string,
): Promise<string | null> {
  const secret = await getSecret(calls, namespace, name);
  return secretValue(secret, key);
}

/** The decoded values of the keys a Secret has, in one read; null when the Secret is missing. */
export async function readSecretValues(
  calls: CoreCalls,
  namespace: string,
  name: string,
  keys: readonly string[],
): Promise<Record<string, string> | null> {
  const secret = await getSecret(calls, namespace, name);
  if (secret === null) return null;
  const out: Record<string, string> = {};
  for (const key of keys) {
    const value = secretValue(secret, key);
    if (value !== null) out[key] = value;
  }
  return out;
}

/**
 * Creates a generated Secret (`<name>-auth` by default, or `<name>-operator`) with a random 32-byte
 * password (hex) owned by the Redis (controller reference, so deleting the Redis deletes it).
 * AlreadyExists means another sidecar (or an earlier run) made it: its password is the one to use.
 */
export async function createAuthSecret(
  calls: CoreCalls,
  redis: RedisRef & { uid: string },
  ref: AuthSecretRef = generatedAuthSecretRef(redis.name),
  owner: SecretOwner = redisOwner(redis.name),
): Promise<GeneratedSecret> {
  const { secretName: name, key } = ref;
  const password = randomBytes(32).toString('hex');
  const body: V1Secret = {
    metadata: {
      name,
      namespace: redis.namespace,
      labels: owner.labels,
      // No blockOwnerDeletion: setting it needs update rights on redises/finalizers, which the sidecar does not have.
      ownerReferences: [
        { apiVersion: API_VERSION, kind: owner.kind, name: redis.name, uid: redis.uid, controller: true },
      ],
    },
    type: 'Opaque',
    data: { [key]: Buffer.from(password, 'utf8').toString('base64') },
  };
  try {
    await calls.core.createNamespacedSecret({ namespace: redis.namespace, body }, timeoutOptions(calls.timeoutMs));
    calls.logger.info(
      { namespace: redis.namespace, name: redis.name, secret: name },
      'created the generated auth secret',
    );
    return { password, created: true };
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  const existing = await readSecretValue(calls, redis.namespace, name, key);
  if (existing === null) throw new Error(`secret ${redis.namespace}/${name} exists but has no "${key}" key`);
  return { password: existing, created: false };
}

/** Reads a generated Secret, creating it when absent (idempotent; safe to race). */
export async function ensureAuthSecret(
  calls: CoreCalls,
  redis: RedisRef & { uid: string },
  ref: AuthSecretRef = generatedAuthSecretRef(redis.name),
  owner?: SecretOwner,
): Promise<GeneratedSecret> {
  const { secretName, key } = ref;
  const existing = await readSecretValue(calls, redis.namespace, secretName, key);
  if (existing !== null) return { password: existing, created: false };
  return createAuthSecret(calls, redis, ref, owner);
}
