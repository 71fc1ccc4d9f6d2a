// src/server/main.ts as a real process (Node 24 from node_modules): it starts with no cluster,
// serves, logs JSON lines, and exits 0 on SIGTERM/SIGINT; a bad configuration exits 1 naming
// the variable. Loopback address allocation: N=60 (127.0.60.x).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { FIXTURE_TEXT, REPO_ROOT } from './helpers.ts';
import { HOOK_LISTENING, pinoPort, reportedPort } from '../support/ports.ts';

const HOST = '127.0.60.1';
const NODE = fileURLToPath(new URL('node_modules/.bin/node', REPO_ROOT));
const MAIN = fileURLToPath(new URL('src/server/main.ts', REPO_ROOT));

function start(env: Record<string, string>) {
  const child = spawn(NODE, [MAIN], {
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // 'close', not 'exit': only then has all of stdout and stderr been read.
  const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  return { child, exited, output: () => ({ stdout, stderr }) };
}

/** Polls /healthz until the server answers (bounded: a process that never listens fails). */
async function waitUntilUp(base: string, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  for (let attempt = 0; attempt < 200 && !gone; attempt++) {
    try {
      const res = await fetch(`${base}/healthz`);
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail('the hook service did not come up');
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`starts with no cluster, serves /sync, and exits 0 on ${signal}`, async (t) => {
    const proc = start({ PORT: '0', HOST, LOG_LEVEL: 'info' });
    const running = () => proc.child.exitCode === null && proc.child.signalCode === null;
    t.after(() => {
      if (running()) proc.child.kill('SIGKILL');
    });
    const port = await reportedPort(
      'the hook service',
      { pid: proc.child.pid ?? -1, alive: running },
      () => pinoPort(proc.output().stdout, HOOK_LISTENING),
      () => [proc.output().stdout, proc.output().stderr],
    );
    const base = `http://${HOST}:${port}`;
    await waitUntilUp(base, proc.exited);

    const ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 200);
    const synced = await fetch(`${base}/sync`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: FIXTURE_TEXT,
    });
    assert.equal(synced.status, 200);
    assert.ok(Array.isArray(((await synced.json()) as { children: unknown }).children));

    proc.child.kill(signal);
    const [code] = await proc.exited;
    assert.equal(code, 0, proc.output().stderr);

    // stdout is not a TTY here: every line is JSON, and the sync line names the Redis.
    const lines = proc
      .output()
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const syncLine = lines.find((l) => l['route'] === 'sync');
    assert.equal(syncLine?.['name'], 'my-redis');
    assert.equal(syncLine?.['namespace'], 'default');
    assert.ok(
      lines.some((l) => l['signal'] === signal),
      'shutdown is logged',
    );
    assert.equal(lines.at(-1)?.['msg'], 'hook service stopped');
  });
}

const badConfigs: Array<[string, Record<string, string>, RegExp]> = [
  ['port out of range', { PORT: '70000' }, /PORT="70000" is invalid/],
  ['unknown log level', { PORT: '8080', LOG_LEVEL: 'chatty' }, /LOG_LEVEL="chatty" is invalid/],
];
for (const [name, env, message] of badConfigs) {
  test(`a bad configuration (${name}) exits 1 with a clear message`, async () => {
    const proc = start({ HOST, ...env });
    const [code] = await proc.exited;
    assert.equal(code, 1);
    assert.match(proc.output().stderr, /invalid configuration/);
    assert.match(proc.output().stderr, message);
  });
}

test('a port already in use exits 1 with a fatal log line', async (t) => {
  const blocker = createServer();
  blocker.listen(0, HOST);
  await once(blocker, 'listening');
  t.after(() => blocker.close());
  const address = blocker.address();
  assert.ok(address !== null && typeof address === 'object');
  const proc = start({ PORT: String(address.port), HOST });
  const [code] = await proc.exited;
  assert.equal(code, 1);
  const fatal = proc
    .output()
    .stdout.trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l['level'] === 60);
  assert.equal(fatal?.['msg'], 'cannot listen');
});
