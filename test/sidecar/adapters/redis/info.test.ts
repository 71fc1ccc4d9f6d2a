// Pure parsing and error classification; no Redis process, no address.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  parseConfigReply,
  parseFacts,
  parseInfoFields,
  parseKeyCount,
  parseReplicaLine,
  parseReplication,
} from '../../../../src/sidecar/adapters/redis/info.ts';
import { classifyError, isSilence } from '../../../../src/sidecar/adapters/redis/errors.ts';

// Captured from redis-server 7.0.15 (CRLF as Redis sends it).
const crlf = (s: string) =>
  s
    .trim()
    .split('\n')
    .map((l) => l.trim())
    .join('\r\n') + '\r\n';

const FRESH_REPLICA_OF_NOWHERE = crlf(`
# Server
redis_version:7.0.15
run_id:c3b02e507915da43e84731a7aa223b0e1810b7d5
uptime_in_seconds:4
# Replication
role:slave
master_host:127.0.0.1
master_port:1
master_link_status:down
master_last_io_seconds_ago:-1
master_sync_in_progress:0
slave_read_repl_offset:1
slave_repl_offset:1
master_link_down_since_seconds:-1
slave_priority:100
slave_read_only:1
replica_announced:1
connected_slaves:0
master_failover_state:no-failover
master_replid:749ea6b619f46f69878cff1e21d35545c6f2a7bc
master_replid2:0000000000000000000000000000000000000000
master_repl_offset:0
second_repl_offset:-1
repl_backlog_active:0
# Persistence
loading:0
async_loading:0
aof_enabled:0
# Keyspace
`);

const MASTER = crlf(`
# Replication
role:master
connected_slaves:2
slave0:ip=10.1.0.7,port=6379,state=online,offset=84,lag=1
slave1:ip=10.1.0.8,port=6379,state=wait_bgsave,offset=0,lag=0
master_failover_state:no-failover
master_replid:f6a17214d83ce8bef1f6a6df32e8fdc41d30e89c
master_replid2:61765470965ed9ebda8ac825da0699f0f3ab8b1e
master_repl_offset:214
second_repl_offset:65
# Persistence
loading:1
aof_enabled:1
# Keyspace
db0:keys=5,expires=0,avg_ttl=0
db3:keys=2,expires=1,avg_ttl=100
`);

const REPLICA_LINK_DOWN = crlf(`
# Replication
role:slave
master_host:10.1.0.6
master_port:6379
master_link_status:down
master_last_io_seconds_ago:-1
master_sync_in_progress:0
slave_read_repl_offset:171
slave_repl_offset:171
master_link_down_since_seconds:1
slave_priority:100
master_replid:1a5ffbbdd1edeaa3cc845482358cfd1651a2adaf
master_replid2:0000000000000000000000000000000000000000
master_repl_offset:171
`);

test('parseReplication: table of real INFO texts', async (t) => {
  const cases = [
    {
      name: 'fresh node pointing at the placeholder: -1 becomes null, offset 0',
      text: FRESH_REPLICA_OF_NOWHERE,
      expect: {
        role: 'replica',
        masterHost: '127.0.0.1',
        masterPort: 1,
        masterLinkStatus: 'down',
        masterLastIoSecondsAgo: null,
        masterLinkDownSinceSeconds: null,
        masterReplOffset: 0,
        slaveReplOffset: 1,
        secondReplOffset: null,
        replicas: [],
      },
    },
    {
      name: 'master with two replica lines and a secondary history',
      text: MASTER,
      expect: {
        role: 'master',
        masterHost: null,
        masterLinkStatus: null,
        connectedSlaves: 2,
        masterReplOffset: 214,
        masterReplid2: '61765470965ed9ebda8ac825da0699f0f3ab8b1e',
        secondReplOffset: 65,
        replicas: [
          { ip: '10.1.0.7', port: 6379, state: 'online', offset: 84, lag: 1 },
          { ip: '10.1.0.8', port: 6379, state: 'wait_bgsave', offset: 0, lag: 0 },
        ],
      },
    },
    {
      name: 'replica whose master was just killed',
      text: REPLICA_LINK_DOWN,
      expect: {
        role: 'replica',
        masterLinkStatus: 'down',
        masterLinkDownSinceSeconds: 1,
        masterReplOffset: 171,
        slavePriority: 100,
      },
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const r = parseReplication(parseInfoFields(c.text)) as unknown as Record<string, unknown>;
      for (const [k, v] of Object.entries(c.expect)) assert.deepEqual(r[k], v, `${c.name}: ${k}`);
    });
  }
});

