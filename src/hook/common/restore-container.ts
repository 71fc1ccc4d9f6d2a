// The restore init container of the pods of a Redis or RedisCluster created with spec.restore: it
// loads the backup into an EMPTY data volume before redis-server starts (src/backup/restore-main.ts
// in the operator image). Every pod of a Redis restores, so whichever the sidecar makes master has
// the data; of a RedisCluster shard only pod 0 does (firstPodOnly), the master the shard is formed
// around, since a node holding keys can never be made a replica.
// Invariants:
// - The location comes from the <name>-config ConfigMap (the key given, optional):
//   the hook removes the key once the restore is complete, so a pod created later (a scale-up, a
//   lost volume) starts empty and syncs from the master; the template itself never changes, so
//   finishing a restore rolls no pod.
// - It never overwrites data: restore-main leaves a volume that holds data, or was restored once.
// - It runs as the redis user, so the files it writes are Redis's own.
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IVolume } from 'kubernetes-models/v1/Volume';
import { RESTORE_CONTAINER, TERMINATION_LOG } from '../../api/backup.ts';
import { DATA_MOUNT, DATA_VOLUME } from '../../api/labels.ts';
import type { BackupStorage } from '../../api/schema.ts';
import { storageAccess } from './backup-job.ts';
import { restrictedContainer } from './pod-template.ts';

/** What the restore needs from the storage: how to reach it, never which bucket key (the location says). */
const RESTORE_ENV = new Set([
  'BACKUP_STORAGE',
  'RESTORE_DIR',
  'S3_REGION',
  'S3_ENDPOINT',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
]);

export interface RestoreInit {
  initContainers: IContainer[];
  volumes: IVolume[];
}

export interface RestoreFrom {
  operatorImage: string;
  /** The ConfigMap and key the location is read from. */
  configMap: string;
  locationKey: string;
  appendOnly: boolean;
  /** Only the pod whose name ends in -0 restores (a RedisCluster shard). */
  firstPodOnly?: boolean;
}

export function restoreInit(from: RestoreFrom, storage: BackupStorage, uid: number): RestoreInit {
  const access = storageAccess(storage, true);
  return {
    initContainers: [
      {
        name: RESTORE_CONTAINER,
        image: from.operatorImage,
        command: ['node', 'src/backup/restore-main.ts'],
        env: [
          {
            name: 'RESTORE_LOCATION',
            valueFrom: {
              configMapKeyRef: { name: from.configMap, key: from.locationKey, optional: true },
            },
          },
          ...(from.firstPodOnly === true
            ? [
                { name: 'RESTORE_FIRST_POD_ONLY', value: 'yes' },
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              ]
            : []),
          { name: 'APPENDONLY', value: from.appendOnly ? 'yes' : 'no' },
          { name: 'DATA_DIR', value: DATA_MOUNT },
          { name: 'TERMINATION_LOG', value: TERMINATION_LOG },
          ...access.env.filter((e) => RESTORE_ENV.has(e.name)),
        ],
        resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
        securityContext: restrictedContainer(uid),
        terminationMessagePath: TERMINATION_LOG,
        terminationMessagePolicy: 'FallbackToLogsOnError',
        volumeMounts: [{ name: DATA_VOLUME, mountPath: DATA_MOUNT }, ...access.mounts],
      },
    ],
    volumes: access.volumes,
  };
}
