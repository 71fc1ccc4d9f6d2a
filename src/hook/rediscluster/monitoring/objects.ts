// The two objects the monitoring DecoratorController attaches to a RedisCluster: a PodMonitor for
// its exporters and a PrometheusRule with its alerts (monitoring.coreos.com/v1). Pure. Invariants
// as for a Redis (redis/monitoring/objects.ts), and the PodMonitor turns the shard label into a
// target label too (the per-shard alerts group by it).
import { REDIS_CLUSTER_APP_NAME, SHARD_LABEL, redisClusterPodSelectorLabels } from '../../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../../api/rediscluster-schema.ts';
import { validateRedisClusterSpec } from '../../../api/rediscluster-validate.ts';
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
import { redisClusterRuleGroups, SHARD_TARGET_LABEL } from './rules.ts';

/** Both attachments are named as the RedisCluster itself. */
function metaOf(namespace: string, name: string, spec: RedisClusterSpec, component: string): AttachmentMeta {
  const labels = monitoringLabels(REDIS_CLUSTER_APP_NAME, name, spec.monitoring.prometheus.labels, component);
  return { name, namespace, labels };
}

/** A RedisCluster's PodMonitor: its pods only, with the shard as a target label (the per-shard alerts group by it). */
export function desiredRedisClusterPodMonitor(namespace: string, name: string, spec: RedisClusterSpec): KubeObject {
  return podMonitorObject(
    metaOf(namespace, name, spec, 'pod-monitor'),
    redisClusterPodSelectorLabels(name),
    spec.monitoring.prometheus.scrapeInterval,
    [[SHARD_LABEL, SHARD_TARGET_LABEL]],
  );
}

export function desiredRedisClusterPrometheusRule(
  namespace: string,
  name: string,
  spec: RedisClusterSpec,
  runbook: string,
): KubeObject {
  return prometheusRuleObject(
    metaOf(namespace, name, spec, 'alerts'),
    redisClusterRuleGroups(namespace, name, spec, runbook),
  );
}

/** The monitoring decorator's answer for a RedisCluster: its spec, its pods, per-shard master alerts. */
export function syncRedisClusterMonitoring(request: DecoratorRequest, options: HookOptions): MonitoringVerdict {
  const { name, namespace } = request.object.metadata;
  return monitoringVerdict(request, validateRedisClusterSpec(name, request.object.spec), {
    podMonitor: (spec) => desiredRedisClusterPodMonitor(namespace, name, spec),
    prometheusRule: (spec) => desiredRedisClusterPrometheusRule(namespace, name, spec, options.runbookBaseUrl),
  });
}
