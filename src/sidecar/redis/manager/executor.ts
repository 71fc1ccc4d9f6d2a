// Applies one plan's steps (decide/plan.ts) to Redis and to pod labels, under the failure policy.
// The executor does the writes and reports what each step did; telling (log lines, Events,
// metrics) is the caller's, so the manager and the tests' mini manager apply steps the same way.
// Invariants:
// - Steps run in the order plan() returns them, except consecutive re-pointings of replicas
//   (independent of each other), which run in parallel.
// - canAct() is checked before every step and again right after the beforeStep hook (which may
//   wait): a leader that lost its Lease stops before its next write.
// - A critical step that fails, or is still backing off, ends the round: the next round plans
//   again from fresh probes. A non-critical one is reported and the round goes on.
// - The back-off belongs to the step (policy.ts): a step deferred is not attempted at all.
import type { Plan, Step } from '../decide/index.ts';
import type { ActionResult, Endpoint, SwitchoverResult } from '../../adapters/redis/index.ts';
import { classifyKubeFailure, classifyRedisFailure, type FailureVerdict, type Recovery, type StepFailure, type StepFailures } from './failure-policy.ts';

export type LabelStep = Extract<Step, { kind: 'label' }>;

/** What a label patch did. `gone`: the pod no longer exists under that uid (404 or replaced). */
export type LabelResult = { ok: true; gone?: boolean } | { ok: false; gone?: boolean; code?: number | undefined; message: string };

/** The writes steps make (RedisAdapter and a pod label writer provide them). */
export interface StepIO {
  replicaOf(endpoint: Endpoint, master: Endpoint | null): Promise<ActionResult>;
  switchover(from: Endpoint, to: Endpoint): Promise<SwitchoverResult>;
  configSet(endpoint: Endpoint, settings: Record<string, string | number>): Promise<ActionResult>;
  label(step: LabelStep): Promise<LabelResult>;
}

export interface StepOutcome {
  step: Step;
  /** 'deferred': backing off after earlier failures, not attempted. */
  result: 'ok' | 'failed' | 'deferred';
  /** One line for the round's log: what was done, how long it took, why it failed. */
  line: string;
  /** A switchover's result (ok or not), for its Event. */
  switchover?: SwitchoverResult;
  /** A label step on a pod that is gone. */
  gone?: boolean;
  failure?: StepFailure;
  /** Set when the policy opened or continued an episode with this failure. */
  verdict?: FailureVerdict;
  /** Set when this success ended an episode. */
  recovery?: Recovery;
}

export interface Applied {
  /** Pods that received a Redis write, successful or not (probed again before the next plan). */
  wrote: Set<string>;
  /** Some Redis write succeeded: the next round should run at once (after the re-probe). */
  changed: boolean;
  outcomes: StepOutcome[];
  /** Why the round stopped before its last step, if it did. */
  stopped: 'not-leader' | 'critical' | null;
}

export interface ExecutorContext {
  /** Right before every write: still the leader and still running. */
  canAct(): boolean;
  before?(step: Step): void | Promise<void>;
  after?(step: Step, ok: boolean): void | Promise<void>;
  /** Each step's outcome as soon as it is known (Events in the order things happened). */
  outcome?(o: StepOutcome): void;
  /** When absent, every step is attempted every round (the tests' mini manager). */
  policy?: StepFailures;
  now(): number;
}

function fromRedis(r: ActionResult): StepFailure | undefined {
  return r.ok ? undefined : { class: classifyRedisFailure(r.error), detail: `${r.error.kind} ${r.error.message}` };
}

