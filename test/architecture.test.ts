// The layout is the architecture: imports flow api -> hook -> server and api -> sidecar, and the
// hook stays pure (no I/O modules, no clock, no environment). This test reads the sources.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Top-level src folder of a file: api, hook, server or sidecar. */
function layer(path: string): string {
  return relative(src, path).split('/')[0] ?? '';
}

function imports(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gm), ...text.matchAll(/import\(\s*'([^']+)'\s*\)/g)].map((m) => m[1] ?? '');
}

// runtime is process plumbing (env parsing, logger) for the two entry points; it knows nothing
// of Redis, so the pure hook has no use for it.
const allowed: Record<string, string[]> = {
  api: ['api'],
  hook: ['api', 'hook'],
  server: ['api', 'hook', 'server', 'runtime'],
  sidecar: ['api', 'sidecar', 'runtime'],
  runtime: ['runtime'],
};

test('imports flow one way: api -> hook -> server, api -> sidecar (runtime under both entry points)', () => {
  const violations: string[] = [];
  for (const file of files(src)) {
    const from = layer(file);
    for (const spec of imports(file)) {
      if (!spec.startsWith('.')) continue;
      const to = layer(resolve(dirname(file), spec));
      if (!(allowed[from] ?? []).includes(to)) violations.push(`${relative(root, file)} imports ${spec} (${from} -> ${to})`);
    }
  }
  assert.deepEqual(violations, []);
});

test('the hook is pure: no I/O modules, no clock, no randomness, no environment', () => {
  const forbiddenModules = /^(node:)?(fs|fs\/promises|net|http|https|http2|dgram|child_process|worker_threads|process|os|timers)$|^(ioredis|@kubernetes\/client-node|fastify|pino|prom-client|undici)$/;
  const forbiddenCalls = /\bDate\.now\(|\bnew Date\(\s*\)|\bperformance\.now\(|\bMath\.random\(|\bprocess\.env\b|\bsetTimeout\(|\bsetInterval\(|\bfetch\(|\brandomUUID\(|\brandomBytes\(/;
  const violations: string[] = [];
  for (const file of files(join(src, 'hook'))) {
    for (const spec of imports(file)) if (forbiddenModules.test(spec)) violations.push(`${relative(root, file)} imports ${spec}`);
    readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
      if (line.trim().startsWith('//') || line.trim().startsWith('*')) return;
      if (forbiddenCalls.test(line)) violations.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(violations, []);
});

test('the checks above can fail: a forbidden import and a clock read are caught', () => {
  assert.equal(/\bDate\.now\(/.test('const t = Date.now();'), true);
  assert.ok(imports(join(root, 'test', 'architecture.test.ts')).includes('node:fs'), 'the import scanner sees this file\'s imports');
  assert.equal((allowed['hook'] ?? []).includes('sidecar'), false);
});
