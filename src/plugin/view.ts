// The plugin's pure views: a Redis, its pods, events and backups in; lines or JSON out. No I/O.
// Invariants: every figure shown is one the operator writes (status, the sidecar's pod labels and
// annotations, its Events, its Leases); nothing is computed by talking to Redis. Only the Redis's
// own pods are shown, by the pod selector its StatefulSets use (a backup Job's pod shares the
// instance label, not the selector). Colour is a parameter, never read from the environment here.
import { styleText } from 'node:util';
import {
  LINK_ANNOTATION,
  REPLICATION_ANNOTATION,
  ROLE_LABEL,
  ROLE_SINCE_ANNOTATION,
  REVISION_LABEL,
  podSelectorLabels,
  readReplicationRecord,
  type ReplicationRecord,
} from '../api/labels.ts';
import { leaderLines, type LeaderLookup } from './leader.ts';
import type { RedisStatus } from '../api/schema.ts';
import type { RedisBackupStatus } from '../api/redisbackup-schema.ts';

export interface PodView {
  name: string;
  role: string;
  ready: boolean;
  link: string;
  /** The sidecar's note on the master: why it became master and at which replication offset. */
  roleChangedBy: string | null;
  revision: string | null;
  /** The sidecar's replication annotation: offset, bytes behind the master, when read (up to a minute old). */
  replication: ReplicationRecord | null;
}
export interface EventView {
  time: string;
  type: string;
  reason: string;
  message: string;
}
export interface BackupView {
  name: string;
  phase: string;
  sizeBytes: number | null;
  replicationOffset: number | null;
  location: string | null;
  completionTime: string | null;
}
export interface ConditionView {
  type: string;
  status: string;
  reason: string;
  message: string;
}
export interface StatusView {
  name: string;
  namespace: string;
  phase: string;
  master: string | null;
  /** Replica pods Ready and linked, of spec.replicas (status.summary.replicas, what `kubectl get redis` shows). */
  replicas: string | null;
  conditions: ConditionView[];
  pods: PodView[];
  switchover: string | null;
  failovers: EventView[];
  backups: BackupView[];
  lastScheduledBackup: RedisStatus['backup'] | null;
  rollout: { updatedPods: string[]; stalePods: string[] } | null;
  /** The sidecar instance that acts on this Redis (its shard's Lease); null when not looked up. */
  operator: LeaderLookup | null;
}

interface PodLike {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: { conditions?: Array<{ type?: string; status?: string }> };
}
interface EventLike {
  type?: string;
  reason?: string;
  message?: string;
  lastTimestamp?: string | Date | null;
  eventTime?: string | Date | null;
  firstTimestamp?: string | Date | null;
  metadata?: { creationTimestamp?: string | Date };
}
interface BackupLike {
  metadata?: { name?: string };
  spec?: { redis?: string };
  status?: RedisBackupStatus;
}

/** The reasons the sidecar gives a change of master (src/sidecar/redis/manager/events.ts, reporter.ts). */
export const MASTER_CHANGE_REASONS = ['FailoverCompleted', 'Switchover', 'SwitchoverRefused', 'Bootstrap'] as const;

const iso = (t: string | Date | null | undefined): string => (t instanceof Date ? t.toISOString() : (t ?? ''));

