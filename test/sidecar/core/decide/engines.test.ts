// Pure: which pods get their engine annotation written, and the Events a move between engines
// tells, round after round, as a Redis of three pods moves from Redis 7.2.6 to Valkey 8.0.1.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEngine } from '../../../../src/api/node-engine.ts';
import {
  decideEngineMove,
  engineWrites,
  type MovePod,
  type MoveState,
} from '../../../../src/sidecar/core/decide/engines.ts';

test('engineWrites: a pod whose node answered and whose annotation says otherwise', async (t) => {
  const valkey = readEngine('valkey 8.0.1');
  const cases: Array<{ name: string; published: string | undefined; engine: typeof valkey; want: string[] }> = [
    { name: 'no annotation yet', published: undefined, engine: valkey, want: ['valkey 8.0.1'] },
    { name: 'the same already', published: 'valkey 8.0.1', engine: valkey, want: [] },
    { name: 'another engine written (hand edit)', published: 'redis 7.2.6', engine: valkey, want: ['valkey 8.0.1'] },
    { name: 'not answering: nothing, the annotation stays', published: 'redis 7.2.6', engine: null, want: [] },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const w = engineWrites([{ name: 'p', uid: 'u', published: c.published, engine: c.engine }]);
      assert.deepEqual(
        w.map((x) => x.value),
        c.want,
      );
      for (const x of w) assert.equal(x.uid, 'u');
    });
  }
});

const R = 'redis 7.2.6';
const V = 'valkey 8.0.1';
const p = (pod: string, engine: string | null, master = false, updated: boolean | null = null): MovePod => ({
  pod,
  engine: engine === null ? null : readEngine(engine),
  updated,
  master,
});

const told = (events: ReadonlyArray<{ reason: string; pod?: string }>) =>
  events.map((e) => (e.pod === undefined ? e.reason : `${e.reason} ${e.pod}`));

test('decideEngineMove: a whole move, each thing told once and in order', () => {
  const rounds: Array<{ name: string; target: string; pods: MovePod[]; want: string[] }> = [
    { name: 'at rest on redis', target: 'redis', pods: [p('m', R, true), p('r0', R), p('r1', R)], want: [] },
    {
      name: 'spec.engine changed: started',
      target: 'valkey',
      pods: [p('m', R, true), p('r0', R), p('r1', R)],
      want: ['EngineMoveStarted'],
    },
    { name: 'r1 restarting', target: 'valkey', pods: [p('m', R, true), p('r0', R), p('r1', null)], want: [] },
    {
      name: 'r1 answers as valkey',
      target: 'valkey',
      pods: [p('m', R, true), p('r0', R), p('r1', V)],
      want: ['EngineMovePod r1'],
    },
    { name: 'the same again: nothing', target: 'valkey', pods: [p('m', R, true), p('r0', R), p('r1', V)], want: [] },
    {
      name: 'r0 answers as valkey',
      target: 'valkey',
      pods: [p('m', R, true), p('r0', V), p('r1', V)],
      want: ['EngineMovePod r0'],
    },
    {
      name: 'switchover onto r1',
      target: 'valkey',
      pods: [p('m', R), p('r0', V), p('r1', V, true)],
      want: ['EngineMoveMaster r1'],
    },
    {
      name: 'the old master gone while its pod is replaced: not done yet',
      target: 'valkey',
      pods: [p('r0', V), p('r1', V, true)],
      want: [],
    },
    {
      name: 'the old master restarting: not done yet',
      target: 'valkey',
      pods: [p('m', null), p('r0', V), p('r1', V, true)],
      want: [],
    },
    {
      name: 'the old master answers as valkey: its pod, then done',
      target: 'valkey',
      pods: [p('m', V), p('r0', V), p('r1', V, true)],
      want: ['EngineMovePod m', 'EngineMoveCompleted'],
    },
    { name: 'at rest on valkey', target: 'valkey', pods: [p('m', V), p('r0', V), p('r1', V, true)], want: [] },
  ];
  let state: MoveState | null = null;
  const messages: string[] = [];
  for (const r of rounds) {
    const d = decideEngineMove(state, r.pods, r.target, 3);
    assert.deepEqual(told(d.events), r.want, r.name);
    messages.push(...d.events.map((e) => e.message));
    state = d.state;
  }
  assert.equal(state, null);
  assert.deepEqual(messages, [
    'moving 3 pods from redis 7.2.6 to valkey (0 run it already): replicas one at a time, then a switchover onto a replica running valkey, the old master last',
    'r1 runs valkey 8.0.1 (1 of 3 pods)',
    'r0 runs valkey 8.0.1 (2 of 3 pods)',
    'the master moved onto r1, which runs valkey 8.0.1',
    'm runs valkey 8.0.1 (3 of 3 pods)',
    'every pod (3) runs valkey 8.0.1: the move from redis 7.2.6 is done',
  ]);
});

test('decideEngineMove: what is not a move, and a leader that takes over mid-move', async (t) => {
  const cases: Array<{
    name: string;
    state: MoveState | null;
    target: string | null;
    pods: MovePod[];
    want: string[];
    after: MoveState | null;
  }> = [
    {
      name: 'target not known: nothing, the state kept',
      state: { from: R, arrived: ['a'], masters: [] },
      target: null,
      pods: [p('a', V), p('b', R, true)],
      want: [],
      after: { from: R, arrived: ['a'], masters: [] },
    },
    {
      name: 'pods not answering while at rest: no move',
      state: null,
      target: 'valkey',
      pods: [p('a', V, true), p('b', null)],
      want: [],
      after: null,
    },
    {
      name: 'a move first seen mid-way (no spec.engine, or a new leader): started, then what already moved',
      state: null,
      target: 'valkey',
      pods: [p('a', V, true), p('b', V), p('c', R)],
      want: ['EngineMoveStarted', 'EngineMovePod a', 'EngineMovePod b', 'EngineMoveMaster a'],
      after: { from: R, arrived: ['a', 'b'], masters: ['a'] },
    },
    {
      name: 'the way back is a move too',
      state: null,
      target: 'redis',
      pods: [p('a', V, true), p('b', R)],
      want: ['EngineMoveStarted', 'EngineMovePod b'],
      after: { from: V, arrived: ['b'], masters: [] },
    },
    {
      name: 'a pod that moved and restarts on the target is not told twice',
      state: { from: R, arrived: ['a'], masters: [] },
      target: 'valkey',
      pods: [p('a', V), p('b', R, true)],
      want: [],
      after: { from: R, arrived: ['a'], masters: [] },
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const d = decideEngineMove(c.state, c.pods, c.target);
      assert.deepEqual(told(d.events), c.want);
      assert.deepEqual(d.state, c.after);
    });
  }
});
