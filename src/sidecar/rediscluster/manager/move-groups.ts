// Slot moves in groups: which moves of a round go together (same source, same target, at most
// GROUP_SLOTS of them), and the group runs that answer each move's attempt on its own, so the
// executor (core/executor.ts) keeps its per-step back-off, reporting and stops.
// Invariants:
// - A group is one executor batch; its moves' attempts start within one turn of the event loop,
//   and those that do are moved by one moveSlots() run. A move whose attempt comes later (a
//   before-step hook that waited) runs in a group of its own: grouping changes how fast, never
//   what is done.
// - Steps other than moves keep their place and run alone; in a run of moves the groups of
//   different sources take turns (the concurrent groups keep several sources busy), a source's
//   groups in the order of their first move.
// - A source has at most SOURCE_PIPELINES pipelines of MIGRATEs at once (SourceTurns, in the
//   order asked), whichever groups send them: its clients wait for two at most, not for every
//   group's whole batch.
import type { Logger } from 'pino';
import type { ClusterStep } from '../decide/types.ts';
import type { ClusterAdapter } from '../../adapters/redis/rediscluster.ts';
import { moveSlots, type MoveHooks, type MoveOutcome, type MoveSpec } from './mover.ts';

/** Slots moved by one group: its commands go to each node once for all of them. */
export const GROUP_SLOTS = 64;

type Move = Extract<ClusterStep, { kind: 'move' }>;

/** The executor's batches: each run of moves grouped by (from, to, cold), everything else alone. */
export function stepBatches(steps: readonly ClusterStep[], groupSlots = GROUP_SLOTS): ClusterStep[][] {
  const out: ClusterStep[][] = [];
  let run: Move[] = [];
  const flush = () => {
    const pairs = new Map<string, Move[][]>();
    for (const m of run) {
      const key = `${m.from}\u0000${m.to}\u0000${m.cold}`;
      const chunks = pairs.get(key) ?? [];
      const last = chunks.at(-1);
      if (last && last.length < groupSlots) last.push(m);
      else chunks.push([m]);
      pairs.set(key, chunks);
    }
    // Sources take turns (their MIGRATEs run side by side); a source's targets follow each other,
    // since a target that closes slots after another one did bumps its epoch: a nodes.conf fsync.
    const bySource = new Map<string, Move[][]>();
    for (const chunks of pairs.values()) {
      const from = chunks[0]![0]!.from;
      bySource.set(from, [...(bySource.get(from) ?? []), ...chunks]);
    }
    const lists = [...bySource.values()];
    for (let i = 0; lists.some((l) => i < l.length); i++) for (const l of lists) if (i < l.length) out.push(l[i]!);
    run = [];
  };
  for (const s of steps) {
    if (s.kind === 'move') run.push(s);
    else {
      flush();
      out.push([s]);
    }
  }
  flush();
  return out;
}

/**
 * Pipelines of MIGRATEs sent to one source at once: the one it runs and the next, already there
 * when it is done, so it never waits a round trip for work; any client that asked meanwhile is
 * served before or right after that next one (Redis takes each ready connection in turn).
 */
export const SOURCE_PIPELINES = 2;

/** Each source's pipelines of MIGRATEs at most `inFlight` at a time, in the order they were asked for. */
export class SourceTurns {
  readonly #inFlight: number;
  readonly #running = new Map<string, number>();
  readonly #waiting = new Map<string, Array<() => void>>();

  constructor(inFlight = SOURCE_PIPELINES) {
    this.#inFlight = inFlight;
  }

  readonly run = async <T>(source: string, send: () => Promise<T>): Promise<T> => {
    if ((this.#running.get(source) ?? 0) >= this.#inFlight) {
      const queue = this.#waiting.get(source) ?? [];
      this.#waiting.set(source, queue);
      // The one that ends hands its place over: the count stays as it is.
      await new Promise<void>((resolve) => queue.push(resolve));
    } else this.#running.set(source, (this.#running.get(source) ?? 0) + 1);
    try {
      return await send();
    } finally {
      const next = this.#waiting.get(source)?.shift();
      if (next) next();
      else if (this.#running.get(source) === 1) this.#running.delete(source);
      else this.#running.set(source, this.#running.get(source)! - 1);
    }
  };
}

interface Pending {
  specs: MoveSpec[];
  answers: Array<(o: MoveOutcome) => void>;
}

/** One round's group runs: move() joins the group of its batch that is about to start. */
export class MoveGroups {
  readonly #redis: ClusterAdapter;
  readonly #hooks: MoveHooks;
  readonly #log: Logger | undefined;
  readonly #batchOf = new Map<ClusterStep, number>();
  readonly #pending = new Map<number, Pending>();
  readonly #turns = new SourceTurns();

  constructor(redis: ClusterAdapter, batches: readonly ClusterStep[][], hooks: MoveHooks, log?: Logger) {
    this.#redis = redis;
    this.#hooks = hooks;
    this.#log = log;
    batches.forEach((b, i) => {
      for (const s of b) this.#batchOf.set(s, i);
    });
  }

  move(step: ClusterStep, spec: MoveSpec): Promise<MoveOutcome> {
    const batch = this.#batchOf.get(step) ?? -1;
    let p = batch >= 0 ? this.#pending.get(batch) : undefined;
    if (!p) {
      const group: Pending = { specs: [], answers: [] };
      p = group;
      if (batch >= 0) this.#pending.set(batch, group);
      // The other attempts of the batch arrive within this turn of the event loop.
      setImmediate(() => {
        if (this.#pending.get(batch) === group) this.#pending.delete(batch);
        void this.#run(group);
      });
    }
    const joined = p;
    return new Promise<MoveOutcome>((resolve) => {
      joined.specs.push(spec);
      joined.answers.push(resolve);
    });
  }

  async #run(group: Pending): Promise<void> {
    let outcomes: Map<number, MoveOutcome>;
    // Each group's time by phase: where a slow reshard spends it, on the node that did it.
    const ms: Record<string, number> = {};
    // And each phase's longest stretch: a MIGRATE batch's is how long its source served no one.
    const longest: Record<string, number> = {};
    const spent = (phase: string, t: number) => {
      ms[phase] = Math.round((ms[phase] ?? 0) + t);
      longest[phase] = Math.max(longest[phase] ?? 0, Math.round(t));
    };
    try {
      outcomes = await moveSlots(this.#redis, group.specs, { ...this.#hooks, spent, turn: this.#turns.run });
      const first = group.specs[0]!;
      const keys = [...outcomes.values()].reduce((n, o) => n + o.keys, 0);
      // A line a group (64 per 4096 slots moved): a reshard's progress and pace in the log.
      this.#log?.info(
        { from: first.from.ip, to: first.to.ip, slots: group.specs.length, keys, ms, longest },
        'slot group moved',
      );
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      outcomes = new Map(
        group.specs.map((s) => [s.slot, { ok: false, keys: 0, phase: 'group', error, kind: 'other' }]),
      );
    }
    group.specs.forEach((s, i) => {
      group.answers[i]!(
        outcomes.get(s.slot) ?? { ok: false, keys: 0, phase: 'group', error: 'not moved', kind: 'other' },
      );
    });
  }
}
