// A switchover asked for on a RedisCluster (redis.example.com/switchover, as on a Redis): which
// shard's master moves to which replica, or why not. Pure.
// The request names a replica pod (its shard's master moves to it) or `shard-<N>` (the most
// advanced linked replica of shard N), optionally with `@<anything>` to repeat a request.
// Invariants: the same checks as a rollout's switchover (rollout.ts: linked, in sync, Ready); no
// switchover while the cluster is busy with its own duties (a reshard, an open slot, a repair):
// refused with that reason rather than started half-way; a request equal to the one already
// handled is never run again.
import type { SwitchoverRequest } from '../../core/decide/switchover.ts';
import { bestClusterTarget, nodeOf, serving, type RolloutPod } from './rollout.ts';
import { shardMaster } from './shard-master.ts';
import type { Topology } from './topology.ts';

export type ClusterRequestDecision =
  | { kind: 'none' }
  | { kind: 'done'; message: string }
  | { kind: 'refuse'; message: string }
  | { kind: 'switchover'; shard: number; target: string; master: string; reason: string };

const SHARD = /^shard-(0|[1-9][0-9]?)$/;

export function decideClusterRequest(
  t: Topology,
  kube: ReadonlyMap<string, RolloutPod>,
  busy: string | null,
  request: SwitchoverRequest | null,
  handled: string | null,
): ClusterRequestDecision {
  if (request === null || request.raw === handled) return { kind: 'none' };
  if (request.target === null)
    return {
      kind: 'refuse',
      message: 'a RedisCluster has a master per shard: name a replica pod, or shard-<N> for its best replica',
    };
  if (busy !== null) return { kind: 'refuse', message: `the cluster is not quiet: ${busy}` };
  const byShard = SHARD.exec(request.target);
  if (byShard) {
    const shard = Number(byShard[1]);
    if (!t.pods.some((p) => p.shard === shard))
      return { kind: 'refuse', message: `shard ${shard} has no pod in this RedisCluster` };
    const best = bestClusterTarget(t, kube, shard);
    return best.ok
      ? { kind: 'switchover', shard, target: best.pod.name, master: best.master.name, reason: best.reason }
      : { kind: 'refuse', message: best.reason };
  }
  const pod = t.pods.find((p) => p.name === request.target);
  if (!pod) return { kind: 'refuse', message: `no pod ${request.target} belongs to this RedisCluster` };
  const m = shardMaster(t, pod.shard).node;
  if (!m?.pod) return { kind: 'refuse', message: `shard ${pod.shard} has no healthy master now` };
  if (nodeOf(t, pod) === m) return { kind: 'done', message: `${pod.name} is already the master of shard ${pod.shard}` };
  const masterCheck = serving(t, kube, m.pod);
  if (!masterCheck.ok) return { kind: 'refuse', message: masterCheck.reason };
  const check = serving(t, kube, pod);
  if (!check.ok) return { kind: 'refuse', message: check.reason };
  return {
    kind: 'switchover',
    shard: pod.shard,
    target: pod.name,
    master: m.pod.name,
    reason: `${pod.name} is linked to ${m.pod.name}, ${check.lag} bytes behind`,
  };
}
