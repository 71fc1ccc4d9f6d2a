// Sharded leadership against a REAL kube-apiserver (test/k8s/api-server.ts) through client-node:
// the Lease calls and the Lease informer are the real code path, each instance a ServiceAccount
// of the operator's namespace (where the Lease role is granted) reaching it through the fault
// proxy. One API server for the file: each test uses a Lease base name of its own, and the
// informers only count Leases under their base, so instances of an earlier test never count as
// members of a later one.
// Network: etcd, kube-apiserver and the fault proxy on 127.0.0.1; no Redis.
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startApiServer, type ApiServer } from '../../../k8s/api-server.ts';
import { OPERATOR_NAMESPACE } from '../../../k8s/operator.ts';
import { KubeClient } from '../../../../src/sidecar/adapters/kube/client.ts';
import { ShardLeadership } from '../../../../src/sidecar/adapters/kube/shard-leadership.ts';
import { ownerOf } from '../../../../src/sidecar/redis/decide/shards.ts';
import type { LeaderSettings } from '../../../../src/sidecar/adapters/kube/lease-decision.ts';
import { until as untilPolled, type Polled } from '../../../support/until.ts';

/** The Lease role (manifests/rbac.yaml) is granted in the operator's namespace only. */
const NS = OPERATOR_NAMESPACE;
const IDS = ['sidecar-a', 'sidecar-b', 'sidecar-c'];
const SHARDS = 4;
const FAST: LeaderSettings = {
  leaseDurationSeconds: 1,
  renewDeadlineMs: 600,
  retryPeriodMs: 100,
  requestTimeoutMs: 250,
};
const until = <T>(what: string, check: () => Polled<T>, timeoutMs = 15_000) =>
  untilPolled(what, check, timeoutMs, { everyMs: 5 });
const shards = Array.from({ length: SHARDS }, (_, i) => i);

