// Builds the real Helm (v4) for the chart's tests (charts/redis-operator) from the Go module proxy
// (test/k8s/build/helm: go.mod pins helm.sh/helm/v4, tools.go names cmd/helm; go.sum holds the
// same dependency versions as Helm's own go.mod) and caches the binary next to the control plane's.
// The same design as test/k8s/coredns-build.ts and test/s3/build.ts.
// Invariants:
// - The cache key is a hash of go.mod/go.sum, the link flags and `go version` (go-tool.ts, shared
//   with coredns-build.ts): a key of its own, so pinning Helm never rebuilds Kubernetes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { requiredVersion } from './build.ts';
import { goTool } from './go-tool.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const HELM_MODULE = path.join(HERE, 'build/helm');
export const HELM_VERSION = requiredVersion(readFileSync(path.join(HELM_MODULE, 'go.mod'), 'utf8'), 'helm.sh/helm/v4');

/** Stripped, with the version stamped in as Helm's Makefile does (`helm version` shows it). */
export const HELM_LDFLAGS = `-s -w -X helm.sh/helm/v4/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v4/internal/version.gitTreeState=clean`;

const HELM = goTool({
  title: 'Helm',
  binName: 'helm',
  version: HELM_VERSION,
  module: HELM_MODULE,
  keyFiles: ['go.mod', 'go.sum'],
  ldflags: HELM_LDFLAGS,
  target: 'helm.sh/helm/v4/cmd/helm',
  envVar: 'HELM_BIN',
});

/** The directory holding the binary for the pinned version (whether built yet or not). */
export const helmBinDir = (): string => HELM.binDir();
/** Where the binary is (or will be once built). HELM_BIN names a prebuilt one instead. */
export const helmBinary = (): string => HELM.binary();
/** Whether the binary is there; false (not an error) also when no Go toolchain can name its cache key. */
export const isHelmBuilt = (): boolean => HELM.isBuilt();
/** Builds Helm if it is missing and returns the binary's path; a warm call returns at once. */
export const buildHelm = (log?: (line: string) => void): Promise<string> => HELM.build(log);
