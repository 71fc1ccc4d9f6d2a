// Memory autoscaling of one RedisCluster: samples the recommendation each quiet round, and when
// the window allows (decide/autoscale.ts) writes the new shard count through the scale
// subresource, as a HorizontalPodAutoscaler does. Each decision and its reason is an Event.
// Invariants: only the acting instance samples and writes (a new one starts its window afresh);
// a count just written is not written again until the spec shows it (the informer lags).
import type { Logger } from 'pino';
import type { RedisClusterMemory as ClusterMemory } from '../../../api/rediscluster-capacity.ts';
import type { RedisClusterAutoscalingSpec as ClusterAutoscalingSpec } from '../../../api/rediscluster-schema.ts';
import { kubeFailure, type RedisRef } from '../../adapters/kube/client.ts';
import { decideAutoscale, type Sample } from '../decide/autoscale.ts';
import type { ClusterKube, EventToSend } from './types.ts';

/** How long a written count may take to show in the spec before it is written again. */
export const SCALE_SETTLE_MS = 30_000;

export interface AutoscalerOptions {
  ref: RedisRef;
  kube: Pick<ClusterKube, 'scaleCluster'>;
  log: Logger;
  event(e: EventToSend): void;
  now(): number;
}

export class Autoscaler {
  readonly #o: AutoscalerOptions;
  #history: Sample[] = [];
  #since: number | null = null;
  #written: { shards: number; at: number } | null = null;
  #told: string | null = null;

  constructor(options: AutoscalerOptions) {
    this.#o = options;
  }

  /** Autoscaling is off, or this instance stopped acting: the window starts again next time. */
  reset(): void {
    this.#history = [];
    this.#since = null;
  }

  /** One quiet round's sample; scales when the window says so. Returns the reason (for tests and logs). */
  async sample(spec: ClusterAutoscalingSpec, current: number, memory: ClusterMemory): Promise<string> {
    const now = this.#o.now();
    this.#since ??= now;
    if (this.#written && this.#written.shards !== current && now - this.#written.at < SCALE_SETTLE_MS)
      return 'waiting for the spec to show the last count written';
    const d = decideAutoscale({ current, memory, spec, history: this.#history, since: this.#since, now });
    this.#history = d.history;
    if (d.recommendation.utilization === null) {
      if (this.#told !== d.reason) {
        this.#told = d.reason;
        this.#o.event({ type: 'Warning', reason: 'AutoscalingUnavailable', message: d.reason });
      }
      return d.reason;
    }
    if (d.scaleTo === null) return d.reason;
    try {
      await this.#o.kube.scaleCluster(this.#o.ref, d.scaleTo);
      this.#written = { shards: d.scaleTo, at: now };
      this.#told = null;
      const up = d.scaleTo > current;
      this.#o.log.info({ from: current, to: d.scaleTo, reason: d.reason }, 'autoscaling the shard count');
      this.#o.event({
        type: 'Normal',
        reason: up ? 'AutoscaleUp' : 'AutoscaleDown',
        message: `${current} -> ${d.scaleTo} shards: ${d.reason}`,
      });
    } catch (err) {
      const f = kubeFailure(err);
      this.#o.log.warn({ code: f.code, err: f.message }, 'could not write the shard count (redisclusters/scale)');
    }
    return d.reason;
  }
}
