// redis.conf content derived from the spec: fencing, snapshots, AOF, memory, user directives,
// and the password never in the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisSpec } from '../../../src/api/schema.ts';
import { validateSpec } from '../../../src/api/validate.ts';
import { configHash, maxmemoryBytes, rdbSaveSeconds } from '../../../src/hook/common/redis-conf.ts';
import { renderRedisConf, staticRedisConf } from '../../../src/hook/redis/redis-conf.ts';
import { parseQuantity } from '../../../src/hook/common/quantity.ts';
import { designSpec, type Json } from '../common/helpers.ts';

function specOf(overrides: Json): RedisSpec {
  const verdict = validateSpec('my-redis', { ...designSpec(), ...overrides });
  if (!verdict.ok) throw new Error(JSON.stringify(verdict.problems));
  return verdict.spec;
}

function conf(overrides: Json = {}): string[] {
  return renderRedisConf('default', 'my-redis', specOf(overrides)).split('\n');
}

test('the design renders the fencing contract', async (t) => {
  const lines = conf();
  for (const line of [
    'bind 0.0.0.0',
    'port 6379',
    'protected-mode no',
    'dir /data',
    'replicaof 127.0.0.1 1',
    'replica-read-only yes',
    'repl-ping-replica-period 1',
    'save 900 1',
    'appendonly yes',
    'appendfsync everysec',
    'min-replicas-to-write 1',
    'min-replicas-max-lag 5',
    `maxmemory ${Math.floor(512 * 1024 * 1024 * 0.8)}`,
  ]) {
    await t.test(line, () => {
      assert.ok(lines.includes(line), line);
    });
  }
  assert.ok(lines.indexOf('replicaof 127.0.0.1 1') < lines.indexOf('save 900 1'));
});

const fencing: Array<[string, Json, string[] | undefined]> = [
  ['2 replicas, default', { replicas: 2 }, ['min-replicas-to-write 1', 'min-replicas-max-lag 5']],
  [
    '1 replica asked for 3',
    { replicas: 1, failover: { minReplicasToWrite: 3 } },
    ['min-replicas-to-write 1', 'min-replicas-max-lag 5'],
  ],
  [
    '3 replicas asked for 2, lag 9',
    { replicas: 3, failover: { minReplicasToWrite: 2, minReplicasMaxLagSeconds: 9 } },
    ['min-replicas-to-write 2', 'min-replicas-max-lag 9'],
  ],
  ['no replicas', { replicas: 0 }, undefined],
  ['fencing turned off', { replicas: 2, failover: { minReplicasToWrite: 0 } }, undefined],
];
for (const [label, overrides, expected] of fencing) {
  test(`fencing lines: ${label}`, () => {
    const lines = conf(overrides).filter((l) => l.startsWith('min-replicas-'));
    assert.deepEqual(lines, expected ?? []);
  });
}

const schedules: Array<[string, number]> = [
  ['*/15 * * * *', 900],
  ['*/1 * * * *', 60],
  ['*/59 * * * *', 3540],
  ['0 */6 * * *', 21600],
  ['0 */23 * * *', 82800],
  ['0 * * * *', 3600],
  ['@hourly', 3600],
  ['0 0 * * *', 86400],
  ['@daily', 86400],
];
for (const [schedule, seconds] of schedules) {
  test(`rdbSchedule ${schedule} saves every ${seconds} s`, () => {
    assert.equal(rdbSaveSeconds(schedule), seconds);
    const lines = conf({ persistence: { enableRdb: true, rdbSchedule: schedule, enableAof: false, size: '1Gi' } });
    assert.deepEqual(
      lines.filter((l) => l.startsWith('save ')),
      [`save ${seconds} 1`],
    );
  });
}

test('RDB off writes save "" and AOF follows enableAof', () => {
  const lines = conf({ persistence: { enableRdb: false, enableAof: false } });
  assert.deepEqual(
    lines.filter((l) => l.startsWith('save ')),
    ['save ""'],
  );
  assert.ok(lines.includes('appendonly no'));
  assert.ok(conf({ persistence: { enableRdb: false, enableAof: true } }).includes('appendonly yes'));
});

