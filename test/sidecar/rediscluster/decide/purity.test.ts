// The RedisCluster decision layer is pure like the Redis one (test/architecture.test.ts): no I/O
// module, no clock, no chance, nothing of kube/, redis/ or manager/; time comes in as `now`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('../../../../src/sidecar/rediscluster/decide/', import.meta.url));
const IO = /from '(node:)?(fs|net|tls|http|https|child_process|os|timers|perf_hooks|dns)'|from '(ioredis|@kubernetes\/client-node|pino|prom-client|undici)'/;
const IMPURE = /\bDate\.now\(|\bDate\(\s*\)|\bperformance\.now\(|\bMath\.random\(|\bprocess\.env\b|\bsetTimeout\(|\bsetInterval\(|\bfetch\(/;
const LAYERS = /from '\.\.\/(manager|redis|kube)\/|from '\.\.\/\.\.\/(manager|redis|kube)\//;

/** Problems in one source: I/O imports, impure calls (outside comments), imports of the I/O layers (types aside). */
export function impurities(text: string): string[] {
  const out: string[] = [];
  text.split('\n').forEach((line, i) => {
    const code = line.trim();
    if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return;
    if (IO.test(code) && !code.startsWith('import type')) out.push(`${i + 1}: ${code}`);
    if (IMPURE.test(code)) out.push(`${i + 1}: ${code}`);
    if (LAYERS.test(code) && !code.startsWith('import type')) out.push(`${i + 1}: ${code}`);
  });
  return out;
}

test('src/sidecar/rediscluster/decide is pure', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length >= 10, 'the decision sources are read');
  for (const f of files) assert.deepEqual(impurities(readFileSync(DIR + f, 'utf8')), [], f);
});

test('the check can fail', () => {
  assert.equal(impurities("import { Redis } from 'ioredis';").length, 1);
  assert.equal(impurities('const t = Date.now();').length, 1);
  assert.equal(impurities("import { x } from '../../cluster/redis/adapter.ts';").length, 1);
  assert.deepEqual(impurities("import type { Redis } from 'ioredis';\n// Date.now() in a comment"), []);
});
