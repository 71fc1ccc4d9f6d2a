// The RedisCluster status, computed only from what was observed: the shard StatefulSets, the pods
// (readiness, and the node record the sidecar writes on each), the reshard record on the parent,
// the sidecar's report on the Secrets, the backup Jobs, and the previous status's condition times. Invariants:
// deterministic (shards by index, pods by name, conditions in a fixed order); no clock (a
// lastTransitionTime is carried over while a condition's status is unchanged, else taken from an
// observed time, else absent); never observedGeneration; a slot counts as covered only when a
// master that Kubernetes calls Ready and the cluster does not flag as failed says it serves it.
import {
  CLUSTER_SLOTS,
  type RedisClusterSpec,
  type RedisClusterStatus,
  type ShardStatus,
} from '../../api/rediscluster-schema.ts';
import {
  redisClusterPodSelectorLabels,
  formatSlotRanges,
  rangesOf,
  readReshardRecord,
  slotCount,
} from '../../api/rediscluster-names.ts';
import type { Condition } from '../../api/schema.ts';
import type { BackupVerdict } from '../common/backup-status.ts';
import { SECRETS_CONDITION, type SecretProblem, type SecretsCondition } from '../common/secret-status.ts';
import { engineField } from '../../api/node-engine.ts';
import { nodesStatus } from '../common/engines.ts';
import { latest, previousConditions } from '../common/conditions.ts';
import type { KubeObject } from '../common/types.ts';
import { array, at, compare, selectorString, str } from '../common/util.ts';
import { autoscalingVerdict, failoverVerdict, reshardVerdict, updatedVerdict, type Verdict } from './conditions.ts';
import { HIBERNATED_CONDITION, hibernationVerdict } from './hibernation.ts';
import { isMaster, serving, type RedisClusterPodView } from './pods.ts';
import type { ShardPlan } from './shards.ts';

export const REDIS_CLUSTER_CONDITION_TYPES = [
  'Ready',
  'SlotsCovered',
  'ShardsReady',
  'Resharded',
  'SpecValid',
  'Updated',
  'FailoverConfigured',
  'Autoscaling',
  'Hibernated',
] as const;

export type RedisClusterSpecState =
  | { valid: true; spec: RedisClusterSpec; plan: ShardPlan; conflicts: string[] }
  /** reason: why Ready and SpecValid are False (default InvalidSpec; NameConflict). */
  | { valid: false; message: string; reason?: string };

export interface RedisClusterStatusInput {
  name: string;
  spec: RedisClusterSpecState;
  views: readonly RedisClusterPodView[];
  /** Observed shard StatefulSets by index. */
  sets: ReadonlyMap<number, KubeObject>;
  /** parent.status as received: anything. */
  previous: unknown;
  /** The sidecar's reshard annotation on the parent, as written. */
  reshard: string | undefined;
  secrets: RedisClusterStatus['secrets'];
  secretProblem?: SecretProblem | undefined;
  /** The SecretsReady condition (common/secret-status.ts); absent: not judged (a direct caller). */
  secretsCondition?: SecretsCondition | undefined;
  backup?: BackupVerdict | undefined;
  /** Set during finalize: what teardown is waiting for. */
  deleting?: string | undefined;
}

interface ShardView {
  status: ShardStatus;
  masterReady: boolean;
  /** Replica pods Ready and linked to this shard's master. */
  readyReplicas: number;
}

/** The master of a shard: a master by its record serving slots first, then a Ready one, then by name. */
function masterOf(pods: readonly RedisClusterPodView[]): RedisClusterPodView | undefined {
  const rank = (p: RedisClusterPodView) => (p.record!.slots.length > 0 ? 0 : 2) + (serving(p) ? 0 : 1);
  return pods.filter(isMaster).sort((a, b) => rank(a) - rank(b) || compare(a.name, b.name))[0];
}

function shardView(
  index: number,
  views: readonly RedisClusterPodView[],
  desired: number | undefined,
  replicasWanted: number | undefined,
): ShardView {
  const pods = views.filter((v) => v.shard === index);
  const master = masterOf(pods);
  const linked =
    master === undefined
      ? []
      : pods.filter((p) => p.record?.role === 'replica' && p.record.linkUp && p.record.masterId === master.record!.id);
  const slots = master?.record?.slots ?? [];
  const masterReady = master !== undefined && serving(master);
  const readyReplicas = linked.filter(serving).length;
  let health: ShardStatus['health'];
  if (!masterReady) health = 'NoMaster';
  else if (desired !== undefined && index >= desired) health = 'Leaving';
  else if (slots.length === 0) health = 'Joining';
  else if (replicasWanted !== undefined && readyReplicas < replicasWanted) health = 'Degraded';
  else health = 'Healthy';
  return {
    status: {
      index,
      ...(master !== undefined ? { master: master.name } : {}),
      replicas: linked.map((p) => p.name),
      slots: formatSlotRanges(slots),
      slotCount: slotCount(slots),
      health,
    },
    masterReady,
    readyReplicas,
  };
}

