// Builds the real cluster's Kubernetes binaries from the Go module proxy (test/k8s/build/kube and
// test/k8s/build/etcd: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, and the
// nodes' kubelet and kube-proxy from the same build; etcd) and caches them outside the
// repository, keyed by what determines them.
// Invariants:
// - The cache key is a hash of both go.mod/go.sum pairs, the link flags and `go version`: the same
//   inputs never build twice, a changed pin never reuses a stale binary.
// - A build writes into <key>.partial and renames it to <key> only when every binary is there, so
//   an interrupted build is never mistaken for a finished one.
// - A cold build prints progress (packages compiled, elapsed) at least every 20 s.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const KUBE_MODULE = path.join(HERE, 'build/kube');
export const ETCD_MODULE = path.join(HERE, 'build/etcd');
export const KUBE_COMMANDS = [
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kubectl',
  'kubelet',
  'kube-proxy',
] as const;
export const BINARIES = [...KUBE_COMMANDS, 'etcd'] as const;
export type Binary = (typeof BINARIES)[number];

/** The version a go.mod requires of a module (e.g. k8s.io/kubernetes -> v1.37.2). */
export function requiredVersion(goMod: string, module: string): string {
  const m = new RegExp(`^\\s*(?:require\\s+)?${module.replace(/[.]/g, '\\.')}\\s+(v\\S+)`, 'm').exec(goMod);
  if (!m?.[1]) throw new Error(`go.mod does not require ${module}`);
  return m[1];
}

export const KUBE_VERSION = requiredVersion(
  readFileSync(path.join(KUBE_MODULE, 'go.mod'), 'utf8'),
  'k8s.io/kubernetes',
);
export const ETCD_VERSION = requiredVersion(
  readFileSync(path.join(ETCD_MODULE, 'go.mod'), 'utf8'),
  'go.etcd.io/etcd/server/v3',
);

/** -X flags that stamp the version into the binaries, as the Kubernetes release build does. */
export function kubeLdflags(version: string): string {
  const [major, minor] = version.replace(/^v/, '').split('.');
  const stamp = (pkg: string) =>
    [
      `${pkg}.gitVersion=${version}`,
      `${pkg}.gitMajor=${major}`,
      `${pkg}.gitMinor=${minor}`,
      `${pkg}.gitTreeState=clean`,
    ].map((x) => `-X ${x}`);
  return ['-s', '-w', ...stamp('k8s.io/component-base/version'), ...stamp('k8s.io/client-go/pkg/version')].join(' ');
}

/** `go version` (part of every build cache key); `what` names what needs it in the error. */
export function goVersion(what = 'the control plane'): string {
  const r = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0)
    throw new Error(`the Go toolchain is needed to build ${what}: ${r.error?.message ?? r.stderr}`);
  return r.stdout.trim();
}

export function cacheRoot(): string {
  return (
    process.env['K8S_CACHE_DIR'] ??
    path.join(process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'redis-operator-k8s')
  );
}

/** Where the binaries for the pinned versions live (whether built yet or not). */
export function binDir(): string {
  if (process.env['K8S_BIN_DIR']) return process.env['K8S_BIN_DIR'];
  const h = createHash('sha256');
  for (const dir of [KUBE_MODULE, ETCD_MODULE])
    for (const f of ['go.mod', 'go.sum']) h.update(readFileSync(path.join(dir, f)));
  h.update(kubeLdflags(KUBE_VERSION));
  h.update(goVersion());
  return path.join(cacheRoot(), `${KUBE_VERSION}-etcd${ETCD_VERSION}-${h.digest('hex').slice(0, 12)}`);
}

export function binaryPath(name: Binary, dir = binDir()): string {
  return path.join(dir, name);
}

export function isBuilt(dir = binDir()): boolean {
  return BINARIES.every((b) => existsSync(binaryPath(b, dir)));
}

/**
 * `go build -v` in a module directory (read-only go.mod; `env` on top of this process's), with progress every 20 s
 * and the last lines on failure.
 */
export function goBuild(
  cwd: string,
  args: string[],
  label: string,
  log: (line: string) => void,
  env: Record<string, string> = {},
): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let packages = 0;
    let lastLines: string[] = [];
    const child = spawn('go', ['build', '-v', ...args], {
      cwd,
      env: { ...process.env, ...env, GOFLAGS: `${process.env['GOFLAGS'] ?? ''} -mod=readonly`.trim() },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.setEncoding('utf8');
    let partial = '';
    child.stderr.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) {
        if (/^[\w.-]+(\/[\w.~-]+)*$/.test(l.trim())) packages++;
        else lastLines = [...lastLines, l].slice(-30);
      }
    });
    const timer = setInterval(
      () => log(`build ${label}: ${packages} packages compiled, ${Math.round((Date.now() - started) / 1000)} s`),
      20_000,
    );
    child.once('error', (err) => {
      clearInterval(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearInterval(timer);
      if (code === 0) {
        log(`build ${label}: done, ${packages} packages, ${Math.round((Date.now() - started) / 1000)} s`);
        resolve();
      } else reject(new Error(`go build ${label} failed (exit ${code}):\n${lastLines.join('\n')}`));
    });
  });
}

/**
 * Builds whatever is missing for the pinned versions and returns the binaries' directory. A warm
 * call (all binaries cached) returns at once.
 */
export async function ensureBinaries(log: (line: string) => void = (l) => console.log(l)): Promise<string> {
  const dir = binDir();
  if (isBuilt(dir)) return dir;
  if (process.env['K8S_BIN_DIR'])
    throw new Error(`K8S_BIN_DIR=${dir} lacks ${BINARIES.filter((b) => !existsSync(binaryPath(b, dir))).join(', ')}`);
  const partial = `${dir}.partial`;
  mkdirSync(partial, { recursive: true });
  const t0 = Date.now();
  log(
    `building the control plane (Kubernetes ${KUBE_VERSION}, etcd ${ETCD_VERSION}) into ${dir}; a cold build takes a while on 2 cores`,
  );
  if (!KUBE_COMMANDS.every((b) => existsSync(binaryPath(b, partial)))) {
    await goBuild(
      KUBE_MODULE,
      [
        '-trimpath',
        '-ldflags',
        kubeLdflags(KUBE_VERSION),
        '-o',
        `${partial}/`,
        ...KUBE_COMMANDS.map((c) => `k8s.io/kubernetes/cmd/${c}`),
      ],
      `kubernetes ${KUBE_VERSION}`,
      log,
    );
  }
  if (!existsSync(binaryPath('etcd', partial))) {
    await goBuild(
      ETCD_MODULE,
      ['-trimpath', '-ldflags', '-s -w', '-o', binaryPath('etcd', partial), '.'],
      `etcd ${ETCD_VERSION}`,
      log,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  log(`control plane built in ${Math.round((Date.now() - t0) / 1000)} s: ${dir}`);
  return dir;
}
