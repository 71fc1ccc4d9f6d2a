// What the RedisCluster sync and finalize share: the request read once (observed children and
// related objects in canonical order, the cluster's pods and backup Jobs, the spec verdict), the
// plan for a valid spec, and the two response shapes. Invariant, as for Redis: an invalid spec
// returns every observed child exactly as last applied (Metacontroller deletes whatever is not
// returned; bad input must never delete or change a StatefulSet, a Service or a volume).
import { clusterSecretUses } from '../../api/secret-report.ts';
import { RESHARD_ANNOTATION, clusterBackupSelectorLabels, clusterPodBelongsTo, readReshardRecord } from '../../api/rediscluster-names.ts';
import type { RedisClusterStatus } from '../../api/rediscluster-schema.ts';
import { validateClusterSpec, type ClusterSpecVerdict } from '../../api/rediscluster-validate.ts';
import { formatProblems } from '../../api/validate.ts';
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from '../common/options.ts';
import { lastAppliedOf, memberMeta, objectsOf, ofKind } from '../common/observed.ts';
import { INVALID_SPEC_SECRETS, secretsView } from '../common/secret-status.ts';
import type { HookRequest, HookResponse, KubeObject } from '../common/types.ts';
import { clusterBackupVerdict } from './backup.ts';
import { desiredClusterChildren } from './children.ts';
import type { ClusterContext } from './context.ts';
import { clusterPodViews, type ClusterPodView } from './pods.ts';
import { observedShardSets, planShards, type ShardPlan } from './shards.ts';
import { computeClusterStatus } from './status.ts';

/** The sync answer for a RedisCluster: the wire's shape with its own status. */
export type RedisClusterResponse = Omit<HookResponse, 'status'> & { status: RedisClusterStatus };

export interface ClusterState {
  request: HookRequest;
  name: string;
  namespace: string;
  uid: string | undefined;
  /** Observed children, canonical order. */
  observed: KubeObject[];
  related: KubeObject[];
  /** The cluster's pods (by its pod selector labels), sorted, with their node records. */
  views: ClusterPodView[];
  /** Observed shard StatefulSets by index. */
  sets: Map<number, KubeObject>;
  backupJobs: KubeObject[];
  backupPods: KubeObject[];
  options: HookOptions;
  verdict: ClusterSpecVerdict;
}

const labelled = (labels: Record<string, string>) => (o: KubeObject) => Object.entries(labels).every(([k, v]) => o.metadata.labels?.[k] === v);

export function readClusterState(request: HookRequest, options: HookOptions = DEFAULT_HOOK_OPTIONS): ClusterState {
  const { name, namespace } = request.parent.metadata;
  const ns = namespace ?? '';
  const related = objectsOf(request.related);
  const observed = objectsOf(request.children);
  const uid = request.parent.metadata.uid;
  const pods = ofKind(related, 'v1', 'Pod', ns);
  const backup = labelled(clusterBackupSelectorLabels(name));
  return {
    request,
    name,
    namespace: ns,
    uid: typeof uid === 'string' && uid !== '' ? uid : undefined,
    observed,
    related,
    views: clusterPodViews(
      pods.filter((p) => clusterPodBelongsTo(memberMeta(p, ns), { namespace: ns, name })),
      name,
      ns,
    ),
    sets: observedShardSets(observed, name, ns),
    backupJobs: ofKind(related, 'batch/v1', 'Job', ns).filter(backup),
    backupPods: pods.filter(backup),
    options,
    verdict: validateClusterSpec(name, request.parent.spec),
  };
}

export interface ClusterPlan {
  ctx: ClusterContext;
  shards: ShardPlan;
  children: KubeObject[];
  conflicts: string[];
}

export function planCluster(state: ClusterState, spec: ClusterContext['spec']): ClusterPlan {
  const ctx: ClusterContext = { name: state.name, namespace: state.namespace, uid: state.uid, spec, operatorImage: state.options.operatorImage };
  const shards = planShards(spec, state.sets, state.views, readReshardRecord(state.request.parent.metadata.annotations?.[RESHARD_ANNOTATION]));
  return { ctx, shards, ...desiredClusterChildren(ctx, state.sets, shards) };
}

export function validClusterStatus(state: ClusterState, plan: ClusterPlan, deleting?: string): RedisClusterStatus {
  const { spec } = plan.ctx;
  // From the sidecar's report on the parent: the hook sees no Secret (secret-status.ts).
  const secrets = secretsView(state.namespace, clusterSecretUses(state.name, spec), state.request.parent.metadata.annotations);
  return computeClusterStatus({
    name: state.name,
    spec: { valid: true, spec, plan: plan.shards, conflicts: plan.conflicts },
    views: state.views,
    sets: state.sets,
    previous: state.request.parent.status,
    reshard: state.request.parent.metadata.annotations?.[RESHARD_ANNOTATION],
    secrets: secrets.secrets,
    secretProblem: secrets.problem,
    secretsCondition: secrets.condition,
    backup: clusterBackupVerdict({
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

export function invalidClusterStatus(state: ClusterState, message: string): RedisClusterStatus {
  return computeClusterStatus({
    name: state.name,
    spec: { valid: false, message },
    views: state.views,
    sets: state.sets,
    previous: state.request.parent.status,
    reshard: state.request.parent.metadata.annotations?.[RESHARD_ANNOTATION],
    secrets: undefined,
    secretsCondition: INVALID_SPEC_SECRETS,
  });
}

export function clusterSyncResponse(state: ClusterState): RedisClusterResponse {
  if (!state.verdict.ok) {
    return { status: invalidClusterStatus(state, formatProblems(state.verdict.problems)), children: state.observed.map(lastAppliedOf) };
  }
  const plan = planCluster(state, state.verdict.spec);
  return { status: validClusterStatus(state, plan), children: plan.children };
}