async function attempt(step: Step, io: StepIO, wrote: Set<string>): Promise<Omit<StepOutcome, 'verdict' | 'recovery'>> {
  switch (step.kind) {
    case 'promote': {
      wrote.add(step.pod);
      const r = await io.replicaOf(step.endpoint, null);
      const failure = fromRedis(r);
      return { step, result: r.ok ? 'ok' : 'failed', line: `promote ${step.pod}${failure ? `: ${failure.detail}` : ''}`, ...(failure ? { failure } : {}) };
    }
    case 'switchover': {
      wrote.add(step.pod);
      wrote.add(step.from.pod);
      const r = await io.switchover(step.from.endpoint, step.endpoint);
      const failure: StepFailure | undefined = r.ok ? undefined : { class: classifyRedisFailure(r.error), detail: `${r.phase}: ${r.error.message}` };
      return {
        step,
        result: r.ok ? 'ok' : 'failed',
        switchover: r,
        line: `switchover ${step.from.pod} -> ${step.pod} (${Math.round(r.ms)} ms)${failure ? `: ${failure.detail}` : ''}`,
        ...(failure ? { failure } : {}),
      };
    }
    case 'replicaof': {
      wrote.add(step.pod);
      const r = await io.replicaOf(step.endpoint, step.master);
      const failure = fromRedis(r);
      return {
        step,
        result: r.ok ? 'ok' : 'failed',
        line: `${step.demote ? 'demote' : 'replicaof'} ${step.pod} -> ${step.master.host}${failure ? `: ${failure.detail}` : ''}`,
        ...(failure ? { failure } : {}),
      };
    }
    case 'config': {
      wrote.add(step.pod);
      const r = await io.configSet(step.endpoint, step.settings);
      const failure = fromRedis(r);
      const settings = Object.entries(step.settings)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      return {
        step,
        result: r.ok ? 'ok' : 'failed',
        line: `config ${step.pod} ${settings}${failure ? `: ${failure.detail}` : ''}`,
        ...(failure ? { failure } : {}),
      };
    }
    case 'label': {
      const r = await io.label(step);
      const what = `label ${step.pod} ${JSON.stringify(step.patch.metadata)}`;
      if (r.ok) return { step, result: 'ok', line: `${what}${r.gone ? ' (pod gone)' : ''}`, ...(r.gone ? { gone: true } : {}) };
      // A pod gone or replaced is replanned from the next pod list: retry as soon as that changes.
      const failure: StepFailure = { class: r.gone ? 'temporary' : classifyKubeFailure(r.code), detail: r.message };
      return { step, result: 'failed', line: `${what}: ${r.message}`, failure, ...(r.gone ? { gone: true } : {}) };
    }
  }
}

async function run(step: Step, io: StepIO, ctx: ExecutorContext, applied: Applied): Promise<StepOutcome | 'not-leader'> {
  if (!ctx.canAct()) return 'not-leader';
  const waiting = ctx.policy?.deferred(step, ctx.now());
  if (waiting) {
    const o: StepOutcome = {
      step,
      result: 'deferred',
      line: `${step.kind} ${step.pod}: backing off after ${waiting.failures} failure(s), next try in ${Math.round(waiting.retryAt - ctx.now())} ms`,
    };
    ctx.outcome?.(o);
    return o;
  }
  await ctx.before?.(step);
  // The hook may have waited: check again right before the write.
  if (!ctx.canAct()) return 'not-leader';
  const started = ctx.now();
  const o: StepOutcome = await attempt(step, io, applied.wrote);
  o.line += ` [${Math.round(ctx.now() - started)} ms]`;
  if (o.result === 'ok') {
    if (step.kind !== 'label') applied.changed = true;
    const recovery = ctx.policy?.succeeded(step, ctx.now());
    if (recovery) o.recovery = recovery;
  } else if (o.failure && ctx.policy) {
    o.verdict = ctx.policy.failed(step, o.failure, ctx.now());
  }
  ctx.outcome?.(o);
  await ctx.after?.(step, o.result === 'ok');
  return o;
}

/** Applies the plan's steps in order; returns what each did. */
export async function applyPlan(p: Plan, io: StepIO, ctx: ExecutorContext): Promise<Applied> {
  const applied: Applied = { wrote: new Set(), changed: false, outcomes: [], stopped: null };
  const steps = p.steps;
  const parallel = (s: Step | undefined) => s?.kind === 'replicaof' && !s.demote;
  let i = 0;
  while (i < steps.length) {
    const batch: Step[] = [];
    if (parallel(steps[i])) while (parallel(steps[i])) batch.push(steps[i++]!);
    else batch.push(steps[i++]!);
    const results = await Promise.all(batch.map((s) => run(s, io, ctx, applied)));
    for (const r of results) if (r !== 'not-leader') applied.outcomes.push(r);
    if (results.includes('not-leader')) {
      applied.stopped = 'not-leader';
      return applied;
    }
    const last = results[results.length - 1] as StepOutcome;
    if (batch.length === 1 && last.result !== 'ok' && last.step.critical) {
      applied.stopped = 'critical';
      return applied;
    }
  }
  return applied;
}
