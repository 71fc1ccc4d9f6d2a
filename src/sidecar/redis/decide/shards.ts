// How the Redis objects are divided among the running sidecar instances. Pure.
// A Redis belongs to one of `shards` shards (a hash of namespace/name, fixed while the shard
// count is); each shard has its own Lease, and the instance that holds it is the only one that
// acts on its Redis. Which live instance should hold a shard is rendezvous hashing over the
// live members: every instance computes the same owner from the same member list, and when a
// member joins or leaves only the shards it gains or loses move.
// Invariants: shardOf and ownerOf depend on their arguments only (no clock, no order of the
// member list); a member is live while its membership Lease has changed within the lease
// duration as seen by this instance's own clock (never the writer's timestamps: clocks skew).

export { fnv1a, shardOf } from '../../../api/shards.ts';
import { fnv1a } from '../../../api/shards.ts';

/** The live member that should hold the shard (null when none is live). */
export function ownerOf(shard: number, members: readonly string[]): string | null {
  let best: string | null = null;
  let bestScore = -1;
  for (const m of members) {
    const score = fnv1a(`${shard}|${m}`);
    if (score > bestScore || (score === bestScore && best !== null && m < best)) {
      best = m;
      bestScore = score;
    }
  }
  return best;
}

export { shardLeaseName } from '../../../api/shards.ts';

export function memberLeaseName(base: string, identity: string): string {
  return `${base}-member-${identity}`;
}

/** What this instance last saw of one member's Lease, and when (its own clock) it last changed. */
export interface MemberSighting {
  resourceVersion: string;
  /** holderIdentity: '' when the member released it (stopped cleanly). */
  holder: string;
  changedAt: number;
}

/** Folds one listing of membership Leases (name -> rv/holder) into the sightings. */
export function foldSightings(
  prev: ReadonlyMap<string, MemberSighting>,
  listed: ReadonlyArray<{ identity: string; resourceVersion: string; holder: string }>,
  now: number,
): Map<string, MemberSighting> {
  const next = new Map<string, MemberSighting>();
  for (const l of listed) {
    const p = prev.get(l.identity);
    const changed = !p || p.resourceVersion !== l.resourceVersion;
    next.set(l.identity, {
      resourceVersion: l.resourceVersion,
      holder: l.holder,
      changedAt: changed ? now : p.changedAt,
    });
  }
  return next;
}

/**
 * Live members, sorted: a Lease held by its member that changed within leaseDurationMs. A Lease
 * seen for the first time counts as changed now, so a restarted instance waits out one lease
 * duration before it counts a silent member as dead.
 */
export function liveMembers(
  sightings: ReadonlyMap<string, MemberSighting>,
  now: number,
  leaseDurationMs: number,
  self?: string,
): string[] {
  const out = new Set<string>();
  for (const [identity, s] of sightings)
    if (s.holder === identity && now - s.changedAt < leaseDurationMs) out.add(identity);
  if (self) out.add(self);
  return [...out].sort();
}
