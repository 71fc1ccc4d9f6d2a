// The bootstrap records on a Redis, read by the sidecar and `kubectl redis`: the user's
// bootstrap-without annotation (pods a bootstrap stops waiting for) and the sidecar's
// bootstrap-status record (the pods it waits for). Pure.
// Invariant: an allow-list: only names of this Redis' own pods (<name>-master-N, <name>-replica-N)
// are ever taken from the annotation; anything else is counted, never echoed.
import { compareCodeUnits } from './order.ts';

/** Pod names as the StatefulSets make them, after `<name>-`. */
const ORDINAL = /^(master|replica)-(0|[1-9][0-9]{0,5})$/;

/** The bootstrap-without annotation's value: comma-separated pod names of this Redis. */
export function parseBootstrapWithout(
  value: string | undefined,
  redisName: string,
): { pods: string[]; invalid: number } {
  if (value === undefined) return { pods: [], invalid: 0 };
  const pods = new Set<string>();
  let invalid = 0;
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const rest = entry.startsWith(`${redisName}-`) ? entry.slice(redisName.length + 1) : null;
    if (rest !== null && ORDINAL.test(rest)) pods.add(entry);
    else invalid++;
  }
  return { pods: [...pods].sort(compareCodeUnits), invalid };
}

/** The sidecar's record `Waiting: <pod> (<why>), ...`: the pods it waits for, or [] when it is not one. */
export function waitedPods(record: string | undefined): string[] {
  const m = /^Waiting: (.*)$/.exec(record ?? '');
  if (!m) return [];
  return [...m[1]!.matchAll(/(?:^|, )([a-z0-9][a-z0-9.-]*) \(([^()]*)\)/g)].map((x) => x[1]!);
}
