// One round's decisions for a RedisCluster, in the order they are applied: open slots closed,
// a shard split between two masters merged, slots nobody serves given a master, nodes met, a
// gone master's shard failed over (at once, or when the cluster's own failover is stuck),
// replicas attached, gone nodes forgotten; and, separately, the reshard
// (moves run only in a round with no other step). Pure: what the pods answered, the spec, what
// earlier rounds remembered, and `now`.
import { resolveOpenSlots } from './open-slots.ts';
import { assignSlots, attachReplicas, meetNodes } from './formation.ts';
import { decideForcedFailovers, type FailoverMemory } from './failover.ts';
import { decideForgets } from './forget.ts';
import { mergeSplitShards } from './split-shard.ts';
import { planReshard, type ReshardDecision } from './reshard.ts';
import { buildTopology, type Topology } from './topology.ts';
import type { ClusterSpecView, ClusterStep, Hold, PodObservation } from './types.ts';

export interface RoundInput {
  pods: readonly PodObservation[];
  spec: ClusterSpecView;
  /** Node id -> shard, for nodes whose pod is gone. */
  remembered: ReadonlyMap<string, number>;
  failover: FailoverMemory;
  /** Monotonic ms. */
  now: number;
  /** A refused master port counts as a crash after this long (master-down.ts); 0 when absent. */
  crashConfirmMs?: number;
}

export interface RoundPlan {
  topology: Topology;
  steps: ClusterStep[];
  reshard: ReshardDecision;
  holds: Hold[];
  failingSince: Map<string, number>;
}

export function planRound(input: RoundInput): RoundPlan {
  const t = buildTopology(input.pods, input.remembered);
  const open = resolveOpenSlots(t);
  const merge = mergeSplitShards(t);
  const assign = assignSlots(t, input.spec);
  const meet = meetNodes(t, input.spec);
  const failover = decideForcedFailovers(
    t,
    input.spec.failoverTimeoutMs,
    input.failover,
    input.now,
    input.crashConfirmMs,
  );
  const attach = attachReplicas(t, input.spec);
  const forget = decideForgets(t, input.spec, failover.failingSince, input.now);
  const parts = [open, merge, assign, meet, failover, attach, forget];
  return {
    topology: t,
    steps: parts.flatMap((p) => p.steps),
    holds: parts.flatMap((p) => p.holds),
    reshard: planReshard(t, input.spec),
    failingSince: failover.failingSince,
  };
}
