// Bring-up of a RedisCluster by the real cluster manager, on real redis-server processes in
// cluster mode: 3 shards x 2 pods become one cluster with every slot served, each shard's pod 0 a
// master with its contiguous even range, pod 1 its replica; role labels and node records say so;
// the Redis replication manager's pod informer never sees a cluster pod; every node gets the
// exporter's read-only user; every pod carries the engine its node answers with.
// Network: 127.0.33.x (nodes .1-.6, the sidecar's source address .100).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { addr } from '../../support/redis-server.ts';
import { until } from '../../support/until.ts';
import { ENGINE_ANNOTATION, engineFromInfo, formatEngine } from '../../../src/api/node-engine.ts';
import { KubeClient } from '../../../src/sidecar/adapters/kube/client.ts';
import { parseInfoFields } from '../../../src/sidecar/adapters/redis/info.ts';
import { ClusterEnv, NS, podName } from './harness.ts';
import { allCovered, myself, nodesOf } from './nodes.ts';

const OCTET = 33;
const NAME = 'orders';

test('bring-up: 3 shards x 2 pods -> every slot served, pod 0 masters with even ranges, pod 1 their replicas, labels and records true', async (t) => {
  const env = await ClusterEnv.start(t);
  const ips = await env.startShards(t, NAME, 3, (shard, ordinal) => addr(OCTET, 1 + shard * 2 + ordinal));
  const started = performance.now();
  await env.startInstance({ id: 'sidecar-a', sourceIp: addr(OCTET, 100) });

  await until('every slot served and every node knowing all six', () => allCovered(ips, 6), 30_000, { everyMs: 100 });
  const broughtUpMs = performance.now() - started;
  // Replicas linked, labels and records written.
  const records = await until(
    'role labels and node records on every pod',
    () => {
      const r = env.records(NAME);
      // Pod 1's first record says master (every node starts as an empty master), so the wait asks
      // for the shape the test then checks, not merely for a record on every pod.
      const settled = [0, 1, 2].every((shard) => {
        const m = r.get(podName(NAME, shard, 0));
        const rep = r.get(podName(NAME, shard, 1));
        return (
          m?.role === 'master' &&
          m.record?.role === 'master' &&
          rep?.role === 'replica' &&
          rep.record?.role === 'replica' &&
          rep.record.linkUp === true
        );
      });
      return settled && r.size === 6 && r;
    },
    15_000,
    { everyMs: 50 },
  );
  t.diagnostic(`bring-up took ${Math.round(broughtUpMs)} ms to every slot covered`);

  const expected = [
    [0, 5461],
    [5462, 10922],
    [10923, 16383],
  ];
  for (let shard = 0; shard < 3; shard++) {
    const master = myself(await nodesOf(ips[shard * 2]!))!;
    const replica = myself(await nodesOf(ips[shard * 2 + 1]!))!;
    assert.equal(master.role, 'master');
    assert.deepEqual(master.slots, [expected[shard]], `shard ${shard}'s pod 0 serves its even range`);
    assert.equal(replica.role, 'replica');
    assert.equal(replica.masterId, master.id, `shard ${shard}'s pod 1 replicates its pod 0`);
    const m = records.get(podName(NAME, shard, 0))!;
    const r = records.get(podName(NAME, shard, 1))!;
    assert.equal(m.role, 'master');
    assert.equal(r.role, 'replica');
    assert.equal(m.record!.id, master.id);
    assert.deepEqual(m.record!.slots, [expected[shard]]);
    assert.equal(r.record!.masterId, master.id);
    assert.equal(r.record!.linkUp, true);
  }
  const reasons = (await env.eventsWith(NAME, { SlotsAssigned: 3, ReplicaAttached: 3 })).map((e) => e.reason);
  assert.equal(reasons.filter((r) => r === 'SlotsAssigned').length, 3, reasons.join(','));
  assert.equal(reasons.filter((r) => r === 'ReplicaAttached').length, 3, reasons.join(','));

  // Every node has the exporter's read-only user, with the password of the Secret the leader made.
  const secret = await until(
    'the generated exporter Secret',
    () => env.store.get('secrets', NS, `${NAME}-exporter`),
    15_000,
    { everyMs: 50 },
  );
  const exporterPassword = Buffer.from(
    String((secret as { data?: Record<string, string> }).data?.['password']),
    'base64',
  ).toString();
  const asExporter = (ip: string, ...args: string[]) =>
    new Promise<string>((resolve) =>
      execFile(
        'redis-cli',
        ['-h', ip, '--user', 'redis-exporter', '--no-auth-warning', ...args],
        { env: { ...process.env, REDISCLI_AUTH: exporterPassword } },
        (_e, out, err) => resolve(`${out}${err}`),
      ),
    );
  await until(
    'the exporter user on every node',
    async () =>
      (await Promise.all(ips.map((ip) => asExporter(ip, 'cluster', 'info')))).every((r) =>
        r.includes('cluster_state:ok'),
      ),
    15_000,
    {
      everyMs: 100,
    },
  );
  for (const ip of ips)
    assert.match(await asExporter(ip, 'get', 'k'), /NOPERM/, `${ip}: the exporter's user reads no key`);

  // The Redis replication manager's pod informer (name=redis) does not list a single cluster pod.
  const redisKube = new KubeClient(await env.api.kubeConfig('redis-manager'), {
    identity: 'redis-manager',
    namespaces: [NS],
  });
  const redisPods = redisKube.podInformer();
  await redisPods.start();
  t.after(() => redisPods.stop());
  assert.equal(redisPods.list().length, 0);
  const clusterPods = redisKube.clusterPodInformer();
  await clusterPods.start();
  t.after(() => clusterPods.stop());
  assert.equal(clusterPods.list().length, 6);

  // Each pod says which engine its node runs, as the node's own INFO server says (status.nodes reads it).
  await until(
    'the engine annotation on every pod',
    () => env.pods(NAME).filter((p) => p.metadata.annotations?.[ENGINE_ANNOTATION]).length === 6,
    15_000,
    { everyMs: 100 },
  );
  for (let shard = 0; shard < 3; shard++) {
    for (let ordinal = 0; ordinal < 2; ordinal++) {
      const said = engineFromInfo(parseInfoFields(await asExporter(ips[shard * 2 + ordinal]!, 'info', 'server')));
      assert.ok(said, 'INFO server names a version');
      const pod = podName(NAME, shard, ordinal);
      assert.equal(env.pod(pod)?.metadata.annotations?.[ENGINE_ANNOTATION], formatEngine(said), pod);
    }
  }
});
