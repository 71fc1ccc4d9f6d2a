// What bench:reshard reads about a reshard besides the scale's own time: how long its slots were
// moving (the sidecar's ReshardDone Event) and where its slot groups spent their time (the
// sidecars' "slot group moved" log lines).
import type { SystemCluster } from '../test/system/cluster.ts';

/**
 * How long the slots of the reshard to `to` shards were moving: from the first move to Done, as
 * the sidecar that did it measured (its ReshardDone Event: "(12.3 s on this instance)"). The
 * scale's own time also counts the new pods starting and joining.
 */
export async function movingSeconds(c: SystemCluster, namespace: string, name: string, to: number): Promise<number> {
  const done = await c.waitFor(
    () =>
      c
        .events({ namespace, name, reason: 'ReshardDone' })
        .map((e) => new RegExp(`-> ${to} shards: .*\\(([\\d.]+) s on this instance\\)`).exec(e.message))
        .findLast((m) => m !== null),
    60_000,
    `the ReshardDone Event of the reshard to ${to} shards`,
  );
  return Number(done[1]);
}

/** The sidecars' "slot group moved" lines: groups, ms by phase summed, and each phase's longest stretch. */
export function groupStats(c: SystemCluster): {
  groups: number;
  sum: Record<string, number>;
  longest: Record<string, number>;
} {
  const sum: Record<string, number> = {};
  const longest: Record<string, number> = {};
  let groups = 0;
  for (const sidecar of c.sidecarNames())
    for (const line of c.sidecarLog(sidecar, 20_000)) {
      if (!line.includes('slot group moved')) continue;
      try {
        // The container log's own prefix (time, stream) comes before pino's JSON.
        const o = JSON.parse(line.slice(line.indexOf('{'))) as {
          keys?: number;
          ms?: Record<string, number>;
          longest?: Record<string, number>;
        };
        groups++;
        sum['keys moved'] = (sum['keys moved'] ?? 0) + (o.keys ?? 0);
        for (const [k, v] of Object.entries(o.ms ?? {})) sum[k] = (sum[k] ?? 0) + v;
        for (const [k, v] of Object.entries(o.longest ?? {})) longest[k] = Math.max(longest[k] ?? 0, v);
      } catch {
        // not a JSON line
      }
    }
  return { groups, sum, longest };
}

/** The sidecars' "slot group moved" lines summed: groups, keys and ms by phase. */
export function groupTimes(c: SystemCluster): string {
  const { groups, sum, longest } = groupStats(c);
  const parts = Object.entries(sum).map(([k, v]) => `${k} ${v}`);
  const worst = Object.entries(longest).map(([k, v]) => `${k} ${v}`);
  return `${groups}: ${parts.join(', ')} (ms summed over groups running side by side); longest one ${worst.join(', ')} ms`;
}
