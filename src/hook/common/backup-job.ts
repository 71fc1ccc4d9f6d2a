// The backup pod, built once for every way a backup runs: the CronJob <name>-backup (spec.backup),
// an on-demand RedisBackup's Job, and a RedisCluster shard's backup (backupPodSpecFor). It runs
// `node src/backup/main.ts` in the operator image and reads the snapshot over the replication
// protocol from the replicas Service first, the master's only when there is no replica, so the
// master never forks for a backup.
// Invariants:
// - The pod never carries the Redis pods' selector labels (backupSelectorLabels): no Service,
//   PDB or sidecar can take it for a Redis pod.
// - Secrets reach it only as secretKeyRef env (the operator's password, the S3 keys): nothing
//   secret is written into the Job.
// - A failure the backup calls permanent (exit 2: refused credentials, no bucket, bad config)
//   fails the Job at once (podFailurePolicy); a temporary one (exit 1) is retried by the Job,
//   then by the next schedule. The result is one JSON line in the termination message.
import type { IJobSpec } from 'kubernetes-models/batch/v1/JobSpec';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IEnvVar } from 'kubernetes-models/v1/EnvVar';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import type { IVolumeMount } from 'kubernetes-models/v1/VolumeMount';
import { OPERATOR_USER, operatorSecretRef } from '../../api/auth.ts';
import {
  BACKUP_CONTAINER,
  BACKUP_MOUNT,
  BACKUP_TRIGGER_LABEL,
  BACKUP_VOLUME,
  TERMINATION_LOG,
  backupSelectorLabels,
} from '../../api/backup.ts';
import { REDIS_PORT, TLS_MOUNT, TLS_VOLUME, childNames } from '../../api/labels.ts';
import { redisClusterChildNames } from '../../api/rediscluster-names.ts';
import type { BackupSpec, BackupStorage, RedisSpec } from '../../api/schema.ts';
import { TLS_CA_KEY, tlsSecretName } from '../../api/tls.ts';
import { readStorage } from '../../api/validate.ts';
import { restrictedContainer } from './pod-template.ts';

/** The operator image's user (the Dockerfile's USER 1000). */
export const OPERATOR_UID = 1000;
const BACKUP_COMMAND = ['node', 'src/backup/main.ts'];

const secretEnv = (name: string, secret: string, key: string): IEnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: secret, key } },
});

/** What the backup and restore containers need to reach the storage: env, and a volume for a claim. */
export function storageAccess(
  storage: BackupStorage,
  readOnly: boolean,
): { env: IEnvVar[]; volumes: IVolume[]; mounts: IVolumeMount[] } {
  if (storage.pvc !== undefined) {
    return {
      env: [
        { name: 'BACKUP_STORAGE', value: 'pvc' },
        { name: 'BACKUP_CLAIM', value: storage.pvc.claimName },
        { name: 'BACKUP_DIR', value: BACKUP_MOUNT },
        { name: 'RESTORE_DIR', value: BACKUP_MOUNT },
      ],
      volumes: [{ name: BACKUP_VOLUME, persistentVolumeClaim: { claimName: storage.pvc.claimName, readOnly } }],
      mounts: [{ name: BACKUP_VOLUME, mountPath: BACKUP_MOUNT, readOnly }],
    };
  }
  const s3 = storage.s3;
  const env: IEnvVar[] = [{ name: 'BACKUP_STORAGE', value: 's3' }];
  if (s3 !== undefined) {
    env.push({ name: 'S3_BUCKET', value: s3.bucket }, { name: 'S3_REGION', value: s3.region });
    if (s3.endpoint !== undefined) env.push({ name: 'S3_ENDPOINT', value: s3.endpoint });
    if (s3.prefix !== '') env.push({ name: 'S3_PREFIX', value: s3.prefix });
    const creds = s3.credentialsSecret;
    if (creds !== undefined) {
      env.push(
        secretEnv('AWS_ACCESS_KEY_ID', creds.name, creds.accessKeyIdKey),
        secretEnv('AWS_SECRET_ACCESS_KEY', creds.name, creds.secretAccessKeyKey),
      );
    }
  }
  return { env, volumes: [], mounts: [] };
}

