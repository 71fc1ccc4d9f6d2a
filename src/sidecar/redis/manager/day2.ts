// Day-2 operations of one Redis, run by its worker on steady rounds only (the master kept and
// healthy, no replication step pending): ACL users on every node (users.ts), a renewed TLS
// certificate loaded by every node (tls-reload.ts), a switchover asked for on the Redis, a rolling
// update one pod at a time (decide/rollout.ts), volume expansion, and the pods' replication
// annotation for humans (replication-report.ts), each pod's engine and a move between engines
// (core/engines.ts). The decisions are pure (decide/);
// this holds what they need to remember between rounds; the rollout's pod deletions and the
// switchover records are core/rollout.ts's, shared with the RedisCluster.
// Invariants:
// - Only the leader writes (isLeader right before each write), and at most one day-2 action per
//   round: a pod deletion, or a switchover handed back to the worker to plan and apply.
// - A pod this deleted counts as going until the informer shows it deleting or gone, so informer
//   lag never lets a second pod go down in the meantime.
// - A switchover request is recorded on the Redis exactly once (Done or Refused, with why) and an
//   Event says the same; a request equal to the recorded one is never run again.
// - No rollout or switchover while spec.hibernate is true: the pods are meant to go away.
// - Volume expansion (at most every VOLUME_CHECK_INTERVAL_MS), the users pass and the TLS pass
//   (each one at a time) run in the background, never awaited: a slow API call or node must not hold up the next round
//   (which may be a failover).
import type { V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  COMPONENT_LABEL,
  COMPONENT_MASTER_SET,
  REVISION_LABEL,
  ROLE_LABEL,
  ROLE_MASTER,
  SWITCHOVER_ANNOTATION,
  childNames,
  readSwitchoverRecord,
} from '../../../api/labels.ts';
import { RolloutStepper, SwitchoverOutcomes } from '../../core/rollout.ts';
import { engineField } from '../../../api/node-engine.ts';
import type { EngineWatch } from '../../core/engines.ts';
import {
  currentFacts,
  decideRequest,
  decideRollout,
  parseRequest,
  type DecideInput,
  type MasterDecision,
  type SwitchoverRequest,
} from '../decide/index.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import type { RedisRef } from '../../adapters/kube/client.ts';
import type { EventToSend as CoreEventToSend } from '../../core/events.ts';
import type { EventToSend } from './events.ts';
import type { RedisApplied } from './steps.ts';
import type { PodView } from './pods.ts';
import type { ReplicationReporter } from './replication-report.ts';
import type { TlsReloader } from './tls-reload.ts';
import type { UsersApplier } from './users.ts';
import { VOLUME_CHECK_INTERVAL_MS, VOLUME_SETTLED_INTERVAL_MS, type VolumeExpander } from './volumes.ts';

export interface Day2Kube {
  deletePod(namespace: string, name: string, uid: string): Promise<void>;
  patchRedisAnnotations(redis: RedisRef, annotations: Record<string, string | null>): Promise<void>;
}

export interface Day2Options {
  ref: RedisRef;
  log: Logger;
  kube: Partial<Day2Kube>;
  statefulSets: () => V1StatefulSet[];
  isLeader: () => boolean;
  event: (e: EventToSend) => void;
  now: () => number;
  /** A rollout blocked on the same pod this long gets a RolloutStalled Warning. */
  stallAfterMs: number;
  /** A switchover handed to the worker that has not made the target master within this is refused. */
  switchoverTimeoutMs?: number;
  /** Grows the claims and replaces the StatefulSets (null when the client cannot). */
  volumes?: VolumeExpander | null;
  /** Applies spec.users to every node (null in harnesses that do not model it). */
  users?: UsersApplier | null;
  /** Has nodes load a renewed TLS certificate (null without it). */
  tls?: Pick<TlsReloader, 'reconcile'> | null;
  /** Keeps a background write in the worker's in-flight set (stop() waits for it a moment). */
  track?: (p: Promise<unknown>) => void;
  /** Keeps each pod's replication annotation fresh (null in harnesses that do not model it). */
  replication?: Pick<ReplicationReporter, 'report'> | null;
  /** Reports each pod's engine and tells a move between engines (null in harnesses that do not model it). */
  engines?: Pick<EngineWatch, 'observe'> | null;
}

/** A set's pod template without its component label (the one thing the hook makes differ between the two). */
export function templateKey(set: V1StatefulSet): string {
  const template = structuredClone(set.spec?.template ?? {});
  if (template.metadata?.labels) delete template.metadata.labels[COMPONENT_LABEL];
  return JSON.stringify(template);
}

