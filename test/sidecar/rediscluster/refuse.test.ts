// Capacity, with the real cluster manager and real redis-servers (maxmemory 8 MB each): a
// scale-down from 4 to 3 shards that the data does not fit in is refused (record Refused with the
// reason, a Warning Event) and moves nothing; then memory autoscaling, turned on, writes a larger
// shard count through the scale subresource (as an HPA does) and says why in an Event.
// Network: 127.0.37.x (shard s pod o at .(1 + 2s + o), the sidecar's source address .100).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL } from '../../../src/api/rediscluster-names.ts';
import { addr } from '../../support/redis-server.ts';
import { selectedEngine } from '../../support/engines.ts';
import { until } from '../../support/until.ts';
import { ClusterEnv, NS } from './harness.ts';
import { allCovered, openSlots, slotCountsOf } from './nodes.ts';
import { fill, SlotWriter } from './writer.ts';

const OCTET = 37;
const NAME = 'profiles';
const ip = (s: number, o: number) => addr(OCTET, 1 + s * 2 + o);

test('a scale-down the data does not fit in is refused and moves nothing; autoscaling then asks for more shards', async (t) => {
  const env = await ClusterEnv.start(t);
  // Valkey 8 uses more memory for the same data here: an empty cluster node 1.1 MB more than
  // Redis 7.0, and these keys did not fit four masters of 9 MB. 12 MB keeps refusal and autoscaling
  // on the same side of their thresholds as 8 MB does on Redis.
  const maxmemory = selectedEngine().engine === 'valkey' ? '12mb' : '8mb';
  const ips = await env.startShards(t, NAME, 4, ip, { maxmemory });
  await env.startInstance({ id: 'sidecar-a', sourceIp: addr(OCTET, 100) });
  await until('4 shards formed', () => allCovered(ips, 8), 30_000, { everyMs: 100, dump: () => env.dump(NAME) });

  // About 6.5 MB used per master: 3 shards of 8 MB hold 21.6 MB at 90%, the data needs more.
  const writer = new SlotWriter(ips);
  t.after(() => writer.close());
  const keys = await fill(writer, 'p', 13_000, 900);
  const masters = [0, 1, 2, 3].map((s) => ip(s, 0));
  const before = await slotCountsOf(masters);

  await env.patchSpec(NAME, { master: { replicas: 3 } });
  const refused = await until(
    'the reshard record says Refused',
    () => {
      const r = env.reshard(NAME);
      return r?.state === 'Refused' && r;
    },
    15_000,
    { everyMs: 100, dump: () => env.dump(NAME) },
  );
  assert.equal(refused.from, 4);
  assert.equal(refused.to, 3);
  assert.match(refused.why, /spec\.master\.replicas 3 cannot hold the data: .* at least 4 are needed/);
  // The Warning is a separate write of the sidecar's: the watch shows it a moment after the record.
  const events = await until('the ReshardRefused Warning', () => {
    const found = env.events(NAME).filter((e) => e.reason === 'ReshardRefused');
    return found.length > 0 && found;
  });
  assert.equal(events.length, 1);
  assert.equal(events[0]!.type, 'Warning');
  // Nothing moves, then or a little later.
  await new Promise((r) => setTimeout(r, 2000));
  assert.deepEqual(await slotCountsOf(masters), before);
  assert.deepEqual(await openSlots(ips), []);
  assert.equal(
    env.events(NAME).filter((e) => e.reason === 'ReshardRefused').length,
    1,
    'refused once, not once per round',
  );

  // Autoscaling on (no stabilization window, target 50%): the masters at ~80% ask for 4 * 80 / 50 -> capped at 5.
  await env.patchSpec(NAME, {
    autoscaling: {
      enabled: true,
      minReplicas: 3,
      maxReplicas: 5,
      targetMemoryUtilization: 50,
      stabilizationWindowSeconds: 0,
    },
  });
  await until(
    'spec.master.replicas written to 5 through the scale subresource',
    () =>
      (env.store.get(CLUSTER_PLURAL, NS, NAME) as { spec?: { master?: { replicas?: number } } } | undefined)?.spec
        ?.master?.replicas === 5,
    15_000,
    { everyMs: 100, dump: () => env.dump(NAME) },
  );
  assert.ok(
    env.requests().some((r) => r.method === 'PATCH' && r.path.endsWith(`/${CLUSTER_PLURAL}/${NAME}/scale`)),
    'written through redisclusters/scale',
  );
  const up = await until('the AutoscaleUp Event', () => {
    const found = env.events(NAME).filter((e) => e.reason === 'AutoscaleUp');
    return found.length > 0 && found;
  });
  assert.equal(up.length, 1);
  assert.match(
    up[0]!.message,
    /3 -> 5 shards: memory \d+% of maxmemory over 3 shards, target 50%: 5 shards \(capped at maxReplicas 5\)/,
  );
  assert.deepEqual(await writer.missing(keys), []);
});
