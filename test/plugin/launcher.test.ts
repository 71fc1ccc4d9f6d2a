// bin/kubectl-redis, the plugin's launcher, installed without the checkout's node_modules (so it
// runs the node on PATH): a node older than 22.18 cannot strip TypeScript types and would die on
// the first .ts import with a stack trace; the launcher refuses it first, in one line naming the
// version it needs and the one it found, exit 1. The node on PATH is the project's own Node,
// told by a preload to report the version under test (process.version is what the check reads);
// where the machine's /usr/bin/node is itself older, it is tried as it is, too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'kubectl-redis-launcher-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

// An install of the plugin without node_modules beside it: bin/ and src/ only.
mkdirSync(join(dir, 'plugin/bin'), { recursive: true });
copyFileSync(join(ROOT, 'bin/kubectl-redis'), join(dir, 'plugin/bin/kubectl-redis'));
chmodSync(join(dir, 'plugin/bin/kubectl-redis'), 0o755);
symlinkSync(join(ROOT, 'src'), join(dir, 'plugin/src'));

// `node` on PATH: this test's own node, reporting PRETEND_NODE as its version.
mkdirSync(join(dir, 'path'));
writeFileSync(
  join(dir, 'pretend.cjs'),
  `const v = process.env.PRETEND_NODE;\nObject.defineProperty(process.versions, 'node', { value: v });\nObject.defineProperty(process, 'version', { value: 'v' + v });\n`,
);
writeFileSync(
  join(dir, 'path/node'),
  `#!/bin/sh\nexec '${process.execPath}' --require '${join(dir, 'pretend.cjs')}' "$@"\n`,
);
chmodSync(join(dir, 'path/node'), 0o755);

function launch(version: string, pathDirs: string[]) {
  return spawnSync(join(dir, 'plugin/bin/kubectl-redis'), ['--help'], {
    env: { PATH: [...pathDirs, '/usr/bin', '/bin'].join(':'), PRETEND_NODE: version, HOME: dir },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

test('a node older than 22.18 is refused in one line, before any TypeScript is loaded', async (t) => {
  for (const version of ['20.11.1', '22.17.1', '18.20.4']) {
    await t.test(version, () => {
      const r = launch(version, [join(dir, 'path')]);
      assert.equal(r.status, 1, r.stderr);
      assert.equal(r.stdout, '');
      assert.equal(
        r.stderr,
        `error: kubectl redis needs Node.js 22.18 or newer (it runs TypeScript by type stripping); ${process.execPath} is v${version}\n`,
      );
    });
  }
});

test('22.18 and later run the plugin', async (t) => {
  for (const version of ['22.18.0', '24.1.0']) {
    await t.test(version, () => {
      const r = launch(version, [join(dir, 'path')]);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^usage: kubectl redis <command>/);
    });
  }
});

test("the machine's own old node, as a user on Node 20 would meet it", (t) => {
  const system = spawnSync('/usr/bin/node', ['-p', 'process.versions.node'], { encoding: 'utf8' });
  const version = system.status === 0 ? system.stdout.trim() : undefined;
  const [major = 0, minor = 0] = (version ?? '').split('.').map(Number);
  if (!existsSync('/usr/bin/node') || version === undefined || major > 22 || (major === 22 && minor >= 18))
    return t.skip(`/usr/bin/node is ${version ?? 'absent'}, not older than 22.18`);
  const r = spawnSync(join(dir, 'plugin/bin/kubectl-redis'), ['status', 'x'], {
    env: { PATH: '/usr/bin:/bin', HOME: dir },
    encoding: 'utf8',
  });
  assert.equal(r.status, 1);
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /needs Node\.js 22\.18 or newer/);
});
