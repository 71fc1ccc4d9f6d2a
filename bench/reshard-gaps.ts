// Where bench:reshard's longest write gap comes from: the gaps of each reshard apart, the writer
// without WAIT beside the one with it (a gap in both is a node not answering; in the WAIT writer
// alone, a replica behind), and the nodes' own SLOWLOG (a command that held a node's event loop:
// a MIGRATE waits for the target's answer while its source serves no one).
import type { Written } from '../test/support/cluster-writer.ts';
import { keySlot } from '../test/support/cluster-writer.ts';
import type { SystemCluster } from '../test/system/cluster.ts';
import { admin, livePods } from '../test/system/rediscluster-support.ts';

export interface Gap {
  ms: number;
  /** When the gap ended, ms after `origin`. */
  endsAt: number;
  /** The write that ended it, and its slot. */
  key: string;
  slot: number;
}

/** The longest gap between consecutive writes in `done` that overlaps [from, to]. */
export function longestGapOf(done: readonly Written[], from: number, to: number, origin: number): Gap {
  let worst: Gap = { ms: 0, endsAt: 0, key: '', slot: -1 };
  for (let i = 1; i < done.length; i++) {
    const a = done[i - 1]!;
    const b = done[i]!;
    if (b.at > from && a.at < to && b.at - a.at > worst.ms)
      worst = { ms: b.at - a.at, endsAt: b.at - origin, key: b.key, slot: keySlot(b.key) };
  }
  return worst;
}

export const describeGap = (g: Gap) =>
  `${Math.round(g.ms)} ms ending ${(g.endsAt / 1000).toFixed(1)} s in, at ${g.key} (slot ${g.slot})`;

/** Empties every live pod's SLOWLOG (commands over slowlog-log-slower-than, 10 ms by default). */
export async function resetSlowlogs(c: SystemCluster, name: string): Promise<void> {
  await Promise.all(
    livePods(c, name).map(async (p) => {
      const r = admin(c, name, p.status!.podIP!);
      try {
        await r.call('SLOWLOG', 'RESET');
      } catch {
        // a pod not answering has nothing to report either
      } finally {
        r.disconnect();
      }
    }),
  );
}

/** The live pods' SLOWLOG entries by command: how many, the longest (ms), and the pod of the longest. */
export async function slowlogSummary(
  c: SystemCluster,
  name: string,
): Promise<Map<string, { count: number; maxMs: number; pod: string }>> {
  const out = new Map<string, { count: number; maxMs: number; pod: string }>();
  for (const p of livePods(c, name)) {
    const r = admin(c, name, p.status!.podIP!);
    try {
      // Each entry: [id, unix time, microseconds, [command, args...], client address, client name].
      const entries = (await r.call('SLOWLOG', 'GET', '1000')) as Array<[number, number, number, unknown[]]>;
      for (const e of entries) {
        const args = e[3].map(String);
        const cmd = (args[0] === 'CLUSTER' || args[0] === 'cluster' ? `${args[0]} ${args[1]}` : args[0]!).toUpperCase();
        const ms = e[2] / 1000;
        const s = out.get(cmd) ?? { count: 0, maxMs: 0, pod: '' };
        s.count++;
        if (ms > s.maxMs) Object.assign(s, { maxMs: ms, pod: p.metadata.name });
        out.set(cmd, s);
      }
    } catch {
      // not answering
    } finally {
      r.disconnect();
    }
  }
  return out;
}

export const describeSlowlog = (s: Map<string, { count: number; maxMs: number; pod: string }>) =>
  [...s.entries()]
    .sort((a, b) => b[1].maxMs - a[1].maxMs)
    .map(([cmd, v]) => `${cmd} ${v.count}x max ${v.maxMs.toFixed(0)} ms (${v.pod})`)
    .join(', ') || 'nothing over the threshold';
