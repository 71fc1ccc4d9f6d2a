// The two objects the monitoring DecoratorController attaches to a Redis or a RedisCluster: a PodMonitor for its
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
  COMPONENT_LABEL,
  INSTANCE_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  METRICS_PORT_NAME,
  NAME_LABEL,
  PART_OF_LABEL,
  ROLE_LABEL,
  childNames,
  podSelectorLabels,
} from '../../../api/labels.ts';
import { CLUSTER_APP_NAME, SHARD_LABEL, clusterPodSelectorLabels } from '../../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../../api/rediscluster-schema.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import type { KubeObject } from '../../common/types.ts';
import { sortedMap } from '../../common/util.ts';
import { clusterRuleGroups, SHARD_TARGET_LABEL } from '../../rediscluster/monitoring/rules.ts';
import { POD_ROLE_TARGET_LABEL, REDIS_TARGET_LABEL, redisRuleGroups } from './rules.ts';

export const MONITORING_API_VERSION = 'monitoring.coreos.com/v1';

/** A pod label as Prometheus' Kubernetes discovery names it (every character outside [a-zA-Z0-9_] becomes _). */
export function podLabelMeta(label: string): string {
  return `__meta_kubernetes_pod_label_${label.replace(/[^a-zA-Z0-9_]/g, '_')}`;
}

function labelsOf(name: string, spec: RedisSpec, component: string): Record<string, string> {
  return sortedMap({
    ...(spec.monitoring.prometheus.labels ?? {}),
    [NAME_LABEL]: APP_NAME,
    [INSTANCE_LABEL]: name,
    [COMPONENT_LABEL]: component,
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [PART_OF_LABEL]: APP_NAME,
  });
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

// ---- RedisCluster ----

function clusterLabelsOf(name: string, spec: RedisClusterSpec, component: string): Record<string, string> {
  return sortedMap({
    ...(spec.monitoring.prometheus.labels ?? {}),
    [NAME_LABEL]: CLUSTER_APP_NAME,
    [INSTANCE_LABEL]: name,
    [COMPONENT_LABEL]: component,
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [PART_OF_LABEL]: CLUSTER_APP_NAME,
  });
}

/** A RedisCluster's PodMonitor: its pods only, with the shard as a target label (the per-shard alerts group by it). */
export function desiredClusterPodMonitor(namespace: string, name: string, spec: RedisClusterSpec): KubeObject {
  const interval = spec.monitoring.prometheus.scrapeInterval;
  return {
    apiVersion: MONITORING_API_VERSION,
    kind: 'PodMonitor',
    metadata: { name, namespace, labels: clusterLabelsOf(name, spec, 'pod-monitor') },
    spec: {
      selector: { matchLabels: clusterPodSelectorLabels(name) },
      namespaceSelector: { matchNames: [namespace] },
      podMetricsEndpoints: [
        {
          port: METRICS_PORT_NAME,
          path: '/metrics',
          ...(interval !== undefined ? { interval } : {}),
          relabelings: [
            { sourceLabels: [podLabelMeta(INSTANCE_LABEL)], targetLabel: REDIS_TARGET_LABEL, action: 'replace' },
            { sourceLabels: [podLabelMeta(ROLE_LABEL)], targetLabel: POD_ROLE_TARGET_LABEL, action: 'replace' },
            { sourceLabels: [podLabelMeta(SHARD_LABEL)], targetLabel: SHARD_TARGET_LABEL, action: 'replace' },
          ],
        },
      ],
    },
  };
}

export function desiredClusterPrometheusRule(namespace: string, name: string, spec: RedisClusterSpec, runbook: string): KubeObject {
  return {
    apiVersion: MONITORING_API_VERSION,
    kind: 'PrometheusRule',
    metadata: { name, namespace, labels: clusterLabelsOf(name, spec, 'alerts') },
    spec: { groups: clusterRuleGroups(namespace, name, spec, runbook) },
  };
}
