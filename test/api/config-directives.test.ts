// The runtime-managed directives table (src/api/config-directives.ts), pure parts first, then
// against real redis-server processes: every entry exists, takes its default through CONFIG SET
// and reports it on a fresh server; the normaliser predicts what CONFIG GET prints, both after
// CONFIG SET of a user's spelling and on a server started from a redis.conf with spec values.
// Loopback octet: 127.0.17.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import {
  desiredRuntimeConfig,
  DYNAMIC_DIRECTIVES,
  dynamicDirective,
  isDynamicDirective,
  normaliseDirective,
  splitConfig,
} from '../../src/api/config-directives.ts';
import { RESERVED_CONFIG_KEYS } from '../../src/api/schema.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { renderRedisConf } from '../../src/hook/redis/redis-conf.ts';
import { addr, startRedis, TEST_PASSWORD } from '../support/redis-server.ts';

const N = 17;
const NAMES = DYNAMIC_DIRECTIVES.map((d) => d.name);
const ALIASES = DYNAMIC_DIRECTIVES.flatMap((d) => d.aliases ?? []);

test('the table: unique names, nothing the operator owns or writes itself', async (t) => {
  const all = [...NAMES, ...ALIASES];
  assert.equal(new Set(all).size, all.length, 'names and aliases are unique');
  // Every option that makes renderRedisConf write a line: fencing, snapshots, AOF, a memory limit.
  const verdict = validateSpec('r', {
    replicas: 2,
    persistence: { enableRdb: true, enableAof: true },
    resources: { limits: { memory: '1Gi' } },
  });
  assert.ok(verdict.ok);
  if (!verdict.ok) return;
  const written = renderRedisConf('ns', 'r', verdict.spec)
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split(' ')[0]!);
  assert.ok(written.includes('maxmemory') && written.includes('min-replicas-to-write'), written.join(','));
  for (const name of all) {
    await t.test(name, () => {
      assert.equal((RESERVED_CONFIG_KEYS as readonly string[]).includes(name), false, 'reserved');
      assert.equal(written.includes(name), false, 'renderRedisConf writes it');
      assert.notEqual(name, 'maxmemory');
      assert.match(name, /^[a-z][a-z0-9-]*$/, 'a spec.config key');
    });
  }
});

test('isDynamicDirective / dynamicDirective: table entries and aliases only', () => {
  assert.equal(isDynamicDirective('maxmemory-policy'), true);
  assert.equal(isDynamicDirective('hash-max-ziplist-entries'), true);
  assert.equal(dynamicDirective('lua-time-limit')?.name, 'busy-reply-threshold');
  for (const name of ['io-threads', 'databases', 'maxmemory', 'maxclients', 'replicaof', 'no-such-directive', '']) {
    assert.equal(isDynamicDirective(name), false, name);
  }
});

const NORMALISED: Array<[string, string, string]> = [
  ['maxmemory-policy', 'ALLKEYS-LRU', 'allkeys-lru'],
  ['maxmemory-policy', ' "allkeys-lfu" ', 'allkeys-lfu'],
  ['maxmemory-policy', "'volatile-ttl'", 'volatile-ttl'],
  ['lazyfree-lazy-eviction', 'YES', 'yes'],
  ['activerehashing', 'No', 'no'],
  ['activerehashing', 'true', 'true'],
  ['timeout', '300', '300'],
  ['timeout', ' 0 ', '0'],
  ['timeout', '010', '010'],
  ['timeout', '+5', '+5'],
  ['timeout', '1kb', '1kb'],
  ['list-max-listpack-size', '-2', '-2'],
  ['hz', '1000', '500'],
  ['hz', '0', '1'],
  ['hz', '100', '100'],
  ['hash-max-ziplist-value', '1kb', '1024'],
  ['repl-backlog-size', '1mb', '1048576'],
  ['repl-backlog-size', '1M', '1000000'],
  ['repl-backlog-size', '02GB', '2147483648'],
  ['repl-backlog-size', '2kb', '16384'],
  ['repl-backlog-size', '64b', '16384'],
  ['repl-backlog-size', '1tb', '1tb'],
  ['notify-keyspace-events', '', ''],
  ['notify-keyspace-events', '""', ''],
  ['notify-keyspace-events', 'KEA', 'AKE'],
  ['notify-keyspace-events', 'Exg', 'gxE'],
  ['notify-keyspace-events', 'g$lshzxetdn', 'A'],
  ['notify-keyspace-events', 'KEn', 'nKE'],
  ['notify-keyspace-events', 'mA', 'Am'],
  ['notify-keyspace-events', 'q', 'q'],
  ['io-threads', ' "4" ', '4'],
];

