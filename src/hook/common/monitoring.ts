// What the monitoring DecoratorController's sync hook (manifests/components/monitoring, route
// /monitoring/sync) does for every kind: parse the request, decide which attachments (PodMonitor,
// PrometheusRule) exist, label them. Each kind builds its own two objects (redis/monitoring,
// rediscluster/monitoring); index.ts picks the kind by the object's. Pure. Invariants:
// - Never a status, labels or annotations: the Redis's status is the CompositeController's, and
//   a decorator answer without `status` leaves it as it is.
// - An invalid spec changes nothing: every observed attachment comes back as last applied (the
//   Redis's own status already names the problem), so a typo never deletes a team's alerts.
// - A parent its sync hook refused for its names (Ready: NameConflict, api/name-conflict.ts)
//   changes nothing either: its PodMonitor and PrometheusRule would take the older parent's names.
// - Monitoring or Prometheus turned off: no attachments (Metacontroller deletes them). Without
//   the exporter there is no PodMonitor, and the rules keep only the alerts the sidecar feeds.
import {
  COMPONENT_LABEL,
  INSTANCE_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  METRICS_PORT_NAME,
  NAME_LABEL,
  PART_OF_LABEL,
  ROLE_LABEL,
} from '../../api/labels.ts';
import { refusedForName } from '../../api/name-conflict.ts';
import { POD_ROLE_TARGET_LABEL, REDIS_TARGET_LABEL } from './alert-rules.ts';
import { lastAppliedOf, objectsOf } from './observed.ts';
import type { ParseResult } from './types.ts';
import { wireChecker } from './wire-check.ts';
import { DecoratorRequestBody, type DecoratorRequest, type DecoratorResponse, type KubeObject } from './wire.ts';
import { sortedMap } from './util.ts';

const decoratorRequestBody = wireChecker(DecoratorRequestBody);

/** The request the hook works on, from a body already checked against DecoratorRequestBody (the route does). */
export function decoratorRequestOf(body: DecoratorRequestBody): DecoratorRequest {
  return {
    ...(body.controller !== undefined ? { controller: body.controller } : {}),
    object: body.object,
    attachments: body.attachments ?? {},
    related: body.related ?? {},
    finalizing: body.finalizing ?? false,
  };
}

/** Check, then decoratorRequestOf: for callers holding unchecked JSON (tests); the route checks once itself. */
export function parseDecoratorRequest(body: unknown): ParseResult<DecoratorRequest> {
  if (decoratorRequestBody.is(body)) return { ok: true, request: decoratorRequestOf(body) };
  return { ok: false, message: decoratorRequestBody.problem(body)?.message ?? 'not a decorator request' };
}

/** Ours to echo: the attachment kinds this decorator declares, in the Redis's namespace. */
function observedAttachments(request: DecoratorRequest): KubeObject[] {
  const namespace = request.object.metadata.namespace;
  return objectsOf(request.attachments).filter(
    (o) =>
      o.apiVersion === MONITORING_API_VERSION &&
      (o.kind === 'PodMonitor' || o.kind === 'PrometheusRule') &&
      (o.metadata.namespace ?? namespace) === namespace,
  );
}

export interface MonitoringVerdict {
  response: DecoratorResponse;
  /** The spec was invalid and everything was echoed (for the route's outcome label and log). */
  invalidSpec: boolean;
}

/** What every monitored kind's spec has: the switches that decide which attachments exist. */
interface MonitoredSpec {
  monitoring: { enabled: boolean; exporter: { enabled: boolean }; prometheus: { enabled: boolean } };
}

/** A kind's two attachments, built from its validated spec. */
export interface MonitoringObjects<S> {
  podMonitor: (spec: S) => KubeObject;
  prometheusRule: (spec: S) => KubeObject;
}

/**
 * The decorator's answer for one object, whatever its kind: everything echoed when its spec is
 * invalid; nothing when monitoring or Prometheus is off; else the PodMonitor (only with the
 * exporter) and the PrometheusRule.
 */
export function monitoringVerdict<S extends MonitoredSpec>(
  request: DecoratorRequest,
  verdict: { ok: true; spec: S } | { ok: false },
  objects: MonitoringObjects<S>,
): MonitoringVerdict {
  if (!verdict.ok || refusedForName(request.object.status))
    return { response: { attachments: observedAttachments(request).map(lastAppliedOf) }, invalidSpec: !verdict.ok };
  const spec = verdict.spec;
  if (!spec.monitoring.enabled || !spec.monitoring.prometheus.enabled)
    return { response: { attachments: [] }, invalidSpec: false };
  const attachments: KubeObject[] = [];
  if (spec.monitoring.exporter.enabled) attachments.push(objects.podMonitor(spec));
  attachments.push(objects.prometheusRule(spec));
  return { response: { attachments }, invalidSpec: false };
}

export const MONITORING_API_VERSION = 'monitoring.coreos.com/v1';

/** A pod label as Prometheus' Kubernetes discovery names it (every character outside [a-zA-Z0-9_] becomes _). */
export function podLabelMeta(label: string): string {
  return `__meta_kubernetes_pod_label_${label.replace(/[^a-zA-Z0-9_]/g, '_')}`;
}

/** The labels of a kind's PodMonitor and PrometheusRule: its app labels over spec.monitoring.prometheus.labels. */
export function monitoringLabels(
  appName: string,
  name: string,
  prometheusLabels: Record<string, string> | undefined,
  component: string,
): Record<string, string> {
  return sortedMap({
    ...(prometheusLabels ?? {}),
    [NAME_LABEL]: appName,
    [INSTANCE_LABEL]: name,
    [COMPONENT_LABEL]: component,
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [PART_OF_LABEL]: appName,
  });
}

/** Where a kind's PodMonitor or PrometheusRule goes: its object name, namespace and labels. */
export interface AttachmentMeta {
  name: string;
  namespace: string;
  labels: Record<string, string>;
}

/**
 * A kind's PodMonitor: the pods `selector` picks in its own namespace only, with the instance and
 * role pod labels (and `targetLabels`, pod label to target label, after them) as target labels.
 */
export function podMonitorObject(
  meta: AttachmentMeta,
  selector: Record<string, string>,
  interval: string | undefined,
  targetLabels: readonly (readonly [podLabel: string, targetLabel: string])[] = [],
): KubeObject {
  const relabel = ([podLabel, targetLabel]: readonly [string, string]) => ({
    sourceLabels: [podLabelMeta(podLabel)],
    targetLabel,
    action: 'replace',
  });
  const pairs: (readonly [string, string])[] = [
    [INSTANCE_LABEL, REDIS_TARGET_LABEL],
    [ROLE_LABEL, POD_ROLE_TARGET_LABEL],
    ...targetLabels,
  ];
  return {
    apiVersion: MONITORING_API_VERSION,
    kind: 'PodMonitor',
    metadata: { name: meta.name, namespace: meta.namespace, labels: meta.labels },
    spec: {
      selector: { matchLabels: selector },
      namespaceSelector: { matchNames: [meta.namespace] },
      podMetricsEndpoints: [
        {
          port: METRICS_PORT_NAME,
          path: '/metrics',
          ...(interval !== undefined ? { interval } : {}),
          relabelings: pairs.map(relabel),
        },
      ],
    },
  };
}

/** A kind's PrometheusRule holding its alert `groups`. */
export function prometheusRuleObject(meta: AttachmentMeta, groups: unknown[]): KubeObject {
  return {
    apiVersion: MONITORING_API_VERSION,
    kind: 'PrometheusRule',
    metadata: { name: meta.name, namespace: meta.namespace, labels: meta.labels },
    spec: { groups },
  };
}