/**
 * The storage a backup Job writes to, read back from its pod template's env (the inverse of
 * storageAccess), checked as any recorded storage is: what a status records when the one it
 * wrote at the Job's creation did not land (a status write lost to a quicker resync).
 */
export function storageOfJob(job: unknown): BackupStorage | undefined {
  const containers = (job as { spec?: { template?: { spec?: { containers?: IContainer[] } } } })?.spec?.template?.spec
    ?.containers;
  const env = containers?.find((c) => c.name === BACKUP_CONTAINER)?.env ?? [];
  const value = (name: string) => env.find((e) => e.name === name)?.value;
  const secret = (name: string) => env.find((e) => e.name === name)?.valueFrom?.secretKeyRef;
  const kind = value('BACKUP_STORAGE');
  if (kind === 'pvc') {
    const claimName = value('BACKUP_CLAIM');
    return claimName !== undefined ? readStorage({ pvc: { claimName } }) : undefined;
  }
  if (kind !== 's3') return undefined;
  const id = secret('AWS_ACCESS_KEY_ID');
  const key = secret('AWS_SECRET_ACCESS_KEY');
  const endpoint = value('S3_ENDPOINT');
  return readStorage({
    s3: {
      bucket: value('S3_BUCKET'),
      region: value('S3_REGION'),
      ...(endpoint !== undefined ? { endpoint } : {}),
      prefix: value('S3_PREFIX') ?? '',
      ...(id?.name !== undefined && id.name === key?.name
        ? { credentialsSecret: { name: id.name, accessKeyIdKey: id.key, secretAccessKeyKey: key.key } }
        : {}),
    },
  });
}

/**
 * The Redis a backup reads: a Redis kind's own CronJob and a RedisBackup's Job back up the same
 * way, so both hand over the Redis's identity and validated spec.
 */
export interface BackedUpRedis {
  name: string;
  namespace: string;
  spec: RedisSpec;
}

/** Where to read the snapshot: any replica through the replicas Service, then the master's. */
export function snapshotSources(redis: BackedUpRedis): string {
  const names = childNames(redis.name);
  const at = (service: string) => `${service}.${redis.namespace}.svc:${REDIS_PORT}`;
  return redis.spec.replicas > 0 ? `${at(names.replicasService)},${at(names.masterService)}` : at(names.masterService);
}

/**
 * Where a RedisCluster shard's backup reads: its pods by their stable DNS names, the higher ordinals
 * (replicas at creation) first; the backup program takes the first replica that answers, roles move on failover.
 */
export function shardBackupHosts(cluster: string, namespace: string, shard: number, pods: number): string {
  const names = redisClusterChildNames(cluster);
  const ordinals = [...Array.from({ length: Math.max(0, pods - 1) }, (_, k) => k + 1), 0];
  return ordinals
    .map((k) => `${names.shardSet(shard)}-${k}.${names.headless}.${namespace}.svc:${REDIS_PORT}`)
    .join(',');
}

/**
 * What one backup pod reads and where it writes: the parts a Redis and a RedisCluster shard give
 * differently. `env` comes right after REDIS_NAME (a shard's BACKUP_SHARD).
 */
export interface BackupSource {
  namespace: string;
  name: string;
  /** REDIS_HOSTS: host:port, comma-separated, in the order they are tried. */
  hosts: string;
  /** The TLS Secret whose CA the pod verifies the node with, when TLS is on. */
  tlsSecret: string | undefined;
  backup: Pick<BackupSpec, 'retention' | 'retentionCount'> | undefined;
  imagePullSecrets: Array<{ name: string }> | undefined;
  env?: IEnvVar[];
}

/** The backup pod of Redis redis.name, writing to `storage`. */
export function backupPodSpec(redis: BackedUpRedis, storage: BackupStorage, operatorImage: string): IPodSpec {
  return backupPodSpecFor(
    {
      namespace: redis.namespace,
      name: redis.name,
      hosts: snapshotSources(redis),
      tlsSecret: tlsSecretName(redis.name, redis.spec),
      backup: redis.spec.backup,
      imagePullSecrets: redis.spec.imagePullSecrets,
    },
    storage,
    operatorImage,
  );
}