test('parseFacts combines INFO and CONFIG GET; missing config falls back', () => {
  const f = parseFacts(
    MASTER,
    parseConfigReply([
      'replica-priority',
      '0',
      'min-replicas-to-write',
      '1',
      'min-replicas-max-lag',
      '5',
      'maxmemory-policy',
      'allkeys-lru',
      'timeout',
      '0',
    ]),
  );
  assert.deepEqual(
    f.runtimeConfig,
    { 'maxmemory-policy': 'allkeys-lru', timeout: '0' },
    'only the runtime-managed directives, only those reported',
  );
  assert.equal(f.replicaPriority, 0);
  assert.equal(f.minReplicasToWrite, 1);
  assert.equal(f.minReplicasMaxLag, 5);
  assert.equal(f.loading, true);
  assert.equal(f.keys, 7);
  assert.equal(f.aofEnabled, true);
  const g = parseFacts(FRESH_REPLICA_OF_NOWHERE, new Map());
  assert.equal(g.replicaPriority, 100, 'from slave_priority');
  assert.equal(g.runId, 'c3b02e507915da43e84731a7aa223b0e1810b7d5');
  assert.equal(g.version, '7.0.15');
  assert.equal(g.keys, 0);
  assert.equal(g.loading, false);
  assert.deepEqual(g.runtimeConfig, {});
});

test('small parsers tolerate junk', () => {
  assert.equal(parseReplicaLine('garbage'), null);
  assert.deepEqual(parseReplicaLine('ip=1.2.3.4,port=6379'), {
    ip: '1.2.3.4',
    port: 6379,
    state: 'unknown',
    offset: 0,
    lag: 0,
  });
  assert.equal(parseKeyCount(parseInfoFields('db0:keys=x\r\n')), 0);
  assert.deepEqual([...parseConfigReply('nope')], []);
  assert.deepEqual([...parseConfigReply(['a', '1', 'dangling'])], [['a', '1']]);
});

test('classifyError: the taxonomy', async (t) => {
  const err = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});
  const cases: Array<[unknown, string]> = [
    [err('connect ECONNREFUSED 127.0.0.1:6379', 'ECONNREFUSED'), 'refused'],
    [err('connect ETIMEDOUT', 'ETIMEDOUT'), 'timeout'],
    [err('Command timed out'), 'timeout'],
    [err('connect EHOSTUNREACH', 'EHOSTUNREACH'), 'unreachable'],
    [err('connect EPERM', 'EPERM'), 'unreachable'],
    [err('read ECONNRESET', 'ECONNRESET'), 'closed'],
    [err('Connection is closed.'), 'closed'],
    [err("Stream isn't writeable and enableOfflineQueue options is false"), 'closed'],
    [err('WRONGPASS invalid username-password pair or user is disabled.'), 'auth'],
    [err('NOAUTH Authentication required.'), 'auth'],
    [err('LOADING Redis is loading the dataset in memory'), 'loading'],
    [err('BUSY Redis is busy running a script.'), 'busy'],
    [err("READONLY You can't write against a read only replica."), 'readonly'],
    [err('NOREPLICAS Not enough good replicas to write.'), 'noreplicas'],
    [err('ERR unknown command'), 'other'],
    ['a string', 'other'],
  ];
  for (const [e, kind] of cases) {
    const what = String((e as Error).message ?? e);
    await t.test(`${what} -> ${kind}`, () => assert.equal(classifyError(e).kind, kind, what));
  }
  assert.equal(isSilence('timeout'), true);
  assert.equal(isSilence('auth'), false, 'an auth refusal is an answer');
  assert.equal(isSilence('loading'), false);
});
