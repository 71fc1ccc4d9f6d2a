// storageOfJob reads back, from a backup Job's pod template, the storage it was built with: the
// inverse of storageAccess for every form a storage takes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BackupStorage } from '../../../src/api/schema.ts';
import { backupJobSpecFor, backupPodSpecFor, storageOfJob } from '../../../src/hook/common/backup-job.ts';

const job = (storage: BackupStorage) => ({
  spec: backupJobSpecFor(
    {},
    backupPodSpecFor(
      {
        namespace: 'n',
        name: 'c',
        hosts: 'h:6379',
        tlsSecret: undefined,
        backup: undefined,
        imagePullSecrets: undefined,
      },
      storage,
      'img',
    ),
  ),
});

test('storageOfJob', async (t) => {
  const cases: Array<[string, BackupStorage]> = [
    ['s3, the SDK chain', { s3: { bucket: 'redis-backups', region: 'us-east-1', prefix: '' } }],
    [
      's3 with endpoint, prefix and keys',
      {
        s3: {
          bucket: 'redis-backups',
          region: 'eu-west-1',
          endpoint: 'http://198.19.0.1:7070',
          prefix: 'team/',
          credentialsSecret: { name: 's3-creds', accessKeyIdKey: 'id', secretAccessKeyKey: 'secret' },
        },
      },
    ],
    ['a claim', { pvc: { claimName: 'redis-backups' } }],
  ];
  for (const [name, storage] of cases) await t.test(name, () => assert.deepEqual(storageOfJob(job(storage)), storage));
  await t.test('not a backup Job', () => assert.equal(storageOfJob({ spec: {} }), undefined));
});
