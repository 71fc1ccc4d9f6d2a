// The allow-list of spec.config (src/api/config-allow.ts): what it holds, what it refuses and how
// the refusal reads, for a Redis and a RedisCluster; then against a real redis-server 7: every
// static entry's sample is taken at start, and every directive the server knows is either allowed
// or named by the API server's message.
// No TCP port: the servers listen on a Unix socket in a temp dir.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import {
  allowedDirectives,
  allowListRefusal,
  REDIS_CLUSTER_STATIC_DIRECTIVES,
  isAllowedDirective,
  KNOWN_REFUSED_DIRECTIVES,
  STATIC_DIRECTIVES,
  UNKNOWN_DIRECTIVE,
} from '../../src/api/config-allow.ts';
import { RESERVED_REDIS_CLUSTER_CONFIG_KEYS } from '../../src/api/rediscluster-schema.ts';
import { validateRedisClusterSpec } from '../../src/api/rediscluster-validate.ts';
import { RESERVED_CONFIG_KEYS } from '../../src/api/schema.ts';
import { validateSpec } from '../../src/api/validate.ts';
import { firstControlCharacter } from '../../src/api/text.ts';
import { renderRedisConf } from '../../src/hook/redis/redis-conf.ts';
import { renderRedisClusterConf } from '../../src/hook/rediscluster/conf.ts';
import { until } from '../support/until.ts';

const run = promisify(execFile);
const KINDS = { Redis: validateSpec, RedisCluster: validateRedisClusterSpec } as const;

