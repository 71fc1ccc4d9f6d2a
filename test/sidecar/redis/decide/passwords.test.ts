// Pure: a password change's grace period (decide/passwords.ts): which passwords every node keeps,
// when a grace period starts and when it is over, and the record on the Redis. Table-driven.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decidePasswords,
  formatGrace,
  parseGrace,
  type NodePasswords,
  type PasswordsInput,
} from '../../../../src/sidecar/redis/decide/passwords.ts';

const OLD = 'a'.repeat(64);
const NEW = 'b'.repeat(64);
const OLDER = 'c'.repeat(64);
const NOW = Date.parse('2026-12-01T04:00:00Z');
const GRACE = 600_000;

const nodes = (...hashes: Array<string[] | null>): NodePasswords[] =>
  hashes.map((h, i) => ({ pod: `pod-${i}`, hashes: h === null ? null : [...h].sort() }));
const run = (over: Partial<PasswordsInput>) =>
  decidePasswords({
    user: 'default',
    current: NEW,
    nodes: [],
    graceUntil: undefined,
    now: NOW,
    graceMs: GRACE,
    ...over,
  });

test('which passwords each node keeps, and when a grace period starts or ends', async (t) => {
  const table: Array<{
    name: string;
    input: Partial<PasswordsInput>;
    hashes: string[];
    startGrace: number | undefined;
    graceOver: boolean;
    pods: string[];
  }> = [
    {
      name: 'nothing changed: every node has only the current password',
      input: { nodes: nodes([NEW], [NEW]) },
      hashes: [NEW],
      startGrace: undefined,
      graceOver: true,
      pods: [],
    },
    {
      name: 'the Secret changed: a grace period starts and both passwords go to every node',
      input: { nodes: nodes([OLD], [OLD], [OLD]) },
      hashes: [OLD, NEW],
      startGrace: NOW + GRACE,
      graceOver: false,
      pods: ['pod-0', 'pod-1', 'pod-2'],
    },
    {
      name: 'during the grace period a restarted node (the new password only) gets the old one back',
      input: { nodes: nodes([OLD, NEW], [NEW], [OLD, NEW]), graceUntil: NOW + 1000 },
      hashes: [OLD, NEW],
      startGrace: undefined,
      graceOver: false,
      pods: ['pod-1'],
    },
    {
      name: 'during the grace period, nodes already holding both are left alone',
      input: { nodes: nodes([OLD, NEW], [OLD, NEW]), graceUntil: NOW + 1 },
      hashes: [OLD, NEW],
      startGrace: undefined,
      graceOver: false,
      pods: [],
    },
    {
      name: 'the grace period is over: only the current password is left',
      input: { nodes: nodes([OLD, NEW], [OLD, NEW]), graceUntil: NOW },
      hashes: [NEW],
      startGrace: undefined,
      graceOver: true,
      pods: ['pod-0', 'pod-1'],
    },
    {
      name: 'a second change during the grace period: all three work until the first period ends',
      input: { current: OLDER, nodes: nodes([OLD, NEW], [OLD, NEW]), graceUntil: NOW + 5000 },
      hashes: [OLD, NEW, OLDER].sort(),
      startGrace: undefined,
      graceOver: false,
      pods: ['pod-0', 'pod-1'],
    },
    {
      name: 'a change after an old period ended starts a new one',
      input: { nodes: nodes([OLD]), graceUntil: NOW - 60_000 },
      hashes: [OLD, NEW],
      startGrace: NOW + GRACE,
      graceOver: false,
      pods: ['pod-0'],
    },
    {
      name: 'grace period 0 (a leaked password): the old one goes at once',
      input: { nodes: nodes([OLD], [OLD]), graceMs: 0 },
      hashes: [NEW],
      startGrace: undefined,
      graceOver: true,
      pods: ['pod-0', 'pod-1'],
    },
    {
      name: 'a user new to the nodes is no change: it is created with its password',
      input: { user: 'shop', nodes: nodes(null, null) },
      hashes: [NEW],
      startGrace: undefined,
      graceOver: true,
      pods: ['pod-0', 'pod-1'],
    },
    {
      name: 'a node without the user during a grace period gets every password the others have',
      input: { user: 'shop', nodes: nodes([OLD, NEW], null), graceUntil: NOW + 1000 },
      hashes: [OLD, NEW],
      startGrace: undefined,
      graceOver: false,
      pods: ['pod-1'],
    },
  ];
  for (const row of table) {
    await t.test(row.name, () => {
      const d = run(row.input);
      assert.deepEqual(
        { hashes: d.hashes, startGrace: d.startGrace, graceOver: d.graceOver, pods: d.pods },
        { hashes: row.hashes, startGrace: row.startGrace, graceOver: row.graceOver, pods: row.pods },
        d.reason,
      );
      assert.ok(d.hashes.includes(row.input.current ?? NEW), 'the current password is never taken away');
    });
  }
});

test('the grace record on the Redis: round trip, and anything unreadable counts as none', async (t) => {
  const grace = new Map([
    ['shop', NOW + 1000],
    ['default', NOW],
  ]);
  const text = formatGrace(grace);
  assert.equal(text, '{"default":"2026-12-01T04:00:00.000Z","shop":"2026-12-01T04:00:01.000Z"}', 'sorted, ISO times');
  assert.deepEqual(parseGrace(text ?? undefined), grace);
  assert.equal(formatGrace(new Map()), null, 'no record: the annotation goes');
  for (const bad of [undefined, '', 'not json', '[1]', '"x"', '{"default": 5}', '{"default":"tomorrow"}']) {
    await t.test(`unreadable: ${String(bad)}`, () => assert.deepEqual(parseGrace(bad), new Map()));
  }
});
