// Small host facts every test harness here needs the same way: a free TCP port, the Node binary
// that runs our TypeScript entry points, and the last lines of a log file (for error messages).
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A port free right now on `host` (the OS picks it; a race with another listener is possible but rare). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, host, () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** This Node when it strips types (22.18+), else the project's own (node_modules/.bin/node). */
export function nodeBinary(): string {
  const major = Number(process.versions.node.split('.')[0]);
  if (major >= 22) return process.execPath;
  const local = path.join(REPO_ROOT, 'node_modules/.bin/node');
  if (existsSync(local)) return local;
  throw new Error(`the operator needs Node 22.18+ (type stripping); this is ${process.version} and node_modules/.bin/node is missing (npm ci)`);
}

/** The last `lines` non-empty lines of a file; none when it cannot be read. */
export function tailLines(file: string, lines: number): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).slice(-lines);
  } catch {
    return [];
  }
}
