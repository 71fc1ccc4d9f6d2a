// A node's containerd root with its images already imported, kept once per set of image
// archives: the first node of a set imports them (about 15 s for the default five on these
// machines) and leaves a copy here; every later node of the set starts from hard links to it
// (about a second), then its own containerd runs on them as if it had imported them itself.
// Why links are safe: an imported image is content blobs and committed overlay snapshots, which
// containerd never writes again (a container writes to a snapshot of its own, made in the node's
// root); only the plugins' bolt databases are written, so each node gets copies of those.
// Invariants: a seed is complete or absent (made in a temporary directory, renamed into place);
// the key covers the containerd build and every archive (path, size, mtime), so a rebuilt image
// makes a new seed; at most KEEP seeds are kept, the least recently used removed first.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot } from './build.ts';

const run = promisify(execFile);
const KEEP = 4;
/** The files of a root containerd writes once images are in: each plugin's bolt database (<plugin>/*.db). */
function databases(root: string): string[] {
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      readdirSync(path.join(root, d.name))
        .filter((f) => f.endsWith('.db'))
        .map((f) => path.join(d.name, f)),
    );
}

export function seedsDir(): string {
  return path.join(cacheRoot(), 'node-seeds');
}

/** The seed directory for these archives and this containerd (it may not exist yet). */
export function seedPath(archives: readonly string[], containerd: string, sandboxImage: string): string {
  const h = createHash('sha256');
  for (const file of [containerd, ...[...archives].sort()]) {
    const st = statSync(file);
    h.update(`${file}\0${st.size}\0${st.mtimeMs}\n`);
  }
  h.update(sandboxImage);
  return path.join(seedsDir(), h.digest('hex').slice(0, 16));
}

/** Fills `root` (absent or empty) from the seed: links for everything, a copy of the metadata. */
export async function linkSeed(seed: string, root: string): Promise<void> {
  // In use: prune() leaves a seed used in the last ten minutes alone.
  utimesSync(seed, new Date(), new Date());
  mkdirSync(path.dirname(root), { recursive: true });
  await run('cp', ['-al', path.join(seed, 'root'), root]);
  for (const db of databases(path.join(seed, 'root'))) {
    rmSync(path.join(root, db));
    copyFileSync(path.join(seed, 'root', db), path.join(root, db));
  }
}

/** Keeps a copy of `root` (its containerd stopped) as the seed; another process may have won the race. */
export async function saveSeed(root: string, seed: string): Promise<void> {
  mkdirSync(seedsDir(), { recursive: true });
  const tmp = mkdtempSync(path.join(seedsDir(), '.new-'));
  try {
    await run('cp', ['-a', root, path.join(tmp, 'root')]);
    if (!existsSync(seed)) renameSync(tmp, seed);
  } catch (err) {
    if (!existsSync(seed)) throw err;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  prune(seed);
}

/**
 * Removes the oldest seeds beyond KEEP (never `keep`, nor one used in the last ten minutes) and temporary directories
 * of failed saves.
 */
function prune(keep: string): void {
  const dir = seedsDir();
  const entries = readdirSync(dir).map((name) => ({ name, at: statSync(path.join(dir, name)).mtimeMs }));
  for (const e of entries)
    if (e.name.startsWith('.new-') && Date.now() - e.at > 3_600_000)
      rmSync(path.join(dir, e.name), { recursive: true, force: true });
  const seeds = entries
    .filter((e) => !e.name.startsWith('.') && path.join(dir, e.name) !== keep)
    .sort((a, b) => b.at - a.at);
  for (const e of seeds.slice(KEEP - 1))
    if (Date.now() - e.at > 600_000) rmSync(path.join(dir, e.name), { recursive: true, force: true });
}
