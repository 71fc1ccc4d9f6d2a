// Which Secrets and keys hold a Redis' passwords, and who the operator is on a node: the one answer
// the hook (the pods' env and start-up config, the Secrets the sidecar reports on, the
// AuthSecretMissing condition) and the sidecar (which Secrets it reads, and creates) share.
// Invariants:
// - The `default` user's password: spec.auth, when given, is used as is (validation defaults its
//   key); otherwise the generated childNames(name).generatedAuthSecret under DEFAULT_PASSWORD_KEY.
// - The operator's own user (OPERATOR_USER): its password is always generated, in
//   childNames(name).operatorSecret. Probes, replication and the sidecar use it, never `default`,
//   so rotating the password clients use never touches them.
// - Only the sidecar creates generated Secrets. Renaming any of this is an API change: running
//   clusters hold these Secrets and nodes hold this user.
import { childNames, DEFAULT_PASSWORD_KEY } from './labels.ts';
import type { RedisSpec } from './schema.ts';

export interface AuthSecretRef {
  secretName: string;
  key: string;
  /** No spec.auth: the operator's own Secret, created by the sidecar. */
  generated: boolean;
}

/** The ACL user the operator's probes, replication links and sidecar authenticate as. */
export const OPERATOR_USER = 'redis-operator';
/** Its rules: everything (it replicates, promotes, fences and manages users). */
export const OPERATOR_RULES = ['~*', '&*', '+@all'] as const;

/** Where the password of Redis `name` with (validated) `spec` lives. */
export function authSecretRef(name: string, spec: Pick<RedisSpec, 'auth'>): AuthSecretRef {
  if (spec.auth) return { secretName: spec.auth.secretName, key: spec.auth.key, generated: false };
  return generatedAuthSecretRef(name);
}

/** The Secret the sidecar creates for Redis `name` when its spec has no auth. */
export function generatedAuthSecretRef(name: string): AuthSecretRef {
  return { secretName: childNames(name).generatedAuthSecret, key: DEFAULT_PASSWORD_KEY, generated: true };
}

/** The Secret (always generated) with the password of the operator's user on Redis `name`. */
export function operatorSecretRef(name: string): AuthSecretRef {
  return { secretName: childNames(name).operatorSecret, key: DEFAULT_PASSWORD_KEY, generated: true };
}