test('normaliseDirective: table', async (t) => {
  for (const [name, value, want] of NORMALISED) {
    await t.test(`${name} ${JSON.stringify(value)}`, () => assert.equal(normaliseDirective(name, value), want));
  }
  await t.test('idempotent', () => {
    for (const [name, value] of NORMALISED) {
      const once = normaliseDirective(name, value);
      assert.equal(normaliseDirective(name, once), once, `${name} ${value}`);
    }
  });
});

test('splitConfig: table directives and aliases are dynamic, anything else static', () => {
  assert.deepEqual(splitConfig(undefined), { static: {}, dynamic: {} });
  assert.deepEqual(
    splitConfig({
      'maxmemory-policy': 'allkeys-lru',
      'io-threads': '4',
      'zset-max-ziplist-entries': '64',
      'made-up': 'x',
    }),
    {
      static: { 'io-threads': '4', 'made-up': 'x' },
      dynamic: { 'maxmemory-policy': 'allkeys-lru', 'zset-max-ziplist-entries': '64' },
    },
  );
});

test('desiredRuntimeConfig: every entry, the default unless spec.config sets it', async (t) => {
  const defaults = Object.fromEntries(DYNAMIC_DIRECTIVES.map((d) => [d.name, d.default]));
  await t.test('no config: the defaults', () => assert.deepEqual(desiredRuntimeConfig(undefined), defaults));
  await t.test('static directives do not show', () =>
    assert.deepEqual(desiredRuntimeConfig({ 'io-threads': '4' }), defaults),
  );
  await t.test('set values are normalised', () =>
    assert.deepEqual(desiredRuntimeConfig({ 'maxmemory-policy': 'ALLKEYS-LRU', timeout: '60' }), {
      ...defaults,
      'maxmemory-policy': 'allkeys-lru',
      timeout: '60',
    }),
  );
  await t.test('an alias sets its entry', () =>
    assert.equal(desiredRuntimeConfig({ 'hash-max-ziplist-entries': '256' })['hash-max-listpack-entries'], '256'),
  );
  await t.test('name and alias: the later redis.conf line (sorted) wins, as at start', () => {
    const both = desiredRuntimeConfig({ 'hash-max-ziplist-entries': '300', 'hash-max-listpack-entries': '200' });
    assert.equal(both['hash-max-listpack-entries'], '300');
    assert.equal(
      desiredRuntimeConfig({ 'busy-reply-threshold': '100', 'lua-time-limit': '200' })['busy-reply-threshold'],
      '200',
    );
  });
});

// ---------------------------------------------------------------- real redis-server

async function client(t: { after(fn: () => void): void }, ip: string): Promise<Redis> {
  const c = new Redis({ host: ip, port: 6379, password: TEST_PASSWORD, lazyConnect: true, maxRetriesPerRequest: 0 });
  await c.connect();
  t.after(() => c.disconnect());
  return c;
}

async function configGet(c: Redis, names: readonly string[]): Promise<Record<string, string>> {
  const reply = (await c.call('CONFIG', 'GET', ...names)) as string[];
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < reply.length; i += 2) out[reply[i]!] = reply[i + 1]!;
  return out;
}

