// What the hook needs to know about a Redis's (or RedisCluster's) Secrets, without their values:
// which Secrets and keys the spec names, the rule a password must meet to be given to Redis, and
// the report the sidecar writes on the parent (SECRETS_ANNOTATION) for the hook to read. The hook
// never asks Metacontroller for Secrets (their values would cross plain HTTP on every sync).
// Invariants:
// - The report carries names, resourceVersions and key NAMES only, never a value, and only for the
//   keys the spec names (a Secret's other keys are not the operator's business).
// - The report is canonical (entries by name, keys sorted), so an unchanged one is an unchanged
//   string and the sidecar writes it only when it changes.
// - parseSecretReport accepts only the exact shape formatSecretReport writes (an allow-list for
//   every string); anyone who can edit the parent can write the annotation, so anything else,
//   however small the deviation, reads as "not known yet", and the report is never trusted for
//   anything but status.
import { authSecretRef, exporterSecretRef, operatorSecretRef } from './auth.ts';
import type { RedisClusterSpec } from './rediscluster-schema.ts';
import type { RedisSpec } from './schema.ts';
import { TLS_CA_KEY, TLS_CERT_KEY, TLS_KEY_KEY, tlsSecretName } from './tls.ts';

export const SECRETS_ANNOTATION = 'redis.example.com/secrets';

/** A report longer than this is not read (the sidecar's is a few hundred bytes per Secret). */
export const MAX_REPORT_CHARS = 32_768;
const MAX_ENTRIES = 64;
// A Secret named by every user (32), the S3 credentials (2), TLS (3) and both passwords: 39 keys at most.
const MAX_KEYS = 64;

// A password Redis can be given safely (text.ts): the pods' start script applies the same rule;
// one breaking it is refused (a status condition names the Secret and key), never applied, never echoed.
export { passwordWritable } from './text.ts';

export type SecretRole = 'auth' | 'operator' | 'user' | 'tls' | 's3';

/** One use of a Secret by the spec: the keys read, whether they are passwords, and where it comes from. */
export interface SecretUse {
  name: string;
  role: SecretRole;
  keys: string[];
  /** The keys are passwords: each must be passwordWritable. */
  password: boolean;
  /** Where the spec names it, for messages: " (spec.auth.secretName)". */
  origin: string;
  /** What the lack of it means: "pods cannot start without their password". */
  consequence: string;
}

const S3_ORIGIN = ' (spec.backup.storage.s3.credentialsSecret)';

function authUses(name: string, spec: Pick<RedisSpec, 'auth' | 'monitoring'>): SecretUse[] {
  const auth = authSecretRef(name, spec);
  const operator = operatorSecretRef(name);
  const exporter = exporterSecretRef(name);
  const consequence = 'pods cannot start without their password';
  // The exporter's Secret only matters to pods that run the exporter (their env requires it).
  const exporterOn = spec.monitoring.enabled && spec.monitoring.exporter.enabled;
  return [
    {
      name: auth.secretName,
      role: 'auth',
      keys: [auth.key],
      password: true,
      origin: auth.generated ? ' (the sidecar creates it)' : ' (spec.auth.secretName)',
      consequence,
    },
    {
      name: operator.secretName,
      role: 'operator',
      keys: [operator.key],
      password: true,
      origin: " (the operator's own password: the sidecar creates it)",
      consequence,
    },
    ...(exporterOn
      ? [
          {
            name: exporter.secretName,
            role: 'operator' as const,
            keys: [exporter.key],
            password: true,
            origin: " (the metrics exporter's password: the sidecar creates it)",
            consequence: 'pods cannot start their exporter without its password',
          },
        ]
      : []),
  ];
}

interface WithS3 {
  backup?:
    | {
        storage: {
          s3?:
            | { credentialsSecret?: { name: string; accessKeyIdKey: string; secretAccessKeyKey: string } | undefined }
            | undefined;
        };
      }
    | undefined;
}

function s3Use(spec: WithS3): SecretUse[] {
  const creds = spec.backup?.storage.s3?.credentialsSecret;
  if (creds === undefined) return [];
  return [
    {
      name: creds.name,
      role: 's3',
      keys: [creds.accessKeyIdKey, creds.secretAccessKeyKey],
      password: false,
      origin: S3_ORIGIN,
      consequence: 'pods cannot start without the S3 access key',
    },
  ];
}

