// Builds the real CoreDNS for the local cluster's DNS (test/k8s/cluster-dns.ts) from the Go module
// proxy (test/k8s/build/coredns: go.mod pins the version, main.go is upstream's main with the
// plugins the Corefile uses) and caches the binary outside the repository, next to the control
// plane's binaries. The same design as test/k8s/build.ts and test/s3/build.ts.
// Invariants:
// - The cache key is a hash of go.mod/go.sum/main.go, the link flags and `go version` (go-tool.ts,
//   shared with helm-build.ts): a key of its own, so pinning CoreDNS never rebuilds Kubernetes.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { requiredVersion } from './build.ts';
import { goTool } from './go-tool.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const COREDNS_MODULE = path.join(HERE, 'build/coredns');
export const COREDNS_VERSION = requiredVersion(
  readFileSync(path.join(COREDNS_MODULE, 'go.mod'), 'utf8'),
  'github.com/coredns/coredns',
);

/** Stripped, with a commit stamp as CoreDNS's Makefile sets one (`coredns -version` shows it). */
export const COREDNS_LDFLAGS = '-s -w -X github.com/coredns/coredns/coremain.GitCommit=module-proxy';

const COREDNS = goTool({
  title: 'CoreDNS',
  binName: 'coredns',
  version: COREDNS_VERSION,
  module: COREDNS_MODULE,
  keyFiles: ['go.mod', 'go.sum', 'main.go'],
  ldflags: COREDNS_LDFLAGS,
  target: '.',
  envVar: 'COREDNS_BIN',
});

/** The directory holding the binary for the pinned version (whether built yet or not). */
export const corednsBinDir = (): string => COREDNS.binDir();
/** Where the binary is (or will be once built). COREDNS_BIN names a prebuilt one instead. */
export const corednsBinary = (): string => COREDNS.binary();
/** Whether the binary is there; false (not an error) also when no Go toolchain can name its cache key. */
export const isCorednsBuilt = (): boolean => COREDNS.isBuilt();
/** Builds CoreDNS if it is missing and returns the binary's path; a warm call returns at once. */
export const buildCoredns = (log?: (line: string) => void): Promise<string> => COREDNS.build(log);
