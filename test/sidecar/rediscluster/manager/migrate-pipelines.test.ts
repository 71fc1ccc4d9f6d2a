// How a slot move hands its keys to MIGRATE (src/sidecar/rediscluster/manager/mover.ts,
// move-groups.ts): a batch cut into pipelines of at most SEND_BYTES, and a source sent at most
// SOURCE_PIPELINES at once, whichever groups send them, against a scripted adapter (the order of events
// decides, never a timing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ClusterAdapter, Result } from '../../../../src/sidecar/adapters/redis/rediscluster.ts';
import { SOURCE_PIPELINES, SourceTurns } from '../../../../src/sidecar/rediscluster/manager/move-groups.ts';
import {
  batchKeys,
  moveSlots,
  SEND_BYTES,
  sendUnits,
  type MoveSpec,
} from '../../../../src/sidecar/rediscluster/manager/mover.ts';

const keys = (n: number, tag = 'k') => Array.from({ length: n }, (_, i) => Buffer.from(`${tag}${i}`));

test('a batch in pipelines: key lists cut at the bound, packed in order, nothing lost or repeated', async (t) => {
  const cases: Array<{ name: string; lists: number[]; max: number; want: number[][][] }> = [
    {
      name: 'small lists packed together',
      lists: [2, 2, 3],
      max: 4,
      want: [
        [
          [0, 2],
          [1, 2],
        ],
        [[2, 3]],
      ],
    },
    { name: 'a long list cut into MIGRATEs of its own', lists: [9], max: 4, want: [[[0, 4]], [[0, 4]], [[0, 1]]] },
    {
      name: 'a cut list and the next one',
      lists: [5, 3],
      max: 4,
      want: [
        [[0, 4]],
        [
          [0, 1],
          [1, 3],
        ],
      ],
    },
    { name: 'one key a pipeline', lists: [2], max: 1, want: [[[0, 1]], [[0, 1]]] },
    { name: 'nothing', lists: [], max: 4, want: [] },
  ];
  for (const c of cases)
    await t.test(c.name, () => {
      const batch = c.lists.map((n, slot) => ({ slot, keys: keys(n, `s${slot}:`) }));
      const units = sendUnits(batch, c.max);
      assert.deepEqual(
        units.map((u) => u.map((m) => [m.slot, m.keys.length])),
        c.want,
      );
      for (const u of units) assert.ok(u.reduce((n, m) => n + m.keys.length, 0) <= c.max);
      assert.deepEqual(
        units.flat().flatMap((m) => m.keys.map(String)),
        batch.flatMap((b) => b.keys.map(String)),
        'every key once, in order',
      );
    });
  assert.equal(batchKeys(8192, SEND_BYTES), SEND_BYTES / 8192);
});

/** A promise and its resolve. */
function gate() {
  let open!: () => void;
  const p = new Promise<void>((resolve) => (open = resolve));
  return { p, open };
}

test("one source's pipelines one at a time, in the order asked; other sources alongside; a failed one lets the next run", async () => {
  const turns = new SourceTurns(1);
  const log: string[] = [];
  const gates = new Map(['a1', 'a2', 'a3', 'b1'].map((n) => [n, gate()]));
  const send =
    (name: string, fail = false) =>
    async () => {
      log.push(`start ${name}`);
      await gates.get(name)!.p;
      log.push(`end ${name}`);
      if (fail) throw new Error(name);
      return name;
    };
  const a1 = turns.run('A', send('a1', true));
  const a2 = turns.run('A', send('a2'));
  const b1 = turns.run('B', send('b1'));
  const a3 = turns.run('A', send('a3'));
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  await settle();
  assert.deepEqual(log, ['start a1', 'start b1'], 'A runs one, B its own beside it');
  gates.get('a2')!.open();
  await settle();
  assert.deepEqual(log, ['start a1', 'start b1'], 'a2 waits for a1 even when ready');
  gates.get('a1')!.open();
  await assert.rejects(a1, /a1/);
  await settle();
  assert.deepEqual(log, ['start a1', 'start b1', 'end a1', 'start a2', 'end a2', 'start a3']);
  assert.equal(await a2, 'a2');
  gates.get('a3')!.open();
  gates.get('b1')!.open();
  assert.deepEqual(await Promise.all([a3, b1]), ['a3', 'b1']);
});

test('three groups from one source: SOURCE_PIPELINES in flight there at most, each within SEND_BYTES', async () => {
  const keyBytes = SEND_BYTES / 4;
  let inFlight = 0;
  let most = 0;
  const sizes: number[] = [];
  const left = new Map<number, number>([
    [1, 10],
    [2, 3],
    [3, 7],
    [4, 9],
  ]);
  const fake = {
    setSlots: async (_ip: string, e: unknown[]) => e.map(() => ({ ok: true, value: 'OK' })),
    getKeysInSlots: async (_ip: string, slots: number[], count: number) =>
      slots.map((s) => ({ ok: true, value: keys(Math.min(count, left.get(s)!), `${s}:`) })),
    migrateMany: async (_from: string, _to: string, lists: Buffer[][]): Promise<Result[]> => {
      inFlight++;
      most = Math.max(most, inFlight);
      sizes.push(lists.reduce((n, l) => n + l.length, 0));
      await new Promise<void>((resolve) => setImmediate(resolve));
      for (const l of lists) {
        const slot = Number(String(l[0]).split(':')[0]);
        left.set(slot, left.get(slot)! - l.length);
      }
      inFlight--;
      return lists.map(() => ({ ok: true, value: 'OK' }));
    },
    replicationOffset: async (): Promise<Result<number>> => ({ ok: true, value: 0 }),
  } as unknown as ClusterAdapter;
  const spec = (slot: number, to: string): MoveSpec => ({
    slot,
    from: { ip: 'S', id: 's' },
    to: { ip: to, id: to },
    cold: false,
    toImportingFrom: null,
    fromMigratingTo: null,
    toServes: false,
    others: [],
    targetReplicas: [],
    keyBytes,
  });
  const turns = new SourceTurns();
  const hooks = { stopped: () => false, turn: turns.run };
  const [x, y, z] = await Promise.all([
    moveSlots(fake, [spec(1, 'T'), spec(2, 'T')], hooks),
    moveSlots(fake, [spec(3, 'U')], hooks),
    moveSlots(fake, [spec(4, 'V')], hooks),
  ]);
  assert.deepEqual(
    [...x.entries(), ...y.entries(), ...z.entries()],
    [
      [1, { ok: true, keys: 10 }],
      [2, { ok: true, keys: 3 }],
      [3, { ok: true, keys: 7 }],
      [4, { ok: true, keys: 9 }],
    ],
  );
  assert.equal(SOURCE_PIPELINES, 2);
  assert.equal(most, SOURCE_PIPELINES, 'as many pipelines on the source as it may take, no more');
  assert.ok(
    sizes.every((n) => n <= 4),
    `pipelines of at most SEND_BYTES (4 keys here): ${sizes.join(', ')}`,
  );
});
