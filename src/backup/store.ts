// What a backup target offers run.ts: S3 (s3.ts) and a mounted PersistentVolumeClaim (volume.ts)
// both implement it, so run.ts takes one backup and applies retention the same way on either.
// Invariants every target keeps:
// - put() resolves only once the backup is stored whole under its key; when it fails nothing is
//   left under that key (S3: the multipart upload is aborted; a volume: the temporary is removed).
// - list() returns only backups naming.ts recognises for this Redis; remove() only removes those.
// - Every failure is a BackupFailure (failure.ts) naming the bucket, claim or variable at fault.
import type { Readable } from 'node:stream';
import type { StoredBackup } from './retention.ts';

export type StorageKind = 's3' | 'pvc';

export interface BackupStore {
  readonly kind: StorageKind;
  /**
   * Before anything is read from Redis: a target that cannot take a backup fails here (permanently
   * when a setting is at fault). Resolves with the leftovers of crashed runs it removed (for the log).
   */
  prepare(): Promise<string[]>;
  /** Stores the snapshot under `key`; resolves with its size once it is whole (and, on a volume, on disk). */
  put(key: string, rdb: Readable, metadata: Record<string, string>): Promise<number>;
  list(): Promise<StoredBackup[]>;
  remove(keys: readonly string[]): Promise<void>;
  /** What status shows: s3://<bucket>/<key> or pvc://<claim>/<key>. */
  location(key: string): string;
  /** Releases what the target holds (clients, an unused temporary file). */
  close(): Promise<void>;
}
