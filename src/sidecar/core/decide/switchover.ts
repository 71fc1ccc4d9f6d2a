// What a planned switchover means for either kind, before the kind's own checks: the request a
// user writes (redis.example.com/switchover on the Redis or RedisCluster), how far behind its
// master a target may be, and the order among fit targets. Pure.
// Invariants: a request is identified by its whole value, so one equal to the request already
// handled is never run again; among fit targets the most advanced replica wins (highest offset),
// then the lower replica priority, then the name, so the choice is deterministic.
import { compareCodeUnits } from '../../../api/order.ts';

/** How far behind the master a target may be: a few ms of writes, not a resync. */
export const CAUGHT_UP_BYTES = 1024 * 1024;

export interface SwitchoverRequest {
  /** The annotation value as written: the request's identity. */
  raw: string;
  /** What the request names (a pod, or for a RedisCluster a shard), or null for "the best replica" (`any`). */
  target: string | null;
}

/** `<target>` or `any`, optionally followed by `@<anything>` to make a repeated request distinct. */
export function parseRequest(value: string | undefined): SwitchoverRequest | null {
  if (value === undefined) return null;
  const raw = value.trim();
  if (raw === '') return null;
  const head = raw.split('@')[0]!.trim();
  return { raw, target: head === 'any' || head === '' ? null : head };
}

/** A target that passed its kind's checks, with what the order reads. */
export interface FitTarget {
  name: string;
  offset: number;
  /** replica-priority (lower is preferred; 0 never gets this far). */
  priority: number;
}

/** Sorts fit targets best first: most advanced, then lower priority, then name. */
export function byFitness<T extends FitTarget>(fit: readonly T[]): T[] {
  return [...fit].sort((a, b) => b.offset - a.offset || a.priority - b.priority || compareCodeUnits(a.name, b.name));
}
