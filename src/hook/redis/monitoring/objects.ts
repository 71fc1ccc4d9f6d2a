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
import {
  APP_NAME,
  INSTANCE_LABEL,
  METRICS_PORT_NAME,
  ROLE_LABEL,
  childNames,
  podSelectorLabels,
} from '../../../api/labels.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import { validateSpec } from '../../../api/validate.ts';
import { POD_ROLE_TARGET_LABEL, REDIS_TARGET_LABEL } from '../../common/alert-rules.ts';
import {
  MONITORING_API_VERSION,
  monitoringLabels,
  monitoringVerdict,
  podLabelMeta,
  type MonitoringVerdict,
} from '../../common/monitoring.ts';
import type { HookOptions } from '../../common/options.ts';
import type { KubeObject } from '../../common/types.ts';
import type { DecoratorRequest } from '../../common/wire.ts';
import { redisRuleGroups } from './rules.ts';

function labelsOf(name: string, spec: RedisSpec, component: string): Record<string, string> {
  return monitoringLabels(APP_NAME, name, spec.monitoring.prometheus.labels, component);
}

export function desiredPodMonitor(namespace: string, name: string, spec: RedisSpec): KubeObject {
  const interval = spec.monitoring.prometheus.scrapeInterval;
  return {
    apiVersion: MONITORING_API_VERSION,
    kind: 'PodMonitor',
    metadata: { name: childNames(name).podMonitor, namespace, labels: labelsOf(name, spec, 'pod-monitor') },
    spec: {
      selector: { matchLabels: podSelectorLabels(name) },
      namespaceSelector: { matchNames: [namespace] },
      podMetricsEndpoints: [
        {
          port: METRICS_PORT_NAME,
          path: '/metrics',
          ...(interval !== undefined ? { interval } : {}),
          relabelings: [
            { sourceLabels: [podLabelMeta(INSTANCE_LABEL)], targetLabel: REDIS_TARGET_LABEL, action: 'replace' },
            { sourceLabels: [podLabelMeta(ROLE_LABEL)], targetLabel: POD_ROLE_TARGET_LABEL, action: 'replace' },
          ],
        },
      ],
    },
  };
}

export function desiredPrometheusRule(namespace: string, name: string, spec: RedisSpec, runbook: string): KubeObject {
  return {
    apiVersion: MONITORING_API_VERSION,
    kind: 'PrometheusRule',
    metadata: { name: childNames(name).prometheusRule, namespace, labels: labelsOf(name, spec, 'alerts') },
    spec: { groups: redisRuleGroups(namespace, name, spec, runbook) },
  };
}

/** The monitoring decorator's answer for a Redis. */
export function syncRedisMonitoring(request: DecoratorRequest, options: HookOptions): MonitoringVerdict {
  const { name, namespace } = request.object.metadata;
  return monitoringVerdict(request, validateSpec(name, request.object.spec), {
    podMonitor: (spec) => desiredPodMonitor(namespace, name, spec),
    prometheusRule: (spec) => desiredPrometheusRule(namespace, name, spec, options.runbookBaseUrl),
  });
}
