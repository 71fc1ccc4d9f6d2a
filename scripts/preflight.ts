// Fails fast, with one line saying what is missing and how to get it, before anything that would
// otherwise end in a stack trace: a Node older than the project needs (the repo brings Node 24 as
// a dev dependency; npm scripts put it first on PATH), and the programs npm cannot bring
// (redis-server, and redis-cli for the e2e script). Usage: node scripts/preflight.ts [program...]
import { spawnSync } from 'node:child_process';

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 18)) {
  console.error(
    `redis-operator needs Node >= 22.18 (running ${process.version}): run 'npm ci' so the bundled Node 24 is used.`,
  );
  process.exit(1);
}

const INSTALL: Record<string, string> = {
  'redis-server': 'apt-get install -y redis-server   (Debian/Ubuntu; brew install redis on macOS)',
  'redis-cli': 'apt-get install -y redis-tools   (Debian/Ubuntu; brew install redis on macOS)',
};

const missing = process.argv
  .slice(2)
  .filter((program) => spawnSync(program, ['--version'], { stdio: 'ignore' }).error !== undefined);
if (missing.length > 0) {
  for (const program of missing)
    console.error(
      `${program} not found on PATH: install it with  ${INSTALL[program] ?? `your package manager (${program})`}`,
    );
  process.exit(1);
}
