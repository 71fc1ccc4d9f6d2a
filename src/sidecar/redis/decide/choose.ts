// Choosing a master: which replica to promote when the master failed, which node to start from
// when there is none. Pure.
// Invariants:
// - Never promote replica-priority 0, a loading node, a deleting pod, a replica in a full sync,
//   or (failover) a node of another replication history or whose link went down long before the
//   master fell silent.
// - Order (failover): a node an earlier leader already promoted from this history first (a second
//   promotion would throw away the writes it took), then lowest replica-priority, highest offset,
//   the labelled master itself on a tie (no label move), smallest run id.
// - Failover never decides on a partial view while a pod we cannot read could hold writes the
//   visible ones lack: it waits up to maxPartialWaitMs (availability: the master is gone).
// - Bootstrap (no master yet: a full restart, a wake from hibernation) never chooses while a pod
//   that may hold data cannot be read (bootstrap-wait.ts: loading, a Bound volume whose pod is not
//   up, a running pod that does not answer), however long that takes: the pod with the most data
//   becomes master, never one that would re-sync it away. Only the pods the user names in the
//   bootstrap-without annotation are given up on. Pods that cannot hold data but are not up yet
//   delay the choice by maxPartialWaitMs only (so a fresh set starts from <name>-master-0).
import type { RedisFacts } from '../../adapters/redis/types.ts';
import { BOOTSTRAP_WITHOUT_ANNOTATION, COMPONENT_MASTER_SET } from '../../../api/labels.ts';
import { compareCodeUnits } from '../../../api/order.ts';
import { currentFacts, expectedPodNames, isBeyondScale, isEmpty, silentForMs } from './observe.ts';
import { masterIpOf } from './failure.ts';
import { bootstrapWaits, describeHolders } from './bootstrap-wait.ts';
import type { DecideInput, PodObservation } from './types.ts';

export type Choice =
  { ok: true; pod: PodObservation; facts: RedisFacts; reason: string } | { ok: false; reason: string };

interface Candidate {
  pod: PodObservation;
  facts: RedisFacts;
}

const offsetOf = (f: RedisFacts) => f.replication.masterReplOffset;

function usable(input: DecideInput, pod: PodObservation): RedisFacts | null {
  const f = currentFacts(pod, input.now, input.config);
  if (!f || f.loading || pod.deleting) return null;
  return f;
}

/** The most common value (ties: smallest), or null. */
function majority(values: string[]): string | null {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: string | null = null;
  let bestCount = 0;
  for (const [v, c] of [...counts].sort(([a], [b]) => compareCodeUnits(a, b))) {
    if (c > bestCount) {
      best = v;
      bestCount = c;
    }
  }
  return best;
}

/**
 * The replication id of the failed master's data: what it reported when we last saw it as master,
 * else what the replicas that follow its address report (they share its id), else null.
 */
export function historyOf(input: DecideInput, master: PodObservation): string | null {
  const remembered = master.redis?.lastMasterFacts?.replid;
  if (remembered) return remembered;
  const ip = masterIpOf(master);
  const followers: string[] = [];
  for (const pod of input.pods) {
    if (pod === master) continue;
    const f = currentFacts(pod, input.now, input.config);
    if (f && f.replication.role === 'replica' && f.replication.masterHost === ip && !isEmpty(f))
      followers.push(f.replication.masterReplid);
  }
  return majority(followers);
}

export interface Missing {
  name: string;
  /** Running with an IP (alive but unreadable, or loading): it surely still has whatever it holds. */
  alive: boolean;
}

/**
 * Pods we cannot read now that might hold writes the visible candidates lack. With a memory of
 * the master's last replica lines, only replicas that were online then count; without it, every
 * missing pod that could hold data: any with persistence (its volume survives), a Running one
 * with an IP otherwise.
 */
