// What sync and finalize share: the request read once into sorted lists, the spec verdict, and
// the two response shapes for a valid and an invalid spec (a spec whose engine or version may not
// replace what runs is invalid: common/engine-transition.ts). Invariant: an invalid spec, or a Redis
// refused its names (an older RedisCluster's children would share them: common/name-conflict.ts),
// returns every observed child exactly as last applied (Metacontroller deletes whatever is not
// returned, and bad input must never delete anything).
import { engineField } from '../../api/node-engine.ts';
import { redisSecretUses } from '../../api/secret-report.ts';
import { BOOTSTRAP_STATUS_ANNOTATION, SWITCHOVER_STATUS_ANNOTATION, childNames } from '../../api/labels.ts';
import { formatProblems, validateSpec, type SpecProblem } from '../../api/validate.ts';
import type { RedisSpec } from '../../api/schema.ts';
import { backupCronJobName, backupSelectorLabels } from '../../api/backup.ts';
import { podBelongsTo } from '../../api/membership.ts';
import { NAME_CONFLICT_REASON, type NameConflict } from '../../api/name-conflict.ts';
import { backupVerdict } from '../common/backup-status.ts';
import { desiredChildren, type ChildPlan } from './children/index.ts';
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from '../common/options.ts';
import type { HookContext } from './context.ts';
import { planRestore, type RestorePlan } from './restore.ts';
import {
  findObject,
  labelled,
  lastAppliedOf,
  memberMeta,
  ofKind,
  parentObjectsOf,
  type ParentObjects,
} from '../common/observed.ts';
import { nameConflictIn } from '../common/name-conflict.ts';
import { runningOf, withTransitions } from '../common/engine-transition.ts';
import { INVALID_SPEC_SECRETS, secretsView, type SecretsView } from '../common/secret-status.ts';
import { rolloutView } from './rollout.ts';
import { guardScaleDown } from './scale-guard.ts';
import { computeStatus, podViews, type SpecState } from './status.ts';
import type { HookRequest, HookResponse, KubeObject } from '../common/types.ts';
import { at, int } from '../common/util.ts';

export type { SecretProblem } from '../common/secret-status.ts';

/** The request as read (the parent's identity and maps are ParentObjects). */
export interface HookState extends ParentObjects {
  request: HookRequest;
  /** Pods of this Redis (podBelongsTo); backup Job pods are in backupPods. */
  pods: KubeObject[];
  backupPods: KubeObject[];
  backupJobs: KubeObject[];
  options: HookOptions;
  verdict: { ok: true; spec: RedisSpec } | { ok: false; problems: SpecProblem[] };
  /** An older RedisCluster keeps the names this Redis's children would have: it makes none. */
  nameConflict: NameConflict | undefined;
}

export function readState(request: HookRequest, options: HookOptions = DEFAULT_HOOK_OPTIONS): HookState {
  const parent = parentObjectsOf(request);
  const { name, namespace: ns, related } = parent;
  const allPods = ofKind(related, 'v1', 'Pod', ns);
  const backupLabels = labelled(backupSelectorLabels(name));
  const pods = allPods.filter((p) => podBelongsTo(memberMeta(p, ns), { namespace: ns, name }));
  const names = childNames(name);
  const sets = [names.masterSet, names.replicaSet].flatMap(
    (n) => findObject(parent.observed, 'apps/v1', 'StatefulSet', ns, n) ?? [],
  );
  return {
    request,
    ...parent,
    pods,
    backupPods: allPods.filter(backupLabels),
    backupJobs: ofKind(related, 'batch/v1', 'Job', ns).filter(backupLabels),
    options,
    verdict: withTransitions(validateSpec(name, request.parent.spec), runningOf(sets, pods)),
    nameConflict: nameConflictIn('Redis', request.parent, related),
  };
}

export function contextOf(state: HookState, spec: RedisSpec): HookContext {
  return {
    name: state.name,
    namespace: state.namespace,
    uid: state.uid,
    spec,
    operatorImage: state.options.operatorImage,
    operatorNamespace: state.options.operatorNamespace,
  };
}

/** The status's view of the Secrets a valid spec names, from the sidecar's report (common/secret-status.ts). */
export function secretsOf(state: HookState, spec: RedisSpec): SecretsView {
  return secretsView(state.namespace, redisSecretUses(state.name, spec), state.request.parent.metadata.annotations);
}

export interface ValidPlan extends ChildPlan {
  ctx: HookContext;
  restore: RestorePlan | undefined;
  /** Spec wishes held back on purpose (the scale-down rule). */
  refusals: string[];
}

/**
 * Replica pods the cluster is running now: what the observed replica StatefulSet asks for; undefined when there is
 * none.
 */
