// The reshard recorder (manager/reshard-record.ts): what it writes to the RedisCluster and which
// Events it sends, with a recording kube and a moved clock. CI once saw six ReshardRefused Events
// for one refused count: the reason carries memory figures that move every round.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { readReshardRecord, reshardRecord, RESHARD_ANNOTATION } from '../../../../src/api/rediscluster-names.ts';
import { ReshardRecorder } from '../../../../src/sidecar/rediscluster/manager/reshard-record.ts';
import type { EventToSend } from '../../../../src/sidecar/rediscluster/manager/types.ts';

function recorder(o: { conflictOn?: string } = {}) {
  const patches: string[] = [];
  const preconditions: Array<string | undefined> = [];
  const events: EventToSend[] = [];
  let now = 0;
  const r = new ReshardRecorder({
    ref: { namespace: 'default', name: 'c' },
    kube: {
      patchClusterAnnotations: async (_ref, annotations, resourceVersion) => {
        if (o.conflictOn !== undefined && resourceVersion === o.conflictOn)
          throw Object.assign(new Error('Conflict'), { code: 409 });
        patches.push(annotations[RESHARD_ANNOTATION]!);
        preconditions.push(resourceVersion);
      },
    },
    log: pino({ level: 'silent' }),
    event: (e) => events.push(e),
    now: () => now,
    wallNow: () => Date.parse('2026-01-01T00:00:00Z') + now,
  });
  return { r, patches, preconditions, events, advance: (ms: number) => (now += ms) };
}

const refuse = (mib: number) => ({
  kind: 'refuse' as const,
  from: 4,
  to: 3,
  reason: `spec.master.replicas 3 cannot hold the data: the masters use ${mib} MiB`,
});

test('a refused count is written and announced once, however its figures move', async (t) => {
  const cases: Array<[string, (x: ReturnType<typeof recorder>) => Promise<void>]> = [
    [
      'rounds with moving figures, our write already seen by the informer',
      async ({ r, patches }) => {
        for (let i = 0; i < 6; i++) {
          await r.decided(refuse(20 + i));
          r.observe(patches.at(-1));
        }
      },
    ],
    [
      'rounds while the informer still shows the record from before',
      async ({ r }) => {
        r.observe(undefined);
        for (let i = 0; i < 6; i++) {
          await r.decided(refuse(20 + i));
          r.observe(undefined);
        }
      },
    ],
    [
      'a wait in between (a slot seen open for a moment) is not a change of mind',
      async ({ r }) => {
        await r.decided(refuse(20));
        await r.decided({ kind: 'wait', from: 4, to: 3, reason: '1 slot(s) are open' });
        await r.decided(refuse(21));
      },
    ],
  ];
  for (const [name, run] of cases)
    await t.test(name, async () => {
      const x = recorder();
      await run(x);
      assert.equal(x.patches.length, 1);
      assert.equal(readReshardRecord(x.patches[0])?.state, 'Refused');
      assert.deepEqual(
        x.events.map((e) => e.reason),
        ['ReshardRefused'],
      );
    });
});

test('another instance finds the refusal in the record and does not announce it again', async () => {
  const first = recorder();
  await first.r.decided(refuse(20));
  const second = recorder();
  second.r.observe(first.patches[0]);
  await second.r.decided(refuse(23));
  assert.deepEqual(second.patches, []);
  assert.deepEqual(second.events, []);
});

test('a refusal after the count was met (or slots moved) is a new refusal', async () => {
  const x = recorder();
  await x.r.decided(refuse(20));
  await x.r.decided({ kind: 'balanced', from: 4, to: 4 });
  x.r.observe(undefined);
  await x.r.decided(refuse(20));
  assert.deepEqual(
    x.events.map((e) => e.reason),
    ['ReshardRefused', 'ReshardRefused'],
  );
});

const move = (to: number) => ({
  kind: 'move' as const,
  from: 3,
  to,
  moves: [{ kind: 'move' as const, slot: 1, from: 'c-shard-0-0', to: 'c-shard-3-0', cold: false, reason: '' }],
  reason: 'even shares',
});

test('no slot moves before its Running record is written against the version the decision came from', async () => {
  const x = recorder({ conflictOn: '41' });
  x.r.observe(undefined, '41');
  assert.equal(await x.r.decided(move(4)), false, 'the spec changed since (409): nothing moves');
  assert.deepEqual(x.patches, []);
  assert.deepEqual(x.events, []);
  x.r.observe(undefined, '42');
  assert.equal(await x.r.decided(move(4)), true);
  assert.deepEqual(x.preconditions, ['42']);
  assert.equal(readReshardRecord(x.patches[0])?.state, 'Running');
  assert.equal(await x.r.decided(move(4)), true, 'the same episode: no new write');
  assert.equal(x.patches.length, 1);
});

test('balanced with no Done record for the count: Done written once, quietly (the hook then lets empty shards go)', async (t) => {
  await t.test('a fresh cluster', async () => {
    const x = recorder();
    assert.equal(await x.r.decided({ kind: 'balanced', from: 3, to: 3 }), false);
    await x.r.decided({ kind: 'balanced', from: 3, to: 3 });
    assert.deepEqual(
      x.patches.map((p) => [readReshardRecord(p)?.state, readReshardRecord(p)?.to]),
      [['Done', 3]],
    );
    assert.deepEqual(x.events, []);
  });
  await t.test('turned back from 3 -> 4 before anything moved: Done for 3, not for 4', async () => {
    const x = recorder();
    await x.r.decided(move(4));
    x.r.observe(x.patches[0]);
    await x.r.decided({ kind: 'balanced', from: 3, to: 3 });
    assert.deepEqual(
      x.patches.map((p) => [readReshardRecord(p)?.state, readReshardRecord(p)?.to]),
      [
        ['Running', 4],
        ['Done', 3],
      ],
    );
  });
});

test("an instance that finds another's Running record and must wait says why, once per reason, keeping the progress", async () => {
  const x = recorder();
  const running = {
    from: 3,
    to: 4,
    state: 'Running' as const,
    moved: 700,
    total: 4096,
    at: '2026-01-01T00:00:00.000Z',
    why: '',
  };
  x.r.observe(reshardRecord(running), '50');
  const wait = (reason: string) => ({ kind: 'wait' as const, from: 4, to: 4, reason });
  assert.equal(await x.r.decided(wait("shard 3's master c-shard-3-1 has no linked replica yet")), false);
  await x.r.decided(wait("shard 3's master c-shard-3-1 has no linked replica yet"));
  assert.equal(x.patches.length, 1, 'once per reason, even before the informer shows the write');
  const written = readReshardRecord(x.patches[0]);
  assert.deepEqual(
    { ...written, at: undefined },
    { ...running, at: undefined, why: "waiting: shard 3's master c-shard-3-1 has no linked replica yet" },
  );
  await x.r.decided(wait('1 slot(s) are open'));
  assert.equal(readReshardRecord(x.patches[1])?.why, 'waiting: 1 slot(s) are open');
  x.r.observe(reshardRecord({ ...running, to: 5 }));
  await x.r.decided(wait('1 slot(s) are open'));
  assert.equal(x.patches.length, 2, 'a record for another count is not ours to annotate');
  assert.deepEqual(x.events, []);
});
