// Child processes for the image pipeline (test/k8s/images.ts): a runner that prints progress while
// a step is long, and buildah confined to a storage of its own under the images cache.
// Invariants:
// - buildah never touches the system's default storage: every call passes --root/--runroot under
//   the images cache, with the overlay driver (vfs would copy every layer of every image).
// - A step that runs longer than 20 s prints a line (label, elapsed, last output line) every
//   20 s; a failing step's error carries the last lines of its output.
// - Nothing here kills by name: a step that times out is killed by the pid it was spawned with.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  createReadStream,
  ftruncateSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';

export type Log = (line: string) => void;

const PROGRESS_MS = 20_000;

export function seconds(since: number): number {
  return Math.round((Date.now() - since) / 1000);
}

/** The first executable `cmd` on PATH, or undefined (no process spawned: imagesMissing stays cheap). */
export function which(cmd: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter).filter(Boolean)) {
    const p = path.join(dir, cmd);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Runs fn holding `file` (created exclusively, naming this pid): one builder at a time per cache,
 * so two test processes never write the same archive. A live holder is waited for (a line every
 * 20 s); a dead one's file is taken over.
 */
export async function withLock<T>(file: string, log: Log, fn: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  let said = t0;
  for (;;) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = 0;
    try {
      holder = Number(readFileSync(file, 'utf8'));
    } catch {
      continue; // released meanwhile
    }
    // 0: the holder has created the file but not written its pid yet.
    if (holder > 0 && !alive(holder)) {
      rmSync(file, { force: true });
      continue;
    }
    if (Date.now() - said >= PROGRESS_MS) {
      log(`images: waiting for process ${holder}, which is building images (${seconds(t0)} s)`);
      said = Date.now();
    }
    await sleep(1000);
  }
  try {
    return await fn();
  } finally {
    if (readFileSync(file, 'utf8') === String(process.pid)) rmSync(file, { force: true });
  }
}

export function sha256(text: string | Buffer): string {
  return createHash('sha256').update(text).digest('hex');
}

export function sha256File(file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (c) => h.update(c))
      .once('error', reject)
      .once('end', () => resolve(h.digest('hex')));
  });
}

export interface StepOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/**
 * Runs one command to completion; resolves with its stdout. `label` names it in the progress
 * lines and in the error, which ends with the last 30 lines of its output.
 */
export function step(
  label: string,
  cmd: string,
  args: readonly string[],
  log: Log,
  options: StepOptions = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(cmd, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let tail: string[] = [];
    const keep = (chunk: string) => {
      tail = [...tail, ...chunk.split('\n').filter((l) => l.trim() !== '')].slice(-30);
    };
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      keep(c);
    });
    child.stderr.setEncoding('utf8').on('data', keep);
    const ticker = setInterval(
      () =>
        log(`images: ${label}: ${seconds(started)} s${tail.length ? `: ${tail[tail.length - 1]!.slice(0, 120)}` : ''}`),
      PROGRESS_MS,
    );
    const killer = options.timeoutMs ? setTimeout(() => child.kill('SIGKILL'), options.timeoutMs) : undefined;
    const done = () => {
      clearInterval(ticker);
      if (killer) clearTimeout(killer);
    };
    child.once('error', (err) => {
      done();
      reject(new Error(`${label}: ${err.message}`));
    });
    child.once('close', (code, signal) => {
      done();
      if (code === 0) resolve(stdout);
      else
        reject(
          new Error(`${label}: ${cmd} exited with ${signal ?? code} after ${seconds(started)} s:\n${tail.join('\n')}`),
        );
    });
  });
}

/**
 * Docker's normalization of an image name, as containerd and the kubelet apply it: `redis:7.2` ->
 * `docker.io/library/redis:7.2`.
 */
export function normalizeRef(ref: string): string {
  const slash = ref.indexOf('/');
  if (slash < 0) return `docker.io/library/${ref}`;
  const domain = ref.slice(0, slash);
  return domain.includes('.') || domain.includes(':') || domain === 'localhost' ? ref : `docker.io/${ref}`;
}

const BLOCK = 512;

/** A tar header's numeric field: octal text, or base-256 when its first byte has the high bit. */
function tarNumber(field: Buffer): number {
  if (field[0]! & 0x80) return field.subarray(1).reduce((n, b) => n * 256 + b, field[0]! & 0x7f);
  return parseInt(field.toString('latin1').replace(/\0.*$/s, '').trim() || '0', 8);
}

