// Loopback octet: 127.0.13.x (SIGKILL of the master under SET+WAIT 1 writes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { addr, cutLink, sweepRules } from '../../support/redis-server.ts';
import { median, threeNodeSet, waitUntil, Writer, assertAllHold } from './mini-manager.ts';

const N = 13;

test('SIGKILL of the master: the most advanced replica is promoted, the rest re-pointed, no acknowledged write lost', async (t) => {
  sweepRules(N);
  const { m } = await threeNodeSet(t, N, 1, { sidecarIp: addr(N, 250) });
  m.start();
  t.after(() => m.stop());
  const writer = new Writer(m);
  writer.start();
  t.after(() => writer.stop());

  const detect: number[] = [];
  const failover: number[] = [];
  const ROUNDS = 4;
  for (let round = 0; round < ROUNDS; round++) {
    // Steady: a master, both replicas linked, writes acknowledged.
    await waitUntil('a steady set', () => {
      const master = m.publishedMaster();
      return master && m.pods.every((p) => p.annotations['redis.example.com/link'] === 'up') && master;
    });
    const master = m.publishedMaster()!;
    const others = m.pods.filter((p) => p !== master);
    // In odd rounds one replica lags: its link to the master is cut while writes go on, so the
    // other holds every acknowledged write and must be the one promoted.
    let expected: string | null = null;
    if (round % 2 === 1) {
      const laggard = others[1]!;
      const cut = cutLink(t, laggard.ip!, master.ip!);
      const n = writer.acked.length;
      await waitUntil('writes acknowledged while one replica lags', () => writer.acked.length > n + 50);
      expected = others[0]!.name;
      await killAndMeasure(master, expected);
      cut.restore();
    } else {
      const n = writer.acked.length;
      await waitUntil('writes acknowledged', () => writer.acked.length > n + 50);
      await killAndMeasure(master, null);
    }
    // The old master's pod restarts its container: same IP, empty (no persistence).
    await master.server.restart();
  }

  async function killAndMeasure(master: (typeof m.pods)[number], expected: string | null) {
    const t0 = performance.now();
    await master.server.kill();
    const promoted = await waitUntil('a promotion', () => m.firstDecision(t0, (d) => d.plan.decision.kind === 'promote'), 10000);
    const chosen = promoted.plan.decision.kind === 'promote' ? promoted.plan.decision.master : '';
    const newMaster = m.pods.find((p) => p.name === chosen)!;
    const firstWrite = await waitUntil('an acknowledged write on the new master', () => writer.acked.find((a) => a.at >= t0 && a.via === newMaster.ip), 10000);
    detect.push(promoted.at - t0);
    failover.push(firstWrite.at - t0);
    if (expected) assert.equal(chosen, expected, `most advanced replica promoted: ${promoted.plan.decision.reason}`);
    assert.notEqual(chosen, master.name);
    t.diagnostic(
      `kill -> promote ${Math.round(promoted.at - t0)} ms, -> first acked write ${Math.round(firstWrite.at - t0)} ms (${promoted.plan.decision.reason})`,
    );
  }

  await writer.stop();
  await waitUntil('all linked at the end', () => m.pods.every((p) => p.annotations['redis.example.com/link'] === 'up'));
  const keys = writer.acked.map((a) => a.key);
  await assertAllHold(m.pods, keys);
  t.diagnostic(
    `SIGKILL x${ROUNDS}: detection median ${Math.round(median(detect))} ms (max ${Math.round(Math.max(...detect))}); kill -> first acked write median ${Math.round(median(failover))} ms (max ${Math.round(Math.max(...failover))}); ${keys.length} acknowledged writes, none lost`,
  );
});