describe('ShardLeadership: one Lease per shard, shared out among the live instances', () => {
  let api: ApiServer;
  /** One KubeConfig per identity: each is a ServiceAccount token, made once for the file. */
  const configs = new Map<string, KubeConfig>();
  let tests = 0;
  let BASE: string;
  let instances: ShardLeadership[];
  const identities = new Map<ShardLeadership, string>();
  let sampler: NodeJS.Timeout | undefined;
  let overlaps: string[];
  let changes: Array<{ id: string; shard: number; leading: boolean }>;

  function instance(id: string): ShardLeadership {
    // Each identity is its own ServiceAccount, so a fault rule can cut one instance off the API.
    const kube = new KubeClient(configs.get(id)!, {
      identity: id,
      requestTimeoutMs: FAST.requestTimeoutMs,
      informerRestartDelayMs: 100,
    });
    const s = new ShardLeadership({
      identity: id,
      shards: SHARDS,
      leaseName: BASE,
      settings: FAST,
      leaseClient: (name) => kube.leaseClient(NS, name, FAST.requestTimeoutMs),
      leases: kube.leaseInformer(NS),
      logger: pino({ level: 'silent' }),
      onShardChanged: (shard, leading) => changes.push({ id, shard, leading }),
    });
    instances.push(s);
    identities.set(s, id);
    return s;
  }

  /** Who may act on each shard right now, by instance index. */
  const holders = (list: ShardLeadership[]) => shards.map((i) => list.filter((s) => s.isLeaderOf(i)));

  /**
   * Every shard held by exactly the instance that `list` computes as its owner. "Every shard held
   * once" is not enough: before the instances see each other's membership Lease, each counts only
   * itself and one of them may briefly win every shard.
   */
  function settled(list: ShardLeadership[]): boolean {
    const expected = shards.map((i) => ownerOf(i, list.map((s) => identities.get(s)!).sort()));
    return holders(list).every((h, i) => h.length === 1 && identities.get(h[0]!) === expected[i]);
  }

  before(async () => {
    api = await startApiServer();
    for (const id of IDS) configs.set(id, await api.kubeConfig(id));
  });

  after(async () => {
    const refused = api.requests.filter((r) => r.status === 403).map((r) => `${r.client} ${r.method} ${r.path}`);
    await api.close();
    assert.deepEqual(refused, [], 'manifests/rbac.yaml allows every call the instances made');
  });

  beforeEach(() => {
    tests++;
    BASE = `redis-operator-sidecar-${tests}`;
    instances = [];
    overlaps = [];
    changes = [];
    sampler = setInterval(() => {
      for (const i of shards) if (instances.filter((s) => s.isLeaderOf(i)).length > 1) overlaps.push(`shard ${i}`);
    }, 2);
  });

  afterEach(async () => {
    clearInterval(sampler);
    // The cut-off instance's requests hang until their timeout: lift the fault first, so it stops as it would once
    // healed.
    api.faults.clear();
    await Promise.allSettled(instances.map((s) => s.stop()));
  });

  test('two instances: each shard is held by exactly the owner both compute, and both get some', async () => {
    const ids = ['sidecar-a', 'sidecar-b'];
    const expected = shards.map((i) => ownerOf(i, ids));
    assert.ok(
      ids.every((id) => expected.includes(id)),
      `precondition: both identities own a shard (${expected.join(',')})`,
    );
    const [a, b] = [instance('sidecar-a'), instance('sidecar-b')];
    await Promise.all([a.start(), b.start()]);
    await until('every shard held by its owner', () =>
      holders([a, b]).every((h, i) => h.length === 1 && (h[0] === a ? 'sidecar-a' : 'sidecar-b') === expected[i]),
    );
    assert.deepEqual(a.members(), ids);
    assert.deepEqual(b.members(), ids);
    assert.deepEqual([...a.held(), ...b.held()].sort(), shards);
    assert.deepEqual(overlaps, [], 'never two instances acting on one shard');
  });

  test('an instance cut off the API stops acting; the survivor takes every shard after the lease duration, never overlapping', async () => {
    const [a, b] = [instance('sidecar-a'), instance('sidecar-b')];
    await Promise.all([a.start(), b.start()]);
    await until('every shard held by its owner', () => settled([a, b]));
    const lost = a.held();
    assert.ok(lost.length > 0, 'a holds shards before the cut');
    // Every request of sidecar-a hangs from now on: to the others it is dead (a SIGKILL looks the same).
    api.faults.add({ client: 'sidecar-a', action: { kind: 'hang' } });
    const cutAt = Date.now();
    await until('a stops acting on its shards', () => a.held().length === 0);
    await until('b holds every shard', () => b.held().length === SHARDS);
    const tookMs = Date.now() - cutAt;
    assert.deepEqual(b.members(), ['sidecar-b'], 'b no longer counts a as live');
    assert.ok(
      lost.every((i) => changes.some((c) => c.id === 'sidecar-b' && c.shard === i && c.leading)),
      "b was told it leads each of a's shards",
    );
    // The renew deadline (600 ms) is before the lease duration (1 s): a stopped before b could start.
    assert.deepEqual(overlaps, [], `never two instances acting on one shard (takeover after ${tookMs} ms)`);
  });

  test('an instance that stops cleanly hands its shards over at once, not after expiry', async () => {
    const [a, b] = [instance('sidecar-a'), instance('sidecar-b')];
    await Promise.all([a.start(), b.start()]);
    await until('every shard held by its owner', () => settled([a, b]));
    assert.ok(a.held().length > 0, 'a holds shards before stopping');
    await a.stop();
    await until('b holds every shard', () => b.held().length === SHARDS);
    const lease = await until('the membership Lease in the cache', () =>
      api.store.get('leases', NS, `${BASE}-member-sidecar-a`),
    );
    assert.equal(
      (lease['spec'] as { holderIdentity?: string }).holderIdentity ?? '',
      '',
      'a released its membership Lease, so b did not wait for it to expire',
    );
    assert.deepEqual(overlaps, []);
  });

  test('a third instance joining takes only the shards it now owns; the others hand them over', async () => {
    const [a, b] = [instance('sidecar-a'), instance('sidecar-b')];
    await Promise.all([a.start(), b.start()]);
    const two = shards.map((i) => ownerOf(i, ['sidecar-a', 'sidecar-b']));
    await until('every shard held by its owner among two', () =>
      holders([a, b]).every((h, i) => h.length === 1 && (h[0] === a ? 'sidecar-a' : 'sidecar-b') === two[i]),
    );
    const before = changes.length;
    const c = instance('sidecar-c');
    await c.start();
    const ids = ['sidecar-a', 'sidecar-b', 'sidecar-c'];
    const expected = shards.map((i) => ownerOf(i, ids));
    const idOf = (s: ShardLeadership) => (s === a ? 'sidecar-a' : s === b ? 'sidecar-b' : 'sidecar-c');
    await until('every shard held by its owner among three', () =>
      holders([a, b, c]).every((h, i) => h.length === 1 && idOf(h[0]!) === expected[i]),
    );
    const moved = shards.filter((i) => expected[i] === 'sidecar-c');
    const handedOff = changes
      .slice(before)
      .filter((x) => !x.leading && x.id !== 'sidecar-c')
      .map((x) => x.shard);
    assert.deepEqual([...new Set(handedOff)].sort(), moved, 'only the shards c now owns changed hands');
    assert.deepEqual(overlaps, []);
  });
});
