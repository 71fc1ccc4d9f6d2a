// Builds a real node's container runtime parts from the Go module proxy and caches them outside the
// repository, next to the control plane's binaries: containerd, ctr and the runc shim
// (test/k8s/build/containerd) and the CNI plugins bridge, host-local, loopback and portmap
// (test/k8s/build/cni, into a cni/ subdirectory: the CNI bin dir). runc is Debian's, not built.
// Invariants:
// - The cache key is a hash of both modules' go.mod/go.sum/tools.go, the tags, the link flags and
//   `go version`: a key of its own, so pinning containerd or CNI never rebuilds Kubernetes.
// - A build writes into <key>.partial and renames it to <key> only when every binary is there, so
//   an interrupted build is never mistaken for a finished one; a rerun keeps the parts it finished.
// - A cold build prints progress at least every 20 s (goBuild); a warm call returns at once.
// - NODE_PARTS_DIR names a directory of prebuilt binaries in the same layout; one lacking any is an error.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot, goBuild, goVersion, requiredVersion } from './build.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const CONTAINERD_MODULE = path.join(HERE, 'build/containerd');
export const CNI_MODULE = path.join(HERE, 'build/cni');
const CONTAINERD_PKG = 'github.com/containerd/containerd/v2';
const CNI_PKG = 'github.com/containernetworking/plugins';
export const CONTAINERD_VERSION = requiredVersion(
  readFileSync(path.join(CONTAINERD_MODULE, 'go.mod'), 'utf8'),
  CONTAINERD_PKG,
);
export const CNI_VERSION = requiredVersion(readFileSync(path.join(CNI_MODULE, 'go.mod'), 'utf8'), CNI_PKG);

/** containerd's Makefile with STATIC=1; the shim leaves out gRPC as upstream's does (ttrpc only). */
export const CONTAINERD_TAGS = 'urfave_cli_no_docs osusergo netgo static_build';
export const SHIM_TAGS = `${CONTAINERD_TAGS} no_grpc`;
/** The version stamp is what `containerd --version` prints and the CRI reports to the kubelet. */
export const CONTAINERD_LDFLAGS = `-s -w -X ${CONTAINERD_PKG}/version.Version=${CONTAINERD_VERSION}`;
/** As upstream's build_linux.sh stamps it (a plugin run without CNI_COMMAND shows it). */
export const CNI_LDFLAGS = `-s -w -X ${CNI_PKG}/pkg/utils/buildversion.BuildVersion=${CNI_VERSION}`;
export const CNI_PLUGINS = {
  bridge: 'main/bridge',
  'host-local': 'ipam/host-local',
  loopback: 'main/loopback',
  portmap: 'meta/portmap',
} as const;
export const RUNC = '/usr/sbin/runc';

export interface NodeParts {
  containerd: string;
  ctr: string;
  shim: string;
  cniBinDir: string;
  containerdVersion: string;
  runc: string;
}

const SHIM = 'containerd-shim-runc-v2';
const containerdFiles = (dir: string): string[] => ['containerd', 'ctr'].map((b) => path.join(dir, b));
const shimFiles = (dir: string): string[] => [path.join(dir, SHIM)];
const cniFiles = (dir: string): string[] => Object.keys(CNI_PLUGINS).map((p) => path.join(dir, 'cni', p));
const allFiles = (dir: string): string[] => [...containerdFiles(dir), ...shimFiles(dir), ...cniFiles(dir)];

