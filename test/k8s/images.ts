// The container images the real test nodes run, built on this machine without a registry and
// cached as docker-archive tarballs that `ctr -n k8s.io images import` takes: pause, redis:7.0
// (Debian's), redis:7.2 and valkey/valkey:8.0 (../shared engines), the redis_exporter image, the
// operator's image from its Dockerfile (on a Node 24 base made here), Metacontroller. The recipes
// are in images/recipes.ts, their Containerfiles beside it.
// Invariants:
// - Everything lives under <cacheRoot()>/images/: archives/<name>-<key>.tar (+ .json: its refs),
//   buildah's own storage (storage/, runroot/), downloads/, and build contexts under tmp/ that
//   are removed after each build. The system's container storage is never used.
// - A key hashes a recipe's Containerfile and files, its inputs (binaries, versions, context) and
//   its base's key: an input change rebuilds that image and what builds on it, nothing else. A
//   warm call computes keys, finds every archive and returns without starting buildah.
// - An archive is written as .partial and renamed once complete (its .json first): a present
//   archive is a finished one. Building one removes the same image's archives of other keys.
// - Bases (Debian, Node) are intermediate: cached, loaded into buildah's storage from their
//   archive when a dependent needs them, never returned for a node to import.
// CLI: `node test/k8s/images.ts [name|ref ...]` builds what is missing and prints ref=archive.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from './build.ts';
import { Buildah, normalizeRef, seconds, sha256, which, withLock, type Log } from './images/buildah.ts';
import { HERE, RECIPES, type Recipe, type RecipeEnv } from './images/recipes.ts';

export { PAUSE_IMAGE, METACONTROLLER_IMAGE, SHARED } from './images/recipes.ts';

export interface BuiltImage {
  ref: string;
  /**
   * A docker-archive tarball naming the ref (normalized, e.g. docker.io/library/redis:7.2). Several refs may share one
   * archive: import it once.
   */
  archive: string;
}

/** What archives/<name>-<key>.json says. */
interface ArchiveMeta {
  name: string;
  key: string;
  refs: string[];
  seconds: number;
}

interface Ready {
  recipe: Recipe;
  key: string;
  archive: string;
  /** The ref in buildah's storage that names exactly this build. */
  keyRef: string;
  built: boolean;
}

/** How archives are written and named; part of every key, so a change here rebuilds them all. */
const ARCHIVE_FORMAT = 'docker-archive, RepoTags: every ref normalized';

/** Past this, buildah's storage is emptied before a build (Buildah.trim). */
const STORAGE_BUDGET_MIB = 6144;

/** Builds run two at a time: the machine has two cores, and mmdebstrap and npm mostly wait on the network. */
const PARALLEL = 2;

export function imagesCacheDir(): string {
  return path.join(cacheRoot(), 'images');
}

function recipe(name: string): Recipe {
  const r = RECIPES.find((x) => x.name === name);
  if (!r) throw new Error(`no image recipe ${name}`);
  return r;
}

/** The recipes `only` names (by recipe name or by any of its refs), all when undefined. */
function select(only: readonly string[] | undefined): Recipe[] {
  if (only === undefined) return [...RECIPES];
  return only.map((want) => {
    const r = RECIPES.find((x) => x.name === want || x.refs.includes(want));
    if (!r)
      throw new Error(
        `no test image ${want}: one of ${RECIPES.map((x) => [x.name, ...x.refs].join(' / ')).join(', ')}`,
      );
    return r;
  });
}

/** The recipes and every base they build on. */
function withBases(recipes: readonly Recipe[]): Recipe[] {
  const out = new Set<Recipe>();
  const add = (r: Recipe) => {
    if (r.base) add(recipe(r.base));
    out.add(r);
  };
  recipes.forEach(add);
  return [...out];
}

/**
 * One line naming what is missing to build the images `only` names (all of them by default), or
 * undefined when everything is there.
 */
export function imagesMissing(only?: readonly string[]): string | undefined {
  const problems: string[] = [];
  if (process.getuid?.() !== 0) problems.push('not root (buildah and mmdebstrap need it)');
  for (const tool of ['buildah', 'runc', 'tar']) if (!which(tool)) problems.push(`no ${tool}`);
  for (const r of withBases(select(only))) {
    const why = r.missing();
    if (why) problems.push(`${why} (for ${r.refs[0] ?? r.name})`);
  }
  return problems.length > 0 ? `test images cannot be built: ${problems.join('; ')}` : undefined;
}

const keyRefOf = (name: string, key: string) => `localhost/redis-operator-test/${name}:${key}`;

