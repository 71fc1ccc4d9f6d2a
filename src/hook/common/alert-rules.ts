// What every kind's alert rules are made of: the rule and group shapes of a PrometheusRule, the
// target labels the PodMonitors add, and how each alert of api/monitoring.ts is rendered for a
// selector. Pure. Invariants:
// - Every alert carries namespace, redis and severity labels, also when its expression
//   aggregates them away.
// - The series are the exporter's (relabelled by each kind's PodMonitor: namespace, pod, redis,
//   pod_role) and the sidecar's own; the names here are the contract with both.
import { longestIntervalSeconds } from '../../api/cron.ts';
import { durationSeconds, type AlertName, type ResolvedAlert } from '../../api/monitoring.ts';
import type { RedisSpec } from '../../api/schema.ts';

export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: { summary: string; description: string; runbook_url: string };
}

export interface RuleGroup {
  name: string;
  rules: AlertRule[];
}

/** Target labels every kind's PodMonitor adds to every exporter series. */
export const REDIS_TARGET_LABEL = 'redis';
export const POD_ROLE_TARGET_LABEL = 'pod_role';

export interface Rendered {
  expr: string;
  for?: string;
  /** Extra labels, to tell apart two rules of one alert (promtool and Alertmanager take same-labelled ones for one). */
  labels?: Record<string, string>;
  summary: string;
  description: string;
}

/** Seconds as a Prometheus duration (whole seconds; the rule files take no fractions). */
/** What decides whether an alert's series can exist, whatever the kind. */
export interface AlertScope {
  exporter: boolean;
  /** Pods are meant to run (a hibernating Redis has none by design). */
  running: boolean;
  replicas: number;
  backup: { schedule?: string | undefined; suspend: boolean } | undefined;
}

/**
 * Whether `alert` is rendered: exporter alerts only with the exporter on, availability alerts only
 * while running, replica alerts only with replicas, backup alerts only with a backup
 * (BackupTooOld only with a schedule it understands, not while suspended).
 */
export function alertApplies(alert: ResolvedAlert, scope: AlertScope): boolean {
  const { exporter, running, backup } = scope;
  switch (alert.name) {
    case 'HighMemoryUsage':
    case 'InstanceDown':
    case 'NoMaster':
    case 'MultipleMasters':
      return exporter && running;
    case 'ReplicationLag':
    case 'ReplicasNotInSync':
      return exporter && running && scope.replicas > 0;
    case 'NotRunning':
    case 'FrequentFailovers':
      return running;
    case 'BackupFailed':
      return backup !== undefined;
    case 'BackupTooOld':
      return (
        backup?.schedule !== undefined &&
        !backup.suspend &&
        running &&
        longestIntervalSeconds(backup.schedule) !== undefined
      );
  }
}

export function asDuration(seconds: number): string {
  return `${Math.max(0, Math.round(seconds))}s`;
}

