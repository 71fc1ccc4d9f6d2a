// Memory autoscaling of the shard count, with a stabilization window as a HorizontalPodAutoscaler
// has one. Pure; time is `now` (ms), samples are the recommendations of earlier rounds.
// Invariants:
// - Down only when every recommendation over the whole window asked for fewer shards, and then to
//   the largest of them (a spike inside the window holds the count up).
// - Up once every recommendation over a tenth of the window asked for more, to the smallest of
//   them (one high sample is not enough; a sustained rise scales within a tenth of the window).
// - Nothing before this worker has sampled for the window it needs: a new leader does not act on
//   a history it did not see. The bounds and the capacity floor are recommendShards' (api).
import {
  recommendShards,
  type RedisClusterMemory as ClusterMemory,
  type Recommendation,
} from '../../../api/rediscluster-capacity.ts';
import type { RedisClusterAutoscalingSpec as ClusterAutoscalingSpec } from '../../../api/rediscluster-schema.ts';

export interface Sample {
  at: number;
  shards: number;
}

export interface AutoscaleInput {
  current: number;
  memory: ClusterMemory;
  spec: ClusterAutoscalingSpec;
  /** Earlier samples (oldest first). */
  history: readonly Sample[];
  /** When this worker began sampling. */
  since: number;
  now: number;
}

export interface AutoscaleDecision {
  recommendation: Recommendation;
  /** Samples to keep (those within the window, this one included). */
  history: Sample[];
  /** The shard count to write, or null to leave it. */
  scaleTo: number | null;
  reason: string;
}

export function decideAutoscale(input: AutoscaleInput): AutoscaleDecision {
  const { current, now, spec } = input;
  const recommendation = recommendShards(current, input.memory, spec);
  const windowMs = spec.stabilizationWindowSeconds * 1000;
  const upWindowMs = windowMs / 10;
  if (recommendation.utilization === null) {
    return { recommendation, history: [], scaleTo: null, reason: recommendation.reason };
  }
  const history = [...input.history.filter((s) => s.at > now - windowMs), { at: now, shards: recommendation.shards }];
  const sampled = now - input.since;
  const within = (ms: number) => history.filter((s) => s.at >= now - ms);
  const down = Math.max(...within(windowMs).map((s) => s.shards));
  const up = Math.min(...within(upWindowMs).map((s) => s.shards));
  if (up > current) {
    if (sampled < upWindowMs) {
      return {
        recommendation,
        history,
        scaleTo: null,
        reason: `${recommendation.reason}; scale-up waits until ${Math.round(upWindowMs / 1000)} s of samples agree`,
      };
    }
    return {
      recommendation,
      history,
      scaleTo: up,
      reason: `${recommendation.reason}; every recommendation over ${Math.round(upWindowMs / 1000)} s asked for at least ${up}`,
    };
  }
  if (down < current) {
    if (sampled < windowMs) {
      return {
        recommendation,
        history,
        scaleTo: null,
        reason: `${recommendation.reason}; scale-down waits until ${spec.stabilizationWindowSeconds} s of samples agree`,
      };
    }
    return {
      recommendation,
      history,
      scaleTo: down,
      reason: `${recommendation.reason}; every recommendation over ${spec.stabilizationWindowSeconds} s asked for at most ${down}`,
    };
  }
  const held =
    recommendation.shards !== current
      ? ` (held: the window's other samples ask for ${recommendation.shards < current ? down : up})`
      : '';
  return { recommendation, history, scaleTo: null, reason: `${recommendation.reason}${held}` };
}
