// System test 1: `kubectl apply -f manifests/examples/redis.yaml` on the local cluster
// (real hook over HTTP, real sidecars, real redis-server pods) gives the design's three pods, the
// row `my-redis 7.2 Ready 2 Running`, and data written through the master Service readable on
// both replicas. Network: 198.18.50.x.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROLE_LABEL } from '../../src/api/labels.ts';
import {
  applyDesign,
  BOUND,
  boot,
  METACONTROLLER_FINALIZER,
  writeSnapshot,
  call,
  DESIGN_PODS,
  NAME,
  NS,
  podIp,
  podNames,
  RUNNING_ROW,
  settle,
  sleep,
} from './support.ts';

const SUBNET = 50;

test(
  "the design's Redis applied verbatim: three pods, the Running row, data through the master Service on both replicas",
  { timeout: 120_000 },
  async (t) => {
    const c = await boot(t, { subnet: SUBNET });
    if (!c) return;
    await applyDesign(t, c);

    assert.deepEqual(podNames(c), DESIGN_PODS);
    assert.equal(c.redisRow(NAME), RUNNING_ROW);
    const redis = c.get('redises', NAME, NS)!;
    const status = redis['status'] as Record<string, unknown>;
    assert.equal(status['master'], 'my-redis-master-0', 'a fresh set starts on master-0');
    assert.equal(status['masterIP'], podIp(c, 'my-redis-master-0'));
    assert.ok(
      redis.metadata.finalizers?.includes(METACONTROLLER_FINALIZER),
      'Metacontroller put its finalizer on the Redis',
    );

    // The Services route as designed: master -> the master pod; replicas -> both replicas.
    const master = c.masterEndpoint(NAME);
    assert.deepEqual(master, { pod: 'my-redis-master-0', ip: podIp(c, 'my-redis-master-0') });
    assert.deepEqual(c.serviceEndpoints(NS, 'my-redis-replicas').sort(), ['my-redis-replica-0', 'my-redis-replica-1']);
    for (const r of ['my-redis-replica-0', 'my-redis-replica-1'])
      assert.equal(c.get('pods', r, NS)!.metadata.labels?.[ROLE_LABEL], 'replica');

    // The auth Secret the sidecar generated is the one the pods run with: no password, no access.
    assert.ok(c.password(NAME), 'the generated auth Secret exists');
    const anonymous = await new Promise<string>((resolve) => {
      const client = c.redis(master!.ip, 'no-such-redis');
      client.on('error', () => {});
      client
        .connect()
        .then(() => client.ping())
        .then(
          (r) => resolve(String(r)),
          (e: Error) => resolve(e.message),
        )
        .finally(() => client.disconnect());
    });
    assert.match(anonymous, /NOAUTH|Authentication required/, 'Redis never runs without a password');

    // Data through the master Service, readable on both replicas.
    const keys = Array.from({ length: 100 }, (_, i) => `design:${i}`);
    for (const k of keys) assert.equal(await call(c, master!.ip, 'SET', k, `value-of-${k}`), 'OK');
    await settle(c, master!.ip, 2);
    for (const replica of ['my-redis-replica-0', 'my-redis-replica-1']) {
      const ip = podIp(c, replica)!;
      const values = (await call(c, ip, 'MGET', ...keys)) as string[];
      assert.deepEqual(
        values,
        keys.map((k) => `value-of-${k}`),
        `all keys readable on ${replica}`,
      );
      assert.match(
        String(await call(c, ip, 'SET', 'x', 'y').catch((e: Error) => e.message)),
        /READONLY/,
        `${replica} refuses writes`,
      );
    }

    // Steady state: no hot loop (Metacontroller writes no child and no status while nothing changes).
    // It starts once the status says what the pods say. The pods converge first; the real
    // Metacontroller writes the status one sync later, through a client limited to 5 requests/s
    // (client-go's default, shared by its controllers' workers), so the last transition (a replica
    // Syncing -> Ready) may land a few seconds after the pods' and is no hot loop.
    await c.waitFor(
      () => {
        const s = (c.get('redises', NAME, NS)?.['status'] ?? {}) as {
          readyReplicas?: number;
          replicaStatus?: Record<string, string>;
        };
        return s.readyReplicas === 2 && Object.values(s.replicaStatus ?? {}).every((v) => v === 'Ready');
      },
      BOUND.allReady,
      'the status says both replicas Ready',
    );
    const before = writeSnapshot(c, NAME);
    await sleep(3000);
    assert.deepEqual(writeSnapshot(c, NAME), before, 'no status and no child writes in steady state');
  },
);