/** The handled request recorded on the Redis: `<request>: <Outcome>: <why>`. */
export function handledRequest(record: string | undefined): string | null {
  return readSwitchoverRecord(record)?.request ?? null;
}

export class Day2 {
  readonly #o: Day2Options;
  #annotations: Record<string, string> = {};
  #spec: RedisSpec | null = null;
  #volumesAt = -Infinity;
  /** The last volume pass found nothing to do or wait for: check rarely until the size changes. */
  #volumesSettled = false;
  readonly #running = new Map<string, Promise<void>>();
  #inFlight: { request: SwitchoverRequest; target: string; since: number } | null = null;
  readonly #stepper: RolloutStepper;
  readonly #outcomes: SwitchoverOutcomes;

  constructor(options: Day2Options) {
    this.#o = options;
    const { log, isLeader, kube, ref } = options;
    // The core parts send only the Rollout*/Switchover* reasons, all of them a Redis's.
    const event = (e: CoreEventToSend) => options.event(e as EventToSend);
    this.#stepper = new RolloutStepper({
      log,
      event,
      isLeader,
      stallAfterMs: options.stallAfterMs,
      deletePod: kube.deletePod ? (name, uid) => kube.deletePod!(ref.namespace, name, uid) : undefined,
    });
    this.#outcomes = new SwitchoverOutcomes({
      log,
      event,
      isLeader,
      kind: 'Redis',
      patch: kube.patchRedisAnnotations ? (a) => kube.patchRedisAnnotations!(ref, a) : undefined,
    });
  }

  /** The Redis object changed (its spec valid). */
  update(annotations: Record<string, string> | undefined, spec: RedisSpec): void {
    this.#annotations = { ...(annotations ?? {}) };
    // What a volume pass depends on: a change means check now, not after the settled interval.
    const volumesOf = (x: RedisSpec | null) =>
      x
        ? `${x.persistence.size}|${x.persistence.storageClassName ?? ''}|${x.persistence.enableRdb || x.persistence.enableAof}`
        : '';
    if (volumesOf(this.#spec) !== volumesOf(spec)) {
      this.#volumesAt = -Infinity;
      this.#volumesSettled = false;
    }
    this.#spec = spec;
    this.#o.users?.update(annotations, spec);
  }

  /**
   * Does this pod run its StatefulSet's current template? null while that is not known: the set is
   * missing, its controller has not processed its spec, or the two sets' templates differ (the
   * hook changes both in one sync; until the informer shows both, the pods of the set seen first
   * would look stale alone, and its master pod could be moved before any replica).
   */
  updated(view: PodView): boolean | null {
    return this.revisions()(view);
  }

  /** updated() for one round: the StatefulSets are read and their templates compared once, not per pod. */
  revisions(): (view: PodView) => boolean | null {
    const names = childNames(this.#o.ref.name);
    const sets = this.#o.statefulSets().filter((s) => s.metadata?.namespace === this.#o.ref.namespace);
    const master = sets.find((s) => s.metadata?.name === names.masterSet);
    const replica = sets.find((s) => s.metadata?.name === names.replicaSet);
    if (!master || !replica || templateKey(master) !== templateKey(replica)) return () => null;
    const current = (set: V1StatefulSet) => {
      const revision = set.status?.updateRevision;
      return revision && set.status?.observedGeneration === set.metadata?.generation ? revision : null;
    };
    const byComponent = { master: current(master), replica: current(replica) };
    return (view) => {
      if (view.component === null) return null;
      const revision = view.component === COMPONENT_MASTER_SET ? byComponent.master : byComponent.replica;
      return revision === null ? null : view.labels[REVISION_LABEL] === revision;
    };
  }

  /**
   * A steady round: returns the pod to switch over to (the worker re-plans with it), or null.
   * May delete one pod or record a request's outcome on the way.
   */
  async steady(input: DecideInput, decision: MasterDecision, views: readonly PodView[]): Promise<string | null> {
    const now = this.#o.now();
    this.#expandVolumes(now);
    this.#background('applying users', this.#o.users, input);
    this.#background('loading a renewed TLS certificate', this.#o.tls, input);
    this.#engines(input, views);
    if (this.#spec === null || this.#spec.hibernate || decision.kind !== 'keep') return null;
    const reported = this.#o.replication?.report(input, decision.master, views);
    if (reported) this.#o.track?.(reported);
    if (this.#inFlight) {
      const f = this.#inFlight;
      if (decision.master === f.target) {
        this.#inFlight = null;
        await this.#record(f.request, 'Done', `${f.target} is master`, 'Normal', 'SwitchoverDone');
      } else if (now - f.since > (this.#o.switchoverTimeoutMs ?? 10_000)) {
        this.#inFlight = null;
        await this.#record(
          f.request,
          'Refused',
          `the switchover to ${f.target} did not complete; the master is still ${decision.master}`,
          'Warning',
          'SwitchoverRefused',
        );
      } else return null;
    }
    const request = parseRequest(this.#annotations[SWITCHOVER_ANNOTATION]);
    const handled = this.#outcomes.handled(request, this.#annotations);
    const asked = decideRequest(input, decision.master, request, handled);
    if (asked.kind === 'done' && request)
      await this.#record(request, 'Done', asked.message, 'Normal', 'SwitchoverDone');
    else if (asked.kind === 'refuse' && request)
      await this.#record(request, 'Refused', asked.message, 'Warning', 'SwitchoverRefused');
    else if (asked.kind === 'switchover' && request) {
      this.#inFlight = { request, target: asked.target, since: now };
      this.#o.log.info({ request: request.raw, target: asked.target, reason: asked.reason }, 'switchover requested');
      return asked.target;
    }
    return this.#rollout(input, decision.master, views, now);
  }

  /** After the worker applied a plan: a requested switchover that failed outright is refused now. */
  async applied(applied: RedisApplied): Promise<void> {
    const f = this.#inFlight;
    if (!f) return;
    const o = applied.outcomes.find((x) => x.step.kind === 'switchover' && x.step.pod === f.target);
    if (o && o.result === 'failed') {
      this.#inFlight = null;
      await this.#record(
        f.request,
        'Refused',
        `the switchover to ${f.target} failed: ${o.line}`,
        'Warning',
        'SwitchoverRefused',
      );
    }
  }

  async #rollout(input: DecideInput, master: string, views: readonly PodView[], now: number): Promise<string | null> {
    if (this.#stepper.settling(views)) return null;
    const d = decideRollout(input, master);
    if (d.kind === 'idle') {
      this.#stepper.idle(now);
      return null;
    }
    if (d.kind === 'wait') {
      this.#stepper.waiting(d.blockedOn, d.reason, now);
      return null;
    }
    this.#stepper.stepping(now);
    if (d.kind === 'switchover') {
      this.#o.log.info({ target: d.target, reason: d.reason }, 'rollout: switchover before the master pod is replaced');
      return d.target;
    }
    const view = views.find((v) => v.name === d.pod);
    if (view) await this.#stepper.delete(view, d.reason);
    return null;
  }

  /** Each answering node's engine, for the pod annotation and the move's Events. */
  #engines(input: DecideInput, views: readonly PodView[]): void {
    if (!this.#o.engines || this.#spec === null) return;
    const byName = new Map(input.pods.map((p) => [p.name, p]));
    const pods = views.flatMap((v) => {
      const pod = byName.get(v.name);
      if (!pod) return [];
      const facts = currentFacts(pod, input.now, input.config);
      return [
        {
          name: v.name,
          uid: v.uid,
          annotations: v.annotations,
          engine: facts?.engine ?? null,
          updated: pod.updated ?? null,
          master: v.labels[ROLE_LABEL] === ROLE_MASTER,
        },
      ];
    });
    this.#o.engines.observe(pods, engineField(this.#spec).engine, this.#spec.replicas + 1);
  }

  /**
   * In the background, one pass of each kind at a time: a node slow to take ACL SETUSER must not hold up the round (it
   * may be a failover's).
   */
  #background(
    what: string,
    pass: { reconcile(input: DecideInput): Promise<void> } | null | undefined,
    input: DecideInput,
  ): void {
    if (!pass || this.#running.has(what)) return;
    const p = pass
      .reconcile(input)
      .catch((err: unknown) =>
        this.#o.log.warn({ err: err instanceof Error ? err.message : String(err) }, `${what} failed`),
      )
      .finally(() => {
        this.#running.delete(what);
      });
    this.#running.set(what, p);
    this.#o.track?.(p);
  }

  #expandVolumes(now: number): void {
    const volumes = this.#o.volumes;
    const every = this.#volumesSettled ? VOLUME_SETTLED_INTERVAL_MS : VOLUME_CHECK_INTERVAL_MS;
    if (!volumes || !this.#spec || !this.#o.isLeader() || now - this.#volumesAt < every) return;
    this.#volumesAt = now;
    const p = volumes.reconcile(this.#spec).then((busy) => {
      this.#volumesSettled = !busy;
    });
    this.#o.track?.(p);
  }

  #record(
    request: SwitchoverRequest,
    outcome: 'Done' | 'Refused',
    why: string,
    type: 'Normal' | 'Warning',
    reason: 'SwitchoverDone' | 'SwitchoverRefused',
  ): Promise<void> {
    return this.#outcomes.record(request, outcome, why, type, reason);
  }
}