/** The state of one ensureImages call: keys and builds memoized by recipe, at most PARALLEL builds at once. */
class Session {
  readonly dir = imagesCacheDir();
  readonly buildah = new Buildah(this.dir);
  readonly env: RecipeEnv;
  readonly log: Log;
  private readonly keys = new Map<string, Promise<string>>();
  private readonly ready = new Map<string, Promise<Ready>>();
  private readonly loaded = new Map<string, Promise<void>>();
  private running = 0;
  private readonly queue: Array<() => void> = [];

  constructor(log: Log) {
    this.log = log;
    this.env = { downloads: path.join(this.dir, 'downloads'), log };
    for (const d of ['archives', 'downloads', 'tmp']) mkdirSync(path.join(this.dir, d), { recursive: true });
  }

  key(r: Recipe): Promise<string> {
    let k = this.keys.get(r.name);
    if (!k) {
      k = (async () => {
        const files = (r.files ?? []).map((f) => [f, sha256(readFileSync(path.join(HERE, f)))]);
        const base = r.base ? await this.key(recipe(r.base)) : undefined;
        const inputs = await r.inputs(this.env);
        return sha256(
          JSON.stringify({
            format: ARCHIVE_FORMAT,
            containerfile: readFileSync(r.containerfile, 'utf8'),
            files,
            base,
            refs: r.refs,
            inputs,
          }),
        ).slice(0, 16);
      })();
      this.keys.set(r.name, k);
    }
    return k;
  }

  /** Whether the recipe's archive is there (computing its key, building nothing). */
  async cached(r: Recipe): Promise<boolean> {
    const key = await this.key(r);
    return existsSync(archivePath(this.dir, r.name, key)) && existsSync(metaPath(archivePath(this.dir, r.name, key)));
  }

  ensure(r: Recipe): Promise<Ready> {
    let p = this.ready.get(r.name);
    if (!p) {
      p = (async () => {
        const key = await this.key(r);
        const archive = archivePath(this.dir, r.name, key);
        const ready = { recipe: r, key, archive, keyRef: keyRefOf(r.name, key), built: false };
        if (existsSync(archive) && existsSync(metaPath(archive))) return ready;
        const base = r.base ? await this.ensure(recipe(r.base)) : undefined;
        if (base) await this.load(base);
        await this.slot(() => this.build(ready, base));
        return { ...ready, built: true };
      })();
      this.ready.set(r.name, p);
    }
    return p;
  }

  /**
   * Puts a base into buildah's storage (from its archive, if a previous storage was wiped) and points its refs at it.
   */
  private load(base: Ready): Promise<void> {
    let p = this.loaded.get(base.recipe.name);
    if (!p) {
      p = (async () => {
        if (this.buildah.imageId(base.keyRef) === undefined) {
          const t0 = Date.now();
          await this.buildah.run(
            `${base.recipe.name}: load`,
            ['pull', '--quiet', `docker-archive:${base.archive}`],
            this.log,
          );
          this.log(`images: ${base.recipe.name}: loaded into buildah's storage from its archive in ${seconds(t0)} s`);
        }
        // The Dockerfile's FROM names the public ref: it must be this build, not an older one.
        const refs = base.recipe.refs.map(normalizeRef);
        if (refs.length > 0)
          await this.buildah.run(`${base.recipe.name}: tag`, ['tag', base.keyRef, ...refs], this.log);
      })();
      this.loaded.set(base.recipe.name, p);
    }
    return p;
  }

  private async slot(fn: () => Promise<void>): Promise<void> {
    if (this.running >= PARALLEL) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.running++;
    try {
      await fn();
    } finally {
      this.running--;
      this.queue.shift()?.();
    }
  }

