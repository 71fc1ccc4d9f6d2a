// The worker's view of a hibernation (decide/hibernation.ts decides): what it last read on the
// RedisCluster (the reshard record, the hook's Hibernated condition), the mode of a round, and the
// plan a waking round applies. Holds no Redis or API client.
import { readReshardRecord, RESHARD_ANNOTATION } from '../../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../../api/rediscluster-schema.ts';
import type { RedisClusterObject } from '../../adapters/kube/client.ts';
import { hibernationMode, wakingRound, type HibernationMode } from '../decide/hibernation.ts';
import type { RoundPlan } from '../decide/plan.ts';
import type { PodObservation } from '../decide/types.ts';

export class HibernationView {
  #reshard: string | undefined;
  #reason: string | undefined;
  #mode: HibernationMode = { kind: 'awake' };

  /** This round's mode is waking (set by asleep()). */
  get waking(): boolean {
    return this.#mode.kind === 'waking';
  }

  observe(object: RedisClusterObject): void {
    this.#reshard = object.metadata.annotations?.[RESHARD_ANNOTATION];
    this.#reason = object.status?.conditions?.find((c) => c.type === 'Hibernated')?.reason;
  }

  /** Decides this round's mode; true while hibernating: the round does nothing. */
  asleep(spec: RedisClusterSpec, pods: readonly PodObservation[]): boolean {
    this.#mode = hibernationMode({
      hibernate: spec.hibernate,
      reshard: readReshardRecord(this.#reshard),
      conditionReason: this.#reason,
      expectedPods: spec.master.replicas * (1 + spec.replicas),
      shards: spec.master.replicas,
      pods,
    });
    return this.#mode.kind === 'hibernating';
  }

  /** The round's plan, made the one applied: a waking round holds what would take a starting node for gone. */
  hold(plan: RoundPlan): RoundPlan {
    const mode = this.#mode;
    if (mode.kind !== 'waking') return plan;
    const held = wakingRound(mode, plan.steps, plan.holds, plan.topology.pods);
    plan.steps = held.steps;
    plan.holds = held.holds;
    return plan;
  }
}
