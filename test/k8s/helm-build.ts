// Builds the real Helm (v4) for the chart's tests (charts/redis-operator) from the Go module proxy
// (test/k8s/build/helm: go.mod pins helm.sh/helm/v4, tools.go names cmd/helm; go.sum holds the
// same dependency versions as Helm's own go.mod) and caches the binary next to the control plane's.
// The same design as test/k8s/coredns-build.ts and test/s3/build.ts.
// Invariants:
// - The cache key is a hash of go.mod/go.sum, the link flags and `go version`: the same inputs
//   never build twice, a changed pin never reuses a stale binary. A key of its own, so pinning
//   Helm never rebuilds Kubernetes.
// - A build writes into <key>.partial and renames it to <key> only when the binary is there, so
//   an interrupted build is never mistaken for a finished one.
// - A cold build prints progress (packages compiled, elapsed) at least every 20 s.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, goBuild, goVersion, requiredVersion } from './build.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const HELM_MODULE = path.join(HERE, 'build/helm');
export const HELM_VERSION = requiredVersion(readFileSync(path.join(HELM_MODULE, 'go.mod'), 'utf8'), 'helm.sh/helm/v4');

/** Stripped, with the version stamped in as Helm's Makefile does (`helm version` shows it). */
export const HELM_LDFLAGS = `-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v4/internal/version.gitTreeState=clean`;

/** The directory holding the binary for the pinned version (whether built yet or not). */
export function helmBinDir(): string {
  const h = createHash('sha256');
  for (const f of ['go.mod', 'go.sum']) h.update(readFileSync(path.join(HELM_MODULE, f)));
  h.update(HELM_LDFLAGS);
  h.update(goVersion('Helm'));
  return path.join(cacheRoot(), `helm-${HELM_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

/** Where the binary is (or will be once built). HELM_BIN names a prebuilt one instead. */
export function helmBinary(): string {
  return process.env['HELM_BIN'] ?? path.join(helmBinDir(), 'helm');
}

/** Whether the binary is there; false (not an error) also when no Go toolchain can name its cache key. */
export function isHelmBuilt(): boolean {
  try {
    return existsSync(helmBinary());
  } catch {
    return false;
  }
}

/** Builds Helm if it is missing and returns the binary's path; a warm call returns at once. */
export async function buildHelm(log: (line: string) => void = (l) => console.log(l)): Promise<string> {
  const bin = helmBinary();
  if (existsSync(bin)) return bin;
  if (process.env['HELM_BIN']) throw new Error(`HELM_BIN=${bin} does not exist`);
  const dir = path.dirname(bin);
  const partial = `${dir}.partial`;
  mkdirSync(partial, { recursive: true });
  const t0 = Date.now();
  log(`building Helm ${HELM_VERSION} into ${dir}`);
  await goBuild(
    HELM_MODULE,
    ['-trimpath', '-ldflags', HELM_LDFLAGS, '-o', path.join(partial, 'helm'), 'helm.sh/helm/v4/cmd/helm'],
    `helm ${HELM_VERSION}`,
    log,
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  const mib = (statSync(bin).size / 2 ** 20).toFixed(1);
  log(`Helm built in ${Math.round((Date.now() - t0) / 1000)} s (${mib} MiB): ${bin}`);
  return bin;
}
