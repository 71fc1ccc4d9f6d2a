// The reshard recorder (manager/reshard-record.ts): what it writes to the RedisCluster and which
// Events it sends, with a recording kube and a moved clock. CI once saw six ReshardRefused Events
// for one refused count: the reason carries memory figures that move every round.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { readReshardRecord, RESHARD_ANNOTATION } from '../../../../src/api/cluster-names.ts';
import { ReshardRecorder } from '../../../../src/sidecar/cluster/manager/reshard-record.ts';
import type { EventToSend } from '../../../../src/sidecar/cluster/manager/types.ts';

function recorder() {
  const patches: string[] = [];
  const events: EventToSend[] = [];
  let now = 0;
  const r = new ReshardRecorder({
    ref: { namespace: 'default', name: 'c' },
    kube: {
      patchClusterAnnotations: async (_ref, annotations) => {
        patches.push(annotations[RESHARD_ANNOTATION]!);
      },
    },
    log: pino({ level: 'silent' }),
    event: (e) => events.push(e),
    now: () => now,
    wallNow: () => Date.parse('2026-01-01T00:00:00Z') + now,
  });
  return { r, patches, events, advance: (ms: number) => (now += ms) };
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
