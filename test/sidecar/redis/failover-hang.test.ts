// Loopback octet: 127.0.14.x (a hung master: SIGSTOP, detected through the replicas' silence).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { addr } from '../../support/redis-server.ts';
import { median, threeNodeSet, waitUntil, Writer, assertAllHold } from './mini-manager.ts';

const N = 14;

test('SIGSTOP of the master: replicas testify (no I/O for 2 s), failover; the old master resumes and is demoted', async (t) => {
  const { m } = await threeNodeSet(t, N, 1, { sidecarIp: addr(N, 250) });
  m.start();
  t.after(() => m.stop());
  const writer = new Writer(m);
  writer.start();
  t.after(() => writer.stop());

  const detect: number[] = [];
  const failover: number[] = [];
  const ROUNDS = 3;
  for (let round = 0; round < ROUNDS; round++) {
    await waitUntil('a steady set', () => m.publishedMaster() !== null && m.pods.every((p) => p.annotations['redis.example.com/link'] === 'up'));
    const n = writer.acked.length;
    await waitUntil('writes acknowledged', () => writer.acked.length > n + 50);
    const master = m.publishedMaster()!;
    const t0 = performance.now();
    master.server.stop();
    const promoted = await waitUntil('a promotion', () => m.firstDecision(t0, (d) => d.plan.decision.kind === 'promote'), 10000);
    assert.ok(promoted.plan.decision.kind === 'promote');
    assert.match(promoted.plan.decision.reason, /no I\/O for >= 2 s/, 'the replicas testified the silence');
    const newMaster = m.pods.find((p) => p.name === (promoted.plan.decision.kind === 'promote' ? promoted.plan.decision.master : ''))!;
    const firstWrite = await waitUntil('an acknowledged write on the new master', () => writer.acked.find((a) => a.at >= t0 && a.via === newMaster.ip), 10000);
    detect.push(promoted.at - t0);
    failover.push(firstWrite.at - t0);
    t.diagnostic(`SIGSTOP -> promote ${Math.round(promoted.at - t0)} ms, -> first acked write ${Math.round(firstWrite.at - t0)} ms`);

    // The hung master wakes up still believing it is master: it is demoted, never followed.
    master.server.cont();
    const demoted = await waitUntil('the old master demoted', () =>
      m.firstDecision(t0, (d) => d.applied.some((a) => a.startsWith(`demote ${master.name} -> `))),
    );
    assert.ok(demoted);
    await waitUntil('the old master following the new one', async () => {
      const p = await m.adapter.probe({ host: master.ip!, port: 6379 });
      return p.ok && p.facts.replication.role === 'replica' && p.facts.replication.masterHost === newMaster.ip && p.facts.replication.masterLinkStatus === 'up';
    });
  }
  await writer.stop();
  await waitUntil('all linked at the end', () => m.pods.every((p) => p.annotations['redis.example.com/link'] === 'up'));
  const keys = writer.acked.map((a) => a.key);
  await assertAllHold(m.pods, keys);
  t.diagnostic(
    `SIGSTOP x${ROUNDS}: detection median ${Math.round(median(detect))} ms (max ${Math.round(Math.max(...detect))}); -> first acked write median ${Math.round(median(failover))} ms (max ${Math.round(Math.max(...failover))}); ${keys.length} acknowledged writes, none lost`,
  );
});
