// Applies one round's cluster steps to the nodes, in the plan's order: each step's Redis calls
// through the adapter, its outcome told (log, Event, metrics), a step in back-off skipped.
// Invariants:
// - Leadership is checked right before every step (canAct): a sidecar that lost its shard's
//   Lease stops between two steps, never sends one more.
// - A step's failure never stops the others (the next round sees what worked); a slot move that
//   fails or is stopped leaves its slot open, which the next round finishes (decide/open-slots.ts).
// - FORGET goes to every listed node in parallel: the 60 s ban must cover them all at once.
import type { Logger } from 'pino';
import type { Topology } from '../decide/topology.ts';
import type { ClusterStep } from '../decide/types.ts';
import type { ClusterAdapter, Result } from '../../adapters/redis/rediscluster.ts';
import { clusterStepKey, failureClass, type ClusterBackoff } from './backoff.ts';
import { moveSlot, type MoveSpec } from './mover.ts';
import type { EventToSend } from './types.ts';

export interface ExecutorContext {
  redis: ClusterAdapter;
  topology: Topology;
  backoff: ClusterBackoff;
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

export interface Applied {
  /** Steps that ran and worked. */
  done: ClusterStep[];
  failed: number;
  keysMoved: number;
}

function ipOf(t: Topology, pod: string): { ip: string; id: string } | null {
  for (const [id, p] of t.byId) if (p.name === pod && p.ip) return { ip: p.ip, id };
  return null;
}

/** What moveSlot needs about a move, from the round's topology. */
export function moveSpecOf(t: Topology, step: Extract<ClusterStep, { kind: 'move' }>): MoveSpec | null {
  const from = ipOf(t, step.from);
  const to = ipOf(t, step.to);
  if (!from || !to) return null;
  const toNode = t.nodes.get(to.id)!;
  const fromNode = t.nodes.get(from.id)!;
  const others = [...t.byId.entries()]
    .filter(([id, p]) => id !== from.id && id !== to.id && p.ip && t.nodes.get(id)?.role === 'master' && (t.nodes.get(id)?.slots.length ?? 0) > 0)
    .map(([, p]) => p.ip!);
  return {
    slot: step.slot,
    from,
    to,
    cold: step.cold,
    toImportingFrom: toNode.importing.get(step.slot) ?? null,
    fromMigratingTo: fromNode.migrating.get(step.slot) ?? null,
    toServes: toNode.slots.some(([a, b]) => step.slot >= a && step.slot <= b),
    others,
    targetReplicas: [...t.nodes.values()].filter((n) => n.role === 'replica' && n.masterId === to.id && n.info?.linkUp).length,
  };
}

async function run(
  ctx: ExecutorContext,
  step: ClusterStep,
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
      const results = await Promise.all(step.pods.map(async (pod) => ({ pod, res: target(pod) ? await r.forget(target(pod)!.ip, step.id) : null })));
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
      if (!spec) return { ok: false, detail: `slot ${step.slot}: ${step.from} or ${step.to} has no address`, kind: 'other', message: 'no address' };
      const out = await moveSlot(r, spec, { stopped: () => !ctx.canAct(), afterBatch: ctx.afterBatch });
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

/**
 * Runs the steps in order; `budgetMs` bounds how long (moves are many: the rest waits a round).
 * With `concurrency` > 1 (slot moves only: each is about its own slot) that many run at once, so
 * the round trips of one slot's protocol overlap another's.
 */
export async function applySteps(ctx: ExecutorContext, steps: readonly ClusterStep[], budgetMs = Infinity, concurrency = 1): Promise<Applied> {
  const applied: Applied = { done: [], failed: 0, keysMoved: 0 };
  const started = ctx.now();
  let moveFailed = false;
  let stopped = false;
  let next = 0;
  const lane = async () => {
    while (!stopped) {
      const step = steps[next++];
      if (!step) return;
      if (!ctx.canAct() || ctx.now() - started > budgetMs) {
        stopped = true;
        return;
      }
      // One failed move is enough for a round: the next ones would open more slots for the same fault.
      if (step.kind === 'move' && moveFailed) continue;
      const key = clusterStepKey(step);
      if (ctx.backoff.deferred(key, ctx.now())) continue;
      await ctx.beforeStep?.(step);
      if (!ctx.canAct()) {
        stopped = true;
        return;
      }
      const out = await run(ctx, step);
      if (out.ok) {
        const ended = ctx.backoff.succeeded(key);
        if (ended) ctx.log.info({ step: key, failures: ended.failures, afterMs: Math.round(ctx.now() - ended.firstAt) }, 'step works again');
        applied.done.push(step);
        if (step.kind === 'move') {
          applied.keysMoved += out.keys ?? 0;
          ctx.onMoved?.(step.slot, out.keys ?? 0);
        }
        if (step.kind === 'failover') ctx.onForcedFailover?.();
        if (step.kind !== 'move') ctx.log.info({ step: step.kind, pod: 'pod' in step ? step.pod : undefined, reason: step.reason }, 'cluster step applied');
        continue;
      }
      if (out.kind === 'stopped') {
        stopped = true;
        return;
      }
      applied.failed++;
      if (step.kind === 'move') moveFailed = true;
      const { episode, started: first } = ctx.backoff.failed(key, out.detail, failureClass(out), ctx.now());
      if (first) ctx.log.warn({ step: key, err: out.detail, class: episode.class }, 'cluster step failed');
      // A step that keeps failing is worth a human's look (a transient gossip delay is not); the
      // worker lets one such Event through per interval, however many steps fail.
      if (episode.failures === 3)
        ctx.event({ type: 'Warning', reason: 'StepFailed', message: `${step.reason}: failing (${out.detail}); retried with back-off` });
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, lane));
  return applied;
}
