// The backup job's configuration, from its environment (the Job's env, from the Redis spec and
// its Secrets), checked at start-up: every problem names the variable, all are reported at once.
// Pure: a function of the env object it is given.
// Storage: BACKUP_STORAGE=s3 (the default) needs the S3_* variables and both AWS_* keys or neither
// (the SDK's default chain then); BACKUP_STORAGE=pvc
// needs BACKUP_CLAIM (and BACKUP_DIR, default /backup) and never asks for the S3 ones. The key
// prefix is BACKUP_PREFIX, else S3_PREFIX, and the bucket and prefix are checked as at admission
// (api/backup-validate.ts): a CRD installed without its rules must not make a key outside them.
// The namespace and name must be object names: the folder (naming.ts) relies on it.
import { bucketProblem, prefixProblem } from '../api/backup-validate.ts';
import { integerIn, logLevel, present, refuse, type Env, type LogLevel } from '../runtime/env.ts';
import { isObjectName, type BackupOwner } from './naming.ts';

export interface S3Settings {
  bucket: string;
  region: string;
  endpoint: string | undefined;
  /** Undefined: the AWS SDK's default chain (IRSA, an instance role, ...). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
}

export type StorageConfig =
  ({ kind: 's3' } & S3Settings) | { kind: 'pvc'; /** Where the claim is mounted. */ dir: string; claim: string };

export interface BackupConfig {
  /** The Redis this backs up (the key layout and the logs name it). */
  namespace: string;
  name: string;
  /** BACKUP_SHARD: a RedisCluster shard's index; its backups go to that shard's folder (backupOwner). */
  shard: number | undefined;
  /** Where to read the snapshot: the replicas Service (any replica), else the master's. */
  sources: Array<{ host: string; port: number }>;
  username: string;
  password: string;
  /** With spec.tls: the CA file the node's certificate must chain to. */
  tlsCaFile: string | undefined;
  storage: StorageConfig;
  /** Before the owner's folder in every key ('' for none). */
  prefix: string;
  retention: { days: number | undefined; count: number | undefined };
  /** Where the result goes for the pod's status (Kubernetes' terminationMessagePath). */
  terminationLog: string;
  logLevel: LogLevel;
}

/**
 * Whose backups these are, which names their folder (naming.ts): the Redis, or a RedisCluster's
 * shard (BACKUP_SHARD set: its own folder, so retention counts per shard and a restore picks one
 * shard's snapshot).
 */
export function backupOwner(config: Pick<BackupConfig, 'namespace' | 'name' | 'shard'>): BackupOwner {
  return config.shard === undefined
    ? { kind: 'Redis', namespace: config.namespace, name: config.name }
    : { kind: 'RedisCluster', namespace: config.namespace, name: config.name, shard: config.shard };
}

export type ConfigResult = { ok: true; config: BackupConfig } | { ok: false; errors: string[] };

export const DEFAULT_BACKUP_DIR = '/backup';

