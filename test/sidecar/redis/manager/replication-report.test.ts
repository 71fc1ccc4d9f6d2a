// Loopback octet: 127.0.19.x (the real manager writing each pod's replication annotation, the
// figures `kubectl redis status` shows: every pod gets one once linked, the replicas with a lag
// by the master's view, the master without; written once, not on every round; and the engine
// each node answers with, also once).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readReplicationRecord, REPLICATION_ANNOTATION } from '../../../../src/api/labels.ts';
import { ENGINE_ANNOTATION, engineFromInfo, formatEngine, readEngine } from '../../../../src/api/node-engine.ts';
import { parseInfoFields } from '../../../../src/sidecar/adapters/redis/info.ts';
import { addr, startRedis } from '../../../support/redis-server.ts';
import { Cluster, NS, sleep, until, type Pod } from './harness.ts';
import { redisCall } from './harness-redis.ts';

const N = 19;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

test('every pod gets its replication record once linked; the replicas with their lag; not rewritten at rest', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, 11 + i), extra })));
  await cluster.addPods('cache', servers);
  await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250) });
  const records = () =>
    (cluster.store.list('pods', { namespace: NS }) as Pod[]).map((p) => ({
      name: p.metadata.name,
      role: p.metadata.labels?.['redis.example.com/role'],
      record: readReplicationRecord(p.metadata.annotations?.[REPLICATION_ANNOTATION]),
    }));
  const all = await until('every pod has a record', () => {
    const r = records();
    return r.length === 3 && r.every((x) => x.record !== null && x.role !== undefined) && r;
  });
  t.diagnostic(JSON.stringify(all));
  for (const p of all) {
    if (p.role === 'master') assert.equal(p.record!.lagBytes, null, 'the master has no lag');
    else assert.equal(typeof p.record!.lagBytes, 'number', `${p.name}: the master lists it, so its lag is known`);
    assert.ok(Math.abs(Date.now() - Date.parse(p.record!.at)) < 60_000, 'read now');
  }
  // Each pod also carries the engine its node answers with (status.nodes reads it), written once.
  const engines = await until('every pod has its engine', () => {
    const e = (cluster.store.list('pods', { namespace: NS }) as Pod[]).map((p) =>
      readEngine(p.metadata.annotations?.[ENGINE_ANNOTATION]),
    );
    return e.length === 3 && e.every((x) => x !== null) && e;
  });
  for (const [i, server] of servers.entries()) {
    const said = engineFromInfo(parseInfoFields(await redisCall(server.ip, 'INFO', 'server')));
    assert.ok(said);
    assert.ok(
      engines.some((e) => e!.engine === said.engine && e!.version === said.version),
      `pod ${i}'s engine (${formatEngine(said)}) reported`,
    );
  }
  const from = cluster.api.requests.length;
  await sleep(2000);
  assert.deepEqual(cluster.podPatches(from), [], 'at rest no pod is patched again');
});
