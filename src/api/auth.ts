// Which Secrets and keys hold a Redis' passwords, and who the operator is on a node: the one answer
// the hook (the pods' env and start-up config, the Secrets the sidecar reports on, the
// AuthSecretMissing condition) and the sidecar (which Secrets it reads, and creates) share.
// Invariants:
// - The `default` user's password: spec.auth, when given, is used as is (validation defaults its
//   key); otherwise the generated childNames(name).generatedAuthSecret under DEFAULT_PASSWORD_KEY.
// - The operator's own user (OPERATOR_USER): its password is always generated, in
//   childNames(name).operatorSecret. Probes, replication and the sidecar use it, never `default`,
//   so rotating the password clients use never touches them.
// - The exporter's own user (EXPORTER_USER): read-only diagnostics and no key or channel at all,
//   its password always generated, in childNames(name).exporterSecret, never rotated (the
//   exporter reads it from its env once). It replaces the operator's user in the exporter, so a
//   metrics port never holds a password that can write, replicate or read data.
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

/** The ACL user the metrics exporter (spec.monitoring.exporter) authenticates as. */
export const EXPORTER_USER = 'redis-exporter';
/**
 * Its rules, found by running redis_exporter (1.45 and newer) against an ACL user and reading
 * ACL LOG. They first take away everything (keys, channels, selectors, commands), so applying
 * them to an existing user (keeping its passwords) leaves exactly these. Deliberately missing:
 * CONFIG GET (it reads masterauth and every password-like setting; the exporter copes without it
 * and loses only redis_config_maxmemory / maxclients / io_threads, maxmemory stays in
 * redis_memory_max_bytes from INFO), SLOWLOG GET (the arguments of slow commands are key names and
 * values) and CLIENT LIST (other clients' addresses and names).
 */
export const EXPORTER_RULES = [
  'resetkeys',
  'resetchannels',
  'clearselectors',
  '-@all',
  '+ping',
  '+info',
  '+client|setname',
  '+cluster|info',
  '+latency|latest',
  '+latency|histogram',
  '+slowlog|len',
] as const;

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

/** The Secret (always generated) with the password of the exporter's user on Redis or RedisCluster `name`. */
export function exporterSecretRef(name: string): AuthSecretRef {
  return { secretName: childNames(name).exporterSecret, key: DEFAULT_PASSWORD_KEY, generated: true };
}
