// The verdicts behind the RedisCluster conditions that explain how the spec was applied:
// FailoverConfigured (the design article's sentinel block mapped onto Redis Cluster), Autoscaling
// (its bounds, the floor of 3, the recommendation now, or why it cannot work), Resharded (the
// sidecar's reshard record against what the shards hold) and Updated (the rollout of a new template).
// Pure; every message names the fields it is about.
import { recommendShards, type RedisClusterMemory } from '../../api/rediscluster-capacity.ts';
import { CLUSTER_SLOTS, MIN_REDIS_CLUSTER_SHARDS, type RedisClusterSpec } from '../../api/rediscluster-schema.ts';
import type { ReshardRecord } from '../../api/rediscluster-names.ts';
import { enginesOfPods, withEngineMove } from '../common/engines.ts';
import { rolloutVerdict } from '../common/rollout.ts';
import type { KubeObject } from '../common/types.ts';
import { at, int, str } from '../common/util.ts';
import type { RedisClusterPodView } from './pods.ts';
import type { ShardPlan } from './shards.ts';

export interface Verdict {
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  /** Observed time of the change, when one is known. */
  since?: string | undefined;
}

export function failoverVerdict(spec: RedisClusterSpec): Verdict {
  const s = spec.sentinel;
  const sentinel = `sentinel.enabled ${String(s.enabled)}, sentinel.replicas ${s.replicas}: no Sentinel runs (a sharded Redis fails over by Redis Cluster's own election of a replica by the masters)`;
  const timeout = `sentinel.downAfterMilliseconds ${s.downAfterMilliseconds} -> cluster-node-timeout ${s.downAfterMilliseconds} ms (a master unreachable that long is failed by the cluster and its best replica elected)`;
  const fast =
    "a master whose process crashed (its port refuses, its replicas' links are down) or hangs (it answers nobody and " +
    'other nodes wait for its pong) is failed over by the operator at once, without waiting for cluster-node-timeout';
  const forced =
    `sentinel.failoverTimeout ${s.failoverTimeout} ms: when a shard's master has failed and no replica has taken over after that long, ` +
    "the operator forces an election (CLUSTER FAILOVER FORCE on its best replica, which still needs the masters' votes)" +
    (s.failoverTimeout < s.downAfterMilliseconds
      ? ` (shorter than downAfterMilliseconds: it counts only once the master is failed)`
      : '');
  if (spec.replicas === 0) {
    return {
      status: 'False',
      reason: 'NoReplicas',
      message: `spec.replicas is 0: a shard whose master fails has no replica to elect, and its slots stay uncovered until the master is back; ${timeout}; ${sentinel}`,
    };
  }
  return { status: 'True', reason: 'ClusterElection', message: `${timeout}; ${fast}; ${forced}; ${sentinel}` };
}

export function autoscalingVerdict(spec: RedisClusterSpec, memory: RedisClusterMemory, servingShards: number): Verdict {
  const a = spec.autoscaling;
  if (!a.enabled)
    return {
      status: 'False',
      reason: 'Disabled',
      message: 'autoscaling.enabled is false: spec.master.replicas is set by hand (kubectl scale rediscluster)',
    };
  const floor = Math.max(MIN_REDIS_CLUSTER_SHARDS, a.minReplicas);
  const ceiling = Math.max(floor, a.maxReplicas);
  const raised =
    a.minReplicas < MIN_REDIS_CLUSTER_SHARDS
      ? ` (autoscaling.minReplicas ${a.minReplicas} is taken as ${MIN_REDIS_CLUSTER_SHARDS}: with fewer masters a failed one cannot be replaced by vote)`
      : '';
  const capped =
    a.maxReplicas < floor
      ? ` (autoscaling.maxReplicas ${a.maxReplicas} is below the floor, so the floor is also the most)`
      : '';
  const bounds = `between ${floor} and ${ceiling} shards${raised}${capped}, target ${a.targetMemoryUtilization}% of maxmemory`;
  if (memory.maxmemoryPerShard <= 0) {
    return {
      status: 'False',
      reason: 'NoMemoryLimit',
      message: `cannot scale on memory: no maxmemory to measure against (set resources.limits.memory; maxmemory is derived from it); bounds ${bounds}`,
    };
  }
  if (servingShards === 0)
    return {
      status: 'True',
      reason: 'WaitingForMetrics',
      message: `${bounds}; no master serving slots has reported its memory yet`,
    };
  const r = recommendShards(servingShards, memory, {
    minReplicas: a.minReplicas,
    maxReplicas: a.maxReplicas,
    targetMemoryUtilization: a.targetMemoryUtilization,
  });
  const outside =
    spec.master.replicas < floor || spec.master.replicas > ceiling
      ? `; spec.master.replicas ${spec.master.replicas} is outside the bounds and is brought within them`
      : '';
  return { status: 'True', reason: 'Active', message: `${bounds}; now: ${r.reason}${outside}` };
}

