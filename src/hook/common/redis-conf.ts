// The redis.conf pieces every kind derives the same way from its spec: persistence, maxmemory, and
// the config hash that rolls pods on a static change. Invariant: pure and deterministic; a change
// here changes every kind's redis.conf or pod template.
import { createHash } from 'node:crypto';
import type { PersistenceSpec, RedisSpec } from '../../api/schema.ts';
import { parseQuantity } from './quantity.ts';
import { compare } from './util.ts';

/**
 * Share of the container memory limit given to the data set; the rest covers fork/COW, buffers
 * and replication backlog.
 */
export const MAXMEMORY_SHARE = 0.8;

/** RDB snapshots (save) and the AOF, as spec.persistence asks, for a Redis and a RedisCluster alike. */
export function persistenceLines(
  persistence: Pick<PersistenceSpec, 'enableRdb' | 'rdbSchedule' | 'enableAof'>,
): string[] {
  const saveSeconds = persistence.enableRdb ? rdbSaveSeconds(persistence.rdbSchedule) : undefined;
  return [
    saveSeconds === undefined ? 'save ""' : `save ${saveSeconds} 1`,
    `appendonly ${persistence.enableAof ? 'yes' : 'no'}`,
    'appendfsync everysec',
  ];
}

/**
 * The snapshot interval of an rdbSchedule in seconds, for `save <seconds> 1`. Only the cron
 * forms allowed by RDB_SCHEDULE_PATTERN are understood; anything else gives undefined.
 */
export function rdbSaveSeconds(schedule: string): number | undefined {
  if (schedule === '@hourly' || schedule === '0 * * * *') return 3600;
  if (schedule === '@daily' || schedule === '0 0 * * *') return 86400;
  const minutes = /^\*\/([0-9]+) \* \* \* \*$/.exec(schedule);
  if (minutes) return Number(minutes[1]) * 60;
  const hours = /^0 \*\/([0-9]+) \* \* \*$/.exec(schedule);
  if (hours) return Number(hours[1]) * 3600;
  return undefined;
}

/** maxmemory in bytes from a memory limit, or undefined when no usable limit is set. */
export function maxmemoryBytes(spec: Pick<RedisSpec, 'resources'>): number | undefined {
  const limit = parseQuantity(spec.resources.limits?.['memory']);
  if (limit === undefined || limit <= 0) return undefined;
  const bytes = Math.floor(limit * MAXMEMORY_SHARE);
  return bytes >= 1 ? bytes : undefined;
}

/**
 * The text of a kind's redis.conf: its own `lines`, then what every kind ends with (maxmemory from
 * the memory limit, then spec.config's directives sorted by name), one directive a line.
 */
export function confText(
  lines: readonly string[],
  spec: Pick<RedisSpec, 'resources'> & { config?: Record<string, string> | undefined },
): string {
  const all = [...lines];
  const maxmemory = maxmemoryBytes(spec);
  if (maxmemory !== undefined) all.push(`maxmemory ${maxmemory}`);
  const extra = Object.keys(spec.config ?? {}).sort(compare);
  if (extra.length > 0) all.push('# from spec.config');
  for (const key of extra) all.push(`${key} ${spec.config?.[key] ?? ''}`);
  return `${all.join('\n')}\n`;
}

/**
 * Short content hash of a rendered file (of a kind's static redis.conf): a pod template
 * annotation, so a static config change rolls the pods.
 */
export function configHash(conf: string): string {
  return createHash('sha256').update(conf).digest('hex').slice(0, 16);
}
