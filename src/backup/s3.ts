// Backups in S3-compatible object storage, with the official AWS SDK for JavaScript (v3): a
// snapshot streamed up as a multipart upload (lib-storage's Upload: parts in parallel, bounded
// memory, an aborted upload cleaned up), listed, fetched and removed. Owns all S3 I/O.
// Invariants: a snapshot is uploaded as it is read (never held whole in memory); only objects
// whose keys naming.ts recognises are listed as backups or removed; s3Store's failures name the
// bucket or the credentials (failure.ts s3Failure).
import type { Readable } from 'node:stream';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { s3Failure } from './failure.ts';
import { backupFolder, parseBackupKey, type BackupOwner } from './naming.ts';
import type { StoredBackup } from './retention.ts';
import type { BackupStore } from './store.ts';

export interface S3Target {
  bucket: string;
  region: string;
  /** For S3-compatible servers (MinIO, Ceph, versitygw...): their URL; path-style addressing then. */
  endpoint?: string | undefined;
  prefix: string;
  /** Undefined: the SDK's default chain (environment, IRSA web identity, instance role). */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
}

export function s3Client(target: S3Target): S3Client {
  return new S3Client({
    region: target.region,
    ...(target.credentials !== undefined ? { credentials: target.credentials } : {}),
    ...(target.endpoint ? { endpoint: target.endpoint, forcePathStyle: true } : {}),
  });
}

/** Streams a snapshot to `key`; resolves with its size once S3 has it whole. */
export async function uploadSnapshot(
  client: S3Client,
  target: S3Target,
  key: string,
  body: Readable,
  metadata: Record<string, string>,
): Promise<number> {
  let bytes = 0;
  body.on('data', (chunk: Buffer) => (bytes += chunk.length));
  const upload = new Upload({
    client,
    params: { Bucket: target.bucket, Key: key, Body: body, Metadata: metadata },
    queueSize: 2,
    partSize: 8 * 1024 * 1024,
  });
  await upload.done();
  return bytes;
}

/** Our backups of one Redis in the bucket (other objects under the prefix are not listed). */
export async function listBackups(client: S3Client, target: S3Target, owner: BackupOwner): Promise<StoredBackup[]> {
  const out: StoredBackup[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: target.bucket,
        Prefix: backupFolder(target.prefix, owner),
        ...(token ? { ContinuationToken: token } : {}),
      }),
    );
    for (const o of page.Contents ?? []) {
      const parsed = o.Key ? parseBackupKey(target.prefix, owner, o.Key) : undefined;
      if (parsed && o.Key) out.push({ key: o.Key, takenAt: parsed.takenAt });
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

export async function deleteBackups(client: S3Client, target: S3Target, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000);
    const r = await client.send(
      new DeleteObjectsCommand({
        Bucket: target.bucket,
        Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
      }),
    );
    if (r.Errors && r.Errors.length > 0)
      throw new Error(`could not delete ${r.Errors.map((e) => `${e.Key}: ${e.Code}`).join(', ')}`);
  }
}

/** The snapshot's bytes, as a stream. */
export async function downloadSnapshot(client: S3Client, target: S3Target, key: string): Promise<Readable> {
  const r = await client.send(new GetObjectCommand({ Bucket: target.bucket, Key: key }));
  if (!r.Body) throw new Error(`s3://${target.bucket}/${key} has no body`);
  return r.Body as Readable;
}

/** One Redis's backups in a bucket, as run.ts uses a target (store.ts). */
export function s3Store(target: S3Target, owner: BackupOwner): BackupStore {
  const client = s3Client(target);
  const where = { bucket: target.bucket, endpoint: target.endpoint };
  const failing = (what: string) => (err: unknown) => Promise.reject(s3Failure(err, where, what));
  return {
    kind: 's3',
    // Nothing checked ahead: the upload reports a wrong bucket or refused credentials, and stores nothing then.
    prepare: () => Promise.resolve([]),
    put: (key, rdb, metadata) =>
      uploadSnapshot(client, target, key, rdb, metadata).catch(failing('storing the backup')),
    list: () => listBackups(client, target, owner).catch(failing('listing backups for retention')),
    remove: (keys) => deleteBackups(client, target, keys).catch(failing('removing backups past retention')),
    location: (key) => `s3://${target.bucket}/${key}`,
    close: () => Promise.resolve(client.destroy()),
  };
}
