// The hook service's command as the Deployment runs it (manifests/deployment.yaml, container
// `hook`), for every harness that starts the hook as a process: bench:hook, and the Dockerfile's
// check that the image runs the same command. So the tests run what ships: the
// compiled JS in dist/ with the Node flags the image uses (--lite-mode, which cannot strip types).
// Invariants: the command comes from the manifest only (a change there reaches every harness);
// dist/ is rebuilt (npm run build) before use when any source is newer than its last build, one
// builder at a time across processes (a lock directory), so a test never runs stale JS.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { nodeBinary } from './host.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
// tsc rewrites every output on each build: any one of them dates the last build.
const STAMP = path.join(REPO_ROOT, 'dist', 'server', 'main.js');
const LOCK = path.join(REPO_ROOT, '.tmp', 'build.lock');

interface Container {
  name: string;
  command?: string[];
}

/** The hook container's command in manifests/deployment.yaml, as written there (["node", ...flags, entry]). */
export function manifestHookCommand(): string[] {
  const text = readFileSync(path.join(REPO_ROOT, 'manifests/deployment.yaml'), 'utf8');
  for (const doc of parseAllDocuments(text)) {
    const o = doc.toJS() as { kind?: string; spec?: { template?: { spec?: { containers?: Container[] } } } } | null;
    if (o?.kind !== 'Deployment') continue;
    const hook = o.spec?.template?.spec?.containers?.find((c) => c.name === 'hook');
    if (hook?.command && hook.command.length >= 2) return hook.command;
  }
  throw new Error('manifests/deployment.yaml has no Deployment with a `hook` container command');
}

/** The hook's Node flags and entry point (relative to the repository root). */
export function hookEntry(): { flags: string[]; entry: string } {
  const command = manifestHookCommand();
  const entry = command[command.length - 1]!;
  return { flags: command.slice(1, -1), entry };
}

/** argv to start the hook here: this machine's Node 22.18+, the manifest's flags and entry, dist/ built. */
export function hookCommand(): string[] {
  ensureBuilt();
  const { flags, entry } = hookEntry();
  return [nodeBinary(), ...flags, entry];
}

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(p) : statSync(p).mtimeMs);
  }
  return newest;
}

function stale(): boolean {
  if (!existsSync(STAMP)) return true;
  const built = statSync(STAMP).mtimeMs;
  const inputs = ['tsconfig.json', 'tsconfig.build.json'].map((f) => statSync(path.join(REPO_ROOT, f)).mtimeMs);
  return Math.max(newestSource(path.join(REPO_ROOT, 'src')), ...inputs) > built;
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Builds dist/ when a source changed since the last build; waits for a build another process runs. */
export function ensureBuilt(): void {
  if (!stale()) return;
  mkdirSync(path.dirname(LOCK), { recursive: true });
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // Another process is building; a lock older than any build is left from a killed one.
      const lock = statSync(LOCK, { throwIfNoEntry: false });
      if (lock && Date.now() - lock.mtimeMs > 120_000) rmSync(LOCK, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`waited 180 s for ${LOCK} (another build of dist/)`);
      sleepSync(200);
      if (!stale()) return;
    }
  }
  try {
    if (!stale()) return;
    execFileSync(nodeBinary(), [path.join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: REPO_ROOT,
      stdio: 'inherit',
    });
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
