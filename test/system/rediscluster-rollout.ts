// A RedisCluster rollout watched as a user would see it, for rediscluster-day2.test.ts and
// bench:reshard (bench/cluster-rollout.ts): a pod-template change made with kubectl patch, every
// pod's deletion in the order the API saw it (with the role label it had then), and the longest
// gap between a writer's writes while it ran.
// Invariant: a deletion is recorded once per pod incarnation (uid), at the first event that shows
// it deleting (or gone), so the order is the order in which the sidecar deleted them.
import { performance } from 'node:perf_hooks';
import { ROLE_LABEL } from '../../src/api/labels.ts';
import type { Written } from '../support/cluster-writer.ts';
import type { SystemCluster } from './cluster.ts';
import { condition, healthy, livePods } from './rediscluster-support.ts';
import { NS, type Pod } from './support.ts';

export interface Deletion {
  pod: string;
  uid: string;
  /** The pod's role label when it started going. */
  role: string | undefined;
  at: number;
}

/** Records pod deletions of the RedisCluster `name` until stop(). */
export function watchDeletions(c: SystemCluster, name: string): { deletions: Deletion[]; stop(): void } {
  const deletions: Deletion[] = [];
  const seen = new Set<string>();
  const handle = c.watch('pods', { namespace: NS, labelSelector: `app.kubernetes.io/instance=${name}` }, (ev) => {
    const p = ev.object as Pod;
    const uid = p.metadata?.uid;
    if (!uid || seen.has(uid) || (ev.type !== 'DELETED' && !p.metadata.deletionTimestamp)) return;
    seen.add(uid);
    deletions.push({ pod: p.metadata.name, uid, role: p.metadata.labels?.[ROLE_LABEL], at: performance.now() });
  });
  return { deletions, stop: () => handle.stop() };
}

export interface RolloutRun {
  ms: number;
  from: number;
  to: number;
  deletions: Deletion[];
  /** The pods labelled master per shard before the rollout. */
  mastersBefore: string[];
}

/**
 * Patches the RedisCluster's spec (merge) and waits until every pod it had was replaced, every pod
 * is Ready and linked with one master per shard, and Updated is True.
 */
export async function rollOut(
  c: SystemCluster,
  name: string,
  spec: Record<string, unknown>,
  shape: { shards: number; perShard: number },
  boundMs: number,
): Promise<RolloutRun> {
  const before = new Map(livePods(c, name).map((p) => [p.metadata.name, p.metadata.uid]));
  const mastersBefore = livePods(c, name)
    .filter((p) => p.metadata.labels?.[ROLE_LABEL] === 'master')
    .map((p) => p.metadata.name)
    .sort();
  const watch = watchDeletions(c, name);
  try {
    const from = performance.now();
    await c.kubectl(['patch', 'rediscluster', name, '-n', NS, '--type', 'merge', '-p', JSON.stringify({ spec })]);
    await c.waitFor(
      () => {
        const now = new Map(livePods(c, name).map((p) => [p.metadata.name, p.metadata.uid]));
        return (
          [...before].every(([pod, uid]) => now.has(pod) && now.get(pod) !== uid) &&
          healthy(c, name, shape.shards, shape.perShard) &&
          condition(c, name, 'Updated')?.['status'] === 'True'
        );
      },
      boundMs,
      `every pod of ${name} replaced, Ready and linked, Updated=True`,
    );
    const to = performance.now();
    return { ms: to - from, from, to, deletions: [...watch.deletions], mastersBefore };
  } finally {
    watch.stop();
  }
}

/** The longest gap between consecutive writes (by their `at`) that overlaps [from, to]. */
export function longestGap(written: readonly Written[], from: number, to: number): number {
  const times = written.map((w) => w.at).sort((a, b) => a - b);
  let worst = 0;
  for (let i = 1; i < times.length; i++)
    if (times[i]! > from && times[i - 1]! < to) worst = Math.max(worst, times[i]! - times[i - 1]!);
  return worst;
}
