// Pure: when is the labelled master failed? Table-driven. No Redis, no address contacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assessMaster } from '../../../../src/sidecar/redis/decide/failure.ts';
import type { PodObservation } from '../../../../src/sidecar/redis/decide/types.ts';
import { facts, H1, H2, input, ip, online, pod, type PodSpec } from './fixtures.ts';

const masterFacts = facts({ role: 'master', offset: 1000, replid: H1, replicas: online(ip(11), ip(12)) });
const M = (s: Partial<PodSpec> = {}) => pod({ name: 'master-0', label: 'master', facts: masterFacts, ...s });
/** A replica of the master (10.0.0.1) reporting `how`. */
const R = (
  n: number,
  how: 'hears' | 'down' | 'silent' | 'silent-unconfirmed' | 'sync-flowing',
  s: Partial<PodSpec> = {},
) =>
  pod({
    name: `replica-${n}`,
    label: 'replica',
    facts:
      how === 'hears'
        ? facts({ of: ip(1), offset: 1000, lastIo: 0 })
        : how === 'down'
          ? facts({ of: ip(1), offset: 1000, link: 'down', linkDownSince: 1 })
          : how === 'sync-flowing'
            ? facts({ of: ip(1), link: 'down', sync: true, syncLastIo: 0 })
            : facts({ of: ip(1), offset: 1000, lastIo: 2 }),
    ...(how === 'hears' || how === 'sync-flowing' ? {} : { witnessFor: how === 'silent-unconfirmed' ? 100 : 800 }),
    ...s,
  });

const silent = (ms: number, s: Partial<PodSpec> = {}) => M({ error: 'timeout', okAgo: ms, ...s });
/** A replica whose offset has not moved for stallMs by our probes (its testimony held for witnessMs, null: none). */
function stalled(n: number, stallMs: number, witnessMs: number | null): PodObservation {
  const p = pod({
    name: `replica-${n}`,
    label: 'replica',
    facts: facts({ of: ip(1), offset: 1000, lastIo: 1 }),
    ...(witnessMs !== null ? { witnessFor: witnessMs } : {}),
  });
  return { ...p, redis: { ...p.redis!, offsetSince: p.redis!.okAt! - stallMs } };
}

