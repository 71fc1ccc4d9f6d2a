// Builds the real S3-compatible server the tests use, versitygw (an Apache-2.0 S3 gateway, here
// with its POSIX backend), from the Go module proxy (test/s3/build: go.mod pins the version,
// tools.go names the command) and caches the binary outside the repository, keyed by what
// determines it. The same design as test/k8s/build.ts.
// Invariants:
// - The cache key is a hash of go.mod/go.sum, the link flags and `go version`: the same inputs
//   never build twice, a changed pin never reuses a stale binary.
// - A build writes into <key>.partial and renames it to <key> only when the binary is there, so
//   an interrupted build is never mistaken for a finished one.
// - A cold build prints progress (packages compiled, elapsed) at least every 20 s.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { goBuild, goVersion, requiredVersion } from '../k8s/build.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const S3_MODULE = path.join(HERE, 'build');
export const S3_SERVER_MODULE = 'github.com/versity/versitygw';
export const S3_SERVER_COMMAND = `${S3_SERVER_MODULE}/cmd/versitygw`;
export const S3_SERVER_NAME = 'versitygw';
export const S3_SERVER_VERSION = requiredVersion(
  readFileSync(path.join(S3_MODULE, 'go.mod'), 'utf8'),
  S3_SERVER_MODULE,
);

/** Link flags: stripped, with the version stamped in as versitygw's Makefile does (`versitygw --version`). */
export const S3_LDFLAGS = `-s -w -X=main.Version=${S3_SERVER_VERSION} -X=main.Build=module-proxy`;

export function s3CacheRoot(): string {
  return (
    process.env['S3_CACHE_DIR'] ??
    path.join(process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'redis-operator-s3')
  );
}

/** The directory holding the binary for the pinned version (whether built yet or not). */
export function s3BinDir(): string {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) h.update(readFileSync(path.join(S3_MODULE, f)));
  h.update(S3_LDFLAGS);
  h.update(goVersion(S3_SERVER_NAME));
  return path.join(s3CacheRoot(), `${S3_SERVER_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

/** Where the server's binary is (or will be once built). S3_SERVER_BIN names a prebuilt one instead. */
export function s3ServerBinary(): string {
  return process.env['S3_SERVER_BIN'] ?? path.join(s3BinDir(), S3_SERVER_NAME);
}

/** Whether the binary is there; false (not an error) also when no Go toolchain can name its cache key. */
export function isS3ServerBuilt(): boolean {
  try {
    return existsSync(s3ServerBinary());
  } catch {
    return false;
  }
}

/**
 * Builds the server if it is missing and returns the binary's path. A warm call (binary cached)
 * returns at once.
 */
export async function buildS3Server(log: (line: string) => void = (l) => console.log(l)): Promise<string> {
  const bin = s3ServerBinary();
  if (existsSync(bin)) return bin;
  if (process.env['S3_SERVER_BIN']) throw new Error(`S3_SERVER_BIN=${bin} does not exist`);
  const dir = path.dirname(bin);
  const partial = `${dir}.partial`;
  mkdirSync(partial, { recursive: true });
  const t0 = Date.now();
  log(`building the S3 server (${S3_SERVER_NAME} ${S3_SERVER_VERSION}) into ${dir}`);
  await goBuild(
    S3_MODULE,
    ['-trimpath', '-ldflags', S3_LDFLAGS, '-o', path.join(partial, S3_SERVER_NAME), S3_SERVER_COMMAND],
    `${S3_SERVER_NAME} ${S3_SERVER_VERSION}`,
    log,
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  const mib = (statSync(bin).size / 2 ** 20).toFixed(1);
  log(`S3 server built in ${Math.round((Date.now() - t0) / 1000)} s (${mib} MiB): ${bin}`);
  return bin;
}
