// Runs one round's steps for any kind, under the failure policy, telling each outcome to the
// round's reporter. What a step does (its Redis or Kubernetes calls) is the kind's `attempt`;
// this module owns only the order, the stops, the back-off and the reporting.
// Invariants:
// - Steps come in batches: the steps of one batch run together (independent of each other),
//   batches run in order. With `concurrency` > 1 that many batches run at once (each about its
//   own object, as slot moves are).
// - canAct() is checked before every step and again right after the `before` hook (which may
//   wait): an instance that lost its Lease stops before its next write. An attempt that stops
//   half-way for the same reason ends the round the same way.
// - Each step says whether it is critical (the kind's critical()): a critical step that failed,
//   or is still backing off, ends the round (the next round plans again from fresh probes); a
//   non-critical one is reported and the round goes on.
// - The back-off belongs to the step (failure-policy.ts): a step deferred is not attempted.
// - Every outcome (ok, failed, deferred) goes to the reporter as soon as it is known, so Events
//   come in the order things happened; nothing is told here.
import type { FailurePolicy, FailureVerdict, Recovery, StepFailure } from './failure-policy.ts';

/** What an attempt at a step returned: the kind's own fields `X` ride along (a switchover's result). */
export type Attempted<S, X extends object = object> = {
  step: S;
  result: 'ok' | 'failed';
  /** One line for the round's log: what was done, why it failed. */
  line: string;
  failure?: StepFailure;
} & X;

export type StepOutcome<S, X extends object = object> = Omit<Attempted<S, X>, 'result'> & {
  /** 'deferred': backing off after earlier failures, not attempted. */
  result: 'ok' | 'failed' | 'deferred';
  /** Set when the policy opened or continued an episode with this failure. */
  verdict?: FailureVerdict<S>;
  /** Set when this success ended an episode. */
  recovery?: Recovery<S>;
};

/** The kind's half of the contract. */
export interface StepKind<S, X extends object = object> {
  /** A critical step that is not done ends the round. */
  critical(step: S): boolean;
  /** The step's writes. 'stopped': it saw canAct() turn false half-way and left off. */
  attempt(step: S): Promise<Attempted<S, X> | 'stopped'>;
  /** How a deferred step is named in its line ("promote r-0"). */
  describe(step: S): string;
}

/** Where every outcome goes (core/reporter.ts implements it). */
export interface OutcomeReporter<S, X extends object = object> {
  step(o: StepOutcome<S, X>): void;
}

export interface ExecutorContext<S, X extends object = object> {
  /** Right before every write: still the leader and still running. */
  canAct(): boolean;
  now(): number;
  /** When absent, every step is attempted every round. */
  policy?: FailurePolicy<S> | undefined;
  reporter?: OutcomeReporter<S, X> | undefined;
  before?(step: S): void | Promise<void>;
  after?(step: S, ok: boolean): void | Promise<void>;
  /** A step the kind passes over this round, silently (after canAct, before the back-off). */
  skip?(step: S): boolean;
  /** No step starts after this many ms from the round's start (the rest waits a round). */
  budgetMs?: number;
  /** Batches in flight at once (1 unless the kind's batches are independent of each other). */
  concurrency?: number;
}

export interface AppliedSteps<S, X extends object = object> {
  /** In the order they became known. */
  outcomes: StepOutcome<S, X>[];
  /** Why the round stopped before its last step, if it did. */
  stopped: 'not-leader' | 'critical' | 'budget' | null;
}

type Ran<S, X extends object> = StepOutcome<S, X> | 'not-leader' | 'skipped';

async function run<S, X extends object>(step: S, kind: StepKind<S, X>, ctx: ExecutorContext<S, X>): Promise<Ran<S, X>> {
  if (!ctx.canAct()) return 'not-leader';
  if (ctx.skip?.(step)) return 'skipped';
  const waiting = ctx.policy?.deferred(step, ctx.now());
  if (waiting) {
    const next = Math.round(waiting.retryAt - ctx.now());
    const line = `${kind.describe(step)}: backing off after ${waiting.failures} failure(s), next try in ${next} ms`;
    const o = { step, result: 'deferred', line } as StepOutcome<S, X>;
    ctx.reporter?.step(o);
    return o;
  }
  await ctx.before?.(step);
  // The hook may have waited: check again right before the write.
  if (!ctx.canAct()) return 'not-leader';
  const started = ctx.now();
  const attempted = await kind.attempt(step);
  if (attempted === 'stopped') return 'not-leader';
  const o = { ...attempted, line: `${attempted.line} [${Math.round(ctx.now() - started)} ms]` } as StepOutcome<S, X>;
  if (o.result === 'ok') {
    const recovery = ctx.policy?.succeeded(step, ctx.now());
    if (recovery) o.recovery = recovery;
  } else if (o.failure && ctx.policy) {
    o.verdict = ctx.policy.failed(step, o.failure, ctx.now());
  }
  ctx.reporter?.step(o);
  await ctx.after?.(step, o.result === 'ok');
  return o;
}

/** Applies the batches in order (or `concurrency` at a time); returns what each step did. */
export async function applySteps<S, X extends object>(
  batches: readonly (readonly S[])[],
  kind: StepKind<S, X>,
  ctx: ExecutorContext<S, X>,
): Promise<AppliedSteps<S, X>> {
  const applied: AppliedSteps<S, X> = { outcomes: [], stopped: null };
  const started = ctx.now();
  const budgetMs = ctx.budgetMs ?? Infinity;
  let next = 0;
  const lane = async () => {
    while (applied.stopped === null) {
      const batch = batches[next++];
      if (!batch) return;
      if (ctx.now() - started > budgetMs) {
        applied.stopped = 'budget';
        return;
      }
      const results = await Promise.all(batch.map((s) => run(s, kind, ctx)));
      for (const r of results) if (r !== 'not-leader' && r !== 'skipped') applied.outcomes.push(r);
      if (results.includes('not-leader')) {
        applied.stopped = 'not-leader';
        return;
      }
      const critical = results.some((r) => typeof r === 'object' && r.result !== 'ok' && kind.critical(r.step));
      if (critical && applied.stopped === null) applied.stopped = 'critical';
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, ctx.concurrency ?? 1) }, lane));
  return applied;
}

/** Each step alone, in order: for kinds whose steps never run together. */
export const oneByOne = <S>(steps: readonly S[]): S[][] => steps.map((s) => [s]);