export function render(
  a: ResolvedAlert,
  spec: Pick<RedisSpec, 'replicas' | 'backup'>,
  sel: string,
  who: string,
): Rendered[] {
  const t = a.threshold ?? 0;
  switch (a.name) {
    case 'HighMemoryUsage':
      return [
        {
          expr: `100 * redis_memory_used_bytes{${sel}} / (redis_memory_max_bytes{${sel}} > 0) > ${t}`,
          summary: `Redis memory above ${t}% of maxmemory`,
          description: `Pod {{ $labels.pod }} of Redis ${who} uses {{ printf "%.1f" $value }}% of its maxmemory (threshold ${t}%). At 100% it evicts keys or refuses writes, depending on maxmemory-policy.`,
        },
      ];
    case 'ReplicationLag':
      return [
        {
          expr: `redis_master_last_io_seconds_ago{${sel}} > ${t}`,
          summary: `Redis replica ${t} s behind its master`,
          description: `Replica {{ $labels.pod }} of Redis ${who} last heard from its master {{ $value }} s ago (threshold ${t} s; the master pings every second).`,
        },
      ];
    case 'InstanceDown':
      return [
        {
          expr: `redis_up{${sel}} == 0 or up{${sel}} == 0`,
          summary: 'Redis node down',
          description: `Pod {{ $labels.pod }} of Redis ${who} does not answer its exporter (or the exporter does not answer Prometheus).`,
        },
      ];
    case 'NoMaster':
      return [
        {
          expr: `absent(redis_up{${sel},${POD_ROLE_TARGET_LABEL}="master"} == 1)`,
          summary: 'Redis has no master',
          description: `No pod of Redis ${who} is both labelled master and answering: writes fail (the master Service has no endpoint).`,
        },
      ];
    case 'MultipleMasters':
      return [
        {
          expr: `count(redis_up{${sel},${POD_ROLE_TARGET_LABEL}="master"}) > 1 or count(redis_instance_info{${sel},role="master"}) > 1`,
          summary: 'Redis has more than one master',
          description: `{{ $value }} pods of Redis ${who} are labelled master or report the master role: a split brain, writes may go to a node that will be demoted.`,
        },
      ];
    case 'NotRunning':
      return [
        {
          expr: `max(redis_operator_redis_phase{${sel},phase="Running"}) == 0`,
          summary: 'Redis not Running',
          description: `Redis ${who} has not been Running for ${a.duration}: see kubectl describe redis (its conditions say why).`,
        },
      ];
    case 'ReplicasNotInSync':
      return [
        {
          expr: `(count(redis_connected_slave_lag_seconds{${sel},${POD_ROLE_TARGET_LABEL}="master",slave_state="online"}) or vector(0)) < ${spec.replicas}`,
          summary: 'Redis replicas not in sync',
          description: `Only {{ $value }} of ${spec.replicas} replicas of Redis ${who} are online with the master.`,
        },
      ];
    case 'FrequentFailovers':
      return [
        {
          expr: `sum(increase(redis_operator_failovers_total{${sel}}[${a.duration}])) > ${t}`,
          for: '0s',
          summary: `Redis failed over more than ${t} times in ${a.duration}`,
          description: `Redis ${who} failed over {{ printf "%.0f" $value }} times in ${a.duration} (threshold ${t}): a master that keeps dying, or detection that is too eager.`,
        },
      ];
    case 'BackupFailed':
      return [
        {
          expr: `max(redis_operator_backup_last_failure_timestamp_seconds{${sel}}) > 0`,
          summary: 'Redis backup failed',
          description: `The last backup of Redis ${who} failed and none succeeded since: see status.backup.lastFailure (kubectl get redis -o yaml).`,
        },
      ];
    case 'BackupTooOld': {
      const window = t * longestIntervalSeconds(spec.backup!.schedule!)!;
      return [
        {
          expr: `time() - max(redis_operator_backup_last_success_timestamp_seconds{${sel}}) > ${Math.round(window)}`,
          summary: 'Redis backup too old',
          description: `The last successful backup of Redis ${who} is older than ${t} times its schedule's interval (${Math.round(window)} s).`,
        },
        {
          expr: `absent(redis_operator_backup_last_success_timestamp_seconds{${sel}}) and on() max(redis_operator_redis_phase{${sel},phase="Running"}) == 1`,
          for: asDuration(Math.max(window, durationSeconds(a.duration) ?? 0)),
          labels: { reason: 'NeverSucceeded' },
          summary: 'Redis never backed up',
          description: `Redis ${who} has been Running for ${Math.round(window)} s without a successful backup.`,
        },
      ];
    }
  }
}

export function rule(
  name: AlertName,
  a: ResolvedAlert,
  r: Rendered,
  namespace: string,
  redis: string,
  runbook: string,
): AlertRule {
  const alert = `Redis${name}`;
  return {
    alert,
    expr: r.expr,
    for: r.for ?? a.duration,
    labels: { namespace, redis, severity: a.severity, ...r.labels },
    annotations: { summary: r.summary, description: r.description, runbook_url: `${runbook}#${alert.toLowerCase()}` },
  };
}

/**
 * The one rule group of `namespace/name` (empty when no alert applies): every alert of `alerts`
 * rendered by `renderAlert` over the selector of this parent's series (namespace and redis label).
 */
export function ruleGroups(
  groupName: string,
  namespace: string,
  name: string,
  runbook: string,
  alerts: readonly ResolvedAlert[],
  renderAlert: (alert: ResolvedAlert, sel: string, who: string) => Rendered[],
): RuleGroup[] {
  const sel = `namespace="${namespace}",${REDIS_TARGET_LABEL}="${name}"`;
  const who = `${namespace}/${name}`;
  const rules: AlertRule[] = [];
  for (const a of alerts) {
    for (const r of renderAlert(a, sel, who)) rules.push(rule(a.name, a, r, namespace, name, runbook));
  }
  return rules.length > 0 ? [{ name: groupName, rules }] : [];
}
