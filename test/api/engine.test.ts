// The engine in the API as the hook judges it (engine.ts): which engine and version combinations
// both validators accept, what an unset version resolves to, the default images, and which
// changes of engine or version may replace what runs. The same rules as CEL are asked of a real
// API server in crd-server.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultImage, majorMinor, transitionProblems, type Engine, type Running } from '../../src/api/engine.ts';
import { validateRedisClusterSpec } from '../../src/api/rediscluster-validate.ts';
import { validateSpec } from '../../src/api/validate.ts';

const VALIDATORS = { Redis: validateSpec, RedisCluster: validateRedisClusterSpec } as const;
const TESTED_LIST = 'the tested combinations are redis 7.0, redis 7.2, valkey 8.0 (any patch)';

test('each engine and version combination is accepted only when tested, by both validators', async (t) => {
  // [spec, resolved version when accepted | the field refused]
  const cases: Array<[Record<string, unknown>, { version: string } | { field: string }]> = [
    [{}, { version: '7.2' }],
    [{ engine: 'redis' }, { version: '7.2' }],
    [{ engine: 'valkey' }, { version: '8.0' }],
    [{ version: '7.0' }, { version: '7.0' }],
    [{ version: '7.0.15' }, { version: '7.0.15' }],
    [{ version: '7.2.6' }, { version: '7.2.6' }],
    [{ version: '7.2-alpine' }, { version: '7.2-alpine' }],
    [{ engine: 'valkey', version: '8.0.1' }, { version: '8.0.1' }],
    [{ engine: 'valkey', version: '8.0-alpine' }, { version: '8.0-alpine' }],
    [{ version: '6.2' }, { field: 'spec.version' }],
    [{ version: '7.4' }, { field: 'spec.version' }],
    [{ version: '7.20' }, { field: 'spec.version' }],
    [{ version: '8.0' }, { field: 'spec.version' }],
    [{ engine: 'valkey', version: '7.2' }, { field: 'spec.version' }],
    [{ engine: 'valkey', version: '8.1' }, { field: 'spec.version' }],
    [{ engine: 'valkey', version: '9.0' }, { field: 'spec.version' }],
    [{ engine: 'keydb' }, { field: 'spec.engine' }],
  ];
  for (const [kind, validate] of Object.entries(VALIDATORS)) {
    for (const [spec, expected] of cases) {
      await t.test(`${kind} ${JSON.stringify(spec)}`, () => {
        const verdict = validate('r', spec);
        if ('version' in expected) {
          assert.ok(verdict.ok, JSON.stringify(verdict));
          assert.equal(verdict.spec.version, expected.version);
          assert.equal(verdict.spec.engine, spec['engine'] ?? 'redis');
          assert.equal(spec['version'], 'version' in spec ? spec['version'] : undefined, 'the input is not mutated');
          return;
        }
        assert.ok(!verdict.ok);
        assert.deepEqual(
          verdict.problems.map((p) => p.field),
          [expected.field],
        );
        if (spec['engine'] !== 'keydb') assert.ok(verdict.problems[0]!.message.endsWith(TESTED_LIST));
      });
    }
  }
});

test('a refused combination names the engine and version it judged', () => {
  const verdict = validateSpec('r', { engine: 'valkey', version: '7.2' });
  assert.ok(!verdict.ok);
  assert.deepEqual(verdict.problems, [
    { field: 'spec.version', message: `valkey 7.2 is not tested here: ${TESTED_LIST}` },
  ]);
});

test('the default image is the engine own image of the version', () => {
  assert.equal(defaultImage('redis', '7.2.6'), 'redis:7.2.6');
  assert.equal(defaultImage('valkey', '8.0'), 'valkey/valkey:8.0');
});

test('majorMinor reads the release of a version, suffix or not', () => {
  assert.deepEqual(majorMinor('7.2'), [7, 2]);
  assert.deepEqual(majorMinor('7.10.1'), [7, 10]);
  assert.deepEqual(majorMinor('8.0-alpine'), [8, 0]);
  assert.equal(majorMinor('latest'), undefined);
});

test('what may replace what runs: within an engine no older major.minor, across engines only redis 7.2 <-> valkey 8.0', async (t) => {
  const r = (engine: Engine, version: string): Running => ({ engine, version });
  // [running, wanted engine, wanted version, the field refused or undefined]
  const cases: Array<[Running, Engine, string, 'spec.engine' | 'spec.version' | undefined]> = [
    [r('redis', '7.2'), 'redis', '7.2', undefined],
    [r('redis', '7.0'), 'redis', '7.2.6', undefined],
    [r('redis', '7.2.6'), 'redis', '7.2.1', undefined],
    [r('redis', '7.2'), 'redis', '7.0', 'spec.version'],
    [r('redis', '7.2'), 'valkey', '8.0', undefined],
    [r('redis', '7.2.6'), 'valkey', '8.0.1', undefined],
    [r('valkey', '8.0.1'), 'redis', '7.2', undefined],
    [r('valkey', '8.0'), 'redis', '7.2.6', undefined],
    [r('redis', '7.0'), 'valkey', '8.0', 'spec.engine'],
    [r('redis', '7.0.15'), 'valkey', '8.0.1', 'spec.engine'],
    [r('valkey', '8.0'), 'redis', '7.0', 'spec.engine'],
  ];
  for (const [from, engine, version, field] of cases) {
    await t.test(`${from.engine} ${from.version} -> ${engine} ${version}`, () => {
      const problems = transitionProblems(from, { engine, version });
      assert.deepEqual(
        problems.map((p) => p.field),
        field === undefined ? [] : [field],
      );
    });
  }
});

test('a refused engine change says which move comes first', () => {
  const [fromOld] = transitionProblems({ engine: 'redis', version: '7.0.15' }, { engine: 'valkey', version: '8.0' });
  assert.match(fromOld?.message ?? '', /^cannot move from redis 7\.0\.15 to valkey 8\.0: .* move to redis 7\.2 first/);
  const [toOld] = transitionProblems({ engine: 'valkey', version: '8.0' }, { engine: 'redis', version: '7.0' });
  assert.match(toOld?.message ?? '', /choose redis 7\.2$/);
  const [down] = transitionProblems({ engine: 'redis', version: '7.2.6' }, { engine: 'redis', version: '7.0' });
  assert.match(down?.message ?? '', /^cannot go from redis 7\.2\.6 down to 7\.0: an older redis cannot load/);
});
