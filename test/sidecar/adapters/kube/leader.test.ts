// Leader election against a REAL kube-apiserver (test/k8s/api-server.ts) through client-node (the
// real code path): its Lease validation, its optimistic concurrency (a stale resourceVersion is a
// 409) and the operator's RBAC (each elector a ServiceAccount of the operator's namespace, where
// its Lease role is granted), reached through the fault proxy that cuts one elector off.
// One API server for the file: each test elects on a Lease of its own and reads only the requests
// made since it started, so what one test leaves behind cannot decide another.
// Network: etcd, kube-apiserver and the fault proxy on 127.0.0.1; no Redis.
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '../../../k8s/api-server.ts';
import { OPERATOR_NAMESPACE } from '../../../k8s/operator.ts';
import { KubeClient } from '../../../../src/sidecar/adapters/kube/client.ts';
import { LeaderElector, type LeadershipInfo } from '../../../../src/sidecar/adapters/kube/leader.ts';
import type { LeaderSettings } from '../../../../src/sidecar/adapters/kube/lease-decision.ts';
import { until as untilPolled, type Polled } from '../../../support/until.ts';

/** The Lease role (manifests/rbac.yaml) is granted in the operator's namespace only. */
const NS = OPERATOR_NAMESPACE;
// Short but consistent with the invariant (renewDeadline < leaseDuration), so tests run in seconds.
const FAST: LeaderSettings = {
  leaseDurationSeconds: 1,
  renewDeadlineMs: 600,
  retryPeriodMs: 100,
  requestTimeoutMs: 250,
};

interface Happening {
  id: string;
  what: 'start' | 'stop';
  at: number;
  reason: string;
  /** For a start: whether any OTHER elector said isLeader() at that instant (must never happen). */
  othersLeading?: boolean;
  info?: LeadershipInfo;
}

/** Polls often: these tests watch elections and informers that change within milliseconds. */
const until = <T>(what: string, check: () => Polled<T>, timeoutMs = 10_000) =>
  untilPolled(what, check, timeoutMs, { everyMs: 5 });

function micro(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000Z');
}

