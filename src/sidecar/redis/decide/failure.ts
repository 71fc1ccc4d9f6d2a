// Failure detection for the labelled master. Pure.
// Invariants: a master is declared failed only when (1) it has not answered us for
// downAfterMs AND (2) independent evidence agrees: the API (pod deleting, not Running, no IP,
// not Ready), or EVERY answering replica that follows it reports the link down or silent (no I/O
// for silentAfterSeconds, or its offset still for offsetStallMs; held for witnessConfirmMs), or
// an earlier leader already promoted a node of its history.
// A replica that still hears the master vetoes everything except "the pod is going away": if only
// the sidecar lost the master, there is no failover (no split brain from our own network trouble).
// An answer with an error (auth, loading) is an answer: the node is alive, never a failure.
import { REDIS_PORT } from '../../../api/labels.ts';
import { cutOffEvidence } from './cut-off.ts';
import { followersOf, masterIpOf } from './followers.ts';
import { isSilence } from './silence.ts';
import { currentFacts, offsetStalledMs, reportsMasterDown, silentForMs } from './observe.ts';
import type { DecideInput, PodObservation } from './types.ts';

export { masterIpOf };

export type MasterHealth =
  | { state: 'healthy'; reason: string }
  /** It answers, but as a replica: it restarted (replica of nowhere) or was demoted. */
  | { state: 'lost-role'; reason: string }
  /** It answers with an error (auth, loading): alive, but we cannot read it. Never fail over. */
  | { state: 'unreadable'; reason: string }
  | { state: 'suspect'; silentMs: number | null; reason: string }
  | { state: 'failed'; silentMs: number; evidence: string[]; reason: string };

export interface Witnesses {
  /** Answering replicas that follow the master's IP. */
  total: string[];
  /**
   * Of those, the ones whose down/silent report has held for witnessConfirmMs, and that have
   * linked to this master: one still carrying another history than the master's latest never
   * heard it (re-pointed by a switchover and not yet synced), so it cannot say it went away.
   */
  down: string[];
  /** Of those, the ones that still hear the master. */
  hearing: string[];
}

export function witnessesOf(input: DecideInput, master: PodObservation): Witnesses {
  const { now, config } = input;
  const w: Witnesses = { total: [], down: [], hearing: [] };
  const history = master.redis?.lastMasterFacts?.replid;
  for (const { pod, facts } of followersOf(input, master)) {
    w.total.push(pod.name);
    const since = pod.redis?.witnessDownSince ?? null;
    const linked = history === undefined || facts.replication.masterReplid === history;
    if (reportsMasterDown(facts, config, offsetStalledMs(pod.redis))) {
      if (linked && since !== null && now - since >= config.witnessConfirmMs) w.down.push(pod.name);
    } else {
      w.hearing.push(pod.name);
    }
  }
  return w;
}

/** What the API says about the pod that argues it is gone; empty when it looks fine. */
export function apiEvidence(pod: PodObservation): string[] {
  const out: string[] = [];
  if (pod.deleting) out.push('the pod is being deleted');
  if (pod.phase !== null && pod.phase !== 'Running') out.push(`the pod is ${pod.phase}`);
  if (pod.ip === null) out.push('the pod has no IP');
  if (!pod.ready) out.push('the pod is not Ready');
  return out;
}

/**
 * Evidence that the master's process is gone, which no pause, slowness or partition produces:
 * empty when there is none. Either (1) its port has refused our connections for crashConfirmMs
 * (nothing listens: a paused process still completes handshakes, an unreachable one times out)
 * and every answering replica that follows it reports master_link_status:down right now (they
 * saw the connection close; one still linked vetoes), or (2) the API says its redis container is
 * not running and no replica still hears it.
 */
export function crashEvidence(input: DecideInput, master: PodObservation): string[] {
  const { now, config } = input;
  const t = master.redis;
  const ip = masterIpOf(master);
  if (!t || !ip || t.ip !== ip) return [];
  const all = followersOf(input, master);
  const followers = all.map((f) => f.pod.name);
  const linked = all.filter((f) => f.facts.replication.masterLinkStatus !== 'down');
  if (followers.length === 0) return [];
  if (master.redisContainerGone === true && linked.length === 0) {
    return [
      `the API says its redis container is not running`,
      `every replica following it (${followers.join(', ')}) reports the link down`,
    ];
  }
  if (t.refusedSince === null || now - t.refusedSince < config.crashConfirmMs || linked.length > 0) return [];
  return [
    `its port has refused connections for ${Math.round(now - t.refusedSince)} ms (no Redis process listens)`,
    `every replica following it (${followers.join(', ')}) reports the link down`,
  ];
}

/**
 * A failover someone else already made while this instance was not looking (a leader that died
 * before moving the labels, seen by a standby that never saw the old master's history): the
 * labelled master's port refuses (its process is gone) and exactly one other node answers as
 * master, followed, link up, by every other answering node. Publishing that master promotes
 * nothing; without it the standby would wait for testimony that no longer exists.
 */
