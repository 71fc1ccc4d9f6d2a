// What the backup tests share: a bucket on a real S3 server (versitygw, test/s3) started on a
// loopback address for one test, with the target and the SDK client the backup code takes; both
// are closed when the test ends (the client first: its open connections delay the server's stop).
import type { TestContext } from 'node:test';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { s3Client, type S3Target } from '../../src/backup/s3.ts';
import { startS3Server, type S3Server } from '../s3/server.ts';

export async function bucketOn(t: TestContext, ip: string, bucket: string, prefix = ''): Promise<{ s3: S3Server; target: S3Target; client: S3Client }> {
  const s3 = await startS3Server({ ip });
  t.after(() => s3.stop());
  const target: S3Target = {
    bucket,
    region: s3.region,
    endpoint: s3.endpoint,
    prefix,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
  };
  const client = s3Client(target);
  t.after(() => client.destroy());
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  return { s3, target, client };
}
