// What the RedisCluster kind's steps do against the nodes, run by the shared executor
// (core/executor.ts) under the shared failure policy, in the plan's order: each step's Redis calls
// through the adapter, its outcome told by the shared step reporter (log, Event, metrics).
// Invariants:
// - Leadership is checked right before every step (canAct): a sidecar that lost its shard's
//   Lease stops between two steps, never sends one more.
// - No RedisCluster step is critical (CRITICAL below): a step's failure never stops the others
//   (the next round sees what worked); a slot move that fails or is stopped leaves its slot open,
//   which the next round finishes (decide/open-slots.ts). One failed move is enough for a round:
//   the moves after it are passed over.
// - Moves go in groups (move-groups.ts): same two ends, their commands sent to each node together;
//   each move is still a step of its own (its back-off, its outcome, its Event).
// - FORGET goes to every listed node in parallel: the 60 s ban must cover them all at once.
// - A step's StepFailed Warning goes out at its third failure in a row; its first is logged.
import type { Logger } from 'pino';
import type { Topology } from '../decide/topology.ts';
import type { ClusterStep } from '../decide/types.ts';
import type { ClusterAdapter, Result } from '../../adapters/redis/rediscluster.ts';
import { applySteps, type AppliedSteps, type Attempted, type StepKind } from '../../core/executor.ts';
import { classifyRedisFailure, type FailurePolicy } from '../../core/failure-policy.ts';
import { StepReporter } from '../../core/reporter.ts';
import { MoveGroups, stepBatches } from './move-groups.ts';
import type { MoveSpec } from './mover.ts';
import type { EventToSend } from './types.ts';

export interface RedisClusterExecutorContext {
  redis: ClusterAdapter;
  topology: Topology;
  policy: FailurePolicy<ClusterStep>;
  log: Logger;
  canAct(): boolean;
  event(e: EventToSend): void;
  now(): number;
  beforeStep?(step: ClusterStep): void | Promise<void>;
  afterBatch?(slot: number, keys: number): void | Promise<void>;
  /** Counted per moved slot. */
  onMoved?(slot: number, keys: number): void;
  onForcedFailover?(): void;
}

/** What a RedisCluster step's outcome carries besides the shared fields: a move's keys. */
export interface RedisClusterStepResult {
  keys?: number;
}

export interface RedisClusterApplied extends AppliedSteps<ClusterStep, RedisClusterStepResult> {
  /** Steps that ran and worked. */
  done: ClusterStep[];
  failed: number;
  keysMoved: number;
}

/**
 * Whether a failed (or backing-off) step ends the round, per kind: none does. Each is independent
 * of the others, and the next round plans again from what the nodes say.
 */
const CRITICAL: Record<ClusterStep['kind'], boolean> = {
  addslots: false,
  meet: false,
  replicate: false,
  failover: false,
  forget: false,
  reset: false,
  move: false,
  stable: false,
};

/** What a step does and to whom: its identity across rounds. */
export function redisClusterStepKey(step: ClusterStep): string {
  switch (step.kind) {
    case 'addslots':
      return `addslots/${step.pod}/${step.ranges.map((r) => r.join('-')).join(',')}`;
    case 'meet':
      return `meet/${step.pod}/${step.ip}`;
    case 'replicate':
      return `replicate/${step.pod}/${step.masterId}`;
    case 'failover':
      return `failover/${step.pod}/${step.failedId}`;
    case 'forget':
      return `forget/${step.id}`;
    case 'reset':
      return `reset/${step.pod}`;
    case 'move':
      return `move/${step.slot}/${step.from}/${step.to}`;
    case 'stable':
      return `stable/${step.slot}/${step.pods.join(',')}`;
  }
}

function ipOf(t: Topology, pod: string): { ip: string; id: string } | null {
  for (const [id, p] of t.byId) if (p.name === pod && p.ip) return { ip: p.ip, id };
  return null;
}

