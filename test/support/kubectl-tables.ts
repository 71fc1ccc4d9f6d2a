// kubectl-like tables (test and demo code): what `kubectl get
// redis`, `kubectl get pods -o wide -L redis.example.com/role` and `kubectl get events` would
// print for the objects the API server holds. Pure functions of the objects (and `now` for AGE), so the
// system tests and the demo show exactly what a user would see on a real cluster.
// Invariants: columns are left-aligned and separated by three spaces, headers upper-case, as
// kubectl's printer does; the Redis table's columns come from the CRD's additionalPrinterColumns
// (the file that gets installed; priority 0 only, as without -o wide), so the table follows the
// CRD, not a copy of it. redisRow, what the system tests wait for, is fixed fields instead (see there).
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { LINK_ANNOTATION, ROLE_LABEL } from '../../src/api/labels.ts';
import { asRecord as rec, isRecord } from './records.ts';

type Json = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  /** 0: shown by `kubectl get`; above: only with -o wide. */
  priority?: number;
}

/** The CRD's additionalPrinterColumns (default: manifests/crd.yaml), as kubectl reads them. */
export function loadPrinterColumns(
  crdPath: string | URL = new URL('../../manifests/crd.yaml', import.meta.url),
): PrinterColumn[] {
  const crd = rec(parse(readFileSync(crdPath, 'utf8')));
  const version =
    arr(rec(crd['spec'])['versions'])
      .map(rec)
      .find((v) => v['storage'] === true) ?? {};
  return arr(version['additionalPrinterColumns'])
    .map(rec)
    .map((c) => ({
      name: String(c['name']),
      type: String(c['type']),
      jsonPath: String(c['jsonPath']),
      priority: Number(c['priority'] ?? 0),
    }));
}