  private async build(ready: Ready, base: Ready | undefined): Promise<void> {
    const { recipe: r, key, archive } = ready;
    const t0 = Date.now();
    this.log(`images: ${r.name}: building ${r.refs.join(', ') || 'a base image'} (key ${key})`);
    const tmp = mkdtempSync(path.join(this.dir, 'tmp', `${r.name}-`));
    try {
      for (const f of r.files ?? []) copyFileSync(path.join(HERE, f), path.join(tmp, f));
      const args = (await r.prepare?.(tmp, this.env)) ?? {};
      if (base && r.baseArg !== false) args['BASE'] = base.keyRef;
      // Tags the build moves away from, dropped below if nothing else names them.
      const refs = r.refs.map(normalizeRef);
      const replaced = refs.map((ref) => this.buildah.imageId(ref));
      const tags = [...(r.intermediate || refs.length === 0 ? [ready.keyRef] : []), ...refs];
      const id = await this.buildah.bud(
        r.name,
        {
          file: r.containerfile,
          context: r.contextDir ?? tmp,
          tags,
          args: { ...args },
          flags: r.flags ?? [],
          labels: { 'io.redis-operator.test.key': key },
        },
        this.log,
      );
      const partial = `${archive}.partial`;
      await this.buildah.save(r.name, id, partial, tags, this.log);
      const meta: ArchiveMeta = { name: r.name, key, refs: [...r.refs], seconds: seconds(t0) };
      writeFileSync(`${metaPath(archive)}.partial`, `${JSON.stringify(meta, null, 2)}\n`);
      renameSync(`${metaPath(archive)}.partial`, metaPath(archive));
      renameSync(partial, archive);
      this.dropStale(r.name, archive);
      for (const id of new Set(replaced)) this.buildah.dropIfNameless(id);
      const mib = (statSync(archive).size / 2 ** 20).toFixed(0);
      this.log(`images: ${r.name}: built in ${seconds(t0)} s: ${archive} (${mib} MiB)`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }

  /** The same image's archives of other keys: a rebuild replaces them. */
  private dropStale(name: string, keep: string): void {
    const dir = path.dirname(keep);
    for (const f of readdirSync(dir)) {
      const p = path.join(dir, f);
      if (
        p !== keep &&
        p !== metaPath(keep) &&
        new RegExp(`^${name.replace(/\./g, '\\.')}-[0-9a-f]{16}\\.(tar|json)(\\.partial)?$`).test(f)
      )
        rmSync(p, { force: true });
    }
  }
}

const archivePath = (dir: string, name: string, key: string) => path.join(dir, 'archives', `${name}-${key}.tar`);
const metaPath = (archive: string) => archive.replace(/\.tar$/, '.json');

/** Every promise's value once all have settled: a failure waits for the other builds, so none is left running. */
async function settle<T>(promises: Array<Promise<T>>): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/** Under the lock: archives another process finished meanwhile count as built (ensure looks again). */
function buildAll(session: Session, wanted: readonly Recipe[]): Promise<Ready[]> {
  session.buildah.trim(STORAGE_BUDGET_MIB, session.log);
  return settle(wanted.map((r) => session.ensure(r)));
}

/** Runs a command in a container of an archive's image (removed afterwards); for tests. */
export function runInImage(archive: string, argv: readonly string[], user?: string): Promise<string> {
  return new Buildah(imagesCacheDir()).runIn(archive, argv, user);
}

/**
 * Builds the images that are missing and returns every ref of the requested ones (all by
 * default) with its archive. Without `only`, images whose inputs are absent here (the ../shared
 * engines, Metacontroller) are left out with a log line; named in `only`, they are an error.
 * A warm call (all archives cached) returns at once.
 */
export async function ensureImages(
  log: Log = (l) => console.log(l),
  only?: string[],
): Promise<Record<string, BuiltImage>> {
  const t0 = Date.now();
  const wanted = select(only).filter((r) => {
    const why = r.missing();
    if (why && r.optional && only === undefined) log(`images: skipping ${r.refs.join(', ')}: ${why}`);
    return !(why && r.optional && only === undefined);
  });
  const why = imagesMissing(wanted.map((r) => r.name));
  if (why) throw new Error(why);
  const session = new Session(log);
  const warm = (await Promise.all(wanted.map((r) => session.cached(r)))).every(Boolean);
  const ready = warm
    ? await settle(wanted.map((r) => session.ensure(r)))
    : await withLock(path.join(session.dir, 'lock'), log, () => buildAll(session, wanted));
  const out: Record<string, BuiltImage> = {};
  for (const x of ready) {
    if (x.recipe.intermediate && only === undefined) continue;
    for (const ref of x.recipe.refs.length > 0 ? x.recipe.refs : [x.keyRef]) out[ref] = { ref, archive: x.archive };
  }
  const built = ready.filter((x) => x.built).map((x) => x.recipe.name);
  log(
    `images: ${ready.length} ready in ${seconds(t0)} s${built.length ? ` (built ${built.join(', ')})` : ', all cached'}`,
  );
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);
  const names = process.argv.slice(2);
  ensureImages(log, names.length > 0 ? names : undefined).then(
    (images) =>
      console.log(
        Object.values(images)
          .map((i) => `${i.ref}=${i.archive}`)
          .join('\n'),
      ),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
