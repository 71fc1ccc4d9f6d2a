// Which passwords one ACL user must have on every node when its Secret changes: a grace period in
// which the old and the new password both work (clients move over), then only the new one. Pure.
// Invariants:
// - The current Secret's password is always among the wanted ones: a node never loses it.
// - A change is seen on the nodes themselves (a node has the user without the current password),
//   so a change made while no sidecar ran, or seen by a new leader, is handled the same way.
// - The grace period starts once per change (its end is recorded on the Redis before any node is
//   touched), and while it runs every password any node still has is kept on every node: a node
//   restarted in the meantime (which starts with the new password only) gets the old one back.
// - Once it is over, each node keeps exactly the current password.
// - Wall-clock time: the end of a grace period is recorded for other sidecars and restarts.

export interface NodePasswords {
  pod: string;
  /** The SHA-256 hashes the node accepts for the user, sorted; null when it has no such user. */
  hashes: readonly string[] | null;
}

export interface PasswordsInput {
  user: string;
  /** SHA-256 of the password in the user's Secret now. */
  current: string;
  nodes: readonly NodePasswords[];
  /** When a grace period of this user ends (wall-clock ms), as recorded on the Redis. */
  graceUntil: number | undefined;
  /** Wall-clock ms. */
  now: number;
  graceMs: number;
}

export interface PasswordsDecision {
  /** The hashes every node must have, sorted. */
  hashes: string[];
  /** A change was just seen: record this end of the grace period before touching any node. */
  startGrace: number | undefined;
  /** No grace period runs: a recorded one can be dropped once every node has `hashes`. */
  graceOver: boolean;
  /** Nodes whose passwords differ from `hashes` (a node without the user counts). */
  pods: string[];
  reason: string;
}

const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((h, i) => h === b[i]);

export function decidePasswords(input: PasswordsInput): PasswordsDecision {
  const { user, current, nodes, graceUntil, now, graceMs } = input;
  const changed = nodes.filter((n) => n.hashes !== null && !n.hashes.includes(current)).map((n) => n.pod);
  let inGrace = graceUntil !== undefined && now < graceUntil;
  let startGrace: number | undefined;
  let reason: string;
  if (changed.length > 0 && !inGrace && graceMs > 0) {
    startGrace = now + graceMs;
    inGrace = true;
    reason = `the password of ${user} changed (${changed.join(', ')} lack the new one): old and new both work for ${Math.round(graceMs / 1000)} s`;
  } else if (inGrace) {
    reason = `the grace period of ${user}'s password change runs: every password a node still has is kept`;
  } else {
    reason = `only the current password of ${user}`;
  }
  const wanted = new Set([current]);
  if (inGrace) for (const n of nodes) for (const h of n.hashes ?? []) wanted.add(h);
  const hashes = [...wanted].sort();
  const pods = nodes.filter((n) => n.hashes === null || !sameSet(n.hashes, hashes)).map((n) => n.pod);
  return { hashes, startGrace, graceOver: !inGrace, pods, reason };
}

/** The grace record on the Redis (JSON user -> ISO time); anything unreadable counts as none. */
export function parseGrace(value: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (!value) return out;
  try {
    const parsed: unknown = JSON.parse(value);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return out;
    for (const [user, iso] of Object.entries(parsed)) {
      const t = typeof iso === 'string' ? Date.parse(iso) : NaN;
      if (Number.isFinite(t)) out.set(user, t);
    }
  } catch {
    // A hand-edited record that is not JSON: as if none (the next change starts a new one).
  }
  return out;
}

export function formatGrace(grace: ReadonlyMap<string, number>): string | null {
  if (grace.size === 0) return null;
  const entries = [...grace]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([u, t]) => [u, new Date(t).toISOString()]);
  return JSON.stringify(Object.fromEntries(entries));
}
