// Loopback octet: 127.<net>.12.x. The engine table of the real-server tests (engines.ts): which
// engine REDIS_OPERATOR_TEST_ENGINE selects, the addresses each owns, the skip reason when its
// binaries are absent, and, on every engine present here, that the binary is the engine and version
// the table says (INFO server), so a matrix run never tests something other than what it names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import {
  DEFAULT_ENGINE,
  ENGINE_ENV,
  ENGINES,
  engineMissing,
  selectedEngine,
  type EngineId,
  type TestEngine,
} from './engines.ts';
import { addr, startRedis, TEST_PASSWORD } from './redis-server.ts';

const N = 12;

test('REDIS_OPERATOR_TEST_ENGINE selects the engine; unset means Debian 7.0.15; an unknown name is refused', () => {
  assert.equal(DEFAULT_ENGINE, 'redis-7.0');
  assert.equal(selectedEngine({}).id, 'redis-7.0');
  assert.equal(selectedEngine({ [ENGINE_ENV]: '' }).id, 'redis-7.0');
  for (const id of Object.keys(ENGINES)) assert.equal(selectedEngine({ [ENGINE_ENV]: id }).id, id);
  assert.throws(
    () => selectedEngine({ [ENGINE_ENV]: 'valkey-7.2' }),
    /REDIS_OPERATOR_TEST_ENGINE=valkey-7\.2 is not one of redis-7\.0, redis-7\.2, valkey-8\.0/,
  );
});

test('each engine owns a second octet: the same suite under two engines never shares an address', (t) => {
  const nets = Object.values(ENGINES).map((e) => e.net);
  assert.equal(new Set(nets).size, nets.length);
  assert.equal(ENGINES[DEFAULT_ENGINE].net, 0, 'the default engine keeps the allotted 127.0.x.y');
  const before = process.env[ENGINE_ENV];
  t.after(() => {
    if (before === undefined) delete process.env[ENGINE_ENV];
    else process.env[ENGINE_ENV] = before;
  });
  const seen = new Map<EngineId, string>();
  for (const id of Object.keys(ENGINES) as EngineId[]) {
    process.env[ENGINE_ENV] = id;
    seen.set(id, addr(N, 7));
  }
  assert.deepEqual(Object.fromEntries(seen), {
    'redis-7.0': '127.0.12.7',
    'redis-7.2': '127.1.12.7',
    'valkey-8.0': '127.2.12.7',
  });
});

test('an engine whose binaries are absent gives a one-line reason, never another engine', () => {
  const gone: TestEngine = { ...ENGINES['valkey-8.0'], server: '/nonexistent/valkey-server' };
  assert.equal(engineMissing(gone), 'valkey-8.0: no /nonexistent/valkey-server');
  const notOnPath: TestEngine = { ...ENGINES['redis-7.0'], cli: 'redis-cli-that-is-not-installed' };
  assert.equal(engineMissing(notOnPath), 'redis-7.0: no redis-cli-that-is-not-installed on PATH');
});

async function infoServer(ip: string): Promise<Map<string, string>> {
  const c = new Redis({ host: ip, port: 6379, password: TEST_PASSWORD, lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await c.connect();
    const text = await c.info('server');
    return new Map(text.split('\r\n').flatMap((l) => (l.includes(':') ? [l.split(':', 2) as [string, string]] : [])));
  } finally {
    c.disconnect();
  }
}

for (const [i, engine] of Object.values(ENGINES).entries()) {
  test(
    `${engine.id}: the binary answers as ${engine.engine} ${engine.version}`,
    { skip: engineMissing(engine) },
    async (t) => {
      const s = await startRedis(t, { ip: addr(N, 10 + i), engine });
      const info = await infoServer(s.ip);
      if (engine.engine === 'valkey') {
        assert.equal(info.get('server_name'), 'valkey');
        assert.equal(info.get('valkey_version'), engine.version);
      } else {
        assert.equal(info.get('server_name'), undefined, 'Redis has no server_name');
        assert.equal(info.get('redis_version'), engine.version);
      }
    },
  );
}