describe('LeaderElector on a coordination.k8s.io Lease', () => {
  let api: ApiServer;
  /** One KubeConfig per identity: each is a ServiceAccount token, made once for the file. */
  const configs = new Map<string, KubeConfig>();
  let tests = 0;
  let LEASE: string;
  let LEASE_PATH: string;
  /** api.requests before this test began. */
  let mark: number;
  let log: Happening[];
  let electors: LeaderElector[];
  let sampler: NodeJS.Timeout | undefined;
  let overlaps: number;

  /** This test's requests, in arrival order. */
  const requests = () => api.requests.slice(mark);

  function kubeConfig(id: string): KubeConfig {
    const kc = configs.get(id);
    if (!kc) throw new Error(`no KubeConfig for ${id}: add it to the before() hook`);
    return kc;
  }

  function elector(id: string, settings: LeaderSettings = FAST, eligible?: () => boolean): LeaderElector {
    // Each identity is its own ServiceAccount, so fault rules can target one elector.
    const client = new KubeClient(kubeConfig(id), { identity: id }).leaseClient(NS, LEASE, settings.requestTimeoutMs);
    const e: LeaderElector = new LeaderElector({
      client,
      identity: id,
      settings,
      ...(eligible ? { eligible } : {}),
      onStartedLeading: (info) =>
        log.push({
          id,
          what: 'start',
          at: Date.now(),
          reason: info.reason,
          info,
          othersLeading: electors.some((o) => o !== e && o.isLeader()),
        }),
      onStoppedLeading: (reason) => log.push({ id, what: 'stop', at: Date.now(), reason }),
    });
    electors.push(e);
    return e;
  }

  const leaders = () => electors.filter((e) => e.isLeader());
  const starts = (id?: string) => log.filter((h) => h.what === 'start' && (id === undefined || h.id === id));
  const stops = (id?: string) => log.filter((h) => h.what === 'stop' && (id === undefined || h.id === id));

  /** The callbacks, replayed in order, never show two leaders at once. */
  function assertNoOverlap(): void {
    const leading = new Set<string>();
    for (const h of log) {
      if (h.what === 'start') {
        assert.equal(leading.size, 0, `${h.id} started leading while ${[...leading].join(',')} still led`);
        assert.equal(h.othersLeading, false, `${h.id} started while another isLeader() was true`);
        leading.add(h.id);
      } else leading.delete(h.id);
    }
    assert.equal(overlaps, 0, 'sampled isLeader() was true on two electors at once');
  }

  before(async () => {
    api = await startApiServer();
    for (const id of ['sidecar-a', 'sidecar-b', 'x']) configs.set(id, await api.kubeConfig(id));
  });

  after(async () => {
    const refused = api.requests.filter((r) => r.status === 403).map((r) => `${r.client} ${r.method} ${r.path}`);
    await api.close();
    assert.deepEqual(refused, [], 'manifests/rbac.yaml allows every call the electors made');
  });

  beforeEach(() => {
    tests++;
    LEASE = `redis-operator-sidecar-${tests}`;
    LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/${LEASE}`;
    mark = api.requests.length;
    log = [];
    electors = [];
    overlaps = 0;
    sampler = setInterval(() => {
      if (leaders().length > 1) overlaps++;
    }, 2);
  });

  afterEach(async () => {
    clearInterval(sampler);
    await Promise.all(electors.map((e) => e.stop({ release: false })));
    api.faults.clear();
  });

  test('eligible: only the assigned instance asks for the Lease; reassigned, the leader stops acting, then hands it over', async () => {
    let owner = 'sidecar-a';
    const a = elector('sidecar-a', FAST, () => owner === 'sidecar-a');
    const b = elector('sidecar-b', FAST, () => owner === 'sidecar-b');
    a.start();
    b.start();
    await until('a leads', () => a.isLeader());
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(b.currentLeader, undefined, 'b, not assigned the shard, never even read its Lease');
    owner = 'sidecar-b';
    await until('b leads', () => b.isLeader());
    assert.equal(stops('sidecar-a')[0]?.reason.startsWith('HandedOff'), true);
    assert.equal(
      starts('sidecar-b')[0]?.reason,
      'Released',
      'taken over from the released Lease, not after its expiry',
    );
    assertNoOverlap();
  });

  test('two electors: exactly one leads, the other stands by', async () => {
    const a = elector('sidecar-a');
    const b = elector('sidecar-b');
    a.start();
    b.start();
    await until('a leader', () => leaders().length === 1);
    const leader = leaders()[0]!;
    // Let several renewal rounds pass: leadership must stay put.
    const rounds = requests().filter((r) => r.method === 'PUT').length;
    await until(
      'five more renewals',
      () => requests().filter((r) => r.method === 'PUT' && r.status === 200).length >= rounds + 5,
    );
    assert.equal(starts().length, 1);
    assert.equal(stops().length, 0);
    assert.ok(leader.isLeader());
    const lease = api.store.read('leases', NS, LEASE)['spec'] as {
      holderIdentity: string;
      leaseTransitions: number;
      leaseDurationSeconds: number;
    };
    assert.equal(lease.holderIdentity, leader.identity);
    assert.equal(lease.leaseTransitions, 0);
    assert.equal(lease.leaseDurationSeconds, 1);
    assert.equal(a.currentLeader, leader.identity);
    assert.equal(b.currentLeader, leader.identity);
    assertNoOverlap();
  });

  for (const [name, action] of [
    ['500s', { kind: 'status' as const, code: 500 }],
    ['a hang', { kind: 'hang' as const }],
  ] as const) {
    test(`a leader whose renewals fail (${name}) stops leading before the other takes over`, async () => {
      const a = elector('sidecar-a');
      a.start();
      await until('a leads', () => a.isLeader());
      const b = elector('sidecar-b');
      b.start();
      await until('b has seen a as leader', () => b.currentLeader === 'sidecar-a');
      api.faults.add({ client: 'sidecar-a', path: LEASE_PATH, action });
      await until('b leads', () => b.isLeader());
      assertNoOverlap();
      const aStop = stops('sidecar-a')[0]!;
      const bStart = starts('sidecar-b')[0]!;
      assert.equal(aStop.reason, 'RenewDeadlineExceeded');
      assert.ok(log.indexOf(aStop) < log.indexOf(bStart), 'a stopped before b started');
      assert.ok(aStop.at <= bStart.at);
      assert.equal(bStart.reason, 'Expired');
      assert.equal(bStart.info?.leaseTransitions, 1);
      // The lease b wrote is the takeover, a's renewals could not have landed after a stopped.
      const written = await until('the takeover in the cache', () => {
        const spec = api.store.read('leases', NS, LEASE)['spec'] as { holderIdentity: string; acquireTime: string };
        return spec.holderIdentity === 'sidecar-b' && spec;
      });
      const renewTime = Date.parse(written.acquireTime);
      assert.ok(renewTime >= aStop.at);
    });
  }

  test('after the fault heals, the old leader sees the new one and stays standby', async () => {
    const a = elector('sidecar-a');
    a.start();
    await until('a leads', () => a.isLeader());
    const b = elector('sidecar-b');
    b.start();
    const fault = api.faults.add({ client: 'sidecar-a', path: LEASE_PATH, action: { kind: 'status', code: 503 } });
    await until('b leads', () => b.isLeader());
    fault.remove();
    await until('a sees b', () => a.currentLeader === 'sidecar-b');
    const seen = requests().length;
    await until(
      'a few more rounds',
      () => requests().filter((r) => r.client === 'sidecar-a').length > 3 && requests().length > seen + 10,
    );
    assert.equal(starts('sidecar-a').length, 1, 'a did not lead again');
    assert.ok(b.isLeader());
    assertNoOverlap();
  });

  test('a 409 on renewal (someone else wrote the Lease) stops leading at once; takeover after that holder expires', async () => {
    const a = elector('sidecar-a');
    a.start();
    await until('a leads', () => a.isLeader());
    // Hold a's next renewal in flight, and write the Lease meanwhile: a's PUT carries a stale resourceVersion.
    api.faults.add({ client: 'sidecar-a', method: 'PUT', times: 1, action: { kind: 'delay', ms: 150 } });
    const puts = requests().length;
    await until('a renewal in flight', () =>
      requests()
        .slice(puts)
        .some((r) => r.client === 'sidecar-a' && r.method === 'PUT' && r.status === undefined),
    );
    const intrudedAt = Date.now();
    await api.store.mutate('leases', NS, LEASE, (l) => {
      l['spec'] = {
        ...(l['spec'] as object),
        holderIdentity: 'intruder',
        renewTime: micro(intrudedAt),
        acquireTime: micro(intrudedAt),
      };
    });
    await until('a stops', () => stops('sidecar-a').length === 1);
    const stop = stops('sidecar-a')[0]!;
    assert.match(stop.reason, /LeaseLost: held by intruder/);
    assert.ok(
      requests().some((r) => r.client === 'sidecar-a' && r.method === 'PUT' && r.status === 409),
      'the renewal got a 409',
    );
    await until('a leads again', () => starts('sidecar-a').length === 2);
    const again = starts('sidecar-a')[1]!;
    assert.equal(again.reason, 'Expired');
    assert.equal(again.info?.leaseTransitions, 1);
    assert.ok(again.at > intrudedAt + 1000, 'not before the intruder lease expired');
  });

  test('a standby that loses the create race (409 AlreadyExists) stays standby', async () => {
    const a = elector('sidecar-a');
    a.start();
    await until('a leads', () => a.isLeader());
    // b's first read says "no lease", so b tries to create it.
    api.faults.add({
      client: 'sidecar-b',
      method: 'GET',
      times: 1,
      action: { kind: 'status', code: 404, reason: 'NotFound' },
    });
    const b = elector('sidecar-b');
    b.start();
    await until('b tried to create', () =>
      requests().some((r) => r.client === 'sidecar-b' && r.method === 'POST' && r.status !== undefined),
    );
    await until('b has seen a as leader', () => b.currentLeader === 'sidecar-a');
    assert.equal(requests().find((r) => r.client === 'sidecar-b' && r.method === 'POST')?.status, 409);
    assert.equal(starts('sidecar-b').length, 0);
    assert.ok(a.isLeader());
  });

  test('takeover of an expired lease left by a crashed holder', async () => {
    const writtenAt = Date.now();
    await api.store.create('leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: LEASE, namespace: NS },
      spec: {
        holderIdentity: 'crashed',
        leaseDurationSeconds: 1,
        acquireTime: micro(writtenAt - 5000),
        renewTime: micro(writtenAt),
        leaseTransitions: 7,
      },
    });
    const a = elector('sidecar-a');
    a.start();
    await until('a leads', () => a.isLeader());
    const start = starts('sidecar-a')[0]!;
    assert.equal(start.reason, 'Expired');
    assert.equal(start.info?.leaseTransitions, 8);
    assert.ok(start.at > writtenAt + 1000, 'not before the lease expired');
    const spec = await until('the takeover in the cache', () => {
      const l = api.store.read('leases', NS, LEASE)['spec'] as { holderIdentity: string; leaseTransitions: number };
      return l.holderIdentity === 'sidecar-a' && l;
    });
    assert.deepEqual([spec.holderIdentity, spec.leaseTransitions], ['sidecar-a', 8]);
  });

  test('stop() stops acting, then releases the lease so the standby takes over without waiting for expiry', async () => {
    // A long lease: without the release the standby would wait 30 s.
    const slow: LeaderSettings = {
      leaseDurationSeconds: 30,
      renewDeadlineMs: 20_000,
      retryPeriodMs: 100,
      requestTimeoutMs: 250,
    };
    const a = elector('sidecar-a', slow);
    a.start();
    await until('a leads', () => a.isLeader());
    const b = elector('sidecar-b', slow);
    b.start();
    await until('b has seen a as leader', () => b.currentLeader === 'sidecar-a');
    await a.stop();
    assert.equal(a.isLeader(), false);
    assert.equal(stops('sidecar-a')[0]?.reason, 'Stopped');
    await until('b leads', () => b.isLeader());
    assert.equal(starts('sidecar-b')[0]?.reason, 'Released');
    assertNoOverlap();
  });

  test('invalid settings are refused at construction', () => {
    assert.throws(() => elector('x', { ...FAST, renewDeadlineMs: 1000 }), /renewDeadlineMs must be less than/);
    assert.throws(
      () =>
        new LeaderElector({
          client: new KubeClient(kubeConfig('x'), { identity: 'x' }).leaseClient(NS, LEASE, 100),
          identity: '',
        }),
      /identity/,
    );
  });
});
