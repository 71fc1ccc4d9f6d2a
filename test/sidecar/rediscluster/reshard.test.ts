// Resharding by the real cluster manager on real redis-server processes: 3 -> 4 -> 3 shards under
// a writer that SETs then WAITs 1 on the owning node (following MOVED/ASK), with 20,000 keys
// already in. Afterwards every acknowledged key reads back, the writer saw no error that is not a
// redirection, no slot is left open, the reshard record says Done, and the fourth shard's nodes,
// drained, are forgotten by the others and reset.
// Network: 127.0.35.x (shard s pod o at .(1 + 2s + o), the sidecar's source address .100).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { addr } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { ClusterEnv, podName } from './harness.ts';
import { allCovered, myself, nodesOf, openSlots, slotCountsOf } from './nodes.ts';
import { fill, SlotWriter } from './writer.ts';

const OCTET = 35;
const NAME = 'catalog';
const ip = (shard: number, ordinal: number) => addr(OCTET, 1 + shard * 2 + ordinal);

test('reshard 3 -> 4 -> 3 under a writer: every acknowledged key readable, no client error, no slot left open, shard 3 forgotten', async (t) => {
  const env = await ClusterEnv.start(t);
  const staying = await env.startShards(t, NAME, 3, ip);
  await env.startInstance({ id: 'sidecar-a', sourceIp: addr(OCTET, 100) });
  await until('the three shards formed', () => allCovered(staying, 6), 30_000, { everyMs: 100 });

  const writer = new SlotWriter(staying);
  t.after(() => writer.close());
  const filled = await fill(writer, 'pre', 20_000);
  writer.start('w');

  // Up: the hook creates shard 3's StatefulSet when master.replicas becomes 4.
  await env.patchSpec(NAME, { master: { replicas: 4 } });
  for (let o = 0; o < 2; o++) await env.startNode(t, NAME, 3, o, ip(3, o));
  const all = [...staying, ip(3, 0), ip(3, 1)];
  const upStarted = performance.now();
  await until(
    '4 shards of 4096 slots each, reshard Done',
    async () => {
      const r = env.reshard(NAME);
      if (r?.state !== 'Done' || r.to !== 4) return false;
      const counts = await slotCountsOf(all.filter((_, i) => i % 2 === 0));
      return [...counts.values()].every((n) => n === 4096);
    },
    120_000,
    { everyMs: 200, dump: () => env.dump(NAME) },
  );
  const upSeconds = (performance.now() - upStarted) / 1000;
  assert.deepEqual(await openSlots(all), []);
  assert.ok(await allCovered(all, 8));
  const upRecord = env.reshard(NAME)!;
  assert.equal(upRecord.from, 3);
  assert.equal(upRecord.moved, upRecord.total);
  assert.equal(upRecord.total, 16384 - 3 * 4096);
  const ackedDuringUp = writer.acked.length;

  // Down: slots leave shard 3 first; the hook drops its StatefulSet once its pods report no slots.
  await env.patchSpec(NAME, { master: { replicas: 3 } });
  const downStarted = performance.now();
  await until(
    'shard 3 drained: its pods report no slots, reshard Done',
    () => {
      const r = env.reshard(NAME);
      const records = env.records(NAME);
      const drained = [0, 1].every((o) => {
        const rec = records.get(podName(NAME, 3, o))?.record;
        return rec !== null && rec !== undefined && rec.slots.length === 0;
      });
      return r?.state === 'Done' && r.to === 3 && drained;
    },
    120_000,
    { everyMs: 200, dump: () => env.dump(NAME) },
  );
  const downSeconds = (performance.now() - downStarted) / 1000;
  await writer.stop();
  const refreshesWhileWriting = writer.refreshes;
  // The hook drops shard 3's StatefulSet: its pods terminate. They are forgotten by the others and
  // reset while they shut down, so they do not gossip their way back.
  const release: Array<() => Promise<void>> = [];
  for (const o of [0, 1]) release.push(await env.terminatePod(podName(NAME, 3, o)));
  await until('the staying nodes know only each other', () => allCovered(staying, 6), 30_000, {
    everyMs: 100,
    dump: () => env.dump(NAME),
  });
  await until(
    'the leaving nodes reset (each knows only itself)',
    async () => {
      const views = await Promise.all([0, 1].map((o) => nodesOf(ip(3, o))));
      return views.every((v) => v?.length === 1 && myself(v)!.slots.length === 0);
    },
    10_000,
    { everyMs: 100, dump: () => env.dump(NAME) },
  );
  for (const r of release) await r();
  for (const o of [0, 1]) await env.servers.get(podName(NAME, 3, o))!.kill();

  assert.deepEqual(await openSlots(staying), []);
  const counts = await slotCountsOf([0, 1, 2].map((s) => ip(s, 0)));
  assert.deepEqual([...counts.values()].sort(), [5461, 5461, 5462]);
  assert.deepEqual(writer.errors, [], 'a client following MOVED/ASK saw no other error');
  assert.equal(refreshesWhileWriting, 0, 'no node the writer was sent to failed to answer while it wrote');
  assert.ok(
    writer.acked.length > ackedDuringUp && ackedDuringUp > 100,
    `the writer kept writing (${ackedDuringUp} during the way up, ${writer.acked.length} in all)`,
  );
  assert.deepEqual(await writer.missing(writer.acked), [], 'every acknowledged write is readable');
  assert.deepEqual(await writer.missing(filled), [], 'every key written before is readable');
  const reasons = (await env.eventsWith(NAME, { ReshardDone: 2, NodeReleased: 1 })).map((e) => e.reason);
  assert.equal(reasons.filter((r) => r === 'ReshardDone').length, 2, reasons.join(','));
  assert.ok(reasons.includes('NodeReleased'));
  for (const e of env.events(NAME).filter((x) => x.reason === 'ReshardDone')) t.diagnostic(e.message);
  t.diagnostic(
    `up ${upSeconds.toFixed(1)} s, down ${downSeconds.toFixed(1)} s; ${writer.acked.length} acknowledged writes, ${writer.redirections} redirections, ${writer.unacked} unacknowledged`,
  );
});
