// The slots a shard's backup records, from the CLUSTER NODES of the node it read: its own as a
// master, its master's as a replica; never while a slot of the shard is being moved.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shardSlotsOf } from '../../src/backup/shard-slots.ts';

const M0 = 'a'.repeat(40);
const M1 = 'b'.repeat(40);
const R0 = 'c'.repeat(40);
const line = (id: string, flags: string, master: string, ...slots: string[]) =>
  [id, '10.0.0.1:6379@16379', flags, master, '0', '0', '1', 'connected', ...slots].join(' ');

test('shardSlotsOf', async (t) => {
  const cases: Array<[string, string[], { ok: true; slots: string } | RegExp]> = [
    [
      'a replica records its master’s slots',
      [line(M0, 'master', '-', '0-100', '200'), line(R0, 'myself,slave', M0), line(M1, 'master', '-', '101-199')],
      { ok: true, slots: '0-100,200' },
    ],
    [
      'a master records its own',
      [line(M0, 'myself,master', '-', '0-8191'), line(M1, 'master', '-', '8192-16383')],
      { ok: true, slots: '0-8191' },
    ],
    [
      'ranges printed apart or out of order are merged',
      [line(M0, 'myself,master', '-', '200-300', '0-99', '100-199')],
      { ok: true, slots: '0-300' },
    ],
    ['a slot moving out', [line(M0, 'myself,master', '-', '0-10', `[11->-${M1}]`)], /being moved/],
    [
      'a slot moving in',
      [line(R0, 'myself,slave', M0), line(M0, 'master', '-', '0-10', `[11-<-${M1}]`)],
      /being moved/,
    ],
    ['a shard without slots', [line(M0, 'myself,master', '-')], /serves no slot/],
    ['a replica whose master is unknown', [line(R0, 'myself,slave', M0)], /not in CLUSTER NODES/],
    ['no myself line', [line(M0, 'master', '-', '0-16383')], /no myself/],
  ];
  for (const [name, lines, expected] of cases) {
    await t.test(name, () => {
      const r = shardSlotsOf(lines.join('\n') + '\n');
      if (expected instanceof RegExp) {
        assert.equal(r.ok, false);
        assert.match(r.ok ? '' : r.reason, expected);
      } else assert.deepEqual(r, expected);
    });
  }
});