test('assessMaster: table', async (t) => {
  const cases: Array<{ name: string; pods: PodObservation[]; state: string; reason?: RegExp }> = [
    { name: 'answers as master', pods: [M(), R(0, 'hears')], state: 'healthy' },
    {
      name: 'silent below downAfterMilliseconds',
      pods: [silent(500), R(0, 'down'), R(1, 'down')],
      state: 'suspect',
      reason: /below downAfterMilliseconds/,
    },
    {
      name: 'killed: silent and every replica reports the link down',
      pods: [silent(1200, { error: 'refused' }), R(0, 'down'), R(1, 'down')],
      state: 'failed',
      reason: /reports? the link down/,
    },
    {
      name: 'only the sidecar lost it: replicas still hear it',
      pods: [silent(5000), R(0, 'hears'), R(1, 'hears')],
      state: 'suspect',
      reason: /sidecar lost contact.*no failover/,
    },
    {
      name: 'one replica still hears it',
      pods: [silent(5000), R(0, 'down'), R(1, 'hears')],
      state: 'suspect',
      reason: /replica-1 still hears/,
    },
    {
      name: 'hung: replicas see no I/O for 2 s, held long enough',
      pods: [silent(1500), R(0, 'silent'), R(1, 'silent')],
      state: 'failed',
    },
    {
      name: "hung: the replicas' offsets still for 1.3 s (held), though their whole-second I/O clock still says 1",
      pods: [silent(1300), stalled(0, 1300, 300), stalled(1, 1300, 300)],
      state: 'failed',
      reason: /no byte for >= 1000 ms/,
    },
    {
      name: "hung? one replica's offset moved 200 ms ago: it hears the master",
      pods: [silent(1300), stalled(0, 1300, 300), stalled(1, 200, null)],
      state: 'suspect',
      reason: /replica-1 still hears/,
    },
    {
      name: 'just promoted and silent: replicas re-pointed to it still carry the old history, never linked: no witnesses, wait',
      pods: [
        silent(1500, { facts: facts({ role: 'master', offset: 1000, replid: H2, replid2: H1 }) }),
        R(0, 'down', { facts: facts({ of: ip(1), offset: 1000, replid: H1, link: 'down', linkDownSince: 1 }) }),
        R(1, 'down', { facts: facts({ of: ip(1), offset: 1000, replid: H1, link: 'down', linkDownSince: 1 }) }),
      ],
      state: 'suspect',
      reason: /only 0 of 2 replicas following it confirm/,
    },
    {
      name: 'the same, once the replicas had synced with it (its history): they testify',
      pods: [
        silent(1500, { facts: facts({ role: 'master', offset: 1000, replid: H2, replid2: H1 }) }),
        R(0, 'down', { facts: facts({ of: ip(1), offset: 1000, replid: H2, link: 'down', linkDownSince: 1 }) }),
        R(1, 'down', { facts: facts({ of: ip(1), offset: 1000, replid: H2, link: 'down', linkDownSince: 1 }) }),
      ],
      state: 'failed',
      reason: /report the link down/,
    },
    {
      name: 'the same unlinked replicas, but its port refuses (its process is gone): a crash needs no witness',
      pods: [
        silent(1500, { error: 'refused', facts: facts({ role: 'master', offset: 1000, replid: H2, replid2: H1 }) }),
        R(0, 'down', { facts: facts({ of: ip(1), offset: 1000, replid: H1, link: 'down', linkDownSince: 1 }) }),
        R(1, 'down', { facts: facts({ of: ip(1), offset: 1000, replid: H1, link: 'down', linkDownSince: 1 }) }),
      ],
      state: 'failed',
      reason: /crashed/,
    },
    {
      name: 'hung? a silence report not yet confirmed (could be a late ping)',
      pods: [silent(1500), R(0, 'silent-unconfirmed'), R(1, 'silent')],
      state: 'suspect',
      reason: /only 1 of 2/,
    },
    {
      name: 'a full sync still flowing means the master is alive',
      pods: [silent(1500), R(0, 'sync-flowing')],
      state: 'suspect',
      reason: /still hears/,
    },
    {
      name: 'no replica to testify, pod Running and Ready: wait',
      pods: [silent(3000)],
      state: 'suspect',
      reason: /no answering replica follows it/,
    },
    {
      name: 'no replica, but the API says not Ready',
      pods: [silent(3000, { ready: false })],
      state: 'failed',
      reason: /not Ready/,
    },
    {
      name: 'a failover already made elsewhere: the master refuses, replica-1 is master, replica-0 follows it',
      pods: [
        silent(3000, { error: 'refused' }),
        pod({ name: 'replica-0', label: 'replica', facts: facts({ of: ip(12), offset: 1000, lastIo: 0 }) }),
        pod({ name: 'replica-1', label: 'replica', facts: facts({ role: 'master', offset: 1000, replid: H2 }) }),
      ],
      state: 'failed',
      reason: /replica-1 answers as master, and cache-replica-0 follows it \(an earlier failover to finish\)/,
    },
    {
      name: 'the same, but the master only times out (paused or cut off): wait',
      pods: [
        silent(3000),
        pod({ name: 'replica-0', label: 'replica', facts: facts({ of: ip(12), offset: 1000, lastIo: 0 }) }),
        pod({ name: 'replica-1', label: 'replica', facts: facts({ role: 'master', offset: 1000, replid: H2 }) }),
      ],
      state: 'suspect',
      reason: /no answering replica follows it/,
    },
    {
      name: 'the same, but replica-0 is not linked to the new master yet: wait',
      pods: [
        silent(3000, { error: 'refused' }),
        pod({
          name: 'replica-0',
          label: 'replica',
          facts: facts({ of: ip(12), offset: 1000, link: 'down', linkDownSince: 1 }),
        }),
        pod({ name: 'replica-1', label: 'replica', facts: facts({ role: 'master', offset: 1000, replid: H2 }) }),
      ],
      state: 'suspect',
      reason: /no answering replica follows it/,
    },
    {
      name: 'not Ready but a replica still hears it: veto',
      pods: [silent(3000, { ready: false }), R(0, 'hears')],
      state: 'suspect',
    },
    {
      name: 'pod being deleted: a replica hearing it does not veto',
      pods: [silent(1500, { deleting: true }), R(0, 'hears')],
      state: 'failed',
      reason: /being deleted/,
    },
    {
      name: 'replicas following another address do not testify',
      pods: [silent(3000), pod({ name: 'replica-0', facts: facts({ of: ip(77), link: 'down' }), witnessFor: 5000 })],
      state: 'suspect',
      reason: /no answering replica follows it/,
    },
    {
      name: 'restarted: answers as a replica of nowhere',
      pods: [
        M({
          facts: facts({ of: '127.0.0.1', replid: H1, offset: 900 }),
          lastMaster: { replid: H1, offset: 1000, online: [] },
        }),
        R(0, 'down'),
      ],
      state: 'lost-role',
    },
    {
      name: 'answers with an auth error: alive',
      pods: [M({ error: 'auth', okAgo: 9000 }), R(0, 'hears')],
      state: 'unreadable',
      reason: /alive/,
    },
    {
      name: 'an earlier leader already promoted its successor',
      pods: [
        silent(1500),
        pod({
          name: 'replica-0',
          label: 'replica',
          facts: facts({ role: 'master', replid: H2, replid2: H1, offset: 1100 }),
        }),
      ],
      state: 'failed',
      reason: /already promoted/,
    },
    { name: 'never probed', pods: [M({ never: true }), R(0, 'down')], state: 'suspect', reason: /not been probed/ },
  ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const master = c.pods[0]!;
      const h = assessMaster(input(c.pods), master);
      assert.equal(h.state, c.state, `${c.name}: ${h.reason}`);
      if (c.reason) assert.match(h.reason, c.reason, c.name);
    });
  }
});

