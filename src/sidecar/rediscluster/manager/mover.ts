// Moving one hash slot's keys between two masters, the way Redis Cluster documents it: the target
// IMPORTING, the source MIGRATING, the keys in batches of GETKEYSINSLOT + MIGRATE ... KEYS, then
// SETSLOT NODE on the target, the source and every other master.
// Invariants:
// - Every step is idempotent, so a move interrupted anywhere (this sidecar killed, a node
//   restarted) is finished by running it again from the top: a state already set is not set
//   twice, keys already moved are simply not found at the source any more.
// - The source is never told the slot is elsewhere while it holds keys of it (Redis refuses that
//   too): SETSLOT NODE on the source comes after GETKEYSINSLOT returned nothing.
// - A key on both ends (a MIGRATE that restored on the target but did not delete at the source
//   before a crash) is moved again with REPLACE: while the slot was migrating, writes to a key
//   that existed at the source went to the source, so the source's copy is the newer one.
// - After each batch the target is given up to WAIT_MS to have it on its replicas before the next
//   one: what was acknowledged on the source (its replicas had it) is on the target's replicas
//   too, save what a target that dies mid-batch had not streamed yet.
import type { ClusterAdapter, Result } from '../../adapters/redis/rediscluster.ts';

export const BATCH_KEYS = 200;
export const MIGRATE_TIMEOUT_MS = 5000;
export const WAIT_MS = 1000;

export interface MoveEnd {
  ip: string;
  id: string;
}

export interface MoveSpec {
  slot: number;
  from: MoveEnd;
  to: MoveEnd;
  /** `from` does not serve the slot: only its keys go to `to`, then it closes the slot. */
  cold: boolean;
  /** What the nodes said when the round began: skip what is already so. */
  toImportingFrom: string | null;
  fromMigratingTo: string | null;
  toServes: boolean;
  /** Other masters to tell (SETSLOT NODE), by address. */
  others: string[];
  /** Replicas the target has linked: WAIT for this many after moving keys. */
  targetReplicas: number;
}

export type MoveOutcome =
  { ok: true; keys: number } | { ok: false; keys: number; phase: string; error: string; kind: string };

export interface MoveHooks {
  afterBatch?(slot: number, keys: number): void | Promise<void>;
  /** Checked between batches: stop (leaving the slot open, to be finished by the next round). */
  stopped(): boolean;
}

const fail = (keys: number, phase: string, r: Extract<Result<unknown>, { ok: false }>): MoveOutcome => ({
  ok: false,
  keys,
  phase,
  error: r.error.message,
  kind: r.error.kind,
});

/** IMPORTING on a node that already owns the slot: the move is further along than we thought. */
const ALREADY = /already the owner/i;

export async function moveSlot(redis: ClusterAdapter, m: MoveSpec, hooks: MoveHooks): Promise<MoveOutcome> {
  const { slot, from, to } = m;
  if (!m.cold) {
    if (!m.toServes && m.toImportingFrom !== from.id) {
      const r = await redis.setSlot(to.ip, slot, 'IMPORTING', from.id);
      if (!r.ok && !ALREADY.test(r.error.message)) return fail(0, 'importing', r);
    }
    if (m.fromMigratingTo !== to.id) {
      const r = await redis.setSlot(from.ip, slot, 'MIGRATING', to.id);
      if (!r.ok && !ALREADY.test(r.error.message)) return fail(0, 'migrating', r);
    }
  }
  let moved = 0;
  for (;;) {
    if (hooks.stopped())
      return { ok: false, keys: moved, phase: 'stopped', error: 'the worker stopped', kind: 'stopped' };
    const batch = await redis.getKeysInSlot(from.ip, slot, BATCH_KEYS);
    if (!batch.ok) return fail(moved, 'getkeysinslot', batch);
    if (batch.value.length === 0) break;
    let r = await redis.migrate(from.ip, to.ip, batch.value, MIGRATE_TIMEOUT_MS, false);
    if (!r.ok && /BUSYKEY/.test(r.error.message))
      r = await redis.migrate(from.ip, to.ip, batch.value, MIGRATE_TIMEOUT_MS, true);
    if (!r.ok) return fail(moved, 'migrate', r);
    moved += batch.value.length;
    // The keys just left the source (and its replicas): have them on the target's replicas before
    // the next batch, so a target that dies now loses no more than what was in flight.
    if (m.targetReplicas > 0) await redis.wait(to.ip, m.targetReplicas, WAIT_MS);
    await hooks.afterBatch?.(slot, batch.value.length);
  }
  if (m.cold) {
    const r = await redis.setSlot(from.ip, slot, 'STABLE');
    return r.ok ? { ok: true, keys: moved } : fail(moved, 'stable', r);
  }
  // The target first: once it owns the slot, ASK-redirected clients are answered there for good.
  const onTarget = await redis.setSlot(to.ip, slot, 'NODE', to.id);
  if (!onTarget.ok) return fail(moved, 'node-target', onTarget);
  const onSource = await redis.setSlot(from.ip, slot, 'NODE', to.id);
  if (!onSource.ok) return fail(moved, 'node-source', onSource);
  // The others learn it by gossip anyway; telling them spares clients a MOVED through a stale node.
  await Promise.all(m.others.map((ip) => redis.setSlot(ip, slot, 'NODE', to.id)));
  return { ok: true, keys: moved };
}
