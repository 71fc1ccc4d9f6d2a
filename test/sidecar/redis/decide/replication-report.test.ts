// Pure: which pods get their replication annotation written, and with what
// (decide/replication-report.ts), and the record's format (api/labels.ts). Table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readReplicationRecord, replicationRecord, type ReplicationRecord } from '../../../../src/api/labels.ts';
import {
  decideReplicationReports,
  REPORT_EVERY_MS,
  REPORT_MIN_BYTES,
} from '../../../../src/sidecar/redis/decide/replication-report.ts';
import { facts, input, ip, pod } from './fixtures.ts';

const WALL = Date.parse('2026-12-03T12:00:00.000Z');
const MASTER = 'cache-master-0';
const master = (offset: number, lines = [{ ip: ip(11), port: 6379, state: 'online', offset: offset - 100, lag: 0 }]) =>
  pod({ name: 'master-0', label: 'master', facts: facts({ role: 'master', offset, replicas: lines }) });
const replica = (offset: number, extra = {}) =>
  pod({ name: 'replica-0', label: 'replica', facts: facts({ of: ip(1), offset }), ...extra });
const record = (offset: number, agoMs: number, lagBytes: number | null = 0): ReplicationRecord => ({
  offset,
  lagBytes,
  at: new Date(WALL - agoMs).toISOString(),
});

test('which pods get a replication record now', async (t) => {
  const table: Array<
    [string, ReturnType<typeof pod>[], Record<string, ReplicationRecord>, Array<[string, number, number | null]>]
  > = [
    [
      "no record yet: the master (no lag) and the replica (lag by the master's view: its offset minus the acknowledged one)",
      [master(5000), replica(4950)],
      {},
      [
        [MASTER, 5000, null],
        ['cache-replica-0', 4950, 100],
      ],
    ],
    [
      'records a minute old, offsets moved 64 KiB: both again',
      [master(5000 + REPORT_MIN_BYTES), replica(4950 + REPORT_MIN_BYTES)],
      { [MASTER]: record(5000, REPORT_EVERY_MS), 'cache-replica-0': record(4950, REPORT_EVERY_MS) },
      [
        [MASTER, 5000 + REPORT_MIN_BYTES, null],
        ['cache-replica-0', 4950 + REPORT_MIN_BYTES, 100],
      ],
    ],
    [
      'at rest (offsets moved by pings only): nothing, however old',
      [master(5084), replica(5084)],
      { [MASTER]: record(5000, 3_600_000), 'cache-replica-0': record(5000, 3_600_000) },
      [],
    ],
    [
      'busy but written less than a minute ago: nothing',
      [master(9_000_000), replica(8_000_000)],
      { [MASTER]: record(5000, REPORT_EVERY_MS - 1), 'cache-replica-0': record(5000, 1000) },
      [],
    ],
    [
      'a replica the master does not list: its offset, lag unknown',
      [master(5000, []), replica(4000)],
      { [MASTER]: record(5000, 0) },
      [['cache-replica-0', 4000, null]],
    ],
    [
      'a pod that does not answer or is loading: not reported',
      [
        master(5000),
        replica(4950, { okAgo: 60_000 }),
        pod({ name: 'replica-1', facts: facts({ of: ip(1), loading: true }) }),
      ],
      { [MASTER]: record(5000, 0) },
      [],
    ],
  ];
  for (const [name, pods, published, expected] of table) {
    await t.test(name, () => {
      const got = decideReplicationReports(input(pods), MASTER, new Map(Object.entries(published)), WALL);
      assert.deepEqual(
        got.map((r) => [r.pod, r.record.offset, r.record.lagBytes]),
        expected,
        got.map((r) => r.reason).join('; '),
      );
      for (const r of got) assert.equal(r.record.at, '2026-12-03T12:00:00.000Z');
    });
  }
});

test('the record round-trips through its annotation text; anything else reads as none', async (t) => {
  for (const r of [record(0, 0, null), record(123456789, 0, 42)])
    await t.test(replicationRecord(r), () => assert.deepEqual(readReplicationRecord(replicationRecord(r)), r));
  for (const bad of [
    undefined,
    '',
    'offset=1',
    'offset=x lag=1 at=2026-12-03T12:00:00Z',
    'offset=1 lag=1 at=yesterday',
  ])
    await t.test(`not a record: ${String(bad)}`, () => assert.equal(readReplicationRecord(bad), null));
});
