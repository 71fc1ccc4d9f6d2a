// Loopback octet: 127.0.25.x (one manager, several Redis resources: a broken one whose pods hang
// (packets dropped) does not slow another's failover; a spec the API server stores but the
// sidecar's own validation refuses is left alone and reported once; a Redis outside
// WATCH_NAMESPACES is never touched).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { ROLE_LABEL } from '../../../../src/api/labels.ts';
import { addr, cutLink, startRedis, sweepRules } from '../../../support/redis-server.ts';
import { Cluster, NS, replicationOf, sleep, until, Writer } from './harness.ts';

const N = 25;
Cluster.shareApiServer();
const SIDECAR = addr(N, 250);
const extra = { 'repl-diskless-sync-delay': '0' };

test('a Redis whose pods hang does not stall another one: its failover goes on as usual', async (t) => {
  sweepRules(N);
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  for (const name of ['good', 'broken']) {
    await cluster.createAuthSecret(name);
    await cluster.createRedis(name);
  }
  // broken: three pods whose addresses drop every packet from the sidecar (connects time out).
  const brokenIps = [51, 52, 53].map((i) => addr(N, i));
  for (const ip of brokenIps) cutLink(t, SIDECAR, ip);
  await cluster.addPods('broken', brokenIps);
  const servers = await Promise.all([1, 2, 3].map((i) => startRedis(t, { ip: addr(N, i), extra })));
  await cluster.addPods('good', servers);
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: SIDECAR });
  await until('good is linked', () => {
    const r = Object.values(cluster.roles('good'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('good').length === 1;
  });
  const writer = new Writer(cluster, 'good');
  writer.start();
  t.after(() => writer.stop());
  await until('writes', () => writer.acked.length > 50);
  const old = servers[0]!;
  const t0 = performance.now();
  await old.kill();
  const newName = await until(
    'good failed over',
    () => {
      const m = cluster.masters('good');
      return m.length === 1 && m[0] !== 'good-master-0' && m[0];
    },
    10_000,
  );
  const first = await until(
    'an acknowledged write on the new master',
    () => writer.ackedAfter(t0, cluster.pod(newName)!.status!.podIP!),
    10_000,
  );
  t.diagnostic(`good: kill -> first acknowledged write ${Math.round(first.at - t0)} ms while broken's probes hang`);
  // broken is still waiting (nothing answers), and nothing was written about it.
  const broken = a.manager.worker(NS, 'broken')!;
  assert.equal(broken.lastPlan?.decision.kind, 'wait');
  // Its probes time out (connect 500 ms): the good Redis may have failed over before the first one did.
  await until(
    'broken-master-0 probed (a timeout)',
    () => broken.trackOf('broken-master-0')?.lastError?.kind === 'timeout',
    5_000,
  );
  assert.deepEqual(cluster.masters('broken'), []);
  await writer.stop();
});

test('an invalid spec is left alone (one InvalidSpec event), and a Redis outside WATCH_NAMESPACES is never touched', async (t) => {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('bad');
  // The CRD's schema refuses an out-of-range field outright (no such Redis is ever stored), so the
  // invalid spec here is one it accepts and only the sidecar's validation (src/api/validate.ts)
  // refuses: node labels no pod could ever be scheduled by (an unqualified key, a bad value).
  await cluster.createRedis('bad', {
    replicas: 0,
    nodeSelector: { 'not a label key': 'x', zone: 'not a label value!' },
  });
  const badServer = await startRedis(t, { ip: addr(N, 11), extra });
  await cluster.addPod('bad', 'master-0', badServer.ip);
  await cluster.createAuthSecret('elsewhere', undefined, 'other');
  await cluster.createRedis('elsewhere', {}, 'other');
  const otherServer = await startRedis(t, { ip: addr(N, 12), extra });
  await cluster.addPod('elsewhere', 'master-0', otherServer.ip, 'other');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: SIDECAR, namespaces: [NS] });
  await until('leader', () => a.elector.isLeader());
  const e = await until('InvalidSpec event', () => cluster.events('bad').find((x) => x.reason === 'InvalidSpec'));
  assert.equal(e.type, 'Warning');
  assert.match(e.message, /spec\.nodeSelector\.not a label key: key must be a qualified name/);
  assert.match(e.message, /spec\.nodeSelector\.zone: value must be a valid label value/);
  // A change that leaves the same problems is not told again.
  await cluster.store.patch('redises', NS, 'bad', { metadata: { labels: { touched: 'yes' } } }, { type: 'merge' });
  await sleep(1500);
  assert.equal(cluster.events('bad').filter((x) => x.reason === 'InvalidSpec').length, 1);
  assert.match(await a.metrics.registry.metrics(), /redis_operator_spec_valid\{namespace="redis-test",redis="bad"\} 0/);
  // Nothing was done to either Redis' pods: no label, still a replica of nowhere.
  assert.equal(cluster.pod('bad-master-0')!.metadata.labels?.[ROLE_LABEL], undefined);
  assert.equal(cluster.pod('elsewhere-master-0', 'other')!.metadata.labels?.[ROLE_LABEL], undefined);
  for (const ip of [badServer.ip, otherServer.ip]) assert.equal((await replicationOf(ip))['master_port'], '1');
  assert.deepEqual(cluster.events('elsewhere', 'other'), []);
  assert.equal(a.manager.worker('other', 'elsewhere'), undefined);

  // Fixed: managed from then on.
  await cluster.store.patch('redises', NS, 'bad', { spec: { nodeSelector: null } }, { type: 'merge' });
  await until('bad bootstrapped', () => cluster.masters('bad').length === 1);
  assert.equal((await replicationOf(badServer.ip))['role'], 'master');
});