// The crash fast path: evidence no pause, slowness or partition can produce fails over before
// downAfterMilliseconds (1000 here); everything else still waits for it.
test('assessMaster: crash evidence, before downAfterMilliseconds', async (t) => {
  const refused = (ms: number, s: Partial<PodSpec> = {}) => M({ error: 'refused', okAgo: ms, ...s });
  const cases: Array<{ name: string; pods: PodObservation[]; crashConfirmMs?: number; state: string; reason: RegExp }> =
    [
      {
        name: 'refused at once, every replica reports the link down',
        pods: [refused(120), R(0, 'down'), R(1, 'down')],
        state: 'failed',
        reason: /crashed: its port has refused/,
      },
      {
        name: 'refused, but a replica still linked (its probe predates the crash): wait',
        pods: [refused(120), R(0, 'down'), R(1, 'hears')],
        state: 'suspect',
        reason: /below downAfterMilliseconds/,
      },
      {
        name: 'refused, but the only replica reports silence, not a closed link',
        pods: [refused(120), R(0, 'silent')],
        state: 'suspect',
        reason: /below downAfterMilliseconds/,
      },
      {
        name: 'refused, no replica follows it: nobody to confirm',
        pods: [refused(120)],
        state: 'suspect',
        reason: /below downAfterMilliseconds/,
      },
      {
        name: 'refused for less than crashConfirmMs',
        pods: [refused(120, { refusedFor: 50 }), R(0, 'down')],
        crashConfirmMs: 100,
        state: 'suspect',
        reason: /below/,
      },
      {
        name: 'refused for crashConfirmMs',
        pods: [refused(120, { refusedFor: 100 }), R(0, 'down')],
        crashConfirmMs: 100,
        state: 'failed',
        reason: /refused connections for 100 ms/,
      },
      {
        name: 'a pause (timeouts) shorter than downAfterMilliseconds, replicas down: wait',
        pods: [silent(500), R(0, 'down'), R(1, 'down')],
        state: 'suspect',
        reason: /below downAfterMilliseconds/,
      },
      {
        name: 'a pause, replicas still hear it: wait',
        pods: [silent(500), R(0, 'hears'), R(1, 'hears')],
        state: 'suspect',
        reason: /below/,
      },
      {
        name: 'the API says the container is gone, replicas down',
        pods: [silent(200, { containerGone: true }), R(0, 'down'), R(1, 'down')],
        state: 'failed',
        reason: /container is not running/,
      },
      {
        name: 'the API says the container is gone, a replica still hears it: wait',
        pods: [silent(200, { containerGone: true }), R(0, 'down'), R(1, 'hears')],
        state: 'suspect',
        reason: /below/,
      },
      {
        name: 'refused after an earlier timeout streak: the refusal run is what counts',
        pods: [refused(900, { refusedFor: 30 }), R(0, 'down')],
        crashConfirmMs: 50,
        state: 'suspect',
        reason: /below/,
      },
    ];
  for (const c of cases) {
    await t.test(c.name, () => {
      const h = assessMaster(
        input(c.pods, {}, c.crashConfirmMs !== undefined ? { crashConfirmMs: c.crashConfirmMs } : {}),
        c.pods[0]!,
      );
      assert.equal(h.state, c.state, `${c.name}: ${h.reason}`);
      assert.match(h.reason, c.reason, c.name);
    });
  }
});