/** `.status.masterStatus` -> the value (simple dotted paths: what our columns use). */
export function jsonPathValue(obj: unknown, jsonPath: string): unknown {
  let cur: unknown = obj;
  for (const part of jsonPath
    .replace(/^\{?\./, '')
    .replace(/\}$/, '')
    .split('.')) {
    if (!isRecord(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** kubectl's duration format: 42s, 5m3s, 2m, 3h, 2d4h (translateTimestampSince/HumanDuration). */
export function age(timestamp: unknown, now: number = Date.now()): string {
  if (typeof timestamp !== 'string') return '<unknown>';
  const ms = now - Date.parse(timestamp);
  if (!Number.isFinite(ms)) return '<unknown>';
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
}

/** Left-aligned columns separated by three spaces; a missing cell is `<none>`, as kubectl prints it. */
export function renderTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('   ')
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join('\n');
}

function cell(value: unknown, type: string, now: number): string {
  if (value === undefined || value === null || value === '') return type === 'date' ? '<unknown>' : '';
  if (type === 'date') return age(value, now);
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** One row per Redis, columns from the CRD (NAME, VERSION, MASTER, REPLICAS, PHASE, AGE). */
export function redisTable(
  redises: readonly unknown[],
  all: readonly PrinterColumn[] = loadPrinterColumns(),
  now = Date.now(),
): string {
  const columns = all.filter((c) => (c.priority ?? 0) === 0);
  const rows = redises.map((r) => [
    String(rec(rec(r)['metadata'])['name'] ?? ''),
    ...columns.map((c) => cell(jsonPathValue(r, c.jsonPath), c.type, now)),
  ]);
  return renderTable(['NAME', ...columns.map((c) => c.name)], rows);
}

/**
 * The row the system tests wait for, joined by single spaces (`my-redis 7.2 Ready 2 Running`): name,
 * version, the master's readiness, spec.replicas, phase. Fixed fields, not the printer columns:
 * those name the master's pod (it moves on failover) and count ready replicas, and a wait for
 * "Running with a Ready master" must not depend on either.
 */
export const WAIT_ROW_FIELDS: readonly PrinterColumn[] = [
  { name: 'Version', type: 'string', jsonPath: '.spec.version' },
  { name: 'Master Status', type: 'string', jsonPath: '.status.masterStatus' },
  { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
];
/**
 * The row `kubectl get redis` prints for it, AGE left out, single-spaced (`my-redis 7.2 my-redis-master-0 2/2
 * Running`).
 */
export function printedRow(redis: unknown, columns: readonly PrinterColumn[] = loadPrinterColumns()): string {
  const shown = columns.filter((c) => (c.priority ?? 0) === 0 && c.type !== 'date');
  return [
    String(rec(rec(redis)['metadata'])['name'] ?? ''),
    ...shown.map((c) => cell(jsonPathValue(redis, c.jsonPath), c.type, 0) || '<none>'),
  ].join(' ');
}

export function redisRow(redis: unknown): string {
  const cells = [
    String(rec(rec(redis)['metadata'])['name'] ?? ''),
    ...WAIT_ROW_FIELDS.map((c) => cell(jsonPathValue(redis, c.jsonPath), c.type, 0) || '<none>'),
  ];
  return cells.join(' ');
}

function podReady(pod: Json): string {
  const statuses = arr(rec(pod['status'])['containerStatuses']).map(rec);
  const total = arr(rec(pod['spec'])['containers']).length;
  return `${statuses.filter((s) => s['ready'] === true).length}/${total}`;
}

/** kubectl's STATUS column: Terminating, a waiting/terminated reason, or the phase. */
export function podStatus(pod: unknown): string {
  const p = rec(pod);
  if (rec(p['metadata'])['deletionTimestamp']) return 'Terminating';
  const status = rec(p['status']);
  for (const cs of arr(status['containerStatuses']).map(rec)) {
    const state = rec(cs['state']);
    const waiting = rec(state['waiting']);
    if (typeof waiting['reason'] === 'string' && waiting['reason'] !== '') return waiting['reason'];
    const terminated = rec(state['terminated']);
    if (typeof terminated['reason'] === 'string' && terminated['reason'] !== '') return terminated['reason'];
  }
  return typeof status['phase'] === 'string' ? status['phase'] : 'Unknown';
}

export function isPodReady(pod: unknown): boolean {
  return arr(rec(rec(pod)['status'])['conditions'])
    .map(rec)
    .some((c) => c['type'] === 'Ready' && c['status'] === 'True');
}

/** `kubectl get pods -o wide -L redis.example.com/role` (plus the link annotation the sidecar writes). */
export function podTable(pods: readonly unknown[], now = Date.now()): string {
  const rows = pods.map((pod) => {
    const p = rec(pod);
    const meta = rec(p['metadata']);
    const status = rec(p['status']);
    const restarts = arr(status['containerStatuses'])
      .map(rec)
      .reduce((n, s) => n + (typeof s['restartCount'] === 'number' ? s['restartCount'] : 0), 0);
    return [
      String(meta['name'] ?? ''),
      podReady(p),
      podStatus(p),
      String(restarts),
      age(meta['creationTimestamp'], now),
      typeof status['podIP'] === 'string' ? status['podIP'] : '<none>',
      rec(meta['labels'])[ROLE_LABEL] !== undefined ? String(rec(meta['labels'])[ROLE_LABEL]) : '',
      rec(meta['annotations'])[LINK_ANNOTATION] !== undefined ? String(rec(meta['annotations'])[LINK_ANNOTATION]) : '',
    ];
  });
  return renderTable(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'ROLE', 'LINK'], rows);
}

/** `kubectl get events` for the given events (oldest first): LAST SEEN, TYPE, REASON, OBJECT, MESSAGE. */
export function eventTable(events: readonly unknown[], now = Date.now()): string {
  const rows = events.map((e) => {
    const ev = rec(e);
    const obj = rec(ev['involvedObject']);
    const seen = ev['lastTimestamp'] ?? ev['eventTime'] ?? rec(ev['metadata'])['creationTimestamp'];
    const count = typeof ev['count'] === 'number' && ev['count'] > 1 ? ` (x${ev['count']})` : '';
    return [
      age(seen, now),
      String(ev['type'] ?? ''),
      String(ev['reason'] ?? ''),
      `${String(obj['kind'] ?? '').toLowerCase()}/${String(obj['name'] ?? '')}`,
      `${String(ev['message'] ?? '')}${count}`,
    ];
  });
  return renderTable(['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'], rows);
}