export function podView(p: PodLike): PodView {
  const labels = p.metadata?.labels ?? {};
  const ann = p.metadata?.annotations ?? {};
  return {
    name: p.metadata?.name ?? '',
    role: labels[ROLE_LABEL] ?? 'none',
    ready: (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
    link: ann[LINK_ANNOTATION] ?? 'unknown',
    roleChangedBy: ann[ROLE_SINCE_ANNOTATION] ?? null,
    revision: labels[REVISION_LABEL] ?? null,
    replication: readReplicationRecord(ann[REPLICATION_ANNOTATION]),
  };
}

/** Whether the pod carries every label of `selector` (the StatefulSets' pod selector). */
export function selects(selector: Record<string, string>, p: PodLike): boolean {
  const labels = p.metadata?.labels ?? {};
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** Bytes as a human reads them: 0 B, 512 B, 1.5 KiB, 12.0 MiB. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

/** Events oldest first: the time is the last occurrence (events.k8s.io eventTime when set). */
export function eventViews(events: EventLike[]): EventView[] {
  return events
    .map((e) => ({
      time: iso(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata?.creationTimestamp),
      type: e.type ?? '',
      reason: e.reason ?? '',
      message: e.message ?? '',
    }))
    .sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
}

/** The pods the selector picks, each as `view` shows it, sorted by name. */
export function selectedPods<P extends PodLike, V extends { name: string }>(
  pods: P[],
  selector: Record<string, string>,
  view: (p: P) => V,
): V[] {
  return pods
    .filter((p) => selects(selector, p))
    .map(view)
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** A status's conditions as shown: lastTransitionTime left out. */
export function conditionViews(conditions: ConditionView[] | undefined): ConditionView[] {
  return (conditions ?? []).map((c) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message }));
}

export function statusView(
  redis: { metadata: { name: string; namespace?: string }; status?: RedisStatus },
  pods: PodLike[],
  events: EventLike[],
  backups: BackupLike[],
  operator: LeaderLookup | null = null,
): StatusView {
  const s = redis.status ?? {};
  const failovers = eventViews(events).filter((e) => (MASTER_CHANGE_REASONS as readonly string[]).includes(e.reason));
  return {
    name: redis.metadata.name,
    namespace: redis.metadata.namespace ?? '',
    phase: s.phase ?? 'Unknown',
    master: s.master ?? null,
    replicas: s.summary?.replicas ?? null,
    conditions: conditionViews(s.conditions),
    pods: selectedPods(pods, podSelectorLabels(redis.metadata.name), podView),
    switchover: s.switchover ?? null,
    failovers: failovers.slice(-5),
    backups: backups
      .filter((b) => b.spec?.redis === redis.metadata.name)
      .map((b) => ({
        name: b.metadata?.name ?? '',
        phase: b.status?.phase ?? 'Pending',
        sizeBytes: b.status?.sizeBytes ?? null,
        replicationOffset: b.status?.replicationOffset ?? null,
        location: b.status?.location ?? null,
        completionTime: b.status?.completionTime ?? null,
      }))
      .sort((a, b) => (a.completionTime ?? '~').localeCompare(b.completionTime ?? '~'))
      .slice(-5),
    lastScheduledBackup: s.backup ?? null,
    rollout: s.rollout ?? null,
    operator,
  };
}

export type Paint = (style: 'green' | 'red' | 'yellow' | 'bold' | 'dim', text: string) => string;
export const plain: Paint = (_s, t) => t;
// validateStream false: whether to colour is decided once by the caller (TTY and NO_COLOR).
export const coloured: Paint = (s, t) => styleText(s, t, { validateStream: false });

export const good = (paint: Paint, ok: boolean, text: string) => paint(ok ? 'green' : 'red', text);

export function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

/** The Conditions section: each status green when True, red otherwise. */
export function conditionLines(conditions: ConditionView[], paint: Paint): string[] {
  return [
    '',
    paint('bold', 'Conditions'),
    ...conditions.map(
      (c) =>
        `  ${good(paint, c.status === 'True', c.status.padEnd(5))} ${c.type} ${paint('dim', `${c.reason}: ${c.message}`)}`,
    ),
  ];
}

/**
 * A table indented by two: the header dimmed, the rows whose item `warn` picks in yellow. Widths are
 * computed on plain text, so colour never shifts the columns.
 */
export function paintedTable<T>(rows: string[][], items: T[], warn: (item: T) => boolean, paint: Paint): string[] {
  return table(rows).map((line, i) => {
    const item = items[i - 1];
    return `  ${i === 0 ? paint('dim', line) : item !== undefined && warn(item) ? paint('yellow', line) : line}`;
  });
}

/** Failovers (or other events) one a line, a Warning's reason in yellow. */
export function retainedEventLines(events: EventView[], paint: Paint): string[] {
  if (events.length === 0) return ['  none in the retained events'];
  return events.map((e) => `  ${e.time}  ${e.type === 'Warning' ? paint('yellow', e.reason) : e.reason}  ${e.message}`);
}

export function statusLines(v: StatusView, paint: Paint): string[] {
  const phaseOk = v.phase === 'Running' || v.phase === 'Hibernated';
  const out = [
    `${paint('bold', `Redis ${v.namespace}/${v.name}`)}  phase ${good(paint, phaseOk, v.phase)}  master ${v.master ?? '-'}  replicas ${v.replicas ?? '-'}`,
  ];
  if (v.operator) out.push('', paint('bold', 'Operator'), ...leaderLines(v.operator));
  out.push(...conditionLines(v.conditions, paint));
  out.push('', paint('bold', 'Pods'));
  const rows = [['NAME', 'ROLE', 'READY', 'LINK', 'OFFSET', 'LAG', 'READ AT', 'ROLE CHANGED BY']].concat(
    v.pods.map((p) => {
      const r = p.replication;
      const lag = r === null || r.lagBytes === null ? '-' : bytes(r.lagBytes);
      return [
        p.name,
        p.role,
        p.ready ? 'yes' : 'no',
        p.link,
        r ? String(r.offset) : '-',
        lag,
        r?.at ?? '-',
        p.roleChangedBy ?? '-',
      ];
    }),
  );
  out.push(...paintedTable(rows, v.pods, (p) => !p.ready || p.link !== 'up', paint));
  if (v.rollout && v.rollout.stalePods.length > 0)
    out.push(
      '',
      `${paint('bold', 'Rollout')}  ${v.rollout.updatedPods.length}/${v.rollout.updatedPods.length + v.rollout.stalePods.length} updated; stale: ${v.rollout.stalePods.join(', ')}`,
    );
  out.push('', `${paint('bold', 'Last switchover request')}  ${v.switchover ?? 'none'}`);
  out.push('', paint('bold', 'Failovers and switchovers'));
  out.push(...retainedEventLines(v.failovers, paint));
  out.push('', paint('bold', 'Backups'));
  const last = v.lastScheduledBackup?.lastSuccessful;
  if (last) out.push(`  scheduled: last ${last.time ?? '?'} ${last.location} ${last.sizeBytes ?? '?'} bytes`);
  if (v.lastScheduledBackup?.lastFailure)
    out.push(`  ${paint('red', 'scheduled failed')}: ${v.lastScheduledBackup.lastFailure.message}`);
  if (v.backups.length === 0 && !last) out.push('  none');
  for (const b of v.backups)
    out.push(
      `  ${b.name}  ${good(paint, b.phase === 'Completed', b.phase)}  ${b.sizeBytes ?? '-'} bytes  offset ${b.replicationOffset ?? '-'}  ${b.location ?? ''}`.trimEnd(),
    );
  return out;
}

export function eventLines(events: EventView[], paint: Paint): string[] {
  if (events.length === 0) return ['no events (Kubernetes keeps them for about an hour)'];
  return events.map(
    (e) =>
      `${e.time}  ${e.type === 'Warning' ? paint('yellow', e.type.padEnd(7)) : e.type.padEnd(7)}  ${e.reason}  ${e.message}`,
  );
}
