// Small host facts every test harness here needs the same way: the Node binary that runs our
// TypeScript entry points, and the last lines of a log file (for error messages). Ports for the
// processes a harness starts are ports.ts's.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** This Node when it strips types (22.18+), else the project's own (node_modules/.bin/node). */
export function nodeBinary(): string {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= 22) return process.execPath;
  const local = path.join(REPO_ROOT, 'node_modules/.bin/node');
  if (existsSync(local)) return local;
  throw new Error(
    `the operator needs Node 22.18+ (type stripping); this is ${process.version} and node_modules/.bin/node is missing (npm ci)`,
  );
}

/** The last `lines` non-empty lines of a file; none when it cannot be read. */
export function tailLines(file: string, lines: number): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).slice(-lines);
  } catch {
    return [];
  }
}
