// What the RedisCluster sync and finalize share: the request read once (observed children and
// related objects in canonical order, the cluster's pods and backup Jobs, the spec verdict with the
// engine's transition rules applied: common/engine-transition.ts), the plan for a valid spec, and
// the two response shapes. Invariant, as for Redis: an invalid spec, or
// a RedisCluster refused its names (an older Redis's children would share them:
// common/name-conflict.ts), returns every observed child exactly as last applied (Metacontroller
// deletes whatever is not returned; bad input must never delete or change a StatefulSet, a
// Service or a volume).
import { NAME_CONFLICT_REASON, type NameConflict } from '../../api/name-conflict.ts';
import { redisClusterSecretUses } from '../../api/secret-report.ts';
import {
  REDIS_CLUSTER_KIND,
  RESHARD_ANNOTATION,
  redisClusterBackupSelectorLabels,
  redisClusterPodBelongsTo,
  readReshardRecord,
} from '../../api/rediscluster-names.ts';
import type { RedisClusterStatus } from '../../api/rediscluster-schema.ts';
import { validateRedisClusterSpec, type RedisClusterSpecVerdict } from '../../api/rediscluster-validate.ts';
import { formatProblems } from '../../api/validate.ts';
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from '../common/options.ts';
import {
  labelled,
  lastAppliedOf,
  memberMeta,
  ofKind,
  parentObjectsOf,
  type ParentObjects,
} from '../common/observed.ts';
import { nameConflictIn } from '../common/name-conflict.ts';
import { runningOf, withTransitions } from '../common/engine-transition.ts';
import { INVALID_SPEC_SECRETS, secretsView } from '../common/secret-status.ts';
import type { HookRequest, HookResponse, KubeObject } from '../common/types.ts';
import { redisClusterBackupVerdict } from './backup.ts';
import { desiredRedisClusterChildren } from './children.ts';
import type { RedisClusterContext } from './context.ts';
import { redisClusterPodViews, type RedisClusterPodView } from './pods.ts';
import { planClusterRestore, withClusterRestore } from './restore.ts';
import { observedShardSets, planShards, type ShardPlan } from './shards.ts';
import { computeRedisClusterStatus } from './status.ts';

/** The sync answer for a RedisCluster: the wire's shape with its own status. */
export type RedisClusterResponse = Omit<HookResponse, 'status'> & { status: RedisClusterStatus };

/** The request as read (the parent's identity and maps are ParentObjects). */
export interface RedisClusterState extends ParentObjects {
  request: HookRequest;
  /** The cluster's pods (by its pod selector labels), sorted, with their node records. */
  views: RedisClusterPodView[];
  /** Observed shard StatefulSets by index. */
  sets: Map<number, KubeObject>;
  backupJobs: KubeObject[];
  backupPods: KubeObject[];
  options: HookOptions;
  verdict: RedisClusterSpecVerdict;
  /** An older Redis keeps the names this RedisCluster's children would have: it makes none. */
  nameConflict: NameConflict | undefined;
}

export function readRedisClusterState(
  request: HookRequest,
  options: HookOptions = DEFAULT_HOOK_OPTIONS,
): RedisClusterState {
  const parent = parentObjectsOf(request);
  const { name, namespace: ns, related, observed } = parent;
  const pods = ofKind(related, 'v1', 'Pod', ns);
  const backup = labelled(redisClusterBackupSelectorLabels(name));
  const own = pods.filter((p) => redisClusterPodBelongsTo(memberMeta(p, ns), { namespace: ns, name }));
  const sets = observedShardSets(observed, name, ns);
  return {
    request,
    ...parent,
    views: redisClusterPodViews(own, name, ns),
    sets,
    backupJobs: ofKind(related, 'batch/v1', 'Job', ns).filter(backup),
    backupPods: pods.filter(backup),
    options,
    verdict: withTransitions(validateRedisClusterSpec(name, request.parent.spec), runningOf([...sets.values()], own)),
    nameConflict: nameConflictIn(REDIS_CLUSTER_KIND, request.parent, related),
  };
}

