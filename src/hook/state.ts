// What sync and finalize share: the request read once into sorted lists, the spec verdict, and
// the two response shapes for a valid and an invalid spec. Invariant: an invalid spec returns
// every observed child exactly as observed (Metacontroller deletes whatever is not returned,
// and bad input must never delete anything).
import { operatorSecretRef, authSecretRef as redisAuthSecretRef } from '../api/auth.ts';
import { TLS_CA_KEY, TLS_CERT_KEY, TLS_KEY_KEY, tlsSecretName } from '../api/tls.ts';
import { SWITCHOVER_STATUS_ANNOTATION, childNames } from '../api/labels.ts';
import { formatProblems, validateSpec, type SpecProblem } from '../api/validate.ts';
import type { RedisSpec } from '../api/schema.ts';
import { desiredChildren, type ChildPlan } from './children/index.ts';
import { authSecretRef } from './children/statefulset.ts';
import type { HookContext } from './context.ts';
import { findObject, lastAppliedOf, mapHasKind, objectsOf, ofKind } from './observed.ts';
import { rolloutView } from './rollout.ts';
import { guardScaleDown } from './scale-guard.ts';
import { computeStatus, podViews } from './status.ts';
import type { HookRequest, HookResponse, KubeObject } from './types.ts';
import { at, int, isRecord } from './util.ts';

export interface HookState {
  request: HookRequest;
  name: string;
  namespace: string;
  uid: string | undefined;
  /** Observed children, canonical order. */
  observed: KubeObject[];
  /** Related objects, canonical order. */
  related: KubeObject[];
  pods: KubeObject[];
  verdict: { ok: true; spec: RedisSpec } | { ok: false; problems: SpecProblem[] };
}

export function readState(request: HookRequest): HookState {
  const { name, namespace } = request.parent.metadata;
  const ns = namespace ?? '';
  const related = objectsOf(request.related);
  const uid = request.parent.metadata.uid;
  return {
    request,
    name,
    namespace: ns,
    uid: typeof uid === 'string' && uid !== '' ? uid : undefined,
    observed: objectsOf(request.children),
    related,
    pods: ofKind(related, 'v1', 'Pod', ns),
    verdict: validateSpec(name, request.parent.spec),
  };
}

export function contextOf(state: HookState, spec: RedisSpec): HookContext {
  return { name: state.name, namespace: state.namespace, uid: state.uid, spec };
}

/** A Secret the pods need that is missing or incomplete, and which kind of Secret it is. */
export interface SecretProblem {
  reason: 'AuthSecretMissing' | 'TLSSecretMissing';
  message: string;
}

/** Why pods cannot start for want of a Secret, only when the customize hook lets us see Secrets. */
export function secretsProblem(state: HookState, ctx: HookContext): SecretProblem | undefined {
  if (!mapHasKind(state.request.related, 'Secret')) return undefined;
  const ref = authSecretRef(ctx);
  const generated = redisAuthSecretRef(state.name, ctx.spec).generated;
  const operator = operatorSecretRef(state.name);
  const auth =
    secretProblem(state, ref.name, [ref.key], generated ? ' (the sidecar creates it)' : ' (spec.auth.secretName)', 'their password') ??
    secretProblem(state, operator.secretName, [operator.key], " (the operator's own password: the sidecar creates it)", 'their password');
  if (auth !== undefined) return { reason: 'AuthSecretMissing', message: auth };
  const tls = tlsSecretName(state.name, ctx.spec);
  if (tls === undefined) return undefined;
  const origin = ctx.spec.tls?.certManager ? ' (cert-manager writes it for the Certificate child)' : ' (spec.tls.secretName)';
  const missing = secretProblem(state, tls, [TLS_CERT_KEY, TLS_KEY_KEY, TLS_CA_KEY], origin, 'their certificate');
  return missing === undefined ? undefined : { reason: 'TLSSecretMissing', message: missing };
}

function secretProblem(state: HookState, name: string, keys: string[], origin: string, what: string): string | undefined {
  const secret = findObject(state.related, 'v1', 'Secret', state.namespace, name);
  if (secret === undefined) return `Secret ${name} not found${origin}; pods cannot start without ${what}`;
  const data = secret['data'];
  const stringData = secret['stringData'];
  const absent = keys.filter((key) => !((isRecord(data) && key in data) || (isRecord(stringData) && key in stringData)));
  return absent.length === 0 ? undefined : `Secret ${name} has no key ${absent.join(', ')}; pods cannot start without ${what}`;
}

export interface ValidPlan extends ChildPlan {
  ctx: HookContext;
  /** Spec wishes held back on purpose (the scale-down rule). */
  refusals: string[];
}

/** Replica pods the cluster is running now: what the observed replica StatefulSet asks for; undefined when there is none. */
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
  return { ctx, ...desiredChildren(ctx, state.observed, state.pods), refusals: scale.ok ? [] : [scale.message] };
}

export function validStatus(state: HookState, plan: ValidPlan, deleting?: string) {
  const views = podViews(state.pods, state.name, state.namespace);
  return computeStatus({
    name: state.name,
    namespace: state.namespace,
    pods: state.pods,
    desiredReplicas: plan.ctx.spec.hibernate ? 0 : plan.ctx.spec.replicas,
    previous: state.request.parent.status,
    spec: { valid: true, conflicts: plan.conflicts, refusals: plan.refusals },
    secretProblem: secretsProblem(state, plan.ctx),
    deleting,
    views,
    rollout: rolloutView(state.name, state.namespace, state.observed, state.pods, views),
    hibernate: plan.ctx.spec.hibernate,
    switchover: state.request.parent.metadata.annotations?.[SWITCHOVER_STATUS_ANNOTATION],
  });
}

export function invalidStatus(state: HookState, problems: readonly SpecProblem[]) {
  return computeStatus({
    name: state.name,
    namespace: state.namespace,
    pods: state.pods,
    desiredReplicas: runningReplicas(state) ?? 0,
    previous: state.request.parent.status,
    spec: { valid: false, message: formatProblems(problems) },
  });
}

export function syncResponse(state: HookState): HookResponse {
  if (!state.verdict.ok) {
    return { status: invalidStatus(state, state.verdict.problems), children: state.observed.map(lastAppliedOf) };
  }
  const plan = planValid(state, state.verdict.spec);
  return { status: validStatus(state, plan), children: plan.children };
}
