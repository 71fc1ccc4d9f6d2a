// What the backup tests share: a bucket on a real S3 server (versitygw, test/s3) started on a
// loopback address for one test, with the target and the SDK client the backup code takes; both
// are closed when the test ends (the client first: its open connections delay the server's stop).
// For the volume target: the entry points run as the pod runs them (a process with its env,
// optionally as another user), a tmpfs mounted for one test (read-only, or small enough to fill),
// and what a node holds, key by key, to compare a restore with its source.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { s3Client, type S3Target } from '../../src/backup/s3.ts';
import { startS3Server, type S3Server } from '../s3/server.ts';
import { redisClient } from '../sidecar/redis/manager/harness-redis.ts';

export async function bucketOn(
  t: TestContext,
  ip: string,
  bucket: string,
  prefix = '',
): Promise<{ s3: S3Server; target: S3Target; client: S3Client }> {
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

export const BACKUP_MAIN = fileURLToPath(new URL('../../src/backup/main.ts', import.meta.url));
export const RESTORE_MAIN = fileURLToPath(new URL('../../src/backup/restore-main.ts', import.meta.url));

export interface EntryRun {
  code: number;
  /** The last stdout line, parsed. */
  result: Record<string, unknown>;
  stderr: string;
  /** What the termination log holds ('' when nothing was written). */
  terminationLog: string;
}

/** An entry point run as its pod runs it: only its env (and PATH); `uid` runs it as that user (setpriv; needs root). */
export function runEntry(
  script: string,
  env: Record<string, string>,
  options: { uid?: number } = {},
): Promise<EntryRun> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'backup-entry-'));
  const terminationLog = path.join(dir, 'termination-log');
  const argv = [process.execPath, script];
  const [file, ...args] =
    options.uid === undefined
      ? argv
      : ['setpriv', `--reuid=${options.uid}`, `--regid=${options.uid}`, '--clear-groups', '--', ...argv];
  return new Promise((resolve) => {
    execFile(
      file!,
      args,
      { env: { PATH: process.env['PATH'] ?? '', TERMINATION_LOG: terminationLog, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        let log = '';
        try {
          log = readFileSync(terminationLog, 'utf8');
        } catch {
          log = '';
        }
        rmSync(dir, { recursive: true, force: true });
        resolve({
          code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
          result: JSON.parse(stdout.trim().split('\n').pop() || '{}') as Record<string, unknown>,
          stderr,
          terminationLog: log,
        });
      },
    );
  });
}

/**
 * A directory standing for a mounted claim, `<scratch>/backup` (the scratch directory others may
 * traverse), removed after the test. With `tmpfs` (mount -o options: ro, size=...), a tmpfs is
 * mounted there and unmounted first; undefined when this process may not mount one.
 */
export function claimDir(t: TestContext, tmpfs?: string): string | undefined {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'backup-claim-'));
  chmodSync(scratch, 0o755);
  const dir = path.join(scratch, 'backup');
  mkdirSync(dir, { mode: 0o755 });
  let mounted = false;
  t.after(() => {
    if (mounted) execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    rmSync(scratch, { recursive: true, force: true });
  });
  if (tmpfs === undefined) return dir;
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', tmpfs, 'tmpfs', dir], { stdio: 'ignore' });
    mounted = true;
    return dir;
  } catch {
    return undefined;
  }
}

/** Every key of a node with its value's digest (DEBUG DIGEST-VALUE: any type), to compare two nodes key by key. */
export async function keyDigests(ip: string): Promise<Map<string, string>> {
  const c = redisClient(ip, undefined, 10_000);
  await c.connect();
  try {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = (await c.call('SCAN', cursor, 'COUNT', '1000')) as [string, string[]];
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    keys.sort();
    const out = new Map<string, string>();
    for (let i = 0; i < keys.length; i += 500) {
      const batch = keys.slice(i, i + 500);
      const digests = (await c.call('DEBUG', 'DIGEST-VALUE', ...batch)) as string[];
      batch.forEach((k, j) => out.set(k, digests[j]!));
    }
    return out;
  } finally {
    c.disconnect();
  }
}