/** Spellings a user may write for each kind, each taken by CONFIG SET (bounds respected). */
function samples(name: string): string[] {
  const d = dynamicDirective(name)!;
  const special: Record<string, string[]> = {
    'maxmemory-policy': ['ALLKEYS-LRU', 'Volatile-TTL', 'allkeys-lfu'],
    loglevel: ['WARNING', 'verbose'],
    hz: ['1000', '0', '100'],
    'list-max-listpack-size': ['-1', '8'],
    'client-query-buffer-limit': ['2mb', '3000000', '1GB'],
    'repl-backlog-size': ['2kb', '1mb', '10000000', '3M'],
    'notify-keyspace-events': ['KEA', 'Exg', 'g$lshzxetdn', 'KEn', 'Am', 'xm', 'mA', 'AKEm', 'tdK', ''],
  };
  if (special[name]) return special[name];
  switch (d.kind) {
    case 'bool':
      return ['YES', 'No', d.default];
    case 'int':
      return [String(Number(d.default) + 1)];
    case 'memory':
      return ['2kb', '3K', '1MB'];
    default:
      return [d.default];
  }
}

test('every entry against redis-server: exists, default as on a fresh server, CONFIG SET takes the default', async (t) => {
  const server = await startRedis(t, { ip: addr(N, 1) });
  const c = await client(t, server.ip);
  const fresh = await configGet(c, NAMES);
  for (const d of DYNAMIC_DIRECTIVES) {
    await t.test(d.name, async () => {
      assert.ok(d.name in fresh, 'CONFIG GET knows it');
      // Another engine may compile in its own default (Valkey: lazyfree, backlog); the table keeps Redis'.
      assert.equal(fresh[d.name], server.engine.ownDefaults[d.name] ?? d.default, 'the default');
      assert.equal(normaliseDirective(d.name, d.default), d.default, 'the default is normalised');
      assert.equal(await c.call('CONFIG', 'SET', d.name, d.default), 'OK');
      for (const alias of d.aliases ?? [])
        assert.equal((await configGet(c, [alias]))[alias], d.default, `alias ${alias}`);
    });
  }
});

test('the normaliser round-trips through redis-server: CONFIG SET of a spelling, CONFIG GET prints its normal form', async (t) => {
  const server = await startRedis(t, { ip: addr(N, 2) });
  const c = await client(t, server.ip);
  for (const d of DYNAMIC_DIRECTIVES) {
    await t.test(d.name, async () => {
      for (const value of samples(d.name)) {
        assert.equal(await c.call('CONFIG', 'SET', d.name, value), 'OK', `${d.name} ${value}`);
        const printed = (await configGet(c, [d.name]))[d.name]!;
        assert.equal(printed, normaliseDirective(d.name, value), `${d.name} ${JSON.stringify(value)}`);
        // What the sidecar sends is the normal form; Redis must print it back unchanged.
        assert.equal(await c.call('CONFIG', 'SET', d.name, printed), 'OK');
        assert.equal((await configGet(c, [d.name]))[d.name], printed);
      }
      await c.call('CONFIG', 'SET', d.name, d.default);
    });
  }
  await t.test('spellings Redis refuses stay as written (so the CONFIG SET fails visibly)', async () => {
    for (const [name, value] of [
      ['timeout', '010'],
      ['timeout', '+5'],
      ['timeout', '1kb'],
      ['maxmemory-policy', 'bogus'],
      ['activerehashing', 'true'],
      ['notify-keyspace-events', 'q'],
    ] as const) {
      await assert.rejects(c.call('CONFIG', 'SET', name, normaliseDirective(name, value)), /ERR/, `${name} ${value}`);
    }
  });
});

test('a server started from a redis.conf with spec.config values reports desiredRuntimeConfig exactly', async (t) => {
  // Spelled as users write them: upper case, quotes, units, aliases, a clamped hz.
  const config = {
    'maxmemory-policy': '"ALLKEYS-LRU"',
    timeout: '60',
    hz: '1000',
    'lazyfree-lazy-user-del': 'YES',
    'notify-keyspace-events': 'KEx',
    'hash-max-ziplist-entries': '256',
    'lua-time-limit': '4000',
    'client-query-buffer-limit': '2mb',
    'repl-backlog-size': '4mb',
    'stream-node-max-bytes': '8kb',
  };
  const server = await startRedis(t, { ip: addr(N, 3), extra: config });
  const c = await client(t, server.ip);
  // Where the file says nothing, an engine with its own default reports it until the sidecar sets the table's.
  const expected = desiredRuntimeConfig(config);
  for (const [name, value] of Object.entries(server.engine.ownDefaults)) if (!(name in config)) expected[name] = value;
  assert.deepEqual(await configGet(c, NAMES), expected);
});