function runningReplicas(state: HookState): number | undefined {
  const set = findObject(state.observed, 'apps/v1', 'StatefulSet', state.namespace, childNames(state.name).replicaSet);
  if (set === undefined) return undefined;
  return Math.max(0, int(at(set, 'spec', 'replicas')) ?? 0);
}

/**
 * The replica count the hook itself last applied (Metacontroller's last-applied annotation), the
 * baseline of the scale-down rule: a step of the user, not a drift of the StatefulSet someone
 * else made (that is repaired, never held). Without the annotation, what the set asks for.
 */
function lastAppliedReplicas(state: HookState): number | undefined {
  const set = findObject(state.observed, 'apps/v1', 'StatefulSet', state.namespace, childNames(state.name).replicaSet);
  if (set === undefined) return undefined;
  return Math.max(0, int(at(lastAppliedOf(set), 'spec', 'replicas')) ?? 0);
}

export function planValid(state: HookState, spec: RedisSpec): ValidPlan {
  const scale = spec.hibernate
    ? { ok: true as const, replicas: spec.replicas }
    : guardScaleDown(spec.replicas, lastAppliedReplicas(state), state.request.parent.metadata.annotations);
  const held = scale.replicas === spec.replicas ? spec : { ...spec, replicas: scale.replicas };
  const ctx = contextOf(state, held);
  const names = childNames(state.name);
  const setsObserved = [names.masterSet, names.replicaSet].some((n) =>
    findObject(state.observed, 'apps/v1', 'StatefulSet', state.namespace, n),
  );
  const restore = planRestore(state, spec, state.pods, setsObserved);
  // A refused restore changes nothing, as an invalid spec does: every observed child as observed.
  if (restore?.refused)
    return { ctx, restore, children: state.observed.map(lastAppliedOf), conflicts: [], refusals: [] };
  return {
    ctx,
    restore,
    ...desiredChildren(ctx, state.observed, state.pods, restore),
    refusals: scale.ok ? [] : [scale.message],
  };
}

export function validStatus(state: HookState, plan: ValidPlan, deleting?: string) {
  const secrets = secretsOf(state, plan.ctx.spec);
  const views = podViews(state.pods, state.name, state.namespace);
  return computeStatus({
    name: state.name,
    namespace: state.namespace,
    pods: state.pods,
    desiredReplicas: plan.ctx.spec.hibernate ? 0 : plan.ctx.spec.replicas,
    previous: state.request.parent.status,
    spec: { valid: true, conflicts: plan.conflicts, refusals: plan.refusals },
    secretProblem: secrets.problem,
    deleting,
    views,
    rollout: rolloutView(
      state.name,
      state.namespace,
      state.observed,
      state.pods,
      views,
      engineField(plan.ctx.spec).engine,
    ),
    hibernate: plan.ctx.spec.hibernate,
    switchover: state.request.parent.metadata.annotations?.[SWITCHOVER_STATUS_ANNOTATION],
    bootstrap: state.request.parent.metadata.annotations?.[BOOTSTRAP_STATUS_ANNOTATION],
    backup: backupOf(state, plan.ctx.spec, secrets.storage),
    restore: plan.restore?.status,
    restoreRefused: plan.restore?.refused === true,
    secrets: secrets.secrets,
    secretsCondition: secrets.condition,
  });
}

function backupOf(state: HookState, spec: RedisSpec, missing: string | undefined) {
  const cron = findObject(state.observed, 'batch/v1', 'CronJob', state.namespace, backupCronJobName(state.name));
  return backupVerdict(spec, cron, state.backupJobs, state.backupPods, state.request.parent.status, missing);
}

export function invalidStatus(state: HookState, problems: readonly SpecProblem[]) {
  return notActedStatus(state, { valid: false, message: formatProblems(problems) });
}

/** The status of a Redis refused its names: as for an invalid spec, with Ready and SpecValid saying NameConflict. */
export function nameConflictStatus(state: HookState, conflict: NameConflict) {
  return notActedStatus(state, { valid: false, message: conflict.message, reason: NAME_CONFLICT_REASON });
}

function notActedStatus(state: HookState, spec: SpecState) {
  return computeStatus({
    name: state.name,
    namespace: state.namespace,
    pods: state.pods,
    desiredReplicas: runningReplicas(state) ?? 0,
    previous: state.request.parent.status,
    spec,
    secretsCondition: INVALID_SPEC_SECRETS,
  });
}

export function syncResponse(state: HookState): HookResponse {
  if (state.nameConflict !== undefined)
    return { status: nameConflictStatus(state, state.nameConflict), children: state.observed.map(lastAppliedOf) };
  if (!state.verdict.ok) {
    return { status: invalidStatus(state, state.verdict.problems), children: state.observed.map(lastAppliedOf) };
  }
  const plan = planValid(state, state.verdict.spec);
  return { status: validStatus(state, plan), children: plan.children };
}
