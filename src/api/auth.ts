// Which Secret and key hold a Redis' password: the one answer the hook (the pods' env, the
// customize hook's related Secret, the AuthSecretMissing condition) and the sidecar (which Secret
// it reads, and creates when generated) share.
// Invariants: spec.auth, when given, is used as is (validation defaults its key); otherwise the
// Secret is the generated childNames(name).generatedAuthSecret under DEFAULT_PASSWORD_KEY, which
// only the sidecar creates. Renaming either is an API change: running clusters hold these Secrets.
import { childNames, DEFAULT_PASSWORD_KEY } from './labels.ts';
import type { RedisSpec } from './schema.ts';

export interface AuthSecretRef {
  secretName: string;
  key: string;
  /** No spec.auth: the operator's own Secret, created by the sidecar. */
  generated: boolean;
}

/** Where the password of Redis `name` with (validated) `spec` lives. */
export function authSecretRef(name: string, spec: Pick<RedisSpec, 'auth'>): AuthSecretRef {
  if (spec.auth) return { secretName: spec.auth.secretName, key: spec.auth.key, generated: false };
  return generatedAuthSecretRef(name);
}

/** The Secret the sidecar creates for Redis `name` when its spec has no auth. */
export function generatedAuthSecretRef(name: string): AuthSecretRef {
  return { secretName: childNames(name).generatedAuthSecret, key: DEFAULT_PASSWORD_KEY, generated: true };
}