export interface RedisClusterPlan {
  ctx: RedisClusterContext;
  shards: ShardPlan;
  children: KubeObject[];
  conflicts: string[];
}

export function planRedisCluster(state: RedisClusterState, spec: RedisClusterContext['spec']): RedisClusterPlan {
  const ctx: RedisClusterContext = {
    name: state.name,
    namespace: state.namespace,
    uid: state.uid,
    spec,
    operatorImage: state.options.operatorImage,
  };
  const shards = planShards(
    spec,
    state.sets,
    state.views,
    readReshardRecord(state.request.parent.metadata.annotations?.[RESHARD_ANNOTATION]),
  );
  return { ctx, shards, ...desiredRedisClusterChildren(ctx, state.sets, shards) };
}

export function validRedisClusterStatus(
  state: RedisClusterState,
  plan: RedisClusterPlan,
  deleting?: string,
): RedisClusterStatus {
  const { spec } = plan.ctx;
  // From the sidecar's report on the parent: the hook sees no Secret (common/secret-status.ts).
  const secrets = secretsView(
    state.namespace,
    redisClusterSecretUses(state.name, spec),
    state.request.parent.metadata.annotations,
  );
  return computeRedisClusterStatus({
    name: state.name,
    spec: { valid: true, spec, plan: plan.shards, conflicts: plan.conflicts },
    views: state.views,
    sets: state.sets,
    previous: state.request.parent.status,
    reshard: state.request.parent.metadata.annotations?.[RESHARD_ANNOTATION],
    secrets: secrets.secrets,
    secretProblem: secrets.problem,
    secretsCondition: secrets.condition,
    backup: redisClusterBackupVerdict({
      name: state.name,
      namespace: state.namespace,
      spec,
      shards: plan.shards.keep,
      observed: state.observed,
      jobs: state.backupJobs,
      pods: state.backupPods,
      storageProblem: secrets.storage,
    }),
    deleting,
  });
}

/** The status of a RedisCluster refused its names: as for an invalid spec, Ready and SpecValid saying NameConflict. */
export function nameConflictRedisClusterStatus(state: RedisClusterState, conflict: NameConflict): RedisClusterStatus {
  return invalidRedisClusterStatus(state, conflict.message, NAME_CONFLICT_REASON);
}

export function invalidRedisClusterStatus(
  state: RedisClusterState,
  message: string,
  reason?: string,
): RedisClusterStatus {
  return computeRedisClusterStatus({
    name: state.name,
    spec: { valid: false, message, ...(reason !== undefined ? { reason } : {}) },
    views: state.views,
    sets: state.sets,
    previous: state.request.parent.status,
    reshard: state.request.parent.metadata.annotations?.[RESHARD_ANNOTATION],
    secrets: undefined,
    secretsCondition: INVALID_SPEC_SECRETS,
  });
}

export function redisClusterSyncResponse(state: RedisClusterState): RedisClusterResponse {
  if (state.nameConflict !== undefined) {
    return {
      status: nameConflictRedisClusterStatus(state, state.nameConflict),
      children: state.observed.map(lastAppliedOf),
    };
  }
  if (!state.verdict.ok) {
    return {
      status: invalidRedisClusterStatus(state, formatProblems(state.verdict.problems)),
      children: state.observed.map(lastAppliedOf),
    };
  }
  const plan = planRedisCluster(state, state.verdict.spec);
  const restore = planClusterRestore(state, state.verdict.spec);
  if (restore === undefined) return { status: validRedisClusterStatus(state, plan), children: plan.children };
  return {
    status: { ...validRedisClusterStatus(state, plan), restore: restore.status },
    children: withClusterRestore(plan.children, restore, state, state.verdict.spec),
  };
}
