// What the test images are made from, fetched or made on this machine: Debian root filesystems
// (mmdebstrap), the pause binary (gcc, from the Kubernetes source in the Go module cache), npm
// registry tarballs, and the operator's build context as a hash.
// Invariants:
// - The Debian mirror is the host's own (bookworm, bookworm-updates, bookworm-security from
//   /etc/apt/sources.list*); other entries of the host (third-party repositories) never enter.
// - Downloads land in <images cache>/downloads/ under a name that says the version, written as
//   .partial and renamed, so a second build never downloads again.
// - contextHash() covers every file the Dockerfile's context holds as .dockerignore filters it,
//   committed or not, by content: a change anywhere in it changes the key.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sha256, step, type Log } from './buildah.ts';

export const SUITE = 'bookworm';
const SUITES = new Set([SUITE, `${SUITE}-updates`, `${SUITE}-security`]);
const FALLBACK_MIRRORS = [
  `deb http://deb.debian.org/debian ${SUITE} main`,
  `deb http://deb.debian.org/debian ${SUITE}-updates main`,
  `deb http://deb.debian.org/debian-security ${SUITE}-security main`,
];

/** One-line sources (`deb [opts] uri suite comps`) and deb822 paragraphs, as {uris, suites}. */
function sourceEntries(file: string): Array<{ uris: string[]; suites: string[] }> {
  const text = readFileSync(file, 'utf8');
  if (file.endsWith('.sources')) {
    return text
      .split(/\n\s*\n/)
      .map((para) => {
        const field = (name: string) =>
          new RegExp(`^${name}:\\s*(.*)$`, 'mi').exec(para)?.[1]?.trim().split(/\s+/) ?? [];
        if (!field('Types').includes('deb') || field('Enabled')[0] === 'no') return { uris: [], suites: [] };
        return { uris: field('URIs'), suites: field('Suites') };
      })
      .filter((e) => e.uris.length > 0);
  }
  return text
    .split('\n')
    .map((l) => /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ uris: [m[1]!], suites: [m[2]!] }));
}

/** The host's Debian archive for bookworm, as mmdebstrap mirror lines (main only). */
export function debianMirrors(): string[] {
  const dir = '/etc/apt/sources.list.d';
  const files = [
    '/etc/apt/sources.list',
    ...(existsSync(dir) ? readdirSync(dir).map((f) => path.join(dir, f)) : []),
  ].filter((f) => existsSync(f) && /(\.list|\.sources|sources\.list)$/.test(f));
  const lines = new Set<string>();
  for (const f of files) {
    for (const e of sourceEntries(f))
      for (const u of e.uris) for (const s of e.suites) if (SUITES.has(s)) lines.add(`deb ${u} ${s} main`);
  }
  return lines.size > 0 ? [...lines].sort() : FALLBACK_MIRRORS;
}

/**
 * Paths a slim Debian image leaves out (as debian:bookworm-slim does): documentation but the
 * licences, manuals, translations. Also written into the root filesystem's dpkg configuration,
 * so a later install keeps them out too.
 */
const SLIM = [
  'path-exclude=/usr/share/doc/*',
  'path-include=/usr/share/doc/*/copyright',
  'path-exclude=/usr/share/man/*',
  'path-exclude=/usr/share/info/*',
  'path-exclude=/usr/share/groff/*',
  'path-exclude=/usr/share/lintian/*',
  'path-exclude=/usr/share/locale/*',
  'path-include=/usr/share/locale/locale.alias',
];

export interface RootfsSpec {
  include: readonly string[];
  /** Shell hooks mmdebstrap runs with the root as $1 (--essential-hook, --customize-hook). */
  essentialHooks?: readonly string[];
  customizeHooks?: readonly string[];
}

/** The mmdebstrap arguments (the key hashes them) for a minbase bookworm root filesystem as a tarball. */
export function mmdebstrapArgs(spec: RootfsSpec, output: string): string[] {
  return [
    '--variant=minbase',
    ...SLIM.map((o) => `--dpkgopt=${o}`),
    `--include=${spec.include.join(',')}`,
    ...(spec.essentialHooks ?? []).map((h) => `--essential-hook=${h}`),
    ...(spec.customizeHooks ?? []).map((h) => `--customize-hook=${h}`),
    SUITE,
    output,
    ...debianMirrors(),
  ];
}

export async function makeRootfs(label: string, spec: RootfsSpec, output: string, log: Log): Promise<void> {
  await step(`${label}: mmdebstrap`, 'mmdebstrap', mmdebstrapArgs(spec, output), log, { timeoutMs: 1_200_000 });
}

/**
 * The upstream version of a package installed in a root filesystem tarball (Debian's `1:7.0.15-1~deb12u1` -> 7.0.15).
 */
