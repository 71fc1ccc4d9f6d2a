// Pure: which backups retention removes (src/backup/retention.ts). Table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backupsToPrune, type Retention } from '../../src/backup/retention.ts';

const DAY = 86_400_000;
const NOW = Date.parse('2026-12-01T00:00:00Z');
/** Backups taken `ages` days ago, named by age. */
const taken = (...ages: number[]) => ages.map((a) => ({ key: `d${a}`, takenAt: NOW - a * DAY }));

test('what retention removes', async (t) => {
  const table: Array<[string, number[], Retention, string[]]> = [
    ['7 days: older ones go', [0, 1, 6.9, 7.1, 30], { days: 7 }, ['d7.1', 'd30']],
    ['no retention: nothing goes', [0, 100], {}, []],
    ['a count of 3: the newest three stay', [0, 1, 2, 3, 4], { count: 3 }, ['d3', 'd4']],
    ['both: a backup goes only when too old AND beyond the count', [0, 1, 2, 10, 11], { days: 7, count: 4 }, ['d11']],
    ['the newest is kept even when it is too old', [40, 50], { days: 7 }, ['d50']],
    ['retention 0 days keeps the newest', [0.5, 1], { days: 0 }, ['d1']],
    ['a count of 1 keeps only the newest', [3, 1, 2], { count: 1 }, ['d2', 'd3']],
    ['nothing stored', [], { days: 7 }, []],
  ];
  for (const [name, ages, retention, want] of table) {
    await t.test(name, () => {
      const d = backupsToPrune(taken(...ages), NOW, retention);
      assert.deepEqual([...d.prune].sort(), [...want].sort(), d.reason);
    });
  }
});
