// The executable end to end where no cluster is needed: usage, bad flags, and a real connection
// refused (a kubeconfig naming 127.0.0.1 port 0, where nothing can listen: the kernel refuses every
// connection there, while a port found free could be taken by the time the plugin dials it) -> the
// API server unreachable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const BIN = new URL('../../bin/kubectl-redis', import.meta.url).pathname;
const run = (args: string[], env: Record<string, string> = {}) =>
  promisify(execFile)(BIN, args, { env: { ...process.env, ...env } }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

test('kubectl-redis without a cluster', async (t) => {
  await t.test('--help: usage, exit 0', async () => {
    const r = await run(['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /usage: kubectl redis/);
  });
  await t.test('no name: usage error, exit 2', async () => {
    const r = await run(['status']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /a Redis name is required/);
  });
  await t.test('a bad flag: exit 2', async () => assert.equal((await run(['status', 'x', '--bogus'])).code, 2));
  await t.test('connection refused: the API server unreachable, exit 5', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubectl-redis-'));
    const kubeconfig = join(dir, 'config');
    const server = 'https://127.0.0.1:0';
    await writeFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u', namespace: 'apps' } }],
        'current-context': 'x',
      }),
    );
    const r = await run(['status', 'my-redis', '--kubeconfig', kubeconfig]);
    assert.equal(r.code, 5, r.stderr);
    assert.match(r.stderr, /the API server is unreachable/);
  });
});