test('no memory limit, no maxmemory; quantities in any unit', () => {
  assert.equal(
    conf({ resources: {} }).some((l) => l.startsWith('maxmemory')),
    false,
  );
  assert.equal(maxmemoryBytes(specOf({ resources: { limits: { memory: '1G' } } })), 800_000_000);
  assert.equal(maxmemoryBytes(specOf({ resources: { limits: { memory: 1048576 } } })), Math.floor(1048576 * 0.8));
  assert.equal(parseQuantity('1.5Gi'), 1.5 * 2 ** 30);
  assert.equal(parseQuantity('500m'), 0.5);
  assert.equal(parseQuantity('1e3'), 1000);
  assert.equal(parseQuantity('12 apples'), undefined);
});

test('spec.config entries come last, sorted, after the operator directives', () => {
  const lines = conf({ config: { 'tcp-keepalive': '60', 'maxmemory-policy': 'allkeys-lru', hz: '20' } });
  const tail = lines.slice(lines.indexOf('# from spec.config') + 1).filter(Boolean);
  assert.deepEqual(tail, ['hz 20', 'maxmemory-policy allkeys-lru', 'tcp-keepalive 60']);
  assert.ok(lines.indexOf('# from spec.config') > lines.indexOf('replicaof 127.0.0.1 1'));
});

test('the password is never in the file', async (t) => {
  for (const overrides of [{}, { auth: { secretName: 'pw' } }]) {
    await t.test(JSON.stringify(overrides), () => {
      const text = conf(overrides).join('\n');
      assert.equal(/requirepass|masterauth/.test(text), false);
    });
  }
});

test('staticRedisConf: the file without the dynamic user directives; the full file keeps them for new pods', () => {
  const spec = specOf({
    config: { 'maxmemory-policy': 'allkeys-lru', timeout: '60', 'io-threads': '4', 'hash-max-ziplist-entries': '256' },
  });
  const full = renderRedisConf('default', 'my-redis', spec).split('\n');
  const stat = staticRedisConf('default', 'my-redis', spec).split('\n');
  for (const line of ['maxmemory-policy allkeys-lru', 'timeout 60', 'hash-max-ziplist-entries 256', 'io-threads 4'])
    assert.ok(full.includes(line), line);
  assert.deepEqual(stat.slice(stat.indexOf('# from spec.config') + 1).filter(Boolean), ['io-threads 4']);
  // Only dynamic directives: the same file as no spec.config at all.
  assert.equal(
    staticRedisConf('default', 'my-redis', specOf({ config: { timeout: '60' } })),
    renderRedisConf('default', 'my-redis', specOf({})),
  );
});

const hashOf = (config: Record<string, string> | undefined) =>
  configHash(staticRedisConf('default', 'my-redis', specOf(config === undefined ? {} : { config })));

test('config hash: dynamic directives never change it, static ones (or unknown ones) always do', async (t) => {
  const base = hashOf({ 'maxmemory-policy': 'noeviction', timeout: '0' });
  const cases: Array<[string, Record<string, string> | undefined, boolean]> = [
    ['no spec.config', undefined, false],
    ['maxmemory-policy changed', { 'maxmemory-policy': 'allkeys-lru', timeout: '0' }, false],
    ['timeout changed', { 'maxmemory-policy': 'noeviction', timeout: '300' }, false],
    ['a dynamic directive removed', { timeout: '0' }, false],
    [
      'a dynamic alias added',
      { 'maxmemory-policy': 'noeviction', timeout: '0', 'hash-max-ziplist-entries': '256' },
      false,
    ],
    ['io-threads added (static)', { 'maxmemory-policy': 'noeviction', timeout: '0', 'io-threads': '4' }, true],
    [
      'a static directive (not in the table)',
      { 'maxmemory-policy': 'noeviction', timeout: '0', databases: '32' },
      true,
    ],
    [
      'maxclients (left out of the table: static)',
      { 'maxmemory-policy': 'noeviction', timeout: '0', maxclients: '100' },
      true,
    ],
  ];
  for (const [name, config, changes] of cases) {
    await t.test(name, () => (changes ? assert.notEqual : assert.equal)(hashOf(config), base));
  }
});
