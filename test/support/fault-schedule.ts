// The seeded fault schedule of the RedisCluster fault run (test/system/rediscluster-faults.test.ts)
// and the slot checks it makes between faults. Pure: no I/O, no clock, no Math.random.
// Invariants:
// - The same seed and options give the same schedule, so a failing run is replayed by its seed.
// - A schedule holds 8 to 10 faults: every base kind (master kill, pod delete, partition, sidecar
//   kill) at least once, exactly one scale-up to 4 shards and, later, one scale-down to 3 with at
//   least one fault between them (so faults also meet four shards), and a rollout only when asked.
// - A fault's shard exists when it runs: the schedule knows the shard count at every position.
// - falseFailovers names a shard whose master changed when the fault allowed none there.
// - slotProblems names every way the nodes' views break "each slot exactly one master": a slot
//   claimed by no node or by two, views that disagree on an owner, an owner the cluster flags
//   failed, a slot left open; an empty list means none.
import { parseClusterNodes } from '../../src/sidecar/rediscluster/decide/cluster-nodes.ts';

/** mulberry32: a 32-bit seeded generator, uniform in [0, 1). Enough for a test's choices. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const BASE_KINDS = ['master-kill', 'pod-delete', 'partition', 'sidecar-kill'] as const;
export type FaultKind = (typeof BASE_KINDS)[number] | 'scale-up' | 'scale-down' | 'rollout';

export interface Fault {
  kind: FaultKind;
  /** The shard it hits (master kill, pod delete, partition); 0 where it hits none. */
  shard: number;
  /** pod delete: the shard's master, or one of its replicas (`replica` picks which, 0 or 1). */
  target: 'master' | 'replica';
  replica: number;
  /** How long a partition or a frozen sidecar lasts before it is undone (ms). */
  holdMs: number;
  /** Made while the reshard of the scale just before it still moves slots, when it still does. */
  midReshard: boolean;
  /** Shards when this fault is made (3, or 4 between the scales). */
  shards: number;
}

export interface ScheduleOptions {
  /** Include one rollout (a pod-template change) in the schedule. */
  rollout: boolean;
}

/** The faults of one run, in order, from `seed`. */
export function faultSchedule(seed: number, options: ScheduleOptions): Fault[] {
  const rand = mulberry32(seed);
  const int = (n: number) => Math.floor(rand() * n);
  const count = 8 + int(3);
  // Scale-up somewhere in the first half, scale-down at least two places later.
  const up = 1 + int(Math.max(1, Math.floor(count / 2) - 1));
  const down = up + 2 + int(count - up - 2);
  const kinds: Array<FaultKind | undefined> = Array.from({ length: count }, () => undefined);
  kinds[up] = 'scale-up';
  kinds[down] = 'scale-down';
  const free = kinds.flatMap((k, i) => (k === undefined ? [i] : []));
  // Each base kind (and the rollout) once, at random free places; the rest drawn at random.
  const once: FaultKind[] = [...BASE_KINDS, ...(options.rollout ? (['rollout'] as const) : [])];
  for (const kind of once) kinds[free.splice(int(free.length), 1)[0]!] = kind;
  for (const i of free) kinds[i] = BASE_KINDS[int(BASE_KINDS.length)]!;
  return (kinds as FaultKind[]).map((kind, i) => {
    const shards = i > up && i < down ? 4 : 3;
    return {
      kind,
      shard: int(shards),
      target: rand() < 0.5 ? 'master' : 'replica',
      replica: int(2),
      holdMs: 6000 + int(5) * 1000,
      midReshard: (i === up + 1 || i === down + 1) && kind !== 'rollout' && rand() < 0.5,
      shards,
    };
  });
}

