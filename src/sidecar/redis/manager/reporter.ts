// Telling what one Redis's worker decided and did: decision log lines (once per change), the
// round's step lines, Events (bootstrap, failover, switchover, re-pointing, step failures) and the
// per-pod metrics. No Redis or label writes happen here.
// Invariants:
// - Every log line carries the Redis namespace and name (the worker's child logger).
// - Events are sent by the leader only (a standby's Event would describe what it did not do):
//   the worker's emit checks the Lease right before each one.
// - A failure episode is told once, by the shared step reporter (core/reporter.ts): its first
//   failure logs and sends StepFailed; later failures of the same step are counted in metrics
//   only; its end is one info line.
import type { Logger } from 'pino';
import { ROLE_LABEL, ROLE_MASTER } from '../../../api/labels.ts';
import { currentFacts, type DecideInput, type MasterDecision, type RoundPlan, type Step } from '../decide/index.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import type { SidecarMetrics } from '../../metrics.ts';
import type { EventMemory, EventToSend } from './events.ts';
import type { OutcomeReporter } from '../../core/executor.ts';
import type { Recovery } from '../../core/failure-policy.ts';
import { StepReporter } from '../../core/reporter.ts';
import type { RedisApplied, RedisStepOutcome, RedisStepResult } from './steps.ts';

export interface RedisReporterOptions {
  ref: RedisRef;
  log: Logger;
  metrics: SidecarMetrics;
  memory: EventMemory;
  isLeader(): boolean;
  emit(e: EventToSend): void;
  now(): number;
}

export class RedisReporter {
  readonly #o: RedisReporterOptions;
  readonly #steps: StepReporter<Step, RedisStepResult, RoundPlan>;
  #decisionKey = '';