export function finishedElsewhere(input: DecideInput, master: PodObservation): string[] {
  const { now, config } = input;
  const t = master.redis;
  if (!t || t.refusedSince === null || now - t.refusedSince < config.crashConfirmMs) return [];
  const others = input.pods.filter((p) => p !== master).map((pod) => ({ pod, facts: currentFacts(pod, now, config) }));
  const masters = others.filter((o) => o.facts?.replication.role === 'master');
  if (masters.length !== 1 || !masters[0]!.pod.ip) return [];
  const promoted = masters[0]!;
  const rest = others.filter((o) => o !== promoted && o.facts);
  const following = rest.every((o) => {
    const r = o.facts!.replication;
    return (
      r.role === 'replica' &&
      r.masterHost === promoted.pod.ip &&
      r.masterPort === REDIS_PORT &&
      r.masterLinkStatus === 'up'
    );
  });
  if (!following) return [];
  const who =
    rest.length > 0 ? `, and ${rest.map((o) => o.pod.name).join(', ')} follow${rest.length === 1 ? 's' : ''} it` : '';
  return [
    `its port refuses connections while ${promoted.pod.name} answers as master${who} (an earlier failover to finish)`,
  ];
}

export function assessMaster(input: DecideInput, master: PodObservation): MasterHealth {
  const { now, config } = input;
  const facts = currentFacts(master, now, config);
  if (facts) {
    const r = facts.replication;
    if (r.role === 'master') {
      const cut = cutOffEvidence(input, master, facts);
      if (cut.length === 0) return { state: 'healthy', reason: `${master.name} answers as master` };
      return {
        state: 'failed',
        silentMs: 0,
        evidence: cut,
        reason: `${master.name} answers the sidecar but its replicas have lost it (fenced, it cannot take acknowledged writes): ${cut.join('; ')}`,
      };
    }
    return {
      state: 'lost-role',
      reason: `${master.name} answers as a replica of ${r.masterHost}:${r.masterPort} (it restarted or was demoted)`,
    };
  }
  const error = master.redis?.lastError;
  if (error && !isSilence(error.kind) && master.redis?.ip === master.ip) {
    return {
      state: 'unreadable',
      reason: `${master.name} answers with an error (${error.kind}: ${error.message}); it is alive, not failing over`,
    };
  }
  const silentMs = silentForMs(master, now);
  if (silentMs === null) return { state: 'suspect', silentMs, reason: `${master.name} has not been probed yet` };
  const crash = crashEvidence(input, master);
  if (crash.length > 0) {
    return {
      state: 'failed',
      silentMs,
      evidence: crash,
      reason: `${master.name} crashed: ${crash.join('; ')} (no need to wait for downAfterMilliseconds ${config.downAfterMs})`,
    };
  }
  if (silentMs < config.downAfterMs) {
    return {
      state: 'suspect',
      silentMs,
      reason: `${master.name} silent for ${Math.round(silentMs)} ms, below downAfterMilliseconds ${config.downAfterMs}`,
    };
  }
  const api = apiEvidence(master);
  const going = master.deleting || (master.phase !== null && master.phase !== 'Running') || master.ip === null;
  const w = witnessesOf(input, master);
  if (w.hearing.length > 0 && !going) {
    return {
      state: 'suspect',
      silentMs,
      reason:
        `${master.name} has not answered the sidecar for ${Math.round(silentMs)} ms, but ${w.hearing.join(', ')} still ` +
        `hear${w.hearing.length === 1 ? 's' : ''} it: the sidecar lost contact, the master did not fail; no failover`,
    };
  }
  const evidence = [...api];
  if (w.total.length > 0 && w.down.length === w.total.length) {
    evidence.push(
      `all replicas following it (${w.down.join(', ')}) report the link down, no I/O for >= ${config.silentAfterSeconds} s or no byte for >= ${config.offsetStallMs} ms`,
    );
  }
  const history = master.redis?.lastMasterFacts?.replid;
  if (history) {
    for (const pod of input.pods) {
      if (pod === master) continue;
      const f = currentFacts(pod, now, config);
      if (f?.replication.role === 'master' && f.replication.masterReplid2 === history) {
        evidence.push(`${pod.name} was already promoted from its history (an earlier failover to finish)`);
      }
    }
  }
  evidence.push(...finishedElsewhere(input, master));
  if (evidence.length === 0) {
    const why =
      w.total.length === 0
        ? 'no answering replica follows it to testify and the API shows the pod Running and Ready'
        : `only ${w.down.length} of ${w.total.length} replicas following it confirm it is down so far`;
    return {
      state: 'suspect',
      silentMs,
      reason: `${master.name} silent for ${Math.round(silentMs)} ms but ${why}: waiting`,
    };
  }
  return {
    state: 'failed',
    silentMs,
    evidence,
    reason: `${master.name} failed: silent for ${Math.round(silentMs)} ms and ${evidence.join('; ')}`,
  };
}