export function missingContenders(
  input: DecideInput,
  exclude: PodObservation | null,
  online: string[] | null,
): Missing[] {
  const { spec } = input;
  const readable = (p: PodObservation) => usable(input, p) !== null;
  const alive = (p: PodObservation | undefined) =>
    p !== undefined && !p.deleting && p.phase === 'Running' && p.ip !== null;
  const out: Missing[] = [];
  if (online) {
    for (const ip of online) {
      const pod = input.pods.find((p) => p.ip === ip || p.redis?.ip === ip);
      if (pod !== undefined && pod === exclude) continue;
      if (!pod) out.push({ name: `a replica at ${ip} that matches no pod`, alive: false });
      else if (!readable(pod)) out.push({ name: pod.name, alive: alive(pod) });
    }
    return out;
  }
  const byName = new Map(input.pods.map((p) => [p.name, p]));
  const names = new Set([...expectedPodNames(input.name, spec.replicas), ...byName.keys()]);
  for (const name of [...names].sort()) {
    const pod = byName.get(name);
    if (pod !== undefined && pod === exclude) continue;
    if (pod && readable(pod)) continue;
    if (spec.persistence || alive(pod)) out.push({ name: pod ? name : `${name} (no pod yet)`, alive: alive(pod) });
  }
  return out;
}

const names = (m: Missing[]) => m.map((x) => x.name).join(', ');

function compareFailover(a: Candidate, b: Candidate, history: string | null, labelled: PodObservation): number {
  const promoted = (c: Candidate) =>
    c.facts.replication.role === 'master' &&
    c.pod !== labelled &&
    (history === null || c.facts.replication.masterReplid2 === history)
      ? 0
      : 1;
  return (
    promoted(a) - promoted(b) ||
    a.facts.replicaPriority - b.facts.replicaPriority ||
    offsetOf(b.facts) - offsetOf(a.facts) ||
    (a.pod === labelled ? 0 : 1) - (b.pod === labelled ? 0 : 1) ||
    compareCodeUnits(a.facts.runId, b.facts.runId)
  );
}

function describe(c: Candidate): string {
  return `${c.pod.name} (priority ${c.facts.replicaPriority}, offset ${offsetOf(c.facts)}, ${c.facts.keys} keys)`;
}

export interface PromotionOptions {
  /**
   * Only pods that stay (planned switchovers): a pod a scale-down is removing would need a
   * second switchover right after the first.
   */
  stayingOnly?: boolean;
}

/**
 * Whom to promote when the labelled master `master` failed or lost its role. With
 * includeMaster, the master itself (restarted, answering as a replica) competes too.
 */
