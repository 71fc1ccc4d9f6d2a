// Builds the real CoreDNS for the local cluster's DNS (test/k8s/cluster-dns.ts) from the Go module
// proxy (test/k8s/build/coredns: go.mod pins the version, main.go is upstream's main with the
// plugins the Corefile uses) and caches the binary outside the repository, next to the control
// plane's binaries. The same design as test/k8s/build.ts and test/s3/build.ts.
// Invariants:
// - The cache key is a hash of go.mod/go.sum/main.go, the link flags and `go version`: the same
//   inputs never build twice, a changed pin never reuses a stale binary. It is a key of its own,
//   so pinning CoreDNS never rebuilds Kubernetes.
// - A build writes into <key>.partial and renames it to <key> only when the binary is there, so
//   an interrupted build is never mistaken for a finished one.
// - A cold build prints progress (packages compiled, elapsed) at least every 20 s.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, goBuild, goVersion, requiredVersion } from './build.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const COREDNS_MODULE = path.join(HERE, 'build/coredns');
export const COREDNS_VERSION = requiredVersion(readFileSync(path.join(COREDNS_MODULE, 'go.mod'), 'utf8'), 'github.com/coredns/coredns');

/** Stripped, with a commit stamp as CoreDNS's Makefile sets one (`coredns -version` shows it). */
export const COREDNS_LDFLAGS = '-s -w -X github.com/coredns/coredns/coremain.GitCommit=module-proxy';

/** The directory holding the binary for the pinned version (whether built yet or not). */
export function corednsBinDir(): string {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go']) h.update(readFileSync(path.join(COREDNS_MODULE, f)));
  h.update(COREDNS_LDFLAGS);
  h.update(goVersion('CoreDNS'));
  return path.join(cacheRoot(), `coredns-${COREDNS_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

/** Where the binary is (or will be once built). COREDNS_BIN names a prebuilt one instead. */
export function corednsBinary(): string {
  return process.env['COREDNS_BIN'] ?? path.join(corednsBinDir(), 'coredns');
}

/** Whether the binary is there; false (not an error) also when no Go toolchain can name its cache key. */
export function isCorednsBuilt(): boolean {
  try {
    return existsSync(corednsBinary());
  } catch {
    return false;
  }
}

/** Builds CoreDNS if it is missing and returns the binary's path; a warm call returns at once. */
export async function buildCoredns(log: (line: string) => void = (l) => console.log(l)): Promise<string> {
  const bin = corednsBinary();
  if (existsSync(bin)) return bin;
  if (process.env['COREDNS_BIN']) throw new Error(`COREDNS_BIN=${bin} does not exist`);
  const dir = path.dirname(bin);
  const partial = `${dir}.partial`;
  mkdirSync(partial, { recursive: true });
  const t0 = Date.now();
  log(`building CoreDNS ${COREDNS_VERSION} into ${dir}`);
  await goBuild(COREDNS_MODULE, ['-trimpath', '-ldflags', COREDNS_LDFLAGS, '-o', path.join(partial, 'coredns'), '.'], `coredns ${COREDNS_VERSION}`, log);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  const mib = (statSync(bin).size / 2 ** 20).toFixed(1);
  log(`CoreDNS built in ${Math.round((Date.now() - t0) / 1000)} s (${mib} MiB): ${bin}`);
  return bin;
}
