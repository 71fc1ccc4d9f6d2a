// Pure: a master the sidecar reaches but its replicas lost. Table-driven, through assessMaster
// (what the plan sees) and decideMaster (whom it promotes). No Redis, no address contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assessMaster } from '../../../../src/sidecar/redis/decide/failure.ts';
import { decideMaster } from '../../../../src/sidecar/redis/decide/master.ts';
import type { ReplicaLine } from '../../../../src/sidecar/adapters/redis/types.ts';
import type { PodObservation } from '../../../../src/sidecar/redis/decide/types.ts';
import { facts, H1, H2, input, ip, pod, type FactsSpec, type PodSpec } from './fixtures.ts';

/** The master's line for a replica at ip(n): online, last ACK `lag` seconds ago. */
const line = (n: number, lag: number, state = 'online'): ReplicaLine => ({
  ip: ip(n),
  port: 6379,
  state,
  offset: 900,
  lag,
});
const M = (lines: ReplicaLine[], f: FactsSpec = {}, s: Partial<PodSpec> = {}) =>
  pod({
    name: 'master-0',
    label: 'master',
    facts: facts({ role: 'master', offset: 1000, replid: H1, replicas: lines, ...f }),
    ...s,
  });
/** A replica of the master (ip(1)) that has not heard it for 2 s, its testimony held for `heldMs`. */
const lost = (n: number, heldMs: number | null, f: FactsSpec = {}) =>
  pod({
    name: `replica-${n}`,
    label: 'replica',
    facts: facts({ of: ip(1), offset: 900 + n, replid: H1, lastIo: 2, ...f }),
    ...(heldMs === null ? {} : { witnessFor: heldMs }),
  });
const hears = (n: number) =>
  pod({ name: `replica-${n}`, label: 'replica', facts: facts({ of: ip(1), offset: 1000, replid: H1, lastIo: 0 }) });
const cutLines = [line(11, 3), line(12, 3)];

test('cut off from its replicas: when the master the sidecar reaches counts as failed', async (t) => {
  const cases: Array<{
    name: string;
    pods: PodObservation[];
    spec?: { replicas?: number; minReplicasToWrite?: number };
    state: string;
    reason?: RegExp;
  }> = [
    {
      name: 'both sides agree for downAfterMilliseconds: failed',
      pods: [M(cutLines), lost(0, 1200), lost(1, 1000)],
      state: 'failed',
      reason: /replicas have lost it.*cache-replica-0, cache-replica-1.*no acknowledgement from any replica/,
    },
    {
      name: 'the master lists no replica at all (the links closed): failed',
      pods: [M([]), lost(0, 1200), lost(1, 1200)],
      state: 'failed',
    },
    { name: 'a healthy set', pods: [M([line(11, 0), line(12, 1)]), hears(0), hears(1)], state: 'healthy' },
    { name: 'one replica still hears it', pods: [M(cutLines), lost(0, 1200), hears(1)], state: 'healthy' },
    {
      name: 'testimony held 999 ms of the 1000 (a late ping, a short pause)',
      pods: [M(cutLines), lost(0, 1200), lost(1, 999)],
      state: 'healthy',
    },
    { name: 'a replica not yet testifying', pods: [M(cutLines), lost(0, 1200), lost(1, null)], state: 'healthy' },
    {
      name: 'the master still has a fresh ACK from a replica',
      pods: [M([line(11, 3), line(12, 1)]), lost(0, 1200), lost(1, 1200)],
      state: 'healthy',
    },
    {
      name: 'fencing off (min-replicas-to-write 0): it takes writes, moving it would lose them',
      pods: [M(cutLines, { minReplicas: 0 }), lost(0, 1200), lost(1, 1200)],
      state: 'healthy',
    },
    {
      name: 'one replica: after the move nothing could acknowledge a write',
      pods: [M([line(11, 3)]), lost(0, 1200)],
      spec: { replicas: 1 },
      state: 'healthy',
    },
    {
      name: 'min-replicas-to-write 2 with two replicas: the new master could not take writes either',
      pods: [M(cutLines, { minReplicas: 2 }), lost(0, 1200), lost(1, 1200)],
      spec: { minReplicasToWrite: 2 },
      state: 'healthy',
    },
    {
      name: 'bring-up: the replicas have not synced from it yet (another replication id)',
      pods: [
        M([line(11, 3, 'wait_bgsave'), line(12, 3, 'wait_bgsave')]),
        lost(0, 1200, { replid: H2 }),
        lost(1, 1200, { replid: H2 }),
      ],
      state: 'healthy',
    },
    {
      name: 'a replica in a full sync is no witness',
      pods: [M(cutLines), lost(0, 1200), lost(1, 1200, { link: 'down', sync: true, syncLastIo: 5, lastIo: null })],
      state: 'healthy',
    },
    {
      name: 'an empty replica (offset 0) holds nothing to promote',
      pods: [M(cutLines), lost(0, 1200), lost(1, 1200, { offset: 0 })],
      state: 'healthy',
    },
    {
      name: 'a loading replica is no witness',
      pods: [M(cutLines), lost(0, 1200), lost(1, 1200, { loading: true })],
      state: 'healthy',
    },
    {
      name: 'the master is loading',
      pods: [M(cutLines, { loading: true }), lost(0, 1200), lost(1, 1200)],
      state: 'healthy',
    },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const health = assessMaster(input(c.pods, c.spec ?? {}), c.pods[0]!);
      assert.equal(health.state, c.state, health.reason);
      if (c.reason) assert.match(health.reason, c.reason);
    });
  }
});

test('cut off: the replica with the highest offset is promoted (it holds every write WAIT acknowledged)', () => {
  const pods = [M(cutLines), lost(0, 1200, { offset: 950 }), lost(1, 1200, { offset: 990 })];
  const { decision } = decideMaster(input(pods));
  assert.equal(decision.kind, 'promote');
  assert.equal(decision.master, 'cache-replica-1');
  assert.equal(decision.kind === 'promote' && decision.previous, 'cache-master-0');
  assert.match(decision.reason, /best replacement for cache-master-0: cache-replica-1 \(priority 100, offset 990/);
});
