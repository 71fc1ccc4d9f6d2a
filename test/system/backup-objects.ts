// The objects the backup system tests apply (backup.test.ts, plugin-ops.test.ts): the S3
// credentials Secret the Redis' spec.backup names, that storage block, and an on-demand RedisBackup.
// Invariant: one Secret name (s3-creds) and one bucket, so a test that rewrites the Secret (refused
// credentials, then the right ones) changes what every backup of that namespace reads.
export const BUCKET = 'redis-backups';
export const CREDENTIALS_SECRET = 's3-creds';

/** spec.backup.storage for the bucket on the S3 server at `endpoint` (path-style, us-east-1). */
export const s3Storage = (endpoint: string) => ({
  s3: { bucket: BUCKET, region: 'us-east-1', endpoint, credentialsSecret: { name: CREDENTIALS_SECRET } },
});

export const credentials = (namespace: string, accessKeyId: string, secretAccessKey: string) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: CREDENTIALS_SECRET, namespace },
  stringData: { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey },
});

export const redisBackup = (namespace: string, redis: string, name: string) => ({
  apiVersion: 'redis.example.com/v1',
  kind: 'RedisBackup',
  metadata: { name, namespace },
  spec: { redis },
});
