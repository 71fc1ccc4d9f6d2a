// A real S3-compatible server for tests: versitygw (built by test/s3/build.ts) with its POSIX
// backend, listening on one loopback address, path-style (no virtual-host buckets), one root
// account with fixed test credentials.
// Invariants:
// - Only loopback addresses (127.0.0.0/8) are ever listened on or addressed.
// - The server runs under `setpriv --pdeathsig KILL` in its own process group (spawnGroup), so it
//   dies with the test process even if node is SIGKILLed; the 'exit' hook kills it too.
// - stop() sends SIGTERM (versitygw's clean shutdown), SIGKILLs after 5 s, waits for the exit and
//   removes the temp directory it made (a caller's dataDir is kept). Safe to call twice.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { spawnGroup } from '../support/processes.ts';
import { tailLines } from '../support/host.ts';
import { assertLoopback } from '../support/loopback-guard.ts';
import { buildS3Server, isS3ServerBuilt, s3ServerBinary, S3_SERVER_NAME, S3_SERVER_VERSION } from './build.ts';

export { buildS3Server, isS3ServerBuilt, s3ServerBinary, S3_SERVER_NAME, S3_SERVER_VERSION };

export const S3_ACCESS_KEY_ID = 'redis-operator-test';
export const S3_SECRET_ACCESS_KEY = 'test-secret-4b1e9c7d2a';
export const S3_REGION = 'us-east-1';
/** versitygw's own default port. */
export const S3_DEFAULT_PORT = 7070;

export interface S3ServerOptions {
  /**
   * The address to listen on: loopback (127.x.y.z), or a test cluster's own host address on its
   * pod bridge (198.18.0.0/15, made by test/k8s/pod-network.ts), where its pods reach it.
   */
  ip: string;
  /** Default 7070 (versitygw's default); each test owns its address, so the port can be fixed. */
  port?: number;
  /** The POSIX backend's root (each top-level directory is a bucket); default a fresh temp dir removed by stop(). */
  dataDir?: string;
  /** How long to wait for the server to answer. Default 15000 ms. */
  startTimeoutMs?: number;
}

export interface S3Server {
  /** http://<ip>:<port>: give it to the SDK with forcePathStyle: true. */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  dataDir: string;
  /** The last lines the server logged (stdout and stderr). */
  logTail(lines?: number): string[];
  stop(): Promise<void>;
}

/** One GET of the health path: true on 200, false on anything else (refused, timeout...). */
function healthy(ip: string, port: number, healthPath: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: ip, port, path: healthPath, timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts versitygw on options.ip and waits until it answers. Throws when the binary is not built (see buildS3Server).
 */
export async function startS3Server(options: S3ServerOptions): Promise<S3Server> {
  if (!/^198\.(18|19)\.\d{1,3}\.\d{1,3}$/.test(options.ip)) assertLoopback(options.ip);
  const bin = s3ServerBinary();
  if (!isS3ServerBuilt())
    throw new Error(`${S3_SERVER_NAME} ${S3_SERVER_VERSION} is not built (${bin}): run 'node test/s3/cli.ts build'`);
  const port = options.port ?? S3_DEFAULT_PORT;
  const root = mkdtempSync(path.join(os.tmpdir(), `s3-test-${options.ip}-`));
  const dataDir = options.dataDir ?? path.join(root, 'data');
  mkdirSync(dataDir, { recursive: true });
  const logFile = path.join(root, `${S3_SERVER_NAME}.log`);
  const iamDir = path.join(root, 'iam');
  mkdirSync(iamDir);
  // A health path of its own: a server left on that address by someone else answers it 403, not 200.
  const healthPath = `/health-${randomBytes(6).toString('hex')}`;
  const args = [
    bin,
    '--access',
    S3_ACCESS_KEY_ID,
    '--secret',
    S3_SECRET_ACCESS_KEY,
    '--region',
    S3_REGION,
    '--port',
    `${options.ip}:${port}`,
    '--health',
    healthPath,
    // No per-request lines on stdout; errors and start-up messages still go to the log.
    '--quiet',
    // The internal IAM service (accounts in a JSON file there; only the root account here): without
    // one, versitygw's single-account mode answers an unknown access key with its own 404
    // XAdminUserNotFound instead of S3's 403 InvalidAccessKeyId.
    '--iam-dir',
    iamDir,
    'posix',
    dataDir,
  ];
  // Credentials on the command line, not in ROOT_ACCESS_KEY* env vars: the test's own env is not passed on.
  const group = spawnGroup(args, {
    cwd: root,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: root },
    logFile,
  });
  const logTail = (lines = 30) => tailLines(logFile, lines);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      if (group.signal('SIGTERM')) {
        const escalate = setTimeout(() => group.signal('SIGKILL'), 5000);
        await group.exited;
        clearTimeout(escalate);
      }
      await group.exited;
      rmSync(root, { recursive: true, force: true, maxRetries: 5 });
    })();
    return stopping;
  };

  const timeoutMs = options.startTimeoutMs ?? 15000;
  const deadline = Date.now() + timeoutMs;
  let exitInfo: string | undefined;
  void group.exited.then((e) => (exitInfo = e.error ?? `exit code ${e.code} signal ${e.signal}`));
  for (;;) {
    if (exitInfo !== undefined) {
      const tail = logTail().join('\n');
      await stop();
      throw new Error(`${S3_SERVER_NAME} on ${options.ip}:${port} died at start (${exitInfo}):\n${tail}`);
    }
    if (await healthy(options.ip, port, healthPath, 500)) break;
    if (Date.now() > deadline) {
      const tail = logTail().join('\n');
      await stop();
      throw new Error(`${S3_SERVER_NAME} on ${options.ip}:${port} did not answer within ${timeoutMs} ms:\n${tail}`);
    }
    await sleep(50);
  }
  return {
    endpoint: `http://${options.ip}:${port}`,
    accessKeyId: S3_ACCESS_KEY_ID,
    secretAccessKey: S3_SECRET_ACCESS_KEY,
    region: S3_REGION,
    dataDir,
    logTail,
    stop,
  };
}
