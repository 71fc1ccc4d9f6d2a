// Loopback octet: 127.0.24.x (two real manager instances on one Lease: the standby never writes;
// the leader dies in the middle of a failover and the other instance finishes it; never two pods
// labelled master at once).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { ROLE_LABEL } from '../../../../src/api/labels.ts';
import type { Step } from '../../../../src/sidecar/redis/decide/index.ts';
import { addr, startRedis } from '../../../support/redis-server.ts';
import { Cluster, missingKeys, replicationOf, settle, until, Writer, type Instance } from './harness.ts';

const N = 24;
Cluster.shareApiServer();
const extra = { 'repl-diskless-sync-delay': '0' };

async function twoInstances(
  t: TestContext,
  first: number,
  hooksA: Parameters<Cluster['startInstance']>[0]['hooks'] = {},
) {
  const cluster = await Cluster.start();
  t.after(() => cluster.close());
  await cluster.createAuthSecret('cache');
  await cluster.createRedis('cache');
  const servers = await Promise.all([0, 1, 2].map((i) => startRedis(t, { ip: addr(N, first + i), extra })));
  await cluster.addPods('cache', servers);
  const masters = cluster.watchMasters('cache');
  const a = await cluster.startInstance({ id: 'sidecar-a', sourceIp: addr(N, 250), hooks: hooksA });
  await until('a leads', () => a.elector.isLeader());
  const b = await cluster.startInstance({ id: 'sidecar-b', sourceIp: addr(N, 251) });
  await until('a linked set', () => {
    const r = Object.values(cluster.roles('cache'));
    return r.length === 3 && r.every((v) => v.endsWith('/up')) && cluster.masters('cache').length === 1;
  });
  const byIp = new Map(servers.map((s) => [s.ip, s]));
  return { cluster, servers, masters, a, b, byIp };
}

/** Writes (anything but Lease traffic) an instance sent to the API server. */
function writesBy(cluster: Cluster, id: string) {
  return cluster.api.requests.filter((r) => r.client === id && r.method !== 'GET' && !r.path.includes('/leases'));
}

async function crashMidFailover(
  t: TestContext,
  cluster: Cluster,
  a: Instance,
  b: Instance,
  byIp: Map<string, Awaited<ReturnType<typeof startRedis>>>,
) {
  const writer = new Writer(cluster, 'cache');
  writer.start();
  t.after(() => writer.stop());
  await until('writes', () => writer.acked.length > 100);
  assert.deepEqual(writesBy(cluster, 'sidecar-b'), [], 'the standby never wrote to the API');
  const oldIp = cluster.masterIp('cache')!;
  const t0 = performance.now();
  await byIp.get(oldIp)!.kill();
  return { writer, oldIp, t0 };
}