/** Where the parts for the pinned versions live (whether built yet or not). */
export function nodePartsDir(): string {
  if (process.env['NODE_PARTS_DIR']) return process.env['NODE_PARTS_DIR'];
  const h = createHash('sha256');
  for (const dir of [CONTAINERD_MODULE, CNI_MODULE])
    for (const f of ['go.mod', 'go.sum', 'tools.go']) h.update(readFileSync(path.join(dir, f)));
  for (const s of [CONTAINERD_TAGS, SHIM_TAGS, CONTAINERD_LDFLAGS, CNI_LDFLAGS]) h.update(`${s}\n`);
  h.update(goVersion('the node parts'));
  return path.join(cacheRoot(), `node-parts-${CONTAINERD_VERSION}-cni${CNI_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

/** One line saying what this machine lacks to run a real node, or undefined. */
export function nodePartsMissing(): string | undefined {
  if (process.platform !== 'linux') return `a real node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'a real node needs root (containerd, runc and the pod network namespaces)';
  if (!process.env['NODE_PARTS_DIR']) {
    const r = spawnSync('go', ['version'], { encoding: 'utf8' });
    if (r.error || r.status !== 0)
      return 'no Go toolchain to build containerd and the CNI plugins (or set NODE_PARTS_DIR to prebuilt ones)';
  }
  if (!existsSync(RUNC)) return `no runc at ${RUNC} (apt-get install -y runc)`;
  return undefined;
}

function partsIn(dir: string): NodeParts {
  const at = (name: string) => path.join(dir, name);
  return {
    containerd: at('containerd'),
    ctr: at('ctr'),
    shim: at(SHIM),
    cniBinDir: at('cni'),
    containerdVersion: CONTAINERD_VERSION,
    runc: RUNC,
  };
}

/** Static binaries, as upstream releases them: no cgo. */
function goBuildNoCgo(module: string, args: string[], label: string, log: (line: string) => void): Promise<void> {
  return goBuild(module, ['-trimpath', ...args], label, log, { CGO_ENABLED: '0' });
}

async function buildMissing(partial: string, log: (line: string) => void): Promise<void> {
  const cmd = (c: string) => `${CONTAINERD_PKG}/cmd/${c}`;
  const ld = (flags: string) => ['-ldflags', flags];
  if (!containerdFiles(partial).every((f) => existsSync(f))) {
    const args = [
      '-tags',
      CONTAINERD_TAGS,
      ...ld(CONTAINERD_LDFLAGS),
      '-o',
      `${partial}/`,
      cmd('containerd'),
      cmd('ctr'),
    ];
    await goBuildNoCgo(CONTAINERD_MODULE, args, `containerd ${CONTAINERD_VERSION}`, log);
  }
  if (!shimFiles(partial).every((f) => existsSync(f))) {
    const args = ['-tags', SHIM_TAGS, ...ld(CONTAINERD_LDFLAGS), '-o', path.join(partial, SHIM), cmd(SHIM)];
    await goBuildNoCgo(CONTAINERD_MODULE, args, `${SHIM} ${CONTAINERD_VERSION}`, log);
  }
  if (!cniFiles(partial).every((f) => existsSync(f))) {
    mkdirSync(path.join(partial, 'cni'), { recursive: true });
    const pkgs = Object.values(CNI_PLUGINS).map((p) => `${CNI_PKG}/plugins/${p}`);
    await goBuildNoCgo(
      CNI_MODULE,
      [...ld(CNI_LDFLAGS), '-o', `${partial}/cni/`, ...pkgs],
      `CNI plugins ${CNI_VERSION}`,
      log,
    );
  }
}

/** Builds whatever node part is missing for the pinned versions; a warm call returns at once. */
export async function buildNodeParts(log: (line: string) => void = (l) => console.log(l)): Promise<NodeParts> {
  // Before a build of minutes: without runc the parts are of no use.
  if (!existsSync(RUNC)) throw new Error(`a real node needs Debian's runc at ${RUNC}: apt-get install -y runc`);
  const dir = nodePartsDir();
  if (allFiles(dir).every((f) => existsSync(f))) return partsIn(dir);
  if (process.env['NODE_PARTS_DIR']) {
    const lacking = allFiles(dir).filter((f) => !existsSync(f));
    throw new Error(`NODE_PARTS_DIR=${dir} lacks ${lacking.map((f) => path.relative(dir, f)).join(', ')}`);
  }
  const partial = `${dir}.partial`;
  mkdirSync(partial, { recursive: true });
  const t0 = Date.now();
  log(`building the node parts (containerd ${CONTAINERD_VERSION}, CNI plugins ${CNI_VERSION}) into ${dir}`);
  await buildMissing(partial, log);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  log(`node parts built in ${Math.round((Date.now() - t0) / 1000)} s: ${dir}`);
  return partsIn(dir);
}
