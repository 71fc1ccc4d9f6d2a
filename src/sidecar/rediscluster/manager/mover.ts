// Moving hash slots' keys between two masters, the way Redis Cluster documents it, for a group of
// slots with the same two ends at once: the target IMPORTING, the source MIGRATING, the keys in
// batches of GETKEYSINSLOT + MIGRATE ... KEYS, then SETSLOT NODE on the target, the source and
// every other master. Each of these goes to a node for all the group's slots together (one round
// trip, one nodes.conf write there), so a slot costs a fraction of a round trip, not ten.
// Invariants:
// - Every step is idempotent, so a move interrupted anywhere (this sidecar killed, a node
//   restarted) is finished by running it again from the top: a state already set is not set
//   twice, keys already moved are simply not found at the source any more.
// - The source is never told a slot is elsewhere while it holds keys of it (Redis refuses that
//   too): SETSLOT NODE on the source comes after GETKEYSINSLOT returned nothing for that slot.
// - A key on both ends (a MIGRATE that restored on the target but did not delete at the source
//   before a crash) is moved again with REPLACE, only then: while the slot was migrating, writes
//   to a key that existed at the source went to the source, so the source's copy is the newer one.
// - A batch is sized by bytes (BATCH_BYTES over the source's bytes per key). Redis refuses keys
//   of two slots in one MIGRATE, so a batch is MIGRATEs of one slot each. The source runs the
//   MIGRATEs it has read back to back, each waiting for the target's answer, serving no client
//   meanwhile: so a batch is sent in pipelines of at most SEND_BYTES, one after another, and a
//   source is sent few pipelines at once (whatever group sends them: hooks.turn), so that its
//   clients are served between them.
// - After each batch the target's linked replicas are given up to WAIT_MS to have it before the
//   next one (replica-wait.ts), so what was acknowledged on the source (its replicas had it) is on
//   the target's replicas too, save what a target that dies mid-batch had not streamed.
// - One slot's failure is that slot's outcome: the group's other slots go on.
import { performance } from 'node:perf_hooks';
import type { ClusterAdapter, Result, SlotState } from '../../adapters/redis/rediscluster.ts';
import { ReplicaWait } from './replica-wait.ts';

export { WAIT_MS } from './replica-wait.ts';

/**
 * Bytes a batch of MIGRATEs carries (estimated from the source's bytes per key): the target's
 * replicas are waited for after each. A bench run with 4 MiB, sent in one pipeline, saw a write
 * wait 1.1 s on a loaded machine.
 */
export const BATCH_BYTES = 1024 * 1024;
/**
 * Bytes of MIGRATEs in one pipeline: the source runs them back to back, serving no client, each
 * waiting for the target to restore it.
 */
export const SEND_BYTES = 128 * 1024;
/** Keys in a batch at most, however small they are. */
export const MAX_BATCH_KEYS = 5000;
export const MIGRATE_TIMEOUT_MS = 5000;

export interface MoveEnd {
  ip: string;
  id: string;
}

export interface SlotMove {
  slot: number;
  /** `from` does not serve the slot: only its keys go to `to`, then it closes the slot. */
  cold: boolean;
  /** What the nodes said when the round began: skip what is already so. */
  toImportingFrom: string | null;
  fromMigratingTo: string | null;
  toServes: boolean;
}

export interface MoveSpec extends SlotMove {
  from: MoveEnd;
  to: MoveEnd;
  /** Other masters to tell (SETSLOT NODE), by address. */
  others: string[];
  /** Addresses of the replicas the target has linked: they get each batch before the next. */
  targetReplicas: string[];
  /** The source's bytes per key (used_memory over keys): sizes the batches. */
  keyBytes: number;
}

export type MoveOutcome =
  { ok: true; keys: number } | { ok: false; keys: number; phase: string; error: string; kind: string };

export interface MoveHooks {
  afterBatch?(slot: number, keys: number): void | Promise<void>;
  /** Checked between batches: stop (leaving the slots open, to be finished by the next round). */
  stopped(): boolean;
  now?(): number;
  sleep?(ms: number): Promise<void>;
  /**
   * Where the time went: ms spent in each phase as it ends (open, keys, turn: waiting for the
   * source, migrate: a pipeline, replicas, close).
   */
  spent?(phase: 'open' | 'keys' | 'turn' | 'migrate' | 'replicas' | 'close', ms: number): void;
  /** Runs `send` (a pipeline of MIGRATEs from `source`) once `source` may take another one. */
  turn?<T>(source: string, send: () => Promise<T>): Promise<T>;
}