/** Every Secret a valid Redis spec names, in a fixed order: passwords, TLS, users, S3. */
export function redisSecretUses(name: string, spec: RedisSpec): SecretUse[] {
  const uses = authUses(name, spec);
  const tls = tlsSecretName(name, spec);
  if (tls !== undefined) {
    uses.push({
      name: tls,
      role: 'tls',
      keys: [TLS_CERT_KEY, TLS_KEY_KEY, TLS_CA_KEY],
      password: false,
      origin: spec.tls?.certManager ? ' (cert-manager writes it for the Certificate child)' : ' (spec.tls.secretName)',
      consequence: 'pods cannot start without their certificate',
    });
  }
  for (const [i, user] of (spec.users ?? []).entries()) {
    uses.push({
      name: user.passwordSecret.name,
      role: 'user',
      keys: [user.passwordSecret.key],
      password: true,
      origin: ` (spec.users[${i}].passwordSecret)`,
      consequence: `user ${user.name} is left as it is on the nodes`,
    });
  }
  return [...uses, ...s3Use(spec)];
}

/** Every Secret a valid RedisCluster spec names: its passwords and the S3 credentials. */
export function redisClusterSecretUses(name: string, spec: RedisClusterSpec): SecretUse[] {
  return [...authUses(name, spec), ...s3Use(spec)];
}

/** What the sidecar reads for one Secret: the keys the spec names, and which of them are passwords. */
export interface SecretNeed {
  name: string;
  keys: string[];
  passwordKeys: string[];
}

const sorted = (xs: Iterable<string>) => [...new Set(xs)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** The uses merged by Secret name, sorted by name (a Secret named twice is read once). */
export function secretNeeds(uses: readonly SecretUse[]): SecretNeed[] {
  const byName = new Map<string, { keys: string[]; passwordKeys: string[] }>();
  for (const use of uses) {
    const need = byName.get(use.name) ?? { keys: [], passwordKeys: [] };
    need.keys.push(...use.keys);
    if (use.password) need.passwordKeys.push(...use.keys);
    byName.set(use.name, need);
  }
  return sorted(byName.keys()).map((name) => {
    const need = byName.get(name)!;
    return { name, keys: sorted(need.keys), passwordKeys: sorted(need.passwordKeys) };
  });
}

/**
 * One Secret in the report: not found, or found with the named keys it has and the password keys that break the rule.
 */
export type ReportedSecret =
  { name: string; missing: true } | { name: string; resourceVersion: string; keys: string[]; unwritable: string[] };

/** The canonical annotation value. */
export function formatSecretReport(entries: readonly ReportedSecret[]): string {
  const canonical = [...entries]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((e) =>
      'missing' in e
        ? { name: e.name, missing: true }
        : { name: e.name, resourceVersion: e.resourceVersion, keys: sorted(e.keys), unwritable: sorted(e.unwritable) },
    );
  return JSON.stringify(canonical);
}

const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const KEY = /^[-._a-zA-Z0-9]{1,253}$/;
const RESOURCE_VERSION = /^[0-9A-Za-z._-]{1,64}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const fieldsAre = (o: Record<string, unknown>, names: readonly string[]) => {
  const own = Object.keys(o);
  return own.length === names.length && names.every((n) => Object.hasOwn(o, n));
};
const keyList = (v: unknown): v is string[] =>
  Array.isArray(v) && v.length <= MAX_KEYS && v.every((k) => typeof k === 'string' && KEY.test(k));

function entryOf(value: unknown): ReportedSecret | undefined {
  if (!isObject(value)) return undefined;
  const name = value['name'];
  if (typeof name !== 'string' || !NAME.test(name)) return undefined;
  if (fieldsAre(value, ['name', 'missing'])) return value['missing'] === true ? { name, missing: true } : undefined;
  if (!fieldsAre(value, ['name', 'resourceVersion', 'keys', 'unwritable'])) return undefined;
  const { resourceVersion, keys, unwritable } = value;
  if (
    typeof resourceVersion !== 'string' ||
    !RESOURCE_VERSION.test(resourceVersion) ||
    !keyList(keys) ||
    !keyList(unwritable)
  )
    return undefined;
  if (!unwritable.every((k) => keys.includes(k))) return undefined;
  return { name, resourceVersion, keys: sorted(keys), unwritable: sorted(unwritable) };
}

/**
 * The report on the parent, by Secret name; undefined when there is none, or it is not exactly
 * what the sidecar writes (too long, not JSON, a wrong type, a name or key outside the allowed
 * characters, a Secret twice): nothing is known then.
 */
export function parseSecretReport(value: unknown): Map<string, ReportedSecret> | undefined {
  if (typeof value !== 'string' || value.length > MAX_REPORT_CHARS) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length > MAX_ENTRIES) return undefined;
  const out = new Map<string, ReportedSecret>();
  for (const raw of parsed) {
    const entry = entryOf(raw);
    if (entry === undefined || out.has(entry.name)) return undefined;
    out.set(entry.name, entry);
  }
  return out;
}
