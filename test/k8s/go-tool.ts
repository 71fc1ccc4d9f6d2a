// One Go command-line tool built from a pinned module in test/k8s/build/<dir> (go.mod pins it,
// go.sum holds every dependency hash) and cached next to the control plane's binaries: what
// coredns-build.ts and helm-build.ts share.
// Invariants:
// - The cache key is a hash of the module's pinning files, the link flags and `go version`: the
//   same inputs never build twice, a changed pin never reuses a stale binary. Each tool has a key
//   of its own, so pinning one never rebuilds another (or Kubernetes).
// - A build writes into <key>.partial and renames it to <key> only when the binary is there, so
//   an interrupted build is never mistaken for a finished one.
// - A cold build prints progress (packages compiled, elapsed) at least every 20 s (goBuild).
// - The environment variable <envVar> names a prebuilt binary instead; one that is missing is an error.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { cacheRoot, goBuild, goVersion } from './build.ts';

export interface GoToolSpec {
  /** As printed ("CoreDNS"), and what `go version` is asked for. */
  title: string;
  /** The cache directory's prefix and the binary's file name ("coredns"). */
  binName: string;
  version: string;
  module: string;
  /** Files of the module whose bytes make the key, in this order. */
  keyFiles: readonly string[];
  ldflags: string;
  /** The package to build, as `go build` takes it. */
  target: string;
  envVar: string;
}

export interface GoTool {
  /** The directory holding the binary for the pinned version (whether built yet or not). */
  binDir(): string;
  /** Where the binary is (or will be once built), or the prebuilt one the env variable names. */
  binary(): string;
  /** Whether the binary is there; false (not an error) also when no Go toolchain can name its key. */
  isBuilt(): boolean;
  /** Builds it if it is missing and returns its path; a warm call returns at once. */
  build(log?: (line: string) => void): Promise<string>;
}

export function goTool(spec: GoToolSpec): GoTool {
  const binDir = (): string => {
    const h = createHash('sha256');
    for (const f of spec.keyFiles) h.update(readFileSync(path.join(spec.module, f)));
    h.update(spec.ldflags);
    h.update(goVersion(spec.title));
    return path.join(cacheRoot(), `${spec.binName}-${spec.version}-${h.digest('hex').slice(0, 12)}`);
  };
  const binary = (): string => process.env[spec.envVar] ?? path.join(binDir(), spec.binName);
  return {
    binDir,
    binary,
    isBuilt() {
      try {
        return existsSync(binary());
      } catch {
        return false;
      }
    },
    async build(log = (l) => console.log(l)) {
      const bin = binary();
      if (existsSync(bin)) return bin;
      if (process.env[spec.envVar]) throw new Error(`${spec.envVar}=${bin} does not exist`);
      const dir = path.dirname(bin);
      const partial = `${dir}.partial`;
      mkdirSync(partial, { recursive: true });
      const t0 = Date.now();
      log(`building ${spec.title} ${spec.version} into ${dir}`);
      await goBuild(
        spec.module,
        ['-trimpath', '-ldflags', spec.ldflags, '-o', path.join(partial, spec.binName), spec.target],
        `${spec.binName} ${spec.version}`,
        log,
      );
      rmSync(dir, { recursive: true, force: true });
      renameSync(partial, dir);
      const mib = (statSync(bin).size / 2 ** 20).toFixed(1);
      log(`${spec.title} built in ${Math.round((Date.now() - t0) / 1000)} s (${mib} MiB): ${bin}`);
      return bin;
    },
  };
}
