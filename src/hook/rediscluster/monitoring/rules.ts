// The alert rules of one RedisCluster: the same alerts as a Redis (monitoring.alerts over the
// defaults of api/monitoring.ts: names, thresholds, durations and severities mean the same), with
// the master alerts judged per shard. Pure. Invariants, as redis/monitoring/rules.ts: every
// expression selects this RedisCluster only (namespace and redis label matchers); every alert
// carries namespace, redis and severity; an alert is rendered only where its series can exist (exporter alerts with the
// exporter on, replica alerts with replicas, backup alerts with spec.backup).
// The series: the exporter's, relabelled by the PodMonitor with namespace, pod, redis, pod_role
// (the role label the sidecar writes) and shard (the shard label); and the sidecar's, under the
// same names and labels as for a Redis (redis=<cluster name>).
import type { RedisClusterSpec } from '../../../api/rediscluster-schema.ts';
import { resolveAlerts, type ResolvedAlert } from '../../../api/monitoring.ts';
import {
  POD_ROLE_TARGET_LABEL,
  alertApplies,
  render,
  ruleGroups,
  type Rendered,
  type RuleGroup,
} from '../../common/alert-rules.ts';

/** Target label the cluster's PodMonitor adds to every exporter series: the pod's shard. */
export const SHARD_TARGET_LABEL = 'shard';

/** As on a Redis: no availability alert while hibernating (no pods by design). */
function applies(alert: ResolvedAlert, spec: RedisClusterSpec): boolean {
  const exporter = spec.monitoring.exporter.enabled;
  return alertApplies(alert, { exporter, running: !spec.hibernate, replicas: spec.replicas, backup: spec.backup });
}

/** The master alerts, per shard; every other alert reads as on a Redis. */
function renderRedisCluster(a: ResolvedAlert, spec: RedisClusterSpec, sel: string, who: string): Rendered[] {
  const role = POD_ROLE_TARGET_LABEL;
  switch (a.name) {
    case 'NoMaster':
      return [
        {
          expr: `count by (${SHARD_TARGET_LABEL}) (up{${sel}}) unless on (${SHARD_TARGET_LABEL}) count by (${SHARD_TARGET_LABEL}) (redis_up{${sel},${role}="master"} == 1)`,
          summary: 'RedisCluster shard has no master',
          description: `Shard {{ $labels.${SHARD_TARGET_LABEL} }} of RedisCluster ${who} has no pod both labelled master and answering: its slots are not served.`,
        },
      ];
    case 'MultipleMasters':
      return [
        {
          expr: `count by (${SHARD_TARGET_LABEL}) (redis_up{${sel},${role}="master"}) > 1`,
          summary: 'RedisCluster shard has more than one master',
          description: `{{ $value }} pods of shard {{ $labels.${SHARD_TARGET_LABEL} }} of RedisCluster ${who} are labelled master.`,
        },
      ];
    case 'ReplicasNotInSync':
      return [
        {
          expr: `redis_connected_slaves{${sel},${role}="master"} < ${spec.replicas}`,
          summary: 'RedisCluster replicas not in sync',
          description: `The master {{ $labels.pod }} of shard {{ $labels.${SHARD_TARGET_LABEL} }} of RedisCluster ${who} has {{ $value }} of ${spec.replicas} replicas connected.`,
        },
      ];
    case 'NotRunning':
      // A reshard moves slots while every one is served: Resharding is running too.
      return [
        {
          expr: `max(redis_operator_redis_phase{${sel},phase=~"Running|Resharding"}) == 0`,
          summary: 'RedisCluster not Running',
          description: `RedisCluster ${who} has not been Running for ${a.duration}: see kubectl describe rediscluster (its conditions say why).`,
        },
      ];
    default:
      return render(a, { replicas: spec.replicas, backup: spec.backup }, sel, `${who} (RedisCluster)`);
  }
}

/**
 * The rule groups of RedisCluster `namespace/name` with a validated spec; `runbook` is the base of each alert's runbook
 * URL.
 */
export function redisClusterRuleGroups(
  namespace: string,
  name: string,
  spec: RedisClusterSpec,
  runbook: string,
): RuleGroup[] {
  const alerts = resolveAlerts(spec.monitoring.alerts).filter((a) => applies(a, spec));
  return ruleGroups(
    `redis-operator.rediscluster.${namespace}.${name}`,
    namespace,
    name,
    runbook,
    alerts,
    (a, sel, who) => renderRedisCluster(a, spec, sel, who),
  );
}
