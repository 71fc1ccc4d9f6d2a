// The two objects the monitoring DecoratorController attaches to a RedisCluster: a PodMonitor for
// its exporters and a PrometheusRule with its alerts (monitoring.coreos.com/v1). Pure. Invariants
// as for a Redis (redis/monitoring/objects.ts), and the PodMonitor turns the shard label into a
// target label too (the per-shard alerts group by it).
import { INSTANCE_LABEL, METRICS_PORT_NAME, ROLE_LABEL } from '../../../api/labels.ts';
import { REDIS_CLUSTER_APP_NAME, SHARD_LABEL, redisClusterPodSelectorLabels } from '../../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../../api/rediscluster-schema.ts';
import { validateRedisClusterSpec } from '../../../api/rediscluster-validate.ts';
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
import { redisClusterRuleGroups, SHARD_TARGET_LABEL } from './rules.ts';

function redisClusterLabelsOf(name: string, spec: RedisClusterSpec, component: string): Record<string, string> {
  return monitoringLabels(REDIS_CLUSTER_APP_NAME, name, spec.monitoring.prometheus.labels, component);
}

/** A RedisCluster's PodMonitor: its pods only, with the shard as a target label (the per-shard alerts group by it). */
export function desiredRedisClusterPodMonitor(namespace: string, name: string, spec: RedisClusterSpec): KubeObject {
  const interval = spec.monitoring.prometheus.scrapeInterval;
  return {
    apiVersion: MONITORING_API_VERSION,
    kind: 'PodMonitor',
    metadata: { name, namespace, labels: redisClusterLabelsOf(name, spec, 'pod-monitor') },
    spec: {
      selector: { matchLabels: redisClusterPodSelectorLabels(name) },
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

export function desiredRedisClusterPrometheusRule(
  namespace: string,
  name: string,
  spec: RedisClusterSpec,
  runbook: string,
): KubeObject {
  return {
    apiVersion: MONITORING_API_VERSION,
    kind: 'PrometheusRule',
    metadata: { name, namespace, labels: redisClusterLabelsOf(name, spec, 'alerts') },
    spec: { groups: redisClusterRuleGroups(namespace, name, spec, runbook) },
  };
}

/** The monitoring decorator's answer for a RedisCluster: its spec, its pods, per-shard master alerts. */
export function syncRedisClusterMonitoring(request: DecoratorRequest, options: HookOptions): MonitoringVerdict {
  const { name, namespace } = request.object.metadata;
  return monitoringVerdict(request, validateRedisClusterSpec(name, request.object.spec), {
    podMonitor: (spec) => desiredRedisClusterPodMonitor(namespace, name, spec),
    prometheusRule: (spec) => desiredRedisClusterPrometheusRule(namespace, name, spec, options.runbookBaseUrl),
  });
}
