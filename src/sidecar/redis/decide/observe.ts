// Observation: folding probe results into a per-pod track, and reading a pod's state from it.
// Pure. The manager keeps one RedisTrack per pod (keyed by pod UID) and calls track() after
// every probe; decisions only read tracks.
// Invariants: a track belongs to one IP (a new IP starts afresh, so facts about a previous
// incarnation of the pod are never mistaken for the current one); "answering" needs a successful
// probe no older than staleAfterMs; witness streaks are continuous (one contrary probe resets them).
import { REDIS_PORT } from '../../../api/labels.ts';
import type { ProbeResult, RedisFacts } from '../../adapters/redis/types.ts';
import { PLACEHOLDER_MASTER } from '../../../api/labels.ts';
import type { DecideConfig, PodObservation, RedisTrack } from './types.ts';

/**
 * Does this replica's report say its master is gone or silent? stalledMs: how long its offset has
 * not moved across our probes, as of its latest successful probe (null: not known).
 */
export function reportsMasterDown(
  facts: RedisFacts,
  config: Pick<DecideConfig, 'silentAfterSeconds' | 'offsetStallMs'>,
  stalledMs: number | null = null,
): boolean {
  const r = facts.replication;
  if (r.role !== 'replica') return false;
  if (r.masterLinkStatus === 'down') {
    // A full sync in progress with fresh transfer I/O means the master is alive and sending.
    if (
      r.masterSyncInProgress &&
      r.masterSyncLastIoSecondsAgo !== null &&
      r.masterSyncLastIoSecondsAgo < config.silentAfterSeconds
    )
      return false;
    return true;
  }
  if (stalledMs !== null && stalledMs >= config.offsetStallMs) return true;
  return r.masterLastIoSecondsAgo !== null && r.masterLastIoSecondsAgo >= config.silentAfterSeconds;
}

/** How long the replica's offset has not moved, as of its latest successful probe; null when not known. */
export function offsetStalledMs(t: RedisTrack | null | undefined): number | null {
  if (!t || t.offsetSince === null || t.offsetSince === undefined || t.okAt === null) return null;
  return t.okAt - t.offsetSince;
}

/** Folds one probe of the pod at `ip` into its track. */
export function track(
  prev: RedisTrack | null | undefined,
  ip: string,
  probe: ProbeResult,
  now: number,
  config: Pick<DecideConfig, 'silentAfterSeconds' | 'offsetStallMs'>,
): RedisTrack {
  const base: RedisTrack =
    prev && prev.ip === ip
      ? prev
      : {
          ip,
          firstSeenAt: now,
          lastAt: now,
          lastError: null,
          facts: null,
          okAt: null,
          firstOkAt: null,
          failingSince: null,
          refusedSince: null,
          lastMasterFacts: null,
          witnessDownSince: null,
          witnessOf: null,
          offsetSince: null,
        };
  if (!probe.ok) {
    const refusedSince = probe.error.kind === 'refused' ? (base.refusedSince ?? now) : null;
    return { ...base, lastAt: now, lastError: probe.error, failingSince: base.failingSince ?? now, refusedSince };
  }
  const facts = probe.facts;
  const r = facts.replication;
  let witnessDownSince: number | null = null;
  let witnessOf: string | null = null;
  let offsetSince: number | null = null;
  if (r.role === 'replica' && r.masterHost !== null) {
    witnessOf = `${r.masterHost}:${r.masterPort}`;
    // Offsets only grow within one link; the same offset on the same link means no byte came.
    const before = base.facts?.replication;
    const same =
      base.witnessOf === witnessOf &&
      r.masterLinkStatus === 'up' &&
      before?.role === 'replica' &&
      before.masterLinkStatus === 'up' &&
      before.slaveReplOffset === r.slaveReplOffset &&
      before.masterReplid === r.masterReplid;
    offsetSince = same ? (base.offsetSince ?? now) : now;
    if (reportsMasterDown(facts, config, now - offsetSince)) {
      witnessDownSince = base.witnessOf === witnessOf && base.witnessDownSince !== null ? base.witnessDownSince : now;
    }
  }
  const lastMasterFacts =
    r.role === 'master'
      ? {
          at: now,
          replid: r.masterReplid,
          replid2: r.masterReplid2,
          offset: r.masterReplOffset,
          keys: facts.keys,
          onlineReplicaIps: r.replicas.filter((l) => l.state === 'online').map((l) => l.ip),
        }
      : base.lastMasterFacts;
  return {
    ...base,
    lastAt: now,
    lastError: null,
    facts,
    okAt: now,
    firstOkAt: base.firstOkAt ?? now,
    failingSince: null,
    refusedSince: null,
    lastMasterFacts,
    witnessDownSince,
    witnessOf,
    offsetSince,
  };
}

/** The pod's Redis answered recently at the pod's current IP. */
export function isAnswering(pod: PodObservation, now: number, config: Pick<DecideConfig, 'staleAfterMs'>): boolean {
  const t = pod.redis;
  return (
    t !== null &&
    pod.ip !== null &&
    t.ip === pod.ip &&
    t.lastError === null &&
    t.facts !== null &&
    t.okAt !== null &&
    now - t.okAt <= config.staleAfterMs
  );
}

/** Facts if answering now, else null. */
export function currentFacts(
  pod: PodObservation,
  now: number,
  config: Pick<DecideConfig, 'staleAfterMs'>,
): RedisFacts | null {
  return isAnswering(pod, now, config) ? pod.redis!.facts : null;
}

/**
 * How long the pod has not answered: since its last answer, or since we started probing it when
 * it never answered. null when we have never probed it (we know nothing).
 */
export function silentForMs(pod: PodObservation, now: number): number | null {
  const t = pod.redis;
  if (!t || (pod.ip !== null && t.ip !== pod.ip)) return null;
  if (t.lastError === null && t.okAt !== null) return Math.max(0, now - t.lastAt);
  return now - (t.okAt ?? t.firstSeenAt);
}

export function endpointOf(ip: string) {
  return { host: ip, port: REDIS_PORT };
}

/** No data at all: a fresh node, or one restarted without its volume. */
export function isEmpty(facts: RedisFacts): boolean {
  return facts.replication.masterReplOffset === 0 && facts.keys === 0;
}

export function pointsAtPlaceholder(facts: RedisFacts): boolean {
  const r = facts.replication;
  return r.role === 'replica' && r.masterHost === PLACEHOLDER_MASTER.host && r.masterPort === PLACEHOLDER_MASTER.port;
}

/** Ordinal of a StatefulSet pod name (`x-replica-3` -> 3), or null. */
export function ordinalOf(podName: string): number | null {
  const m = /-(\d+)$/.exec(podName);
  return m ? Number(m[1]) : null;
}

/** The pods the StatefulSets should have now: <name>-master-0 and <name>-replica-0..replicas-1. */
export function expectedPodNames(name: string, replicas: number): string[] {
  return [`${name}-master-0`, ...Array.from({ length: replicas }, (_, i) => `${name}-replica-${i}`)];
}

/** A replica-set pod beyond spec.replicas: a scale-down is removing it. */
export function isBeyondScale(pod: PodObservation, name: string, replicas: number): boolean {
  if (!pod.name.startsWith(`${name}-replica-`)) return false;
  const ordinal = ordinalOf(pod.name);
  return ordinal !== null && ordinal >= replicas;
}