/** IMPORTING on a node that already owns the slot: the move is further along than we thought. */
const ALREADY = /already the owner/i;

/** Keys a batch may take: `bytes` (BATCH_BYTES) of keys of `keyBytes` each, within [1, MAX_BATCH_KEYS]. */
export function batchKeys(keyBytes: number, bytes = BATCH_BYTES): number {
  if (!(keyBytes > 0)) return MAX_BATCH_KEYS;
  return Math.max(1, Math.min(MAX_BATCH_KEYS, Math.floor(bytes / keyBytes)));
}

/**
 * A batch's pipelines: its slots' key lists cut into MIGRATEs of at most `max` keys, packed in
 * order into pipelines of at most `max` keys (a list longer than `max` is a MIGRATE of its own).
 */
export function sendUnits<T>(batch: ReadonlyArray<{ slot: T; keys: readonly Buffer[] }>, max: number) {
  const lists = batch.flatMap((b) => {
    const parts: Array<{ slot: T; keys: Buffer[] }> = [];
    for (let i = 0; i < b.keys.length; i += max) parts.push({ slot: b.slot, keys: b.keys.slice(i, i + max) });
    return parts;
  });
  return packBatches(lists, max);
}

/** Slots' key lists packed, in order, into batches of at most `max` keys (a list is never split). */
export function packBatches<T extends { keys: readonly unknown[] }>(lists: readonly T[], max: number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let n = 0;
  for (const l of lists) {
    if (current.length > 0 && n + l.keys.length > max) {
      out.push(current);
      current = [];
      n = 0;
    }
    current.push(l);
    n += l.keys.length;
  }
  if (current.length > 0) out.push(current);
  return out;
}

const failed = (keys: number, phase: string, r: Extract<Result<unknown>, { ok: false }>): MoveOutcome => ({
  ok: false,
  keys,
  phase,
  error: r.error.message,
  kind: r.error.kind,
});

/**
 * Moves the slots of `moves` (one source, one target: the first one's ends, others and replicas
 * stand for all) and answers each slot's outcome.
 */
