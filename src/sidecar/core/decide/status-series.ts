// What the Redis's own status says, as the values of the sidecar's status metrics:
// the phase, each condition, and when the last backup succeeded and failed. Alerts read these
// (NotRunning, BackupFailed, BackupTooOld) so a Prometheus needs no kube-state-metrics for them.
// Pure. Invariants: label values come from fixed sets only (an unknown phase or condition type
// written by hand is left out, so no one can grow the series without bound); a time that does
// not parse is absent, never 0 (0 would read as "the last backup was in 1970").
import type { RedisStatus } from '../../../api/schema.ts';

/** A Redis's phases, and a RedisCluster's (Resharding: Running while slots move). */
export const PHASES = ['Pending', 'Running', 'Failed', 'Hibernated', 'Resharding'] as const;
export const CONDITION_TYPES = [
  'Ready',
  'MasterAvailable',
  'ReplicasInSync',
  'SpecValid',
  'Updated',
  'Hibernated',
  'SecretsReady',
  'BackupHealthy',
] as const;
export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

export type Phase = (typeof PHASES)[number];
export type ConditionType = (typeof CONDITION_TYPES)[number];
export type ConditionStatus = (typeof CONDITION_STATUSES)[number];

export interface StatusSeries {
  /** Absent before the hook wrote a phase. */
  phase: Phase | undefined;
  conditions: Array<{ type: ConditionType; status: ConditionStatus }>;
  /** Unix seconds. */
  lastBackupSuccess: number | undefined;
  /** Unix seconds; only while the failure is newer than the last success (status.backup.lastFailure). */
  lastBackupFailure: number | undefined;
}

function seconds(time: unknown): number | undefined {
  if (typeof time !== 'string') return undefined;
  const ms = Date.parse(time);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

function oneOf<T extends string>(values: readonly T[], value: unknown): T | undefined {
  return (values as readonly unknown[]).includes(value) ? (value as T) : undefined;
}

export function statusSeries(status: RedisStatus | undefined): StatusSeries {
  const conditions: StatusSeries['conditions'] = [];
  const seen = new Set<string>();
  for (const c of Array.isArray(status?.conditions) ? status.conditions : []) {
    const type = oneOf(CONDITION_TYPES, c?.type);
    const value = oneOf(CONDITION_STATUSES, c?.status);
    if (type === undefined || value === undefined || seen.has(type)) continue;
    seen.add(type);
    conditions.push({ type, status: value });
  }
  const backup = status?.backup;
  return {
    phase: oneOf(PHASES, status?.phase),
    conditions,
    lastBackupSuccess: seconds(backup?.lastSuccessful?.time),
    lastBackupFailure: seconds(backup?.lastFailure?.time),
  };
}
