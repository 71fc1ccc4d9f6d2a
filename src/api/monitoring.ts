// The alerts a Redis can have, what each one's threshold and duration mean, and their defaults:
// the one answer the schema (descriptions, the enum), the validator (a bad threshold named by its
// field) and the hook's rule builder share. Pure.
// Invariants: every alert has a default for everything, so an empty `monitoring.alerts` means
// every alert with its defaults; a threshold is read in the alert's own unit only (a percentage
// is never taken for seconds); durations are Prometheus durations, kept as written.

export const ALERT_NAMES = [
  'HighMemoryUsage',
  'ReplicationLag',
  'InstanceDown',
  'NoMaster',
  'MultipleMasters',
  'NotRunning',
  'ReplicasNotInSync',
  'FrequentFailovers',
  'BackupFailed',
  'BackupTooOld',
] as const;
export type AlertName = (typeof ALERT_NAMES)[number];
export type Severity = 'critical' | 'warning' | 'info';

/** Prometheus' model.ParseDuration shape: units from years to milliseconds, each at most once, in order. */
export const PROMETHEUS_DURATION_PATTERN =
  '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$';
const DURATION = new RegExp(PROMETHEUS_DURATION_PATTERN);
const UNIT_SECONDS: Record<string, number> = {
  y: 365 * 86400,
  w: 7 * 86400,
  d: 86400,
  h: 3600,
  m: 60,
  s: 1,
  ms: 0.001,
};

/** Seconds in a Prometheus duration (`1h30m`, `10s`, `0`), or undefined when it is not one. */
export function durationSeconds(text: string): number | undefined {
  if (text === '' || !DURATION.test(text)) return undefined;
  let total = 0;
  for (const m of text.matchAll(/([0-9]+)(ms|y|w|d|h|m|s)/g)) total += Number(m[1]) * UNIT_SECONDS[m[2]!]!;
  return total;
}

/** What a threshold is measured in; `none` takes no threshold. */
export type ThresholdUnit = 'percent' | 'seconds' | 'count' | 'factor' | 'none';

export interface AlertDefaults {
  unit: ThresholdUnit;
  /** In the unit (percent 0-100, seconds, a count, a multiple); absent for `none`. */
  threshold?: number;
  /** Prometheus `for` (or, for FrequentFailovers, the counting window). */
  duration: string;
  severity: Severity;
  /** Where its series come from: the exporter in the pods, or the operator's sidecar. */
  source: 'exporter' | 'sidecar';
}

export const ALERT_DEFAULTS: Record<AlertName, AlertDefaults> = {
  HighMemoryUsage: { unit: 'percent', threshold: 80, duration: '5m', severity: 'warning', source: 'exporter' },
  ReplicationLag: { unit: 'seconds', threshold: 10, duration: '1m', severity: 'warning', source: 'exporter' },
  InstanceDown: { unit: 'none', duration: '1m', severity: 'critical', source: 'exporter' },
  NoMaster: { unit: 'none', duration: '1m', severity: 'critical', source: 'exporter' },
  MultipleMasters: { unit: 'none', duration: '1m', severity: 'critical', source: 'exporter' },
  NotRunning: { unit: 'none', duration: '5m', severity: 'critical', source: 'sidecar' },
  ReplicasNotInSync: { unit: 'none', duration: '5m', severity: 'warning', source: 'exporter' },
  FrequentFailovers: { unit: 'count', threshold: 3, duration: '1h', severity: 'warning', source: 'sidecar' },
  BackupFailed: { unit: 'none', duration: '0s', severity: 'warning', source: 'sidecar' },
  BackupTooOld: { unit: 'factor', threshold: 2, duration: '0s', severity: 'warning', source: 'sidecar' },
};

/** One alert with every field decided: the spec's override over the defaults. */
export interface ResolvedAlert {
  name: AlertName;
  threshold: number | undefined;
  duration: string;
  severity: Severity;
  source: 'exporter' | 'sidecar';
}

export type ThresholdReading = { ok: true; value: number | undefined } | { ok: false; message: string };

/** A threshold as written (int or string) in the unit of alert `name`. */
export function readThreshold(name: AlertName, threshold: string | number | undefined): ThresholdReading {
  const { unit, threshold: fallback } = ALERT_DEFAULTS[name];
  if (threshold === undefined) return { ok: true, value: fallback };
  const text = String(threshold).trim();
  switch (unit) {
    case 'none':
      return { ok: false, message: `${name} takes no threshold` };
    case 'percent': {
      const m = /^([0-9]+(\.[0-9]+)?)%?$/.exec(text);
      const v = m ? Number(m[1]) : NaN;
      return v > 0 && v <= 100
        ? { ok: true, value: v }
        : { ok: false, message: 'must be a percentage of maxmemory above 0 and at most 100, for example 80 or "80%"' };
    }
    case 'seconds': {
      const v = /^[0-9]+$/.test(text) ? Number(text) : durationSeconds(text);
      return v !== undefined && v > 0
        ? { ok: true, value: v }
        : { ok: false, message: 'must be a number of seconds or a duration above 0, for example 10 or "10s"' };
    }
    case 'count':
      return /^[0-9]+$/.test(text)
        ? { ok: true, value: Number(text) }
        : { ok: false, message: 'must be a whole number of failovers, for example 3' };
    case 'factor': {
      const v = /^[0-9]+(\.[0-9]+)?$/.test(text) ? Number(text) : NaN;
      return v >= 1
        ? { ok: true, value: v }
        : { ok: false, message: 'must be a multiple of the schedule interval of at least 1, for example 2 or "1.5"' };
    }
  }
}

export interface AlertOverride {
  name: AlertName;
  enabled: boolean;
  threshold?: string | number | undefined;
  duration?: string | undefined;
  severity?: Severity | undefined;
}

/** Where a field of the override list is wrong; an empty list when every override reads. */
export function alertProblems(overrides: readonly AlertOverride[]): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = [];
  const seen = new Set<string>();
  for (const [i, o] of overrides.entries()) {
    const field = `spec.monitoring.alerts[${i}]`;
    if (seen.has(o.name)) problems.push({ field: `${field}.name`, message: `${o.name} is listed twice` });
    seen.add(o.name);
    const t = readThreshold(o.name, o.threshold);
    if (!t.ok) problems.push({ field: `${field}.threshold`, message: t.message });
    if (o.duration !== undefined && durationSeconds(o.duration) === undefined)
      problems.push({ field: `${field}.duration`, message: 'must be a Prometheus duration, for example 5m or 1h30m' });
    if (o.name === 'FrequentFailovers' && o.duration !== undefined && durationSeconds(o.duration) === 0)
      problems.push({
        field: `${field}.duration`,
        message: 'is the window failovers are counted in and must be above 0',
      });
  }
  return problems;
}

/** Every enabled alert, in ALERT_NAMES order, with its overrides applied (overrides must have passed alertProblems). */
export function resolveAlerts(overrides: readonly AlertOverride[]): ResolvedAlert[] {
  const byName = new Map(overrides.map((o) => [o.name, o]));
  const out: ResolvedAlert[] = [];
  for (const name of ALERT_NAMES) {
    const o = byName.get(name);
    if (o?.enabled === false) continue;
    const d = ALERT_DEFAULTS[name];
    const t = readThreshold(name, o?.threshold);
    out.push({
      name,
      threshold: t.ok ? t.value : d.threshold,
      duration: o?.duration ?? d.duration,
      severity: o?.severity ?? d.severity,
      source: d.source,
    });
  }
  return out;
}
