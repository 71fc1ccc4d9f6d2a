// Backups in S3-compatible object storage, with the official AWS SDK for JavaScript (v3): a
// snapshot streamed up as a multipart upload (lib-storage's Upload: parts in parallel, bounded
// memory, an aborted upload cleaned up), listed, fetched and removed. Owns all S3 I/O.
// Invariants: a snapshot is uploaded as it is read (never held whole in memory); only objects
// whose keys naming.ts recognises are listed as backups or removed.
import type { Readable } from 'node:stream';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { backupFolder, parseBackupKey } from './naming.ts';
import type { StoredBackup } from './retention.ts';

export interface S3Target {
  bucket: string;
  region: string;
  /** For S3-compatible servers (MinIO, Ceph, versitygw...): their URL; path-style addressing then. */
  endpoint?: string | undefined;
  prefix: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
}

export function s3Client(target: S3Target): S3Client {
  return new S3Client({
    region: target.region,
    credentials: target.credentials,
    ...(target.endpoint ? { endpoint: target.endpoint, forcePathStyle: true } : {}),
  });
}

/** Streams a snapshot to `key`; resolves with its size once S3 has it whole. */
export async function uploadSnapshot(client: S3Client, target: S3Target, key: string, body: Readable, metadata: Record<string, string>): Promise<number> {
  let bytes = 0;
  body.on('data', (chunk: Buffer) => (bytes += chunk.length));
  const upload = new Upload({ client, params: { Bucket: target.bucket, Key: key, Body: body, Metadata: metadata }, queueSize: 2, partSize: 8 * 1024 * 1024 });
  await upload.done();
  return bytes;
}

/** Our backups of one Redis in the bucket (other objects under the prefix are not listed). */
export async function listBackups(client: S3Client, target: S3Target, namespace: string, name: string): Promise<StoredBackup[]> {
  const out: StoredBackup[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: target.bucket, Prefix: backupFolder(target.prefix, namespace, name), ...(token ? { ContinuationToken: token } : {}) }),
    );
    for (const o of page.Contents ?? []) {
      const parsed = o.Key ? parseBackupKey(target.prefix, namespace, name, o.Key) : undefined;
      if (parsed && o.Key) out.push({ key: o.Key, takenAt: parsed.takenAt });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

export async function deleteBackups(client: S3Client, target: S3Target, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000);
    const r = await client.send(new DeleteObjectsCommand({ Bucket: target.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
    if (r.Errors && r.Errors.length > 0) throw new Error(`could not delete ${r.Errors.map((e) => `${e.Key}: ${e.Code}`).join(', ')}`);
  }
}

/** The snapshot's bytes, as a stream. */
export async function downloadSnapshot(client: S3Client, target: S3Target, key: string): Promise<Readable> {
  const r = await client.send(new GetObjectCommand({ Bucket: target.bucket, Key: key }));
  if (!r.Body) throw new Error(`s3://${target.bucket}/${key} has no body`);
  return r.Body as Readable;
}
