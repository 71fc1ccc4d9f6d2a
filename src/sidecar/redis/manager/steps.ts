// What the Redis kind's steps (decide/plan.ts) do against Redis and pod labels, run by the shared
// executor (core/executor.ts) under the shared failure policy. Telling (log lines, Events,
// metrics) is the reporter's (reporter.ts), so the manager and the tests apply steps the same way.
// Invariants:
// - Steps run in the order planRound() returns them, except consecutive re-pointings of replicas
//   (independent of each other), which run in parallel.
// - A step is critical when decide/ says so (step.critical): promote, switchover, and the labels
//   that publish or withdraw the master. One that fails or backs off ends the round.
// - A step is keyed by what it does and to whom (redisStepKey): a re-pointing to another master
//   is another step, never waiting out the back-off of the one before.
import type { RoundPlan, Step } from '../decide/index.ts';
import type { ActionResult, Endpoint, SwitchoverResult } from '../../adapters/redis/index.ts';
import {
  applySteps,
  type AppliedSteps,
  type Attempted,
  type OutcomeReporter,
  type StepKind,
  type StepOutcome,
} from '../../core/executor.ts';
import {
  classifyKubeFailure,
  classifyRedisFailure,
  type FailurePolicy,
  type StepFailure,
} from '../../core/failure-policy.ts';

export type LabelStep = Extract<Step, { kind: 'label' }>;

/** What a label patch did. `gone`: the pod no longer exists under that uid (404 or replaced). */
export type LabelResult =
  { ok: true; gone?: boolean } | { ok: false; gone?: boolean; code?: number | undefined; message: string };

/** The writes steps make (RedisAdapter and a pod label writer provide them). */
export interface StepIO {
  replicaOf(endpoint: Endpoint, master: Endpoint | null): Promise<ActionResult>;
  switchover(from: Endpoint, to: Endpoint): Promise<SwitchoverResult>;
  configSet(endpoint: Endpoint, settings: Record<string, string | number>): Promise<ActionResult>;
  label(step: LabelStep): Promise<LabelResult>;
}

/** What a Redis step's outcome carries besides the shared fields. */
export interface RedisStepResult {
  /** A switchover's result (ok or not), for its Event. */
  switchover?: SwitchoverResult;
  /** A label step on a pod that is gone. */
  gone?: boolean;
}

export type RedisStepOutcome = StepOutcome<Step, RedisStepResult>;

export interface RedisApplied extends AppliedSteps<Step, RedisStepResult> {
  /** Pods that received a Redis write, successful or not (probed again before the next plan). */
  wrote: Set<string>;
  /** Some Redis write succeeded: the next round should run at once (after the re-probe). */
  changed: boolean;
}

export interface RedisExecutorContext {
  canAct(): boolean;
  before?(step: Step): void | Promise<void>;
  after?(step: Step, ok: boolean): void | Promise<void>;
  /** Each step's outcome as soon as it is known (Events in the order things happened). */
  reporter?: OutcomeReporter<Step, RedisStepResult>;
  /** When absent, every step is attempted every round. */
  policy?: FailurePolicy<Step>;
  now(): number;
}

/** What a step does and to whom: its identity across rounds. */
export function redisStepKey(step: Step): string {
  switch (step.kind) {
    case 'promote':
      return `promote/${step.pod}`;
    case 'switchover':
      return `switchover/${step.from.pod}/${step.pod}`;
    case 'replicaof':
      return `${step.demote ? 'demote' : 'replicaof'}/${step.pod}/${step.master.host}:${step.master.port}`;
    case 'config':
      return `config/${step.pod}/${Object.entries(step.settings)
        .map(([k, v]) => `${k}=${v}`)
        .join(',')}`;
    case 'label':
      // The labels it sets, not its annotations: those carry human-readable context (how a role
      // was chosen) that may change between rounds while the step stays the same.
      return `label/${step.pod}/${JSON.stringify(step.patch.metadata.labels ?? {})}`;
  }
}

type Result = Attempted<Step, RedisStepResult>;

function fromRedis(r: ActionResult): StepFailure | undefined {
  return r.ok ? undefined : { class: classifyRedisFailure(r.error), detail: `${r.error.kind} ${r.error.message}` };
}

function done(step: Step, what: string, failure: StepFailure | undefined): Result {
  return {
    step,
    result: failure ? 'failed' : 'ok',
    line: `${what}${failure ? `: ${failure.detail}` : ''}`,
    ...(failure ? { failure } : {}),
  };
}

async function attempt(step: Step, io: StepIO, wrote: Set<string>): Promise<Result> {
  switch (step.kind) {
    case 'promote': {
      wrote.add(step.pod);
      return done(step, `promote ${step.pod}`, fromRedis(await io.replicaOf(step.endpoint, null)));
    }
    case 'switchover': {
      wrote.add(step.pod);
      wrote.add(step.from.pod);
      const r = await io.switchover(step.from.endpoint, step.endpoint);
      const failure = r.ok
        ? undefined
        : { class: classifyRedisFailure(r.error), detail: `${r.phase}: ${r.error.message}` };
      return {
        ...done(step, `switchover ${step.from.pod} -> ${step.pod} (${Math.round(r.ms)} ms)`, failure),
        switchover: r,
      };
    }
    case 'replicaof': {
      wrote.add(step.pod);
      const r = await io.replicaOf(step.endpoint, step.master);
      return done(step, `${step.demote ? 'demote' : 'replicaof'} ${step.pod} -> ${step.master.host}`, fromRedis(r));
    }
    case 'config': {
      wrote.add(step.pod);
      const r = await io.configSet(step.endpoint, step.settings);
      const settings = Object.entries(step.settings)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ');
      return done(step, `config ${step.pod} ${settings}`, fromRedis(r));
    }
    case 'label': {
      const r = await io.label(step);
      const what = `label ${step.pod} ${JSON.stringify(step.patch.metadata)}`;
      if (r.ok)
        return { step, result: 'ok', line: `${what}${r.gone ? ' (pod gone)' : ''}`, ...(r.gone ? { gone: true } : {}) };
      // A pod gone or replaced is replanned from the next pod list: retry as soon as that changes.
      const failure: StepFailure = { class: r.gone ? 'temporary' : classifyKubeFailure(r.code), detail: r.message };
      return { step, result: 'failed', line: `${what}: ${r.message}`, failure, ...(r.gone ? { gone: true } : {}) };
    }
  }
}

/** Consecutive re-pointings of replicas go together; every other step alone. */
function batches(steps: readonly Step[]): Step[][] {
  const out: Step[][] = [];
  const parallel = (s: Step | undefined) => s?.kind === 'replicaof' && !s.demote;
  for (const s of steps) {
    const last = out[out.length - 1];
    if (parallel(s) && last && parallel(last[0])) last.push(s);
    else out.push([s]);
  }
  return out;
}

/** Applies the plan's steps in order; returns what each did. */
export async function applyRedisSteps(p: RoundPlan, io: StepIO, ctx: RedisExecutorContext): Promise<RedisApplied> {
  const wrote = new Set<string>();
  const kind: StepKind<Step, RedisStepResult> = {
    critical: (s) => s.critical,
    attempt: (s) => attempt(s, io, wrote),
    describe: (s) => `${s.kind} ${s.pod}`,
  };
  const applied = await applySteps(batches(p.steps), kind, ctx);
  const changed = applied.outcomes.some((o) => o.result === 'ok' && o.step.kind !== 'label');
  return { ...applied, wrote, changed };
}