test('the leader dies right after promoting (before any label moved): the standby adopts the promoted node and finishes', async (t) => {
  let armed = false;
  let promoted: string | null = null;
  let crashedAt = 0;
  // eslint-disable-next-line prefer-const -- the hooks below read it before the instance exists
  let a: Instance | undefined;
  const hooks = {
    afterStep: (_r: unknown, step: Step, ok: boolean) => {
      if (!armed || step.kind !== 'promote' || !ok) return;
      armed = false;
      promoted = step.pod;
      crashedAt = performance.now();
      // A frozen process: this round never ends; the instance is torn down without releasing the Lease.
      void a!.crash();
      return new Promise<void>(() => {});
    },
  };
  const { cluster, masters, b, byIp, ...rest } = await twoInstances(t, 1, hooks);
  a = rest.a;
  armed = true;
  const { writer, oldIp, t0 } = await crashMidFailover(t, cluster, a, b, byIp);
  await until('A promoted a replica and crashed', () => promoted !== null, 10_000);
  // Nothing moved in the API: the dead master still carries the label, the promoted node has none.
  assert.deepEqual(cluster.masters('cache'), ['cache-master-0']);
  const newName = await until(
    'B moved the label',
    () => {
      const m = cluster.masters('cache');
      return m.length === 1 && m[0] !== 'cache-master-0' && m[0];
    },
    15_000,
  );
  assert.equal(newName, promoted, 'B adopted the node A promoted (no second promotion of another replica)');
  const newIp = cluster.pod(newName)!.status!.podIP!;
  const first = await until('an acknowledged write on the new master', () => writer.ackedAfter(t0, newIp), 10_000);
  t.diagnostic(
    `kill -> A promoted ${promoted} and crashed at ${Math.round(crashedAt - t0)} ms; B finished; first acknowledged write at ${Math.round(first.at - t0)} ms (Lease ${2} s)`,
  );
  assert.ok(
    writesBy(cluster, 'sidecar-b').every((r) => r.at >= Date.now() - (performance.now() - crashedAt)),
    'B wrote only after A crashed',
  );
  const events = await cluster.eventsWhen(
    'cache',
    "both instances' FailoverStarted and the completion told",
    (e) =>
      e.filter((x) => x.reason === 'FailoverStarted').length >= 2 && e.some((x) => x.reason === 'FailoverCompleted'),
  );
  const started = events.filter((e) => e.reason === 'FailoverStarted');
  assert.deepEqual(
    started.map((e) => e.instance),
    ['sidecar-a', 'sidecar-b'],
  );
  assert.match(started[1]!.message, /finishing a promotion an earlier leader started|already promoted/);
  const completed = events.filter((e) => e.reason === 'FailoverCompleted');
  assert.deepEqual(
    completed.map((e) => e.instance),
    ['sidecar-b'],
  );
  // The remaining replica follows the new master.
  const other = [...byIp.keys()].find((ip) => ip !== oldIp && ip !== newIp)!;
  await until('the other replica follows the new master', async () => {
    const r = await replicationOf(other);
    return r['master_host'] === newIp && r['master_link_status'] === 'up';
  });
  await writer.stop();
  await settle(newIp, 1);
  assert.deepEqual(
    await missingKeys(
      newIp,
      writer.acked.map((x) => x.key),
    ),
    [],
  );
  assert.deepEqual(
    await missingKeys(
      other,
      writer.acked.map((x) => x.key),
    ),
    [],
  );
  assert.deepEqual(masters.violations, [], 'never two pods labelled master');
  assert.equal(masters.maxSeen, 1);
});

test('the leader promotes and re-points but its label patches fail, then it dies: the standby completes; never two masters', async (t) => {
  const { cluster, masters, a, b, byIp } = await twoInstances(t, 11);
  const fault = cluster.api.faults.add({
    client: 'sidecar-a',
    method: 'PATCH',
    path: /\/pods\//,
    action: { kind: 'status', code: 500 },
  });
  const { writer, oldIp, t0 } = await crashMidFailover(t, cluster, a, b, byIp);
  const promotedIp = await until(
    'A promoted a replica',
    async () => {
      for (const ip of byIp.keys()) {
        if (ip === oldIp) continue;
        if ((await replicationOf(ip))['role'] === 'master') return ip;
      }
      return false;
    },
    10_000,
  );
  await until('A tried to move the labels', () => fault.hits > 0);
  assert.deepEqual(cluster.masters('cache'), ['cache-master-0']);
  const crashedAt = performance.now();
  await a.crash();
  fault.remove();
  const newName = await until(
    'B moved the label',
    () => {
      const m = cluster.masters('cache');
      return m.length === 1 && m[0] !== 'cache-master-0' && m[0];
    },
    15_000,
  );
  assert.equal(cluster.pod(newName)!.status!.podIP, promotedIp, 'B kept the node A promoted');
  const first = await until('an acknowledged write on the new master', () => writer.ackedAfter(t0, promotedIp), 10_000);
  t.diagnostic(
    `A crashed ${Math.round(crashedAt - t0)} ms after the kill; first acknowledged write ${Math.round(first.at - t0)} ms after it`,
  );
  assert.equal(cluster.pod('cache-master-0')!.metadata.labels?.[ROLE_LABEL], 'replica');
  await writer.stop();
  await settle(promotedIp, 1);
  for (const ip of [...byIp.keys()].filter((x) => x !== oldIp))
    assert.deepEqual(
      await missingKeys(
        ip,
        writer.acked.map((x) => x.key),
      ),
      [],
    );
  assert.deepEqual(masters.violations, []);
  const events = await cluster.eventsWhen('cache', 'the completion told', (e) =>
    e.some((x) => x.reason === 'FailoverCompleted'),
  );
  assert.deepEqual(
    events.filter((e) => e.reason === 'FailoverCompleted').map((e) => e.instance),
    ['sidecar-b'],
  );
});