/** The directives a hostile spec reaches for, with the reason its refusal must give. */
const HOSTILE: Array<[string, string, RegExp]> = [
  ['user', 'default on nopass ~* +@all', /users and passwords are the operator's/],
  ['loadmodule', 'x.so', /modules run code inside Redis/],
  ['enable-module-command', 'yes', /modules run code inside Redis/],
  ['enable-debug-command', 'yes', /debugging or protected commands/],
  ['enable-protected-configs', 'yes', /debugging or protected commands/],
  ['requirepass', '""', /users and passwords are the operator's/],
  ['aclfile', 'x.acl', /users and passwords are the operator's/],
  ['rename-command', 'CONFIG ""', /renames commands/],
  ['include', 'x.conf', /reads another file/],
  ['dir', 'tmp', /names a file, a path or the process/],
  ['logfile', 'x.log', /names a file, a path or the process/],
  ['bind', '0.0.0.0', /networking is the operator's/],
  ['protected-mode', 'no', /networking is the operator's/],
  ['replicaof', '10.0.0.1 6379', /replication and write fencing/],
  ['replica-priority', '0', /replication and write fencing/],
  ['save', '""', /persistence is the operator's/],
  ['tls-port', '6380', /TLS is the operator's/],
  ['maxmemory', '1gb', /derived from resources.limits.memory/],
  ['made-up-directive', 'x', /only directives checked to be safe/],
];

test('the allow-list: sorted, unique, nothing the operator owns or writes itself, nothing named as refused', () => {
  for (const kind of ['Redis', 'RedisCluster'] as const) {
    const list = allowedDirectives(kind);
    assert.deepEqual([...list].sort(), list, `${kind}: sorted`);
    assert.equal(new Set(list).size, list.length, `${kind}: unique`);
    for (const name of list) {
      assert.ok(
        !(RESERVED_REDIS_CLUSTER_CONFIG_KEYS as readonly string[]).includes(name),
        `${kind}: ${name} is the operator's`,
      );
      assert.ok(!KNOWN_REFUSED_DIRECTIVES.includes(name), `${kind}: ${name} is also named as refused`);
      assert.match(name, /^[a-z][a-z0-9-]*$/);
    }
  }
  const written = (conf: string) =>
    conf
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((l) => l.split(' ')[0]!);
  const full = {
    replicas: 2,
    persistence: { enableRdb: true, enableAof: true },
    resources: { limits: { memory: '1Gi' } },
    tls: { secretName: 't' },
  };
  const redis = validateSpec('r', full);
  const cluster = validateRedisClusterSpec('c', {
    persistence: { enableRdb: true, enableAof: true },
    resources: { limits: { memory: '1Gi' } },
  });
  assert.ok(redis.ok && cluster.ok);
  if (!redis.ok || !cluster.ok) return;
  for (const name of written(renderRedisConf('ns', 'r', redis.spec)))
    assert.ok(!isAllowedDirective('Redis', name), `the operator writes ${name}`);
  for (const name of written(renderRedisClusterConf('ns', 'c', cluster.spec)))
    assert.ok(!isAllowedDirective('RedisCluster', name), `the operator writes ${name}`);
  for (const name of RESERVED_CONFIG_KEYS) assert.ok(!isAllowedDirective('Redis', name), name);
  for (const d of REDIS_CLUSTER_STATIC_DIRECTIVES) {
    assert.equal(isAllowedDirective('Redis', d.name), false, `${d.name} is a RedisCluster's only`);
    assert.equal(isAllowedDirective('RedisCluster', d.name), true, d.name);
  }
});

test('the hook refuses every directive off the list, naming it and saying why, for a Redis and a RedisCluster', async (t) => {
  for (const kind of ['Redis', 'RedisCluster'] as const) {
    for (const [name, value, why] of HOSTILE) {
      await t.test(`${kind}: ${name}`, () => {
        const verdict = KINDS[kind]('r', { config: { hz: '10', [name]: value } });
        assert.equal(verdict.ok, false);
        if (verdict.ok) return;
        assert.deepEqual([...new Set(verdict.problems.map((p) => p.field))], [`spec.config.${name}`]);
        const refusal = verdict.problems.find((p) => p.message.startsWith('not an allowed directive ('));
        assert.ok(refusal, JSON.stringify(verdict.problems));
        assert.match(refusal.message, why);
        assert.match(refusal.message, /; allowed: .*\bio-threads\b.*\bmaxmemory-policy\b/);
      });
    }
  }
  await t.test('a cluster-only directive on a Redis', () => {
    const verdict = validateSpec('r', { config: { 'cluster-allow-reads-when-down': 'yes' } });
    assert.ok(
      !verdict.ok && /cluster mode is a RedisCluster's/.test(verdict.problems[0]!.message),
      JSON.stringify(verdict),
    );
  });
  await t.test('the list is printed once, however many are refused', () => {
    const verdict = validateSpec('r', { config: { user: 'x', loadmodule: 'y' } });
    assert.ok(!verdict.ok);
    if (verdict.ok) return;
    assert.deepEqual(
      verdict.problems.map((p) => p.message.includes('allowed: acllog-max-len')),
      [true, false],
    );
    assert.match(verdict.problems[1]!.message, /allowed: as listed above$/);
  });
});

test('the API server message names refused directives it knows, and says when one is unknown', () => {
  assert.match(allowListRefusal('Redis', ['hz', 'user', 'loadmodule']), /not allowed: loadmodule user \(/);
  assert.match(allowListRefusal('Redis', ['bogus']), new RegExp(`not allowed: ${UNKNOWN_DIRECTIVE} \\(`));
  assert.match(
    allowListRefusal('Redis', ['cluster-allow-reads-when-down']),
    /not allowed: cluster-allow-reads-when-down \(/,
  );
});

test('any key: accepted by the hook iff on the allow-list; refusals name the key, never raw control characters', () => {
  const key = fc.oneof(
    fc.constantFrom(...allowedDirectives('RedisCluster'), ...KNOWN_REFUSED_DIRECTIVES),
    fc.string({ maxLength: 30 }),
  );
  fc.assert(
    fc.property(key, fc.constantFrom('Redis' as const, 'RedisCluster' as const), (k, kind) => {
      if (k === '__proto__') return;
      const verdict = KINDS[kind]('r', { config: { [k]: '1' } });
      const allowed = isAllowedDirective(kind, k);
      if (allowed) {
        // An allowed directive with a value that does not fit it is Redis' business, not the list's.
        assert.ok(verdict.ok || verdict.problems.every((p) => !p.message.startsWith('not an allowed directive')));
        return;
      }
      assert.equal(verdict.ok, false);
      if (verdict.ok) return;
      for (const p of verdict.problems) {
        assert.ok(p.field.startsWith('spec.config'), p.field);
        assert.equal(firstControlCharacter(p.field), undefined, 'a control character is shown as <U+XXXX>');
      }
    }),
    { numRuns: 400 },
  );
});

test('config values: plain words only; quotes, backslashes and control characters refused by the hook, naming the field', () => {
  for (const ok of [
    '10',
    'allkeys-lru',
    'pubsub 32mb 8mb 60',
    '10%',
    '50 99 99.9',
    'KEA',
    'Ex$',
    '""',
    "''",
    '"yes"',
  ]) {
    assert.ok(validateSpec('r', { config: { 'notify-keyspace-events': ok } }).ok, ok);
  }
  for (const bad of [
    '10\nrequirepass ""',
    '10\u0000',
    '10\r',
    '10\t1',
    'a"b',
    "a'b",
    'a\\x41',
    '"x',
    'a #b',
    'x\u007f',
  ]) {
    const verdict = validateSpec('r', { config: { hz: bad } });
    assert.ok(!verdict.ok, JSON.stringify(bad));
    if (!verdict.ok)
      assert.deepEqual(
        verdict.problems.map((p) => p.field),
        ['spec.config.hz'],
      );
  }
});

test('any value (fast-check): refused naming the field, or rendered as exactly one redis.conf line of plain words', () => {
  const base = validateSpec('r', {});
  assert.ok(base.ok);
  if (!base.ok) return;
  const baseLines = renderRedisConf('ns', 'r', base.spec).split('\n').length;
  const value = fc.oneof(
    fc.string({ unit: 'binary-ascii', maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 10 }),
    fc.constantFrom('10', '"10"', "'x y'"),
  );
  fc.assert(
    fc.property(value, (v) => {
      const verdict = validateSpec('r', { config: { hz: v } });
      if (!verdict.ok) {
        assert.deepEqual([...new Set(verdict.problems.map((p) => p.field))], ['spec.config.hz']);
        return;
      }
      const lines = renderRedisConf('ns', 'r', verdict.spec).split('\n');
      assert.equal(lines.length, baseLines + 2, 'the comment and one line');
      assert.equal(lines.at(-2), `hz ${v}`);
      assert.match(v, /^["']?[-A-Za-z0-9 ._%$+]*["']?$/);
    }),
    { numRuns: 500 },
  );
});

// ---- against a real redis-server ----

async function cli(socket: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-s', socket, ...args], { timeout: 5000 });
  return stdout;
}

test('redis-server 7 takes every static entry at start with its sample value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-allow-'));
  const socket = join(dir, 'redis.sock');
  const entries = [...STATIC_DIRECTIVES, ...REDIS_CLUSTER_STATIC_DIRECTIVES];
  const conf = [
    `port 0`,
    `unixsocket ${socket}`,
    `dir ${dir}`,
    'save ""',
    ...entries.map((d) => `${d.name} ${d.sample}`),
  ].join('\n');
  writeFileSync(join(dir, 'redis.conf'), `${conf}\n`);
  const child = execFile('setpriv', ['--pdeathsig', 'KILL', 'redis-server', join(dir, 'redis.conf')]);
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
  try {
    await until(
      'redis-server with every static sample',
      async () => (await cli(socket, 'ping').catch(() => '')).includes('PONG'),
      10_000,
      { everyMs: 50 },
    );
    for (const d of entries) {
      const got = (await cli(socket, 'config', 'get', d.name)).trim().split('\n');
      assert.equal(got[0], d.name, `${d.name} exists: ${output}`);
    }
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every directive a real redis-server knows is allowed or named in the API server message', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-allow-'));
  const socket = join(dir, 'redis.sock');
  const child = execFile('setpriv', [
    '--pdeathsig',
    'KILL',
    'redis-server',
    '--port',
    '0',
    '--unixsocket',
    socket,
    '--dir',
    dir,
    '--save',
    '',
  ]);
  try {
    await until('redis-server', async () => (await cli(socket, 'ping').catch(() => '')).includes('PONG'), 10_000, {
      everyMs: 50,
    });
    const names = (await cli(socket, 'config', 'get', '*'))
      .trim()
      .split('\n')
      .filter((_, i) => i % 2 === 0);
    assert.ok(names.length > 150, `${names.length} directives`);
    const unnamed = names.filter(
      (n) => !isAllowedDirective('RedisCluster', n) && !KNOWN_REFUSED_DIRECTIVES.includes(n),
    );
    assert.deepEqual(unnamed, []);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
