// From Kubernetes objects to the decision layer's inputs: which pods belong to a Redis, what the
// API says about each (PodObservation minus the probe track), the spec view and the decision
// timings; and back: what a label patch's outcome means to the executor. Pure.
// Invariants: a pod belongs to a Redis only when it carries all of podSelectorLabels(name) in the
// Redis' namespace (the same labels the hook's Services use, never the role); a label overlay
// (what our own patch returned, while the informer has not caught up) wins only while it is not
// older than the informer's copy, so a later change by someone else is never hidden; a pod that is
// gone (404) or replaced (uid precondition) counts as done when the patch takes a label away, and
// as a failure when it gives the master label (replanned from the next pod list).
import { engineField } from '../../../api/node-engine.ts';
import type { V1Pod } from '@kubernetes/client-node';
import {
  COMPONENT_LABEL,
  COMPONENT_MASTER_SET,
  COMPONENT_REPLICA_SET,
  LINK_ANNOTATION,
  REPLICATION_ANNOTATION,
  ROLE_LABEL,
  ROLE_MASTER,
} from '../../../api/labels.ts';
import { desiredRuntimeConfig } from '../../../api/config-directives.ts';
import { podBelongsTo } from '../../../api/membership.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import type { ManagerTiming } from '../../config.ts';
import {
  DEFAULT_DECIDE_CONFIG,
  type DecideConfig,
  type PodObservation,
  type RedisTrack,
  type SpecView,
} from '../decide/index.ts';
import { redisContainerGone } from '../../core/container-status.ts';
import type { Overlay, PodPatchResult } from '../../core/pod-labels.ts';
import type { LabelResult, LabelStep } from './steps.ts';

export type { Overlay } from '../../core/pod-labels.ts';

/** What the API says about one pod (the observation without our probes). */
export interface PodView {
  uid: string;
  name: string;
  namespace: string;
  resourceVersion: string;
  component: PodObservation['component'];
  ip: string | null;
  phase: string | null;
  ready: boolean;
  deleting: boolean;
  /** The redis container's status says it is not running (see PodObservation.redisContainerGone). */
  redisContainerGone: boolean;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The one membership rule (src/api/membership.ts), for a pod of the informer. */
export function belongsTo(pod: V1Pod, namespace: string, name: string): boolean {
  return podBelongsTo(pod.metadata, { namespace, name });
}

export { redisContainerGone };

export function podView(pod: V1Pod): PodView | null {
  const m = pod.metadata;
  if (!m?.name || !m.uid || !m.namespace) return null;
  const component = m.labels?.[COMPONENT_LABEL];
  const ready = (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  return {
    uid: m.uid,
    name: m.name,
    namespace: m.namespace,
    resourceVersion: m.resourceVersion ?? '',
    component: component === COMPONENT_MASTER_SET || component === COMPONENT_REPLICA_SET ? component : null,
    ip: pod.status?.podIP || null,
    phase: pod.status?.phase ?? null,
    ready,
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    redisContainerGone: redisContainerGone(pod),
    labels: { ...(m.labels ?? {}) },
    annotations: { ...(m.annotations ?? {}) },
  };
}

/**
 * Is `a` a later resourceVersion than `b`? They are opaque strings to clients, but etcd revisions
 * (and the stand-in's) are integers; anything else compares as "not later" so the informer's
 * copy wins once it shows a different version.
 */
export function newerVersion(a: string, b: string): boolean {
  if (/^\d+$/.test(a) && /^\d+$/.test(b)) return BigInt(a) > BigInt(b);
  return false;
}

/** The overlay applies while the informer's copy is older than what our patch returned. */
export function overlayApplies(view: PodView, overlay: Overlay | undefined): overlay is Overlay {
  if (!overlay) return false;
  if (view.resourceVersion === overlay.resourceVersion) return false;
  return newerVersion(overlay.resourceVersion, view.resourceVersion);
}

export function observation(view: PodView, track: RedisTrack | null, overlay?: Overlay): PodObservation {
  const meta = overlayApplies(view, overlay) ? overlay : view;
  return {
    name: view.name,
    component: view.component,
    ip: view.ip,
    phase: view.phase,
    ready: view.ready,
    deleting: view.deleting,
    redisContainerGone: view.redisContainerGone,
    roleLabel: meta.labels[ROLE_LABEL] ?? null,
    linkAnnotation: meta.annotations[LINK_ANNOTATION] ?? null,
    redis: track && track.ip === view.ip ? track : track && view.ip === null ? track : null,
  };
}

export function specView(spec: RedisSpec): SpecView {
  return {
    replicas: spec.replicas,
    minReplicasToWrite: spec.failover.minReplicasToWrite,
    minReplicasMaxLagSeconds: spec.failover.minReplicasMaxLagSeconds,
    persistence: spec.persistence.enableRdb || spec.persistence.enableAof,
    hibernate: spec.hibernate,
    runtimeConfig: desiredRuntimeConfig(spec.config),
    ...engineField(spec),
  };
}

export function decideConfig(spec: RedisSpec, timing: ManagerTiming): DecideConfig {
  return {
    downAfterMs: spec.failover.downAfterMilliseconds,
    // Fixed by the ConfigMap's repl-ping-replica-period and the decide layer, not by the spec.
    silentAfterSeconds: DEFAULT_DECIDE_CONFIG.silentAfterSeconds,
    offsetStallMs: DEFAULT_DECIDE_CONFIG.offsetStallMs,
    witnessConfirmMs: timing.witnessConfirmMs,
    staleAfterMs: timing.staleAfterMs,
    maxReplicaLinkDownMs: DEFAULT_DECIDE_CONFIG.maxReplicaLinkDownMs,
    maxPartialWaitMs: timing.maxPartialWaitMs,
    crashConfirmMs: timing.crashConfirmMs,
  };
}

/**
 * What about a pod can change a decision: everything the API says of it but the annotations the
 * sidecar writes for humans (REPLICATION_ANNOTATION) and bookkeeping (resourceVersion,
 * managedFields). A pod update that leaves this unchanged wakes no worker: the sidecar's own
 * replication report must not stir its Redis into fast probing (600 such writes at once had a
 * fleet probing at ten times the rest rate).
 */
export function podChangeKey(pod: V1Pod): string {
  const m = pod.metadata ?? {};
  const annotations = { ...(m.annotations ?? {}) };
  delete annotations[REPLICATION_ANNOTATION];
  return JSON.stringify([
    m.uid,
    m.labels ?? null,
    annotations,
    m.deletionTimestamp ?? null,
    m.finalizers ?? null,
    pod.spec?.nodeName ?? null,
    pod.status ?? null,
  ]);
}

/** What a label step's patch did, as the executor counts it. */
export function labelResult(step: LabelStep, r: PodPatchResult): LabelResult {
  if (r.ok) return { ok: true };
  const f = r.failure;
  if (r.gone !== null) {
    if (step.patch.metadata.labels?.[ROLE_LABEL] !== ROLE_MASTER) return { ok: true, gone: true };
    return { ok: false, gone: true, code: f.code, message: r.gone === 'replaced' ? 'pod replaced' : 'pod gone' };
  }
  return { ok: false, code: f.code, message: `${f.code ?? 'no answer'} ${f.reason ?? ''} ${f.message}`.trim() };
}