export function packageVersion(rootfsTar: string, pkg: string): string | undefined {
  const status = execFileSync('tar', ['-xOf', rootfsTar, './var/lib/dpkg/status'], {
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  const para = status.split('\n\n').find((p) => p.startsWith(`Package: ${pkg}\n`));
  const version = /^Version: (?:\d+:)?([^-+~\s]+)/m.exec(para ?? '')?.[1];
  return version;
}

/** pause.c of the Kubernetes release the cluster runs, from the Go module cache (downloaded if need be). */
export function pauseSource(kubeVersion: string): string {
  const rel = path.join('build', 'pause', 'linux', 'pause.c');
  const gopath = process.env['GOPATH']?.split(path.delimiter)[0] ?? path.join(os.homedir(), 'go');
  const modCache = process.env['GOMODCACHE'] ?? path.join(gopath, 'pkg', 'mod');
  const direct = path.join(modCache, 'k8s.io', `kubernetes@${kubeVersion}`, rel);
  if (existsSync(direct)) return direct;
  const r = spawnSync('go', ['mod', 'download', '-json', `k8s.io/kubernetes@${kubeVersion}`], {
    encoding: 'utf8',
    cwd: os.tmpdir(),
    timeout: 600_000,
  });
  const dir = r.status === 0 ? (JSON.parse(r.stdout) as { Dir?: string }).Dir : undefined;
  if (!dir || !existsSync(path.join(dir, rel)))
    throw new Error(
      `no pause.c: go mod download k8s.io/kubernetes@${kubeVersion} failed: ${r.error?.message ?? r.stderr}`,
    );
  return path.join(dir, rel);
}

/** `gcc --version`'s first line (part of the pause image's key). */
export function gccVersion(): string {
  return execFileSync('gcc', ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? '';
}

/** An npm registry tarball (`npm pack`), cached in `dir`; returns its path. */
export async function npmTarball(pkg: string, version: string, dir: string, log: Log): Promise<string> {
  const file = path.join(dir, `${pkg}-${version}.tgz`);
  if (existsSync(file)) return file;
  const partial = `${file}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  try {
    const out = await step(
      `npm pack ${pkg}@${version}`,
      'npm',
      ['pack', '--silent', '--pack-destination', partial, `${pkg}@${version}`],
      log,
      {
        cwd: partial,
        timeoutMs: 600_000,
      },
    );
    const name = out.trim().split('\n').pop() ?? '';
    renameSync(path.join(partial, name), file);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return file;
}

/**
 * .dockerignore as a predicate "is this path left out of the context" (Docker's rules: a pattern matches a path or any
 * parent of it, `!` re-includes, the last match wins).
 */
export function dockerignore(text: string): (p: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = path.posix.normalize((negate ? l.slice(1) : l).trim().replace(/^\/+/, ''));
      const source = pattern
        .split(/(\*\*\/?|\*|\?)/)
        .map((part) =>
          part.startsWith('**')
            ? '(?:.*/)?' + (part.endsWith('/') ? '' : '.*')
            : part === '*'
              ? '[^/]*'
              : part === '?'
                ? '[^/]'
                : part.replace(/[.+^${}()|[\]\\]/g, '\\$&'),
        )
        .join('');
      return { negate, re: new RegExp(`^${source}$`) };
    });
  return (p) => {
    const prefixes = p.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'));
    let excluded = false;
    for (const r of rules) if (prefixes.some((q) => r.re.test(q))) excluded = !r.negate;
    return excluded;
  };
}

/**
 * The files of the Dockerfile's build context: git's (tracked and untracked, not git-ignored), less what .dockerignore
 * leaves out.
 */
export function contextFiles(repo: string): string[] {
  const listed = execFileSync('git', ['-C', repo, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  const ignoreFile = path.join(repo, '.dockerignore');
  const ignored = dockerignore(existsSync(ignoreFile) ? readFileSync(ignoreFile, 'utf8') : '');
  return [...new Set(listed.split('\0').filter(Boolean))]
    .filter((f) => !ignored(f) && existsSync(path.join(repo, f)))
    .sort();
}

/** A hash of the context's files: path, executable bit and bytes (a symlink by its target). */
export function contextHash(repo: string): { files: number; sha256: string } {
  const files = contextFiles(repo);
  const parts: string[] = [];
  for (const f of files) {
    const p = path.join(repo, f);
    const st = lstatSync(p);
    const body = st.isSymbolicLink() ? `link:${readlinkSync(p)}` : st.isFile() ? sha256(readFileSync(p)) : 'other';
    parts.push(`${f}\0${st.mode & 0o111 ? 'x' : '-'}\0${body}`);
  }
  return { files: files.length, sha256: sha256(parts.join('\n')) };
}