export async function moveSlots(
  redis: ClusterAdapter,
  moves: readonly MoveSpec[],
  hooks: MoveHooks,
): Promise<Map<number, MoveOutcome>> {
  const out = new Map<number, MoveOutcome>();
  const g = moves[0];
  if (!g) return out;
  const { from, to } = g;
  const keys = new Map<number, number>(moves.map((m) => [m.slot, 0]));
  const clock = hooks.now ?? (() => performance.now());
  let mark = clock();
  const spent = (phase: Parameters<NonNullable<MoveHooks['spent']>>[0]) => {
    const t = clock();
    hooks.spent?.(phase, t - mark);
    mark = t;
  };
  const live = () => moves.filter((m) => !out.has(m.slot));
  /** Sends one SETSLOT per slot to `ip` together; a slot whose answer is an error (but `ok`) fails. */
  const setSlots = async (ip: string, list: readonly SlotMove[], state: (m: SlotMove) => SlotState, phase: string) => {
    const rs = await redis.setSlots(ip, list.map(state));
    rs.forEach((r, i) => {
      const slot = list[i]!.slot;
      if (!r.ok && !ALREADY.test(r.error.message)) out.set(slot, failed(keys.get(slot)!, phase, r));
    });
  };

  const opening = moves.filter((m) => !m.cold);
  await setSlots(
    to.ip,
    opening.filter((m) => !m.toServes && m.toImportingFrom !== from.id),
    (m) => ({ slot: m.slot, state: 'IMPORTING', id: from.id }),
    'importing',
  );
  await setSlots(
    from.ip,
    opening.filter((m) => !out.has(m.slot) && m.fromMigratingTo !== to.id),
    (m) => ({ slot: m.slot, state: 'MIGRATING', id: to.id }),
    'migrating',
  );

  spent('open');
  const perBatch = batchKeys(g.keyBytes);
  const perSend = batchKeys(g.keyBytes, SEND_BYTES);
  const wait = new ReplicaWait(redis, to.ip, g.targetReplicas, hooks);
  const turn = hooks.turn ?? (<T>(_: string, send: () => Promise<T>) => send());
  let draining = live();
  while (draining.length > 0) {
    if (hooks.stopped()) return stopped(out, live(), keys);
    const found = await redis.getKeysInSlots(
      from.ip,
      draining.map((m) => m.slot),
      perBatch,
    );
    spent('keys');
    const full: Array<{ slot: number; keys: Buffer[] }> = [];
    found.forEach((r, i) => {
      const slot = draining[i]!.slot;
      if (!r.ok) out.set(slot, failed(keys.get(slot)!, 'getkeysinslot', r));
      else if (r.value.length > 0) full.push({ slot, keys: r.value });
    });
    for (const batch of packBatches(full, perBatch)) {
      if (hooks.stopped()) return stopped(out, live(), keys);
      for (const unit of sendUnits(batch, perSend)) {
        // A slot that failed in an earlier pipeline is that slot's outcome: its other keys stay.
        const sent = unit.filter((u) => !out.has(u.slot));
        if (sent.length === 0) continue;
        const rs = await turn(from.ip, () => {
          spent('turn');
          return migrate(redis, from.ip, to.ip, sent);
        });
        // One pipeline's time: about how long its source served no client.
        spent('migrate');
        rs.forEach((r, i) => {
          const u = sent[i]!;
          if (!r.ok) out.set(u.slot, failed(keys.get(u.slot)!, 'migrate', r));
          else keys.set(u.slot, keys.get(u.slot)! + u.keys.length);
        });
      }
      // The keys just left the source (and its replicas): have them on the target's replicas
      // before the next batch, so a target that dies now loses no more than what was in flight.
      await wait.caughtUp();
      spent('replicas');
      for (const b of batch) if (!out.has(b.slot)) await hooks.afterBatch?.(b.slot, b.keys.length);
    }
    draining = full.map((f) => moves.find((m) => m.slot === f.slot)!).filter((m) => !out.has(m.slot));
  }

  if (hooks.stopped()) return stopped(out, live(), keys);
  const cold = live().filter((m) => m.cold);
  await setSlots(from.ip, cold, (m) => ({ slot: m.slot, state: 'STABLE' }), 'stable');
  const warm = live().filter((m) => !m.cold);
  const node = (m: SlotMove): SlotState => ({ slot: m.slot, state: 'NODE', id: to.id });
  // The target first: once it owns a slot, ASK-redirected clients are answered there for good.
  await setSlots(to.ip, warm, node, 'node-target');
  await setSlots(
    from.ip,
    live().filter((m) => !m.cold),
    node,
    'node-source',
  );
  // The others learn it by gossip anyway; telling them spares clients a MOVED through a stale node.
  const told = live().filter((m) => !m.cold);
  await Promise.all(g.others.map((ip) => redis.setSlots(ip, told.map(node))));
  spent('close');
  for (const m of live()) out.set(m.slot, { ok: true, keys: keys.get(m.slot)! });
  return out;
}

/** One pipeline of MIGRATEs; those refused with BUSYKEY again with REPLACE (see the header). */
async function migrate(
  redis: ClusterAdapter,
  from: string,
  to: string,
  unit: ReadonlyArray<{ keys: readonly Buffer[] }>,
): Promise<Result[]> {
  const rs = await redis.migrateMany(
    from,
    to,
    unit.map((u) => u.keys),
    MIGRATE_TIMEOUT_MS,
    false,
  );
  const busy = unit.filter((_, i) => {
    const r = rs[i]!;
    return !r.ok && /BUSYKEY/.test(r.error.message);
  });
  if (busy.length === 0) return rs;
  const again = await redis.migrateMany(
    from,
    to,
    busy.map((u) => u.keys),
    MIGRATE_TIMEOUT_MS,
    true,
  );
  return rs.map((r, i) => {
    const k = busy.indexOf(unit[i]!);
    return k >= 0 ? again[k]! : r;
  });
}

function stopped(out: Map<number, MoveOutcome>, left: readonly SlotMove[], keys: Map<number, number>) {
  for (const m of left)
    out.set(m.slot, {
      ok: false,
      keys: keys.get(m.slot)!,
      phase: 'stopped',
      error: 'the worker stopped',
      kind: 'stopped',
    });
  return out;
}