/** One line per fault, for the test's diagnostics. */
export function describeFault(f: Fault): string {
  const at = f.midReshard ? ' while the reshard moves slots' : '';
  switch (f.kind) {
    case 'master-kill':
      return `SIGKILL the master of shard ${f.shard}${at}`;
    case 'pod-delete':
      return `delete the ${f.target === 'master' ? 'master' : `replica #${f.replica}`} pod of shard ${f.shard}${at}`;
    case 'partition':
      return `cut shard ${f.shard}'s master from its replicas for ${f.holdMs} ms${at}`;
    case 'sidecar-kill':
      return `freeze the acting sidecar for ${f.holdMs} ms, then SIGKILL it${at}`;
    case 'scale-up':
      return 'kubectl scale rediscluster --replicas=4';
    case 'scale-down':
      return 'kubectl scale rediscluster --replicas=3';
    case 'rollout':
      return 'change spec.config (every pod must be replaced), wait for Updated';
  }
}

/** Shards (among those both maps know) whose master changed; `allowed` may change. */
export function falseFailovers(
  before: ReadonlyMap<number, string>,
  after: ReadonlyMap<number, string>,
  allowed: ReadonlySet<number> | 'any',
): string[] {
  if (allowed === 'any') return [];
  const out: string[] = [];
  for (const [shard, was] of before) {
    const now = after.get(shard);
    if (now !== undefined && now !== was && !allowed.has(shard))
      out.push(`shard ${shard}: master was ${was}, is now ${now}`);
  }
  return out;
}

/** What must hold of each node's CLUSTER NODES answer (by pod name) for every slot to have exactly one master. */
export function slotProblems(views: ReadonlyMap<string, string>): string[] {
  const problems: string[] = [];
  const claimedBy = new Array<string[]>(16384);
  let reference: { pod: string; owners: string[] } | undefined;
  for (const [pod, text] of views) {
    const nodes = parseClusterNodes(text);
    const self = nodes.find((n) => n.myself);
    if (!self) {
      problems.push(`${pod}: no myself line in CLUSTER NODES`);
      continue;
    }
    for (const [slot, peer] of self.migrating) problems.push(`${pod}: slot ${slot} migrating to ${peer.slice(0, 8)}`);
    for (const [slot, peer] of self.importing) problems.push(`${pod}: slot ${slot} importing from ${peer.slice(0, 8)}`);
    if (self.role === 'master')
      for (const [first, last] of self.slots)
        for (let s = first; s <= last; s++) (claimedBy[s] ??= []).push(`${pod}(${self.id.slice(0, 8)})`);
    const owners = new Array<string>(16384).fill('');
    for (const n of nodes) {
      if (n.role !== 'master') continue;
      for (const [first, last] of n.slots)
        for (let s = first; s <= last; s++) {
          if (owners[s] !== '' && owners[s] !== n.id)
            problems.push(`${pod} sees slot ${s} on two masters: ${owners[s]!.slice(0, 8)}, ${n.id.slice(0, 8)}`);
          owners[s] = n.id;
          if (n.fail) problems.push(`${pod} sees slot ${s} on ${n.id.slice(0, 8)}, which it flags failed`);
        }
    }
    if (!reference) reference = { pod, owners };
    else {
      const differ = owners.findIndex((o, s) => o !== reference!.owners[s]);
      if (differ >= 0)
        problems.push(
          `${pod} and ${reference.pod} disagree on slot ${differ}: ${owners[differ]!.slice(0, 8) || 'nobody'} against ${reference.owners[differ]!.slice(0, 8) || 'nobody'}`,
        );
    }
  }
  for (let s = 0; s < 16384; s++) {
    const c = claimedBy[s] ?? [];
    if (c.length !== 1) problems.push(`slot ${s} served by ${c.length === 0 ? 'no master' : c.join(' and ')}`);
  }
  return compress(problems);
}

/** A broken cluster names thousands of slots: the first lines of each kind and a count are enough. */
function compress(problems: string[]): string[] {
  if (problems.length <= 20) return problems;
  return [...problems.slice(0, 20), `... and ${problems.length - 20} more`];
}
