// A reshard interrupted mid-slot, with real redis-servers: the acting sidecar crashes (its worker
// stopped, its Lease left to expire) right after the first MIGRATE batch of a slot holding 1,000
// keys, so that slot is open on both ends with its keys split between them. Another instance takes
// the Lease and finishes: no slot left migrating or importing, the reshard record Done, every key
// there. In the second test the target master is killed as well: the move is finished towards the
// replica that replaced it.
// Network: 127.0.36.x (first test .1-.8, second .21-.28; sidecars' source addresses .100, .101).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { RedisRef } from '../../../src/sidecar/adapters/kube/client.ts';
import { addr } from '../../support/redis-server.ts';
import { selectedEngine } from '../../support/engines.ts';
import { until } from '../../support/until.ts';
import { ClusterEnv, podName, type Instance } from './harness.ts';
import { allCovered, myself, nodesOf, openSlots } from './nodes.ts';
import { fill, keySlot, SlotWriter } from './writer.ts';

const OCTET = 36;

/** A hash tag whose slot shard 0 gives to shard 3 in a 3 -> 4 reshard (4096-5461). */
function tagInMovingRange(): string {
  for (let i = 0; ; i++) {
    const slot = keySlot(`{t${i}}`);
    if (slot >= 4096 && slot <= 5461) return `{t${i}}`;
  }
}

async function interrupted(t: TestContext, name: string, base: number, alsoKillTarget: boolean) {
  const env = await ClusterEnv.start(t);
  const ip = (s: number, o: number) => addr(OCTET, base + s * 2 + o);
  const ips = await env.startShards(t, name, 3, ip);
  const tag = tagInMovingRange();
  const slot = keySlot(tag);
  // Set in a callback: spelled as a cast so that TypeScript does not narrow it to the initial null.
  let crashed = null as Promise<void> | null;
  let a: Instance | null = null;
  // Instance a crashes after the first batch of the tagged slot: the slot is open, its keys split.
  const hooks = {
    afterBatch: async (_ref: RedisRef, s: number) => {
      if (s !== slot || crashed || !a) return;
      if (alsoKillTarget) await env.servers.get(podName(name, 3, 0))!.kill();
      crashed = a.crash();
      await new Promise<void>(() => {}); // this worker never gets further
    },
  };
  a = await env.startInstance({ id: 'sidecar-a', sourceIp: addr(OCTET, 100), hooks });
  await until('the cluster formed', () => allCovered(ips, 6), 30_000, { everyMs: 100, dump: () => env.dump(name) });

  const writer = new SlotWriter(ips);
  t.after(() => writer.close());
  const tagged = await fill(writer, tag, 1000);
  const spread = await fill(writer, `${name}-pre`, 5000);
  writer.start(`${name}-w`);

  await env.patchSpec(name, { master: { replicas: 4 } });
  for (let o = 0; o < 2; o++) await env.startNode(t, name, 3, o, ip(3, o));
  await until('instance a crashed mid-slot', () => crashed !== null, 60_000, {
    everyMs: 50,
    dump: () => env.dump(name),
  });
  await crashed;
  const all = [...ips, ip(3, 0), ip(3, 1)];
  const open = await openSlots(alsoKillTarget ? all.filter((x) => x !== ip(3, 0)) : all);
  assert.ok(
    open.some((o) => o.startsWith(`${ip(0, 0)} ${slot} migrating`)),
    `slot ${slot} left migrating on shard 0's master: ${open.join(', ')}`,
  );

  if (alsoKillTarget) {
    // The cluster promotes the target's replica; then the kubelet restarts the killed container
    // (same pod, address and volume) and it rejoins as a replica of the promoted one.
    await until(
      'shard 3 pod 1 promoted by the cluster',
      async () => myself(await nodesOf(ip(3, 1)))?.role === 'master',
      20_000,
      { everyMs: 50 },
    );
    await env.servers.get(podName(name, 3, 0))!.restart();
  }
  const b = await env.startInstance({ id: 'sidecar-b', sourceIp: addr(OCTET, 101) });
  await until(
    'instance b finished the reshard',
    () => {
      const r = env.reshard(name);
      return r?.state === 'Done' && r.to === 4;
    },
    120_000,
    { everyMs: 200, dump: () => env.dump(name) },
  );
  await writer.stop();
  const live = all;
  assert.deepEqual(await openSlots(live), [], 'no slot left migrating or importing');
  assert.ok(await allCovered(live, 8), 'every slot served');
  // While the target master is dead (until its replica takes over), its slots are down: that is all a client may see.
  assert.deepEqual(
    writer.errors.filter(
      (e) =>
        !alsoKillTarget ||
        !/CLUSTERDOWN|Connection is closed|Command aborted due to connection close|ECONNREFUSED|timed out|too many redirections/.test(
          e,
        ),
    ),
    [],
    'no client error but the target dying',
  );
  assert.deepEqual(await writer.missing(tagged), [], 'every key of the interrupted slot is there');
  assert.deepEqual(await writer.missing(spread), [], 'every key written before is there');
  assert.deepEqual(await writer.missing(writer.acked), [], 'every acknowledged write is there');
  const finished = (await env.eventsWith(name, { SlotMoveFinished: 1 })).filter((e) => e.reason === 'SlotMoveFinished');
  assert.ok(
    finished.some((e) => e.message.includes(`slot ${slot}`)),
    JSON.stringify(env.events(name).map((e) => e.reason)),
  );
  return { env, b, finished };
}

test('the acting sidecar crashes mid-slot: another instance finishes the move and the reshard, nothing lost', async (t) => {
  const { finished } = await interrupted(t, 'ledger', 1, false);
  // Slots move in groups: others may have been left half-closed too (and finished their own way).
  assert.ok(
    finished.some((e) => /left migrating to ledger-shard-3-0: finished/.test(e.message)),
    finished.map((e) => e.message).join('\n'),
  );
});

test('the sidecar and the target master die mid-slot: the move is finished towards the replica that replaced it', async (t) => {
  const { finished, env } = await interrupted(t, 'journal', 21, true);
  // Valkey 8 points the source's migrating state at the importing master's replica once it takes
  // over; Redis leaves it naming the dead master, and the sidecar finds the heir itself.
  assert.match(
    finished.map((e) => e.message).join('\n'),
    selectedEngine().engine === 'valkey'
      ? /was left migrating to journal-shard-3-1: finished/
      : /which (is gone|restarted after it was replaced): finished towards journal-shard-3-1/,
  );
  assert.equal(env.records('journal').get(podName('journal', 3, 1))?.role, 'master');
});