/** What moveSlots needs about a move, from the round's topology. */
export function moveSpecOf(t: Topology, step: Extract<ClusterStep, { kind: 'move' }>): MoveSpec | null {
  const from = ipOf(t, step.from);
  const to = ipOf(t, step.to);
  if (!from || !to) return null;
  const toNode = t.nodes.get(to.id)!;
  const fromNode = t.nodes.get(from.id)!;
  const others = [...t.byId.entries()]
    .filter(
      ([id, p]) =>
        id !== from.id &&
        id !== to.id &&
        p.ip &&
        t.nodes.get(id)?.role === 'master' &&
        (t.nodes.get(id)?.slots.length ?? 0) > 0,
    )
    .map(([, p]) => p.ip!);
  const replicas = [...t.nodes.values()].filter((n) => n.role === 'replica' && n.masterId === to.id && n.info?.linkUp);
  const info = fromNode.info;
  return {
    slot: step.slot,
    from,
    to,
    cold: step.cold,
    toImportingFrom: toNode.importing.get(step.slot) ?? null,
    fromMigratingTo: fromNode.migrating.get(step.slot) ?? null,
    toServes: toNode.slots.some(([a, b]) => step.slot >= a && step.slot <= b),
    others,
    targetReplicas: replicas.flatMap((n) => (n.pod?.ip ? [n.pod.ip] : [])),
    keyBytes: info && info.keys > 0 ? info.usedMemory / info.keys : 0,
  };
}

async function run(
  ctx: RedisClusterExecutorContext,
  step: ClusterStep,
  moves: MoveGroups,
): Promise<{ ok: true; keys?: number } | { ok: false; detail: string; kind: string; message: string }> {
  const t = ctx.topology;
  const r = ctx.redis;
  const bad = (res: Extract<Result<unknown>, { ok: false }>, what: string) => ({
    ok: false as const,
    detail: `${what}: ${res.error.message}`,
    kind: res.error.kind,
    message: res.error.message,
  });
  const target = (pod: string) => ipOf(t, pod);
  switch (step.kind) {
    case 'addslots': {
      const node = target(step.pod);
      if (!node) return { ok: false, detail: `${step.pod} has no address`, kind: 'other', message: 'no address' };
      const res = await r.addSlotsRange(node.ip, step.ranges);
      if (!res.ok && !/already busy/i.test(res.error.message)) return bad(res, 'ADDSLOTSRANGE');
      if (step.configEpoch !== null) await r.setConfigEpoch(node.ip, step.configEpoch);
      return { ok: true };
    }
    case 'meet': {
      const node = target(step.pod);
      if (!node) return { ok: false, detail: `${step.pod} has no address`, kind: 'other', message: 'no address' };
      const res = await r.meet(node.ip, step.ip);
      return res.ok ? { ok: true } : bad(res, 'CLUSTER MEET');
    }
    case 'replicate':
    case 'failover':
    case 'reset': {
      const node = target(step.pod);
      if (!node) return { ok: false, detail: `${step.pod} has no address`, kind: 'other', message: 'no address' };
      const res =
        step.kind === 'replicate'
          ? await r.replicate(node.ip, step.masterId)
          : step.kind === 'failover'
            ? await r.failover(node.ip, 'FORCE')
            : await r.reset(node.ip, true);
      return res.ok ? { ok: true } : bad(res, `CLUSTER ${step.kind.toUpperCase()}`);
    }
    case 'forget': {
      const results = await Promise.all(
        step.pods.map(async (pod) => ({ pod, res: target(pod) ? await r.forget(target(pod)!.ip, step.id) : null })),
      );
      // "Unknown node": that one forgot it already (or never knew it).
      const failed = results.filter((x) => x.res && !x.res.ok && !/unknown node/i.test(x.res.error.message));
      if (failed.length === 0) return { ok: true };
      const first = failed[0]!.res as Extract<Result, { ok: false }>;
      return {
        ok: false,
        detail: `CLUSTER FORGET on ${failed.map((f) => f.pod).join(', ')}: ${first.error.message}`,
        kind: first.error.kind,
        message: first.error.message,
      };
    }
    case 'stable': {
      for (const pod of step.pods) {
        const node = target(pod);
        if (!node) continue;
        const res = await r.setSlot(node.ip, step.slot, 'STABLE');
        if (!res.ok) return bad(res, `SETSLOT ${step.slot} STABLE on ${pod}`);
      }
      return { ok: true };
    }
    case 'move': {
      const spec = moveSpecOf(t, step);
      if (!spec)
        return {
          ok: false,
          detail: `slot ${step.slot}: ${step.from} or ${step.to} has no address`,
          kind: 'other',
          message: 'no address',
        };
      const out = await moves.move(step, spec);
      if (out.ok) return { ok: true, keys: out.keys };
      return {
        ok: false,
        detail: `slot ${step.slot} ${step.from} -> ${step.to} (${out.phase}, ${out.keys} keys moved): ${out.error}`,
        kind: out.kind,
        message: out.error,
      };
    }
  }
}