/** The backup pod for `source`, writing to `storage`. */
export function backupPodSpecFor(source: BackupSource, storage: BackupStorage, operatorImage: string): IPodSpec {
  const access = storageAccess(storage, false);
  const operator = operatorSecretRef(source.name);
  const tls = source.tlsSecret;
  const env: IEnvVar[] = [
    { name: 'REDIS_NAMESPACE', value: source.namespace },
    { name: 'REDIS_NAME', value: source.name },
    ...(source.env ?? []),
    { name: 'REDIS_HOSTS', value: source.hosts },
    { name: 'REDIS_USERNAME', value: OPERATOR_USER },
    secretEnv('REDIS_PASSWORD', operator.secretName, operator.key),
    ...(tls !== undefined ? [{ name: 'REDIS_TLS_CA_FILE', value: `${TLS_MOUNT}/${TLS_CA_KEY}` }] : []),
    ...access.env.filter((e) => e.name !== 'RESTORE_DIR'),
    ...(source.backup?.retention !== undefined
      ? [{ name: 'RETENTION_DAYS', value: String(source.backup.retention) }]
      : []),
    ...(source.backup?.retentionCount !== undefined
      ? [{ name: 'RETENTION_COUNT', value: String(source.backup.retentionCount) }]
      : []),
    { name: 'TERMINATION_LOG', value: TERMINATION_LOG },
  ];
  const container: IContainer = {
    name: BACKUP_CONTAINER,
    image: operatorImage,
    command: BACKUP_COMMAND,
    env,
    // The snapshot is streamed (read, upload part, next): memory stays at a few upload parts.
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
    securityContext: restrictedContainer(OPERATOR_UID),
    terminationMessagePath: TERMINATION_LOG,
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
  const mounts = [
    ...(tls !== undefined ? [{ name: TLS_VOLUME, mountPath: TLS_MOUNT, readOnly: true }] : []),
    ...access.mounts,
  ];
  // Left out when empty, as the API server stores it: an empty list here would differ from the
  // stored object on every sync, and Metacontroller would update the CronJob on every resync.
  if (mounts.length > 0) container.volumeMounts = mounts;
  const volumes: IVolume[] = [
    ...(tls !== undefined
      ? [{ name: TLS_VOLUME, secret: { secretName: tls, items: [{ key: TLS_CA_KEY, path: TLS_CA_KEY }] } }]
      : []),
    ...access.volumes,
  ];
  return {
    restartPolicy: 'Never',
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: OPERATOR_UID,
      runAsGroup: OPERATOR_UID,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    ...(source.imagePullSecrets !== undefined && source.imagePullSecrets.length > 0
      ? ({ imagePullSecrets: source.imagePullSecrets } satisfies Partial<IPodSpec>)
      : {}),
    containers: [container],
    ...(volumes.length > 0 ? ({ volumes } satisfies Partial<IPodSpec>) : {}),
  };
}

/** The Job spec both ways share: retries for temporary failures, none for permanent ones. */
export function backupJobSpec(
  redis: BackedUpRedis,
  storage: BackupStorage,
  operatorImage: string,
  trigger: string,
): IJobSpec {
  return backupJobSpecFor(
    { ...backupSelectorLabels(redis.name), [BACKUP_TRIGGER_LABEL]: trigger },
    backupPodSpec(redis, storage, operatorImage),
  );
}

/** The Job around a backup pod whose template carries `labels`. */
export function backupJobSpecFor(labels: Record<string, string>, pod: IPodSpec): IJobSpec {
  return {
    backoffLimit: 2,
    // An hour is far above a 1 GiB backup here (about 40 s); a stuck snapshot must not block the next schedule forever.
    activeDeadlineSeconds: 3600,
    podFailurePolicy: {
      rules: [{ action: 'FailJob', onExitCodes: { containerName: BACKUP_CONTAINER, operator: 'In', values: [2] } }],
    },
    template: { metadata: { labels }, spec: pod },
  };
}