/** Whether the shards hold the slots spec.master.replicas asks for; slotsByShard: slots each shard's master serves. */
export function reshardVerdict(
  record: ReshardRecord | null,
  raw: string | undefined,
  plan: ShardPlan,
  desired: number,
  slotsByShard: ReadonlyMap<number, number>,
): Verdict {
  if (plan.refusal !== undefined)
    return { status: 'False', reason: 'InsufficientCapacity', message: plan.refusal.reason };
  if (record?.state === 'Running') {
    return {
      status: 'False',
      reason: 'Resharding',
      message: `resharding ${record.from} -> ${record.to} shards: ${record.moved} of ${record.total} slots moved (since ${record.at})`,
    };
  }
  const last = record?.state === 'Refused' ? `; the last reshard was refused: ${record.why || raw}` : '';
  const assigned = [...slotsByShard.values()].reduce((n, c) => n + c, 0);
  if (assigned === 0)
    return {
      status: 'False',
      reason: 'NotFormed',
      message: `no slot is assigned yet: the sidecar forms the cluster${last}`,
    };
  const leaving = plan.leaving.filter((l) => l.kept);
  if (leaving.length > 0) {
    return {
      status: 'False',
      reason: 'ShardsLeaving',
      message: `spec.master.replicas is ${desired}; ${leaving.map((l) => `shard ${l.index} ${l.why}`).join('; ')}${last}`,
    };
  }
  const joining = Array.from({ length: desired }, (_, i) => i).filter((i) => (slotsByShard.get(i) ?? 0) === 0);
  if (joining.length > 0) {
    return {
      status: 'False',
      reason: 'ShardsJoining',
      message: `spec.master.replicas is ${desired}; shard ${joining.join(', ')} holds no slots yet: waiting for the sidecar to move slots to it${last}`,
    };
  }
  const done = record?.state === 'Done' ? `; last reshard ${record.from} -> ${record.to} done at ${record.at}` : '';
  return {
    status: 'True',
    reason: 'Balanced',
    message: `${desired} shards hold the ${CLUSTER_SLOTS} slots${done}${last}`,
  };
}

/**
 * Pods on their StatefulSet's current template (status.updateRevision, once its controller has
 * seen the latest spec) or not; the sidecar rolls the stale ones out (the same verdict as a Redis's).
 */
export function updatedVerdict(
  sets: ReadonlyMap<number, KubeObject>,
  views: readonly RedisClusterPodView[],
  /** spec.engine as the spec says it (absent: not said). */
  specEngine?: unknown,
): Verdict {
  const pending: string[] = [];
  const stale: string[] = [];
  const updated: string[] = [];
  for (const [index, set] of [...sets.entries()].sort(([a], [b]) => a - b)) {
    const generation = int(set.metadata.generation);
    if (generation !== undefined && int(at(set, 'status', 'observedGeneration')) !== generation) {
      pending.push(set.metadata.name);
      continue;
    }
    const revision = str(at(set, 'status', 'updateRevision'));
    for (const pod of views.filter((v) => v.shard === index))
      (revision === undefined || pod.revision !== revision ? stale : updated).push(pod.name);
  }
  const rollout = rolloutVerdict({
    updated,
    stale,
    total: views.length,
    pending:
      pending.length > 0 ? `StatefulSet ${pending.join(', ')} has a spec its controller has not processed yet` : '',
    notReady: views.filter((p) => !p.terminating && !p.ready).map((p) => p.name),
    leaving: views.filter((p) => p.terminating).map((p) => p.name),
    order:
      "one pod at a time across the shards, replicas first, each shard's master last after a CLUSTER FAILOVER to its most advanced replica",
  });
  const v = withEngineMove(rollout, specEngine, enginesOfPods(views, updated));
  return { status: v.ok ? 'True' : 'False', reason: v.reason, message: v.message };
}
