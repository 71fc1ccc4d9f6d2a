// The monitoring DecoratorController's sync hook (manifests/components/monitoring, route
// /monitoring/sync): the PodMonitor and PrometheusRule of one Redis or RedisCluster (by the
// object's kind), as attachments. Pure, like
// the Redis hook. Invariants:
// - Never a status, labels or annotations: the Redis's status is the CompositeController's, and
//   a decorator answer without `status` leaves it as it is.
// - An invalid spec changes nothing: every observed attachment comes back as last applied (the
//   Redis's own status already names the problem), so a typo never deletes a team's alerts.
// - Monitoring or Prometheus turned off: no attachments (Metacontroller deletes them). Without
//   the exporter there is no PodMonitor, and the rules keep only the alerts the sidecar feeds.
import { CLUSTER_KIND } from '../../api/rediscluster-names.ts';
import { validateClusterSpec } from '../../api/rediscluster-validate.ts';
import { validateSpec } from '../../api/validate.ts';
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from './options.ts';
import { lastAppliedOf, objectsOf } from './observed.ts';
import type { ParseResult } from './types.ts';
import { wireChecker } from './wire-check.ts';
import { DecoratorRequestBody, type DecoratorRequest, type DecoratorResponse, type KubeObject } from './wire.ts';
import { desiredClusterPodMonitor, desiredClusterPrometheusRule, desiredPodMonitor, desiredPrometheusRule, MONITORING_API_VERSION } from '../redis/monitoring/objects.ts';

const decoratorRequestBody = wireChecker(DecoratorRequestBody);

export function parseDecoratorRequest(body: unknown): ParseResult<DecoratorRequest> {
  if (!decoratorRequestBody.is(body)) return { ok: false, message: decoratorRequestBody.problem(body)?.message ?? 'not a decorator request' };
  return {
    ok: true,
    request: {
      ...(body.controller !== undefined ? { controller: body.controller } : {}),
      object: body.object,
      attachments: body.attachments ?? {},
      related: body.related ?? {},
      finalizing: body.finalizing ?? false,
    },
  };
}

/** Ours to echo: the attachment kinds this decorator declares, in the Redis's namespace. */
function observedAttachments(request: DecoratorRequest): KubeObject[] {
  const namespace = request.object.metadata.namespace;
  return objectsOf(request.attachments).filter(
    (o) =>
      o.apiVersion === MONITORING_API_VERSION && (o.kind === 'PodMonitor' || o.kind === 'PrometheusRule') && (o.metadata.namespace ?? namespace) === namespace,
  );
}

export interface MonitoringVerdict {
  response: DecoratorResponse;
  /** The spec was invalid and everything was echoed (for the route's outcome label and log). */
  invalidSpec: boolean;
}

export function syncMonitoring(request: DecoratorRequest, options: HookOptions = DEFAULT_HOOK_OPTIONS): MonitoringVerdict {
  if (request.object.kind === CLUSTER_KIND) return syncClusterMonitoring(request, options);
  const { name, namespace } = request.object.metadata;
  const verdict = validateSpec(name, request.object.spec);
  if (!verdict.ok) return { response: { attachments: observedAttachments(request).map(lastAppliedOf) }, invalidSpec: true };
  const spec = verdict.spec;
  if (!spec.monitoring.enabled || !spec.monitoring.prometheus.enabled) return { response: { attachments: [] }, invalidSpec: false };
  const attachments: KubeObject[] = [];
  if (spec.monitoring.exporter.enabled) attachments.push(desiredPodMonitor(namespace, name, spec));
  attachments.push(desiredPrometheusRule(namespace, name, spec, options.runbookBaseUrl));
  return { response: { attachments }, invalidSpec: false };
}

/** The same for a RedisCluster (the decorator's second resource): its spec, its pods, per-shard master alerts. */
function syncClusterMonitoring(request: DecoratorRequest, options: HookOptions): MonitoringVerdict {
  const { name, namespace } = request.object.metadata;
  const verdict = validateClusterSpec(name, request.object.spec);
  if (!verdict.ok) return { response: { attachments: observedAttachments(request).map(lastAppliedOf) }, invalidSpec: true };
  const spec = verdict.spec;
  if (!spec.monitoring.enabled || !spec.monitoring.prometheus.enabled) return { response: { attachments: [] }, invalidSpec: false };
  const attachments: KubeObject[] = [];
  if (spec.monitoring.exporter.enabled) attachments.push(desiredClusterPodMonitor(namespace, name, spec));
  attachments.push(desiredClusterPrometheusRule(namespace, name, spec, options.runbookBaseUrl));
  return { response: { attachments }, invalidSpec: false };
}
