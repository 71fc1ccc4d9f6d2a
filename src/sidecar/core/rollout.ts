// The Kubernetes side of a rolling update and of a switchover request, for either kind: the kind
// decides (redis/decide/rollout.ts, rediscluster/decide/rollout.ts) and this carries out and
// tells. RolloutStepper deletes the pod a decision names and says so (RolloutStep), warns once
// when a rollout stays blocked on one pod (RolloutStalled) and says when it is done
// (RolloutCompleted). SwitchoverOutcomes records a handled request on the object.
// Invariants:
// - Only the leader writes (isLeader right before each write).
// - A pod this deleted counts as going until the informer shows it deleting or gone, so informer
//   lag never lets a second pod go down in the meantime (settling()).
// - A deletion carries the pod's uid as a precondition: a decision about one incarnation never
//   deletes the next.
// - A request's outcome is recorded once (`<request>: <Done|Refused>: <why>`, the same record for
//   both kinds) with an Event saying the same; handled() is what a new request is compared with.
import type { Logger } from 'pino';
import { readSwitchoverRecord, SWITCHOVER_STATUS_ANNOTATION, switchoverRecord } from '../../api/labels.ts';
import type { SwitchoverRequest } from './decide/switchover.ts';
import type { EventToSend } from './events.ts';

export interface RolloutStepperOptions {
  log: Logger;
  event: (e: EventToSend) => void;
  isLeader: () => boolean;
  /** A rollout blocked on the same pod this long gets a RolloutStalled Warning. */
  stallAfterMs: number;
  /** Absent (test harnesses): the rollout decides but deletes nothing. */
  deletePod?: ((name: string, uid: string) => Promise<void>) | undefined;
}

export class RolloutStepper {
  readonly #o: RolloutStepperOptions;
  #deleted: { uid: string; name: string } | null = null;
  #blocked: { pod: string; since: number; told: boolean } | null = null;
  #since: number | null = null;

  constructor(options: RolloutStepperOptions) {
    this.#o = options;
  }

  /** A pod this deleted is still shown, not deleting: the informer has not caught up yet. */
  settling(pods: ReadonlyArray<{ uid: string; deleting: boolean }>): boolean {
    const d = this.#deleted;
    if (!d) return false;
    const still = pods.find((p) => p.uid === d.uid);
    if (still && !still.deleting) return true;
    this.#deleted = null;
    return false;
  }

  /** Every pod runs the current template. */
  idle(now: number): void {
    if (this.#since !== null) {
      this.#o.event({
        type: 'Normal',
        reason: 'RolloutCompleted',
        message: `every pod runs the current template (${Math.round((now - this.#since) / 1000)} s)`,
      });
      this.#o.log.info('rollout completed');
    }
    this.#since = null;
    this.#blocked = null;
  }

  /** The rollout waits on `pod` (null: on nothing in particular). */
  waiting(pod: string | null, reason: string, now: number): void {
    if (pod === null) return;
    if (this.#blocked?.pod !== pod) this.#blocked = { pod, since: now, told: false };
    if (!this.#blocked.told && now - this.#blocked.since >= this.#o.stallAfterMs) {
      this.#blocked.told = true;
      this.#o.log.warn({ pod, reason }, 'rollout stalled');
      this.#o.event({
        type: 'Warning',
        reason: 'RolloutStalled',
        message: `the rollout has waited ${Math.round((now - this.#blocked.since) / 1000)} s: ${reason}`,
      });
    }
  }

  /** The rollout takes a step (a deletion, or a switchover the caller carries out). */
  stepping(now: number): void {
    this.#blocked = null;
    this.#since ??= now;
  }

  /** Deletes `pod` (the decision's reason is told); a failure is logged and tried again on a later round. */
  async delete(pod: { name: string; uid: string }, reason: string): Promise<void> {
    if (!this.#o.deletePod || !this.#o.isLeader()) return;
    this.#deleted = { uid: pod.uid, name: pod.name };
    try {
      await this.#o.deletePod(pod.name, pod.uid);
      this.#o.log.info({ pod: pod.name, reason }, 'rollout: pod deleted');
      this.#o.event({
        type: 'Normal',
        reason: 'RolloutStep',
        message: `deleted ${pod.name} to replace it with the current template: ${reason}`,
      });
    } catch (err) {
      this.#deleted = null;
      this.#o.log.warn(
        { pod: pod.name, err: err instanceof Error ? err.message : String(err) },
        'rollout: deleting a pod failed',
      );
    }
  }

  /** Leadership lost: the next holder starts from what the informer shows. */
  reset(): void {
    this.#deleted = null;
    this.#blocked = null;
    this.#since = null;
  }
}

export interface SwitchoverOutcomesOptions {
  log: Logger;
  event: (e: EventToSend) => void;
  isLeader: () => boolean;
  /** Writes the record annotation on the Redis or RedisCluster (absent in test harnesses). */
  patch?: ((annotations: Record<string, string | null>) => Promise<void>) | undefined;
  /** The object, for the log line when the patch fails. */
  kind: string;
}

export class SwitchoverOutcomes {
  readonly #o: SwitchoverOutcomesOptions;
  /** Requests recorded by this instance, before the informer shows the annotation. */
  #handled: string | null = null;

  constructor(options: SwitchoverOutcomesOptions) {
    this.#o = options;
  }

  /** The request last handled, to compare `request` with: ours, or the one recorded on the object. */
  handled(request: SwitchoverRequest | null, annotations: Readonly<Record<string, string>>): string | null {
    if (request !== null && request.raw === this.#handled) return this.#handled;
    return readSwitchoverRecord(annotations[SWITCHOVER_STATUS_ANNOTATION])?.request ?? null;
  }

  async record(
    request: SwitchoverRequest,
    outcome: 'Done' | 'Refused',
    why: string,
    type: 'Normal' | 'Warning',
    reason: 'SwitchoverDone' | 'SwitchoverRefused',
  ): Promise<void> {
    if (!this.#o.isLeader()) return;
    this.#handled = request.raw;
    this.#o.log.info({ request: request.raw, outcome, why }, 'switchover request handled');
    this.#o.event({ type, reason, message: `switchover request "${request.raw}": ${outcome}: ${why}` });
    try {
      await this.#o.patch?.({ [SWITCHOVER_STATUS_ANNOTATION]: switchoverRecord(request.raw, outcome, why) });
    } catch (err) {
      this.#o.log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        `recording the switchover outcome on the ${this.#o.kind} failed`,
      );
    }
  }
}