type Attempt = Attempted<ClusterStep, RedisClusterStepResult> | 'stopped';

async function attempt(ctx: RedisClusterExecutorContext, step: ClusterStep, moves: MoveGroups): Promise<Attempt> {
  const out = await run(ctx, step, moves);
  if (out.ok) return { step, result: 'ok', line: step.kind, ...(out.keys === undefined ? {} : { keys: out.keys }) };
  if (out.kind === 'stopped') return 'stopped';
  return {
    step,
    result: 'failed',
    line: `${step.kind}: ${out.detail}`,
    failure: { class: classifyRedisFailure(out), detail: out.detail },
  };
}

/** The shared step reporter, told as this kind tells. */
function reporter(ctx: RedisClusterExecutorContext): StepReporter<ClusterStep, RedisClusterStepResult> {
  return new StepReporter<ClusterStep, RedisClusterStepResult>({
    log: ctx.log,
    emit: (e) => ctx.event(e),
    fields: (step, key) => ({ step: key ?? redisClusterStepKey(step) }),
    failedFields: (o) => ({ err: o.failure?.detail, class: o.failure?.class }),
    // An episode whose step is no longer planned ends silently: the round's holds say why.
    messages: { failed: 'cluster step failed', recovered: 'step works again' },
    // A step that keeps failing is worth a human's look (a transient gossip delay is not); the
    // worker lets one such Event through per interval, however many steps fail.
    stepFailedAt: 3,
    stepFailedMessage: (o) => `${o.step.reason}: failing (${o.failure?.detail}); retried with back-off`,
    succeeded: ({ step, keys }) => {
      if (step.kind === 'move') ctx.onMoved?.(step.slot, keys ?? 0);
      if (step.kind === 'failover') ctx.onForcedFailover?.();
      if (step.kind !== 'move')
        ctx.log.info(
          { step: step.kind, pod: 'pod' in step ? step.pod : undefined, reason: step.reason },
          'cluster step applied',
        );
    },
  });
}

/**
 * Runs the steps in order; `budgetMs` bounds how long (moves are many: the rest waits a round).
 * Moves go in groups (stepBatches); with `concurrency` > 1 (slot moves only: each group is about
 * its own slots) that many groups run at once, keeping several sources and targets busy.
 */
export async function applyRedisClusterSteps(
  ctx: RedisClusterExecutorContext,
  steps: readonly ClusterStep[],
  budgetMs = Infinity,
  concurrency = 1,
): Promise<RedisClusterApplied> {
  let moveFailed = false;
  const batches = stepBatches(steps);
  const moves = new MoveGroups(
    ctx.redis,
    batches,
    { stopped: () => !ctx.canAct(), afterBatch: ctx.afterBatch },
    ctx.log,
  );
  const kind: StepKind<ClusterStep, RedisClusterStepResult> = {
    critical: (s) => CRITICAL[s.kind],
    attempt: async (s) => {
      const a = await attempt(ctx, s, moves);
      if (a !== 'stopped' && a.result === 'failed' && s.kind === 'move') moveFailed = true;
      return a;
    },
    describe: (s) => redisClusterStepKey(s),
  };
  const told = reporter(ctx);
  const applied = await applySteps(batches, kind, {
    canAct: () => ctx.canAct(),
    now: () => ctx.now(),
    policy: ctx.policy,
    reporter: { step: (o) => told.step(o) },
    ...(ctx.beforeStep ? { before: (s: ClusterStep) => ctx.beforeStep!(s) } : {}),
    // One failed move is enough for a round: the next ones would open more slots for the same fault.
    skip: (s) => s.kind === 'move' && moveFailed,
    budgetMs,
    concurrency,
  });
  const worked = applied.outcomes.filter((o) => o.result === 'ok');
  return {
    ...applied,
    done: worked.map((o) => o.step),
    failed: applied.outcomes.filter((o) => o.result === 'failed').length,
    keysMoved: worked.reduce((n, o) => n + (o.step.kind === 'move' ? (o.keys ?? 0) : 0), 0),
  };
}