export function choosePromotion(
  input: DecideInput,
  master: PodObservation,
  includeMaster: boolean,
  options: PromotionOptions = {},
): Choice {
  const { now, config } = input;
  const history = historyOf(input, master);
  const masterSilentMs = silentForMs(master, now) ?? 0;
  const excluded: string[] = [];
  const eligible: Candidate[] = [];
  const unmatched: Candidate[] = [];
  for (const pod of input.pods) {
    if (pod === master && !includeMaster) continue;
    const facts = currentFacts(pod, now, config);
    if (!facts) continue;
    const r = facts.replication;
    if (pod.deleting) {
      excluded.push(`${pod.name}: pod is being deleted`);
      continue;
    }
    if (options.stayingOnly && isBeyondScale(pod, input.name, input.spec.replicas)) {
      excluded.push(`${pod.name}: a scale-down to ${input.spec.replicas} replicas removes its pod`);
      continue;
    }
    if (facts.loading) {
      excluded.push(`${pod.name}: still loading`);
      continue;
    }
    if (facts.replicaPriority === 0) {
      excluded.push(`${pod.name}: replica-priority 0`);
      continue;
    }
    if (r.role === 'replica' && r.masterSyncInProgress) {
      excluded.push(`${pod.name}: full sync in progress`);
      continue;
    }
    // The master itself (restarted, answering as a replica of nowhere) has no link to judge: its
    // data is what it had as master, and its offset says how much of it survived.
    if (r.role === 'replica' && r.masterLinkStatus === 'down' && pod !== master) {
      const downMs = (r.masterLinkDownSinceSeconds ?? facts.uptimeSeconds) * 1000;
      if (downMs > masterSilentMs + config.maxReplicaLinkDownMs) {
        excluded.push(
          `${pod.name}: its link has been down ${Math.round(downMs / 1000)} s, since long before the master fell silent`,
        );
        continue;
      }
    }
    if (history !== null && r.masterReplid !== history && r.masterReplid2 !== history) {
      excluded.push(`${pod.name}: another replication history (${r.masterReplid.slice(0, 8)})`);
      unmatched.push({ pod, facts });
      continue;
    }
    eligible.push({ pod, facts });
  }

  const online = master.redis?.lastMasterFacts?.onlineReplicaIps ?? null;
  const missing = missingContenders(input, master, online).filter((m) => !eligible.some((c) => c.pod.name === m.name));
  const waitedMs = masterSilentMs - config.downAfterMs;

  if (eligible.length === 0) {
    // Nobody holds the master's history. Choosing by data (as after a full restart) is only
    // right when no pod that may hold that history is out of sight.
    const others = missingContenders(input, includeMaster ? null : master, null);
    if (unmatched.length > 0 && others.length === 0) {
      const best = unmatched.sort((a, b) => compareByData(a, b))[0]!;
      if (!isEmpty(best.facts) || unmatched.every((c) => isEmpty(c.facts))) {
        return {
          ok: true,
          pod: best.pod,
          facts: best.facts,
          reason: `no node shares ${master.name}'s history and no other pod can hold it; choosing by data: ${describe(best)}`,
        };
      }
    }
    return {
      ok: false,
      reason: `no candidate to replace ${master.name}${excluded.length ? `: ${excluded.join('; ')}` : ': no other node answers'}${others.length ? `; waiting for ${names(others)}` : ''}`,
    };
  }

  eligible.sort((a, b) => compareFailover(a, b, history, master));
  const best = eligible[0]!;
  if (missing.length > 0 && waitedMs < config.maxPartialWaitMs) {
    return {
      ok: false,
      reason:
        `${names(missing)} cannot be read and may hold writes ${best.pod.name} lacks; waiting (up to ${config.maxPartialWaitMs} ms) before choosing on a partial view` +
        (excluded.length > 0 ? `; excluded ${excluded.join('; ')}` : ''),
    };
  }
  const rest = eligible.slice(1).map(describe);
  const note = missing.length > 0 ? `; gave up waiting for ${names(missing)} after ${Math.round(waitedMs)} ms` : '';
  const skipped = excluded.length > 0 ? `; excluded ${excluded.join('; ')}` : '';
  const already =
    best.facts.replication.role === 'master' && best.pod !== master ? ' (already promoted by an earlier leader)' : '';
  return {
    ok: true,
    pod: best.pod,
    facts: best.facts,
    reason: `best replacement for ${master.name}: ${describe(best)}${already}${rest.length ? `, ahead of ${rest.join(', ')}` : ''}${skipped}${note}`,
  };
}

/** Most data first: offset, then keys, then the master StatefulSet's pod, then name. */
function compareByData(a: Candidate, b: Candidate): number {
  return (
    offsetOf(b.facts) - offsetOf(a.facts) ||
    b.facts.keys - a.facts.keys ||
    (a.pod.component === COMPONENT_MASTER_SET ? 0 : 1) - (b.pod.component === COMPONENT_MASTER_SET ? 0 : 1) ||
    compareCodeUnits(a.pod.name, b.pod.name)
  );
}

/**
 * No pod is labelled master. If some answering nodes are already masters (an earlier leader
 * promoted one and crashed before labelling), adopt the one that supersedes the others. Otherwise
 * bootstrap, once every pod that may hold data answers (bootstrap-wait.ts): a fresh set starts
 * from <name>-master-0; after a full restart from the node with the most data. Offsets compare
 * across a failover chain (a promoted node continues its master's offsets); a node restarted from
 * AOF reports offset 0 and a new id, so keys decide there.
 */
