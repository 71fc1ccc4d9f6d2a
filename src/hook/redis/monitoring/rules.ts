// The alert rules of one Redis, rendered from its spec (monitoring.alerts over the defaults of
// api/monitoring.ts) into a PrometheusRule's groups; each alert is rendered by
// common/alert-rules.ts. Pure. Invariants:
// - Every expression selects this Redis only (namespace and redis label matchers).
// - An alert is rendered only where its series can exist: exporter alerts only with the exporter
//   on, availability alerts not while hibernating (no pods by design), replica alerts only with
//   replicas, backup alerts only with spec.backup (BackupTooOld not while suspended).
import { resolveAlerts, type ResolvedAlert } from '../../../api/monitoring.ts';
import type { RedisSpec } from '../../../api/schema.ts';
import { alertApplies, render, ruleGroups, type RuleGroup } from '../../common/alert-rules.ts';

function applies(alert: ResolvedAlert, spec: RedisSpec): boolean {
  const exporter = spec.monitoring.exporter.enabled;
  return alertApplies(alert, { exporter, running: !spec.hibernate, replicas: spec.replicas, backup: spec.backup });
}

/**
 * The rule groups of Redis `namespace/name` with validated `spec`; `runbook` is the base of each alert's runbook URL.
 */
export function redisRuleGroups(namespace: string, name: string, spec: RedisSpec, runbook: string): RuleGroup[] {
  const alerts = resolveAlerts(spec.monitoring.alerts).filter((a) => applies(a, spec));
  return ruleGroups(`redis-operator.${namespace}.${name}`, namespace, name, runbook, alerts, (a, sel, who) =>
    render(a, spec, sel, who),
  );
}
