// The backup job's configuration, from its environment (the Job's env, from the Redis spec and
// its Secrets), checked at start-up: every problem names the variable, all are reported at once.
// Pure: a function of the env object it is given.
import { integerIn, logLevel, present, refuse, type Env, type LogLevel } from '../runtime/env.ts';

export interface BackupConfig {
  /** The Redis this backs up (the key layout and the logs name it). */
  namespace: string;
  name: string;
  /** Where to read the snapshot: the replicas Service (any replica), else the master's. */
  sources: Array<{ host: string; port: number }>;
  username: string;
  password: string;
  /** With spec.tls: the CA file the node's certificate must chain to. */
  tlsCaFile: string | undefined;
  s3: { bucket: string; region: string; endpoint: string | undefined; prefix: string; accessKeyId: string; secretAccessKey: string };
  retention: { days: number | undefined; count: number | undefined };
  /** Where the result goes for the pod's status (Kubernetes' terminationMessagePath). */
  terminationLog: string;
  logLevel: LogLevel;
}

export type ConfigResult = { ok: true; config: BackupConfig } | { ok: false; errors: string[] };

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
  const endpoint = present(env, 'S3_ENDPOINT');
  if (endpoint !== undefined && !/^https?:\/\/[^/\s]+/.test(endpoint)) errors.push(refuse('S3_ENDPOINT', endpoint, 'must be an http(s) URL').error);
  const level = logLevel(env);
  if (!level.ok) errors.push(level.error);
  const config: BackupConfig = {
    namespace,
    name,
    sources,
    username: required('REDIS_USERNAME', "the operator's ACL user"),
    password: required('REDIS_PASSWORD', "the operator user's password (from the <name>-operator Secret)"),
    tlsCaFile: present(env, 'REDIS_TLS_CA_FILE'),
    s3: {
      bucket: required('S3_BUCKET', 'spec.backup.storage.s3.bucket'),
      region: required('S3_REGION', 'spec.backup.storage.s3.region'),
      endpoint,
      prefix: present(env, 'S3_PREFIX') ?? '',
      accessKeyId: required('AWS_ACCESS_KEY_ID', 'from the credentials Secret named in spec.backup.storage.s3'),
      secretAccessKey: required('AWS_SECRET_ACCESS_KEY', 'from the credentials Secret named in spec.backup.storage.s3'),
    },
    retention: { days: optionalInt('RETENTION_DAYS', 36500), count: optionalInt('RETENTION_COUNT', 100000) },
    terminationLog: present(env, 'TERMINATION_LOG') ?? '/dev/termination-log',
    logLevel: level.ok ? level.value : 'info',
  };
  return errors.length > 0 ? { ok: false, errors } : { ok: true, config };
}
