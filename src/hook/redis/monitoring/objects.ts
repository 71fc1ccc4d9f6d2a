// The two objects the monitoring DecoratorController attaches to a Redis: a PodMonitor for its
// exporters and a PrometheusRule with its alerts (monitoring.coreos.com/v1, the Prometheus
// Operator's API). Pure. Invariants:
// - The PodMonitor selects this Redis's pods only (the pod selector labels, never the role) in
//   its own namespace, and turns two pod labels into target labels every alert relies on:
//   `redis` (the instance label) and `pod_role` (the role label the sidecar writes; not `role`,
//   which redis_instance_info carries itself and Prometheus would rename).
// - Labels are the Redis's own app labels plus spec.monitoring.prometheus.labels, so a
//   Prometheus's podMonitorSelector/ruleSelector can pick them up. Metadata is name, namespace,
//   labels; ownerReferences are Metacontroller's.
import { APP_NAME, childNames, podSelectorLabels } from '../../../api/labels.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import { validateSpec } from '../../../api/validate.ts';
import {
  monitoringLabels,
  monitoringVerdict,
  podMonitorObject,
  prometheusRuleObject,
  type AttachmentMeta,
  type MonitoringVerdict,
} from '../../common/monitoring.ts';
import type { HookOptions } from '../../common/options.ts';
import type { KubeObject } from '../../common/types.ts';
import type { DecoratorRequest } from '../../common/wire.ts';
import { redisRuleGroups } from './rules.ts';

function metaOf(
  objectName: string,
  namespace: string,
  name: string,
  spec: RedisSpec,
  component: string,
): AttachmentMeta {
  const labels = monitoringLabels(APP_NAME, name, spec.monitoring.prometheus.labels, component);
  return { name: objectName, namespace, labels };
}

export function desiredPodMonitor(namespace: string, name: string, spec: RedisSpec): KubeObject {
  return podMonitorObject(
    metaOf(childNames(name).podMonitor, namespace, name, spec, 'pod-monitor'),
    podSelectorLabels(name),
    spec.monitoring.prometheus.scrapeInterval,
  );
}

export function desiredPrometheusRule(namespace: string, name: string, spec: RedisSpec, runbook: string): KubeObject {
  return prometheusRuleObject(
    metaOf(childNames(name).prometheusRule, namespace, name, spec, 'alerts'),
    redisRuleGroups(namespace, name, spec, runbook),
  );
}

/** The monitoring decorator's answer for a Redis. */
export function syncRedisMonitoring(request: DecoratorRequest, options: HookOptions): MonitoringVerdict {
  const { name, namespace } = request.object.metadata;
  return monitoringVerdict(request, validateSpec(name, request.object.spec), {
    podMonitor: (spec) => desiredPodMonitor(namespace, name, spec),
    prometheusRule: (spec) => desiredPrometheusRule(namespace, name, spec, options.runbookBaseUrl),
  });
}