export function backupConfig(env: Env): ConfigResult {
  const errors: string[] = [];
  const required = (name: string, why: string): string => {
    const v = present(env, name);
    if (v === undefined) errors.push(`${name} is required: ${why}`);
    return v ?? '';
  };
  const optionalInt = (name: string, max: number): number | undefined => {
    if (present(env, name) === undefined) return undefined;
    const f = integerIn(env, name, 0, 0, max);
    if (!f.ok) errors.push(f.error);
    return f.ok ? f.value : undefined;
  };
  const namespace = required('REDIS_NAMESPACE', 'the namespace of the Redis');
  const name = required('REDIS_NAME', 'the name of the Redis');
  const hosts = required('REDIS_HOSTS', 'where to read the snapshot from (host:port, comma-separated, replicas first)');
  const sources = hosts
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '')
    .flatMap((h) => {
      const m = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(h);
      if (!m || Number(m[2]) > 65535) {
        errors.push(refuse('REDIS_HOSTS', hosts, `"${h}" is not host:port`).error);
        return [];
      }
      return [{ host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) }];
    });
  const level = logLevel(env);
  if (!level.ok) errors.push(level.error);
  const kind = present(env, 'BACKUP_STORAGE') ?? 's3';
  if (kind !== 's3' && kind !== 'pvc') errors.push(refuse('BACKUP_STORAGE', kind, 'must be s3 or pvc').error);
  const prefixVar = present(env, 'BACKUP_PREFIX') !== undefined ? 'BACKUP_PREFIX' : 'S3_PREFIX';
  const prefix = present(env, prefixVar) ?? '';
  let storage: StorageConfig;
  if (kind === 'pvc') {
    storage = volumeStorage(
      env,
      required('BACKUP_CLAIM', 'the PersistentVolumeClaim backups go to (spec.backup.storage.pvc.claimName)'),
      errors,
    );
  } else {
    storage = { kind: 's3', ...s3Storage(env, required, errors) };
  }
  // On a volume the key is a path: nothing may lead outside the claim; in a bucket, nothing may
  // reach another owner's folder.
  const badPrefix = prefixProblem(prefix);
  if (badPrefix !== undefined) errors.push(refuse(prefixVar, prefix, badPrefix).error);
  for (const [variable, value] of [
    ['REDIS_NAMESPACE', namespace],
    ['REDIS_NAME', name],
  ] as const) {
    if (value !== '' && !isObjectName(value))
      errors.push(refuse(variable, value, 'must be a Kubernetes object name').error);
  }
  const shard = optionalInt('BACKUP_SHARD', 63);
  const config: BackupConfig = {
    namespace,
    name,
    shard,
    sources,
    username: required('REDIS_USERNAME', "the operator's ACL user"),
    password: required('REDIS_PASSWORD', "the operator user's password (from the <name>-operator Secret)"),
    tlsCaFile: present(env, 'REDIS_TLS_CA_FILE'),
    storage,
    prefix,
    retention: { days: optionalInt('RETENTION_DAYS', 36500), count: optionalInt('RETENTION_COUNT', 100000) },
    terminationLog: present(env, 'TERMINATION_LOG') ?? '/dev/termination-log',
    logLevel: level.ok ? level.value : 'info',
  };
  return errors.length > 0 ? { ok: false, errors } : { ok: true, config };
}

function s3Storage(env: Env, required: (name: string, why: string) => string, errors: string[]): S3Settings {
  const endpoint = present(env, 'S3_ENDPOINT');
  if (endpoint !== undefined && !/^https?:\/\/[^/\s]+/.test(endpoint))
    errors.push(refuse('S3_ENDPOINT', endpoint, 'must be an http(s) URL').error);
  const bucket = required('S3_BUCKET', 'spec.backup.storage.s3.bucket');
  const badBucket = bucket === '' ? undefined : bucketProblem(bucket);
  if (badBucket !== undefined) errors.push(refuse('S3_BUCKET', bucket, badBucket).error);
  return {
    bucket,
    region: required('S3_REGION', 'spec.backup.storage.s3.region'),
    endpoint,
    credentials: s3Credentials(env, errors),
  };
}

/**
 * The access key from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (spec...credentialsSecret), or
 * neither: then the SDK's default chain finds them (IRSA, an instance role). One without the other
 * is refused, naming the missing one. Shared with restore.ts.
 */
export function s3Credentials(
  env: Env,
  errors: string[],
): { accessKeyId: string; secretAccessKey: string } | undefined {
  const accessKeyId = present(env, 'AWS_ACCESS_KEY_ID');
  const secretAccessKey = present(env, 'AWS_SECRET_ACCESS_KEY');
  if (accessKeyId === undefined && secretAccessKey === undefined) return undefined;
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    const missing = accessKeyId === undefined ? 'AWS_ACCESS_KEY_ID' : 'AWS_SECRET_ACCESS_KEY';
    errors.push(
      `${missing} is required with ${missing === 'AWS_ACCESS_KEY_ID' ? 'AWS_SECRET_ACCESS_KEY' : 'AWS_ACCESS_KEY_ID'}: both come from the credentials Secret (or neither, for the SDK's default chain)`,
    );
    return undefined;
  }
  return { accessKeyId, secretAccessKey };
}

/** A claim's mount point from `variable` (default /backup): an absolute path. Shared with restore.ts. */
export function mountDir(env: Env, variable: 'BACKUP_DIR' | 'RESTORE_DIR', errors: string[]): string {
  const dir = present(env, variable) ?? DEFAULT_BACKUP_DIR;
  if (!dir.startsWith('/'))
    errors.push(refuse(variable, dir, 'must be an absolute path (where the claim is mounted)').error);
  return dir;
}

function volumeStorage(env: Env, claim: string, errors: string[]): StorageConfig {
  if (claim !== '' && !isObjectName(claim))
    errors.push(refuse('BACKUP_CLAIM', claim, 'must be a PersistentVolumeClaim name').error);
  return { kind: 'pvc', dir: mountDir(env, 'BACKUP_DIR', errors), claim };
}