  constructor(options: RedisReporterOptions) {
    this.#o = options;
    const { ref, metrics } = options;
    this.#steps = new StepReporter({
      log: options.log,
      emit: (e) => this.event(e as EventToSend),
      fields: (step, key) => ({ step: step.kind, pod: step.pod, key }),
      failedFields: (o) => ({ detail: o.line, class: o.failure?.class, reason: o.step.reason }),
      messages: {
        failed: 'step failed',
        recovered: 'a failing step succeeded again',
        dropped: 'a failing step is no longer planned',
      },
      stepFailedAt: 1,
      stepFailedMessage: ({ step, failure }) =>
        `${step.kind} on ${step.pod} failed (${failure?.class}): ${failure?.detail}; retrying with back-off (wanted because: ${step.reason})`,
      count: (o) =>
        metrics.steps.inc({ namespace: ref.namespace, redis: ref.name, kind: o.step.kind, outcome: o.result }),
      succeeded: (o, p) => this.#succeeded(o, p),
    });
  }

  /** emit is the worker's, which sends only while this instance leads. */
  event(e: EventToSend): void {
    this.#o.emit(e);
  }

  /** The spec is invalid: told once per distinct problem list, by the leader (a standby's Event would be lost). */
  invalidSpec(): void {
    const memory = this.#o.memory;
    const problems = memory.specProblems;
    if (problems === null || memory.specProblemsTold === problems || !this.#o.isLeader()) return;
    memory.specProblemsTold = problems;
    this.event({
      type: 'Warning',
      reason: 'InvalidSpec',
      message: `the replication manager leaves this Redis alone until the spec is fixed: ${problems}`,
    });
  }

  /** One line per change of decision (not per round). */
  decision(d: MasterDecision): void {
    const key =
      d.kind === 'promote'
        ? `promote/${d.cause}/${d.master}/${d.previous}`
        : d.kind === 'switchover'
          ? `switchover/${d.from}/${d.master}`
          : `${d.kind}/${d.master}`;
    if (key === this.#decisionKey) return;
    this.#decisionKey = key;
    const fields = { decision: d.kind, master: d.master, reason: d.reason, leader: this.#o.isLeader() };
    if (d.kind === 'keep') this.#o.log.info(fields, 'decision');
    else this.#o.log.warn(fields, 'decision');
  }

  /** Episodes that ended because their step is no longer planned. */
  dropped(ended: Recovery<Step>[]): void {
    this.#steps.dropped(ended);
  }

  /** One step's Events and metrics, as soon as it is done. */
  step(o: RedisStepOutcome, p: RoundPlan): void {
    this.#steps.step(o, p);
  }

  /** Where the executor tells this round's outcomes. */
  forRound(p: RoundPlan): OutcomeReporter<Step, RedisStepResult> {
    return { step: (o) => this.step(o, p) };
  }

  /** The round's one log line of what its steps did. */
  applied(p: RoundPlan, applied: RedisApplied): void {
    const { log } = this.#o;
    const lines = applied.outcomes.map((o) =>
      o.result === 'ok' ? o.line : o.result === 'failed' ? `FAILED ${o.line}` : `DEFERRED ${o.line}`,
    );
    const last = applied.outcomes[applied.outcomes.length - 1];
    if (applied.stopped === 'critical' && last?.verdict?.kind === 'started') {
      log.warn(
        { step: last.step.kind, pod: last.step.pod },
        'a critical step failed: stopping this round, planning again from fresh probes',
      );
    }
    if (lines.length > 0)
      log.info({ decision: p.decision.kind, master: p.master?.pod ?? null, steps: lines }, 'applied');
  }

  #succeeded(o: RedisStepOutcome, p: RoundPlan): void {
    const step = o.step;
    if (step.kind === 'switchover' && o.switchover?.ok) {
      const r = o.switchover;
      this.event({
        type: 'Normal',
        reason: 'Switchover',
        message: `planned switchover from ${step.from.pod} to ${step.pod} in ${Math.round(r.ms)} ms, no write lost (offset ${r.offset})${
          r.demoted
            ? ''
            : `; ${step.from.pod} did not take REPLICAOF (going away?): it stays paused and is demoted if it comes back`
        }: ${step.reason}`,
      });
    } else if (step.kind === 'replicaof' && p.master) {
      const e = this.#o.memory.repoint(step.pod, p.master.pod, step.master.host, step.demote);
      if (e) this.event(e);
    } else if (step.kind === 'label' && step.patch.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER) {
      this.#masterLabelled(step.pod, p);
    }
  }

  /** The master label landed: the end of a bootstrap, a failover or a switchover. */
  #masterLabelled(pod: string, p: RoundPlan): void {
    const { ref, metrics, log, memory } = this.#o;
    const done = memory.completeFailover(pod, this.#o.now());
    if (done) {
      const labels = { namespace: ref.namespace, redis: ref.name };
      metrics.failovers.inc(labels);
      metrics.lastFailoverDuration.set(labels, done.durationMs / 1000);
      log.warn({ from: done.episode.previous, to: pod, durationMs: done.durationMs }, 'failover completed');
      this.event(done.event);
      return;
    }
    const d = p.decision;
    if (d.kind === 'promote' && d.previous === null) {
      log.info({ master: pod, reason: d.reason }, 'bootstrap: master chosen');
      this.event({ type: 'Normal', reason: 'Bootstrap', message: `${pod} is the master: ${d.reason}` });
    }
  }

  /** Per-pod gauges from the round's input: up, role, link, replication lag. */
  podMetrics(input: DecideInput, p: RoundPlan): void {
    const { ref, metrics: m } = this.#o;
    const masterIp = p.master?.endpoint.host ?? null;
    const masterPod = p.master ? input.pods.find((x) => x.name === p.master!.pod) : undefined;
    const masterFacts = masterPod ? currentFacts(masterPod, input.now, input.config) : null;
    const masterOffset = masterFacts?.replication.role === 'master' ? masterFacts.replication.masterReplOffset : null;
    for (const pod of input.pods) {
      const labels = { namespace: ref.namespace, redis: ref.name, pod: pod.name };
      const facts = currentFacts(pod, input.now, input.config);
      m.podUp.set(labels, facts ? 1 : 0);
      if (!facts) {
        m.podLinkUp.set(labels, 0);
        continue;
      }
      const r = facts.replication;
      m.podRole.set(labels, r.role === 'master' ? 1 : 0);
      const linked = r.role === 'replica' && r.masterHost === masterIp && r.masterLinkStatus === 'up';
      m.podLinkUp.set(labels, (r.role === 'master' && pod.name === p.master?.pod) || linked ? 1 : 0);
      if (linked && masterOffset !== null && r.slaveReplOffset !== null)
        m.replicationLag.set(labels, Math.max(0, masterOffset - r.slaveReplOffset));
      else m.replicationLag.remove(labels);
    }
  }
}