const verdict = (ok: boolean, reason: string, message: string, since?: string): Verdict => ({
  status: ok ? 'True' : 'False',
  reason,
  message,
  since,
});

export function computeRedisClusterStatus(input: RedisClusterStatusInput): RedisClusterStatus {
  const { views } = input;
  const valid = input.spec.valid ? input.spec : undefined;
  const desired = valid?.spec.master.replicas;
  const indices = [...new Set([...input.sets.keys(), ...Array.from({ length: desired ?? 0 }, (_, i) => i)])].sort(
    (a, b) => a - b,
  );
  const shards = indices.map((i) => shardView(i, views, desired, valid?.spec.replicas));

  const covered = new Uint8Array(CLUSTER_SLOTS);
  for (const p of views.filter((v) => isMaster(v) && serving(v)))
    for (const [a, b] of p.record!.slots) covered.fill(1, a, b + 1);
  const slotsCovered = covered.reduce((n, c) => n + c, 0);
  const uncovered = rangesOf(Array.from(covered.keys()).filter((s) => covered[s] === 0));
  const readyMasters = shards.filter((s) => s.masterReady).length;
  const readyReplicas = shards.reduce((n, s) => n + s.readyReplicas, 0);
  const record = readReshardRecord(input.reshard);

  const slotsVerdict =
    slotsCovered === CLUSTER_SLOTS
      ? verdict(
          true,
          'AllSlotsCovered',
          `all ${CLUSTER_SLOTS} slots are served by a ready master`,
          latest(views.filter((v) => isMaster(v) && serving(v)).map((v) => v.readySince)),
        )
      : verdict(
          false,
          'SlotsUncovered',
          `${slotsCovered} of ${CLUSTER_SLOTS} slots are served by a ready master; not served: ${formatSlotRanges(uncovered.slice(0, 8))}${uncovered.length > 8 ? ', ...' : ''}`,
        );
  const unhealthy = shards.filter(
    (s) => s.status.health === 'NoMaster' || (s.status.health === 'Degraded' && desired !== undefined),
  );
  const shardsVerdict =
    shards.length === 0
      ? verdict(false, 'NoShards', 'no shard StatefulSet exists yet')
      : unhealthy.length > 0
        ? verdict(
            false,
            unhealthy.some((s) => s.status.health === 'NoMaster') ? 'ShardWithoutMaster' : 'ReplicasMissing',
            unhealthy
              .map((s) =>
                s.status.health === 'NoMaster'
                  ? `shard ${s.status.index}: no ready master${s.status.master !== undefined ? ` (${s.status.master} is not Ready)` : ''}`
                  : `shard ${s.status.index}: ${s.readyReplicas} of ${valid?.spec.replicas ?? 0} replicas Ready and linked`,
              )
              .join('; '),
          )
        : verdict(true, 'ShardsReady', `${shards.length} shards, each with a ready master and its replicas linked`);

  let specValid: Verdict;
  if (!input.spec.valid) specValid = verdict(false, input.spec.reason ?? 'InvalidSpec', input.spec.message);
  else if (input.spec.conflicts.length > 0)
    specValid = verdict(false, 'ImmutableFieldChanged', input.spec.conflicts.join('; '));
  else if (input.spec.plan.refusal !== undefined)
    specValid = verdict(false, 'InsufficientCapacity', input.spec.plan.refusal.reason);
  else specValid = verdict(true, 'Valid', 'spec is valid');

  let ready: Verdict;
  if (!input.spec.valid) ready = verdict(false, input.spec.reason ?? 'InvalidSpec', input.spec.message);
  else if (input.deleting !== undefined) ready = verdict(false, 'Deleting', input.deleting);
  else if (readyMasters === 0 && input.secretProblem !== undefined)
    ready = verdict(false, input.secretProblem.reason, input.secretProblem.message);
  else if (slotsCovered === 0 && views.every((v) => (v.record?.slots.length ?? 0) === 0))
    ready = verdict(
      false,
      'NotFormed',
      `the cluster is not formed yet: no slot is assigned (${views.length} pods, ${readyMasters} ready masters)`,
    );
  else if (slotsCovered < CLUSTER_SLOTS) ready = slotsVerdict;
  else if (shardsVerdict.status !== 'True') ready = shardsVerdict;
  else
    ready = verdict(
      true,
      'AllReady',
      `${readyMasters} masters serve all ${CLUSTER_SLOTS} slots, ${readyReplicas} replicas linked`,
      latest([slotsVerdict.since, ...views.map((v) => v.readySince)]),
    );
  const hibernated = valid
    ? hibernationVerdict({
        hibernate: valid.spec.hibernate,
        reshard: record,
        views,
        previous: previousHibernated(input.previous),
        ready: ready.status === 'True',
      })
    : unknownVerdict('whether it hibernates');
  // Hibernating on purpose: not Ready, and the condition says why (unless the spec is invalid or it is going away).
  const asleep = hibernated.reason === 'Hibernated' || hibernated.reason === 'Hibernating';
  if (asleep && input.spec.valid && input.deleting === undefined)
    ready = verdict(false, hibernated.reason, hibernated.message);

  const slotsByShard = new Map(shards.map((s) => [s.status.index, s.status.slotCount]));
  /** Shards whose master serves slots: what memory use is measured over. */
  const holding = shards.filter((s) => s.status.slotCount > 0).length;
  const unknown = unknownVerdict;
  const verdicts: Record<(typeof REDIS_CLUSTER_CONDITION_TYPES)[number], Verdict> = {
    Ready: ready,
    SlotsCovered: slotsVerdict,
    ShardsReady: shardsVerdict,
    Resharded: valid
      ? reshardVerdict(record, input.reshard, valid.plan, valid.spec.master.replicas, slotsByShard)
      : unknown('the reshard state'),
    SpecValid: specValid,
    Updated: valid ? updatedVerdict(input.sets, views, engineField(valid.spec).engine) : unknown('the rollout state'),
    FailoverConfigured: valid ? failoverVerdict(valid.spec) : unknown('how failover is configured'),
    Autoscaling: valid ? autoscalingVerdict(valid.spec, valid.plan.memory, holding) : unknown('autoscaling'),
    Hibernated: hibernated,
  };
  const judged: Array<Verdict & { type: string }> = REDIS_CLUSTER_CONDITION_TYPES.map((type) => ({
    type,
    ...verdicts[type],
  }));
  if (input.secretsCondition !== undefined) judged.push({ type: SECRETS_CONDITION, ...input.secretsCondition });
  if (input.backup?.condition !== undefined) judged.push({ type: 'BackupHealthy', ...input.backup.condition });
  const previous = previousConditions(input.previous);
  const conditions: Condition[] = judged.map((v) => {
    const before = previous.get(v.type);
    const since = before !== undefined && before.status === v.status ? (before.lastTransitionTime ?? v.since) : v.since;
    return {
      type: v.type,
      status: v.status,
      reason: v.reason,
      message: v.message,
      ...(since !== undefined ? { lastTransitionTime: since } : {}),
    };
  });

  const memory = valid?.plan.memory;
  const utilization =
    memory !== undefined && memory.maxmemoryPerShard > 0 && holding > 0
      ? Math.round((memory.usedBytes / (holding * memory.maxmemoryPerShard)) * 100)
      : undefined;
  return {
    phase: !input.spec.valid
      ? 'Failed'
      : valid?.spec.hibernate === true && record?.state !== 'Running'
        ? 'Hibernated'
        : record?.state === 'Running'
          ? 'Resharding'
          : slotsCovered === CLUSTER_SLOTS
            ? 'Running'
            : 'Pending',
    shards: input.sets.size,
    readyMasters,
    readyReplicas,
    slotsCovered,
    summary: {
      // Without a valid spec the shards wanted are not known: the shards that exist stand in, and replicas go unsaid.
      masters: `${readyMasters}/${desired ?? input.sets.size}`,
      ...(valid !== undefined
        ? { replicas: `${readyReplicas}/${valid.spec.master.replicas * valid.spec.replicas}` }
        : {}),
    },
    shardStatus: shards.map((s) => s.status),
    ...(input.reshard !== undefined ? { resharding: input.reshard } : {}),
    ...(utilization !== undefined ? { memoryUtilization: utilization } : {}),
    selector: selectorString(redisClusterPodSelectorLabels(input.name)),
    ...nodesField(views),
    ...(input.secrets !== undefined ? { secrets: input.secrets } : {}),
    ...(input.backup !== undefined ? { backup: input.backup.status } : {}),
    conditions,
  };
}

const unknownVerdict = (what: string): Verdict => ({
  status: 'Unknown',
  reason: 'InvalidSpec',
  message: `${what} is not known while the spec is invalid`,
});

/** The previous Hibernated condition: whether this sync is a wake. */
function previousHibernated(previous: unknown): { status: string; reason: string } | undefined {
  const c = array(at(previous, 'conditions')).find((x) => at(x, 'type') === HIBERNATED_CONDITION);
  return c === undefined ? undefined : { status: str(at(c, 'status')) ?? '', reason: str(at(c, 'reason')) ?? '' };
}

/** status.nodes, absent until some pod's node answered. */
function nodesField(views: readonly RedisClusterPodView[]) {
  const nodes = nodesStatus(views);
  return nodes.length > 0 ? { nodes } : {};
}