export function chooseBootstrap(input: DecideInput): Choice {
  const candidates: Candidate[] = [];
  const excluded: string[] = [];
  for (const pod of input.pods) {
    const facts = usable(input, pod);
    if (!facts) continue;
    if (facts.replicaPriority === 0) {
      excluded.push(`${pod.name}: replica-priority 0`);
      continue;
    }
    candidates.push({ pod, facts });
  }

  const masters = candidates.filter((c) => c.facts.replication.role === 'master');
  if (masters.length > 0) {
    const superseded = new Set(masters.map((m) => m.facts.replication.masterReplid2));
    masters.sort(
      (a, b) =>
        (superseded.has(a.facts.replication.masterReplid) ? 1 : 0) -
          (superseded.has(b.facts.replication.masterReplid) ? 1 : 0) || compareByData(a, b),
    );
    const best = masters[0]!;
    const others = masters.slice(1).map((m) => m.pod.name);
    return {
      ok: true,
      pod: best.pod,
      facts: best.facts,
      reason: `adopting ${best.pod.name}: it is already master (promoted earlier, never labelled)${others.length ? `; ${others.join(', ')} will be demoted` : ''}`,
    };
  }

  const waits = bootstrapWaits(input);
  if (waits.waitFor.length > 0) {
    return {
      ok: false,
      reason:
        `no master yet; bootstrap waits for ${describeHolders(waits.waitFor)}: ${waits.waitFor.length === 1 ? 'it' : 'each'} may hold data ` +
        `${candidates.length > 0 ? 'the answering pods lack' : 'and no pod answers yet'} (the annotation ${BOOTSTRAP_WITHOUT_ANNOTATION} gives up on named pods)`,
    };
  }
  if (candidates.length === 0)
    return { ok: false, reason: `no pod answers${excluded.length ? ` (${excluded.join('; ')})` : ''}` };

  // A fresh set (every answering node empty) waits up to maxPartialWaitMs for pods not up yet that
  // cannot hold data: it then starts from <name>-master-0 as its names say, not from whichever
  // pod ran first.
  const readable = new Set(input.pods.filter((p) => usable(input, p) !== null).map((p) => p.name));
  const notYet = expectedPodNames(input.name, input.spec.replicas).filter((n) => !readable.has(n));
  const waitedMs = input.now - Math.min(...candidates.map((c) => c.pod.redis?.firstOkAt ?? input.now));
  if (candidates.every((c) => isEmpty(c.facts)) && notYet.length > 0 && waitedMs < input.config.maxPartialWaitMs) {
    return {
      ok: false,
      reason: `no master yet and ${notYet.join(', ')} not up yet: waiting (up to ${input.config.maxPartialWaitMs} ms) for the whole set`,
    };
  }

  candidates.sort(compareByData);
  const best = candidates[0]!;
  const released =
    waits.released.length > 0
      ? `; gave up on ${describeHolders(waits.released)} as ${BOOTSTRAP_WITHOUT_ANNOTATION} asks`
      : '';
  const skipped = excluded.length > 0 ? `; excluded ${excluded.join('; ')}` : '';
  if (candidates.every((c) => isEmpty(c.facts))) {
    const preferred = candidates.find((c) => c.pod.name === `${input.name}-master-0`) ?? best;
    return {
      ok: true,
      pod: preferred.pod,
      facts: preferred.facts,
      reason: `fresh set (every node empty): starting from ${preferred.pod.name}${released}`,
    };
  }
  return {
    ok: true,
    pod: best.pod,
    facts: best.facts,
    reason: `no master: ${describe(best)} has the most data${candidates.length > 1 ? ` (then ${candidates.slice(1).map(describe).join(', ')})` : ''}${skipped}${released}`,
  };
}