/** A ustar header for a regular file, root-owned, read-only, mtime 0. */
function tarHeader(name: string, size: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  const put = (offset: number, length: number, text: string) => h.write(text, offset, length, 'latin1');
  put(0, 100, name);
  put(100, 8, '0000444\0');
  put(108, 8, '0000000\0');
  put(116, 8, '0000000\0');
  put(124, 12, `${size.toString(8).padStart(11, '0')}\0`);
  put(136, 12, '00000000000\0');
  put(148, 8, ' '.repeat(8));
  put(156, 1, '0');
  put(257, 8, 'ustar\x0000');
  const sum = h.reduce((n, b) => n + b, 0);
  put(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

/**
 * Replaces a docker-archive's manifest.json and repositories (buildah writes them last, in that
 * order) in place: the archive is cut where manifest.json starts and the new members appended.
 * GNU tar's --delete cannot be used: it drops the members after the first on these archives.
 */
function replaceTail(archive: string, members: ReadonlyArray<readonly [string, string]>): void {
  const fd = openSync(archive, 'r+');
  try {
    const header = Buffer.alloc(BLOCK);
    let offset = 0;
    let cut: number | undefined;
    const names: string[] = [];
    while (readSync(fd, header, 0, BLOCK, offset) === BLOCK && header.some((b) => b !== 0)) {
      const name = header.subarray(0, 100).toString('latin1').replace(/\0.*$/s, '');
      if (name === 'manifest.json') cut = offset;
      if (cut !== undefined) names.push(name);
      offset += BLOCK + Math.ceil(tarNumber(header.subarray(124, 136)) / BLOCK) * BLOCK;
    }
    if (cut === undefined || names.join(',') !== 'manifest.json,repositories')
      throw new Error(`${archive} does not end with manifest.json and repositories (${names.join(', ')})`);
    const blocks = members.flatMap(([name, text]) => {
      const body = Buffer.from(text);
      return [tarHeader(name, body.length), body, Buffer.alloc((BLOCK - (body.length % BLOCK)) % BLOCK)];
    });
    const tail = Buffer.concat([...blocks, Buffer.alloc(2 * BLOCK)]);
    ftruncateSync(fd, cut);
    writeSync(fd, tail, 0, tail.length, cut);
  } finally {
    closeSync(fd);
  }
}

/**
 * Names a docker-archive's image by every ref (normalized) in manifest.json's RepoTags, which
 * `ctr images import` names the image by, and in the legacy `repositories` file: `buildah push`
 * writes only the destination's name.
 */
export function nameArchive(archive: string, refs: readonly string[]): void {
  const read = (member: string) =>
    JSON.parse(execFileSync('tar', ['-xOf', archive, member], { encoding: 'utf8' })) as unknown;
  const manifest = read('manifest.json') as Array<{ RepoTags?: string[] }>;
  if (manifest.length !== 1) throw new Error(`${archive} holds ${manifest.length} images, not one`);
  const tags = refs.map(normalizeRef);
  manifest[0]!.RepoTags = tags;
  // The top layer's ID, which every name of the legacy file points at.
  const top =
    Object.values(read('repositories') as Record<string, Record<string, string>>).flatMap((t) => Object.values(t))[0] ??
    '';
  const repositories: Record<string, Record<string, string>> = {};
  for (const ref of tags)
    (repositories[ref.slice(0, ref.lastIndexOf(':'))] ??= {})[ref.slice(ref.lastIndexOf(':') + 1)] = top;
  replaceTail(archive, [
    ['manifest.json', JSON.stringify(manifest)],
    ['repositories', JSON.stringify(repositories)],
  ]);
}

export interface BudSpec {
  file: string;
  context: string;
  tags: readonly string[];
  args: Record<string, string>;
  flags: readonly string[];
  labels: Record<string, string>;
}

/** buildah confined to one storage (root, runroot) under the images cache. */
export class Buildah {
  readonly storage: readonly string[];
  readonly dir: string;
  private containers = 0;

  constructor(cacheDir: string) {
    this.dir = cacheDir;
    this.storage = [
      '--root',
      path.join(cacheDir, 'storage'),
      '--runroot',
      path.join(cacheDir, 'runroot'),
      '--storage-driver',
      'overlay',
    ];
  }

  run(label: string, args: readonly string[], log: Log, options: StepOptions = {}): Promise<string> {
    return step(label, 'buildah', [...this.storage, ...args], log, options);
  }

  /** `buildah bud` without pulling; returns the image ID. */
  async bud(label: string, b: BudSpec, log: Log): Promise<string> {
    const iid = path.join(this.dir, `${label}-${process.pid}.iid`);
    try {
      await this.run(
        `${label}: buildah bud`,
        [
          'bud',
          '--pull=never',
          // Working containers of a failed build go too (buildah allows it only with --layers).
          ...(b.flags.includes('--layers') ? ['--force-rm'] : []),
          ...b.flags,
          ...Object.entries(b.labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
          ...Object.entries(b.args).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]),
          ...b.tags.flatMap((t) => ['--tag', t]),
          '--iidfile',
          iid,
          '--file',
          b.file,
          b.context,
        ],
        log,
        { timeoutMs: 1_800_000 },
      );
      return readFileSync(iid, 'utf8')
        .trim()
        .replace(/^sha256:/, '');
    } finally {
      rmSync(iid, { force: true });
    }
  }

  /** Writes an image as a docker-archive naming all `tags` (first removing a leftover of an interrupted save). */
  async save(label: string, id: string, archive: string, tags: readonly string[], log: Log): Promise<void> {
    rmSync(archive, { force: true });
    await this.run(`${label}: push`, ['push', '--quiet', id, `docker-archive:${archive}:${tags[0]!}`], log);
    nameArchive(archive, tags);
  }

  /** The ID of the image a name points at, or undefined (a local look-up, never a pull). */
  imageId(ref: string): string | undefined {
    const r = spawnSync(
      'buildah',
      [...this.storage, 'inspect', '--type', 'image', '--format', '{{.FromImageID}}', ref],
      { encoding: 'utf8' },
    );
    return r.status === 0 ? r.stdout.trim() : undefined;
  }

  /** The names an image ID still has (none once every name moved to a newer build). */
  namesOf(id: string): string[] {
    const r = spawnSync('buildah', [...this.storage, 'images', '--json', '--noheading'], { encoding: 'utf8' });
    if (r.status !== 0) return [];
    const images = JSON.parse(r.stdout || '[]') as Array<{ id: string; names?: string[] | null }>;
    return images.find((i) => i.id === id)?.names ?? [];
  }

  /**
   * Runs a command in a container of an archive's image (as `user`, "uid:gid", else the image's),
   * and removes the container by the name it was given. For tests: what the image holds, run.
   */
  async runIn(archive: string, argv: readonly string[], user?: string): Promise<string> {
    const name = `redis-operator-test-run-${process.pid}-${++this.containers}`;
    const log: Log = () => {};
    await this.run(`${name}: from`, ['from', '--quiet', '--name', name, `docker-archive:${archive}`], log);
    try {
      return await this.run(`${name}: run`, ['run', ...(user ? ['--user', user] : []), name, '--', ...argv], log, {
        timeoutMs: 120_000,
      });
    } finally {
      spawnSync('buildah', [...this.storage, 'rm', name], { stdio: 'ignore' });
    }
  }

  /**
   * Drops the images no name points at when the storage has grown past budgetMiB: every operator
   * rebuild leaves its --layers cache behind. Named images (bases, current builds) stay; the
   * operator's npm ci layers are rebuilt once.
   */
  trim(budgetMiB: number, log: Log): void {
    const du = spawnSync('du', ['-sm', this.storage[1]!], { encoding: 'utf8' });
    const mib = Number(du.stdout.split('\t')[0]);
    if (!(mib > budgetMiB)) return;
    log(`images: buildah's storage holds ${mib} MiB, over ${budgetMiB}: dropping unnamed images`);
    spawnSync('buildah', [...this.storage, 'rmi', '--prune'], { stdio: 'ignore' });
  }

  /**
   * Removes an image a rebuild replaced, if no name points at it any more; best effort: one that
   * others build on (the --layers cache) stays.
   */
  dropIfNameless(id: string | undefined): void {
    if (id && this.namesOf(id).length === 0) spawnSync('buildah', [...this.storage, 'rmi', id], { stdio: 'ignore' });
  }
}
