// Which node is a shard's master: the one serving the shard's slots (it moves on failover), or,
// for a shard that serves none yet (bring-up, a new shard), the node its other pods should
// replicate. Pure.
// Invariants: a node serving slots is never passed over for one that serves none (an empty node
// is never put above one with data); a slotless shard's master is its ordinal-0 pod when that pod
// answers, and no other pod is chosen while pod 0 may still come (only once every pod of the
// shard answered and pod 0 is not a master that can lead).
import { slotCounts, type Topology } from './topology.ts';
import type { ClusterNode } from './types.ts';

export interface ShardMaster {
  /** null: none yet (reason says why). */
  node: ClusterNode | null;
  /** The node serves slots (false: a slotless shard's chosen leader). */
  serving: boolean;
  reason: string;
}

/** Every node (answering or not) of shard `shard`. */
export function nodesOfShard(t: Topology, shard: number): ClusterNode[] {
  return [...t.nodes.values()].filter((n) => n.shard === shard);
}

export function shardMaster(t: Topology, shard: number): ShardMaster {
  const counts = slotCounts(t);
  const nodes = nodesOfShard(t, shard);
  const serving = nodes
    .filter((n) => (counts.get(n.id) ?? 0) > 0)
    .sort((a, b) => (counts.get(b.id) ?? 0) - (counts.get(a.id) ?? 0) || b.configEpoch - a.configEpoch);
  if (serving.length > 0)
    return { node: serving[0]!, serving: true, reason: `${label(serving[0]!)} serves the shard's slots` };

  const pods = t.pods.filter((p) => p.shard === shard && !p.deleting);
  const answered = pods.filter((p) => p.probe?.ok);
  const zero = pods.find((p) => p.ordinal === 0);
  const candidates = nodes
    .filter((n) => n.pod && !n.pod.deleting && n.info?.role === 'master' && !n.fail)
    .map((n) => ({ n, replicas: nodes.filter((r) => r.masterId === n.id).length }))
    .sort((a, b) => b.replicas - a.replicas || a.n.pod!.ordinal - b.n.pod!.ordinal);
  const zeroNode = candidates.find((c) => c.n.pod!.ordinal === 0);
  // Pod 0 leads a new shard, unless another master already gathered replicas (a leader chosen earlier).
  if (zeroNode && zeroNode.replicas >= candidates[0]!.replicas)
    return { node: zeroNode.n, serving: false, reason: `${label(zeroNode.n)} (ordinal 0) leads the shard` };
  if (candidates.length > 0 && (candidates[0]!.replicas > 0 || (answered.length === pods.length && !zeroNode))) {
    return {
      node: candidates[0]!.n,
      serving: false,
      reason: `${label(candidates[0]!.n)} leads the shard (pod 0 cannot)`,
    };
  }
  if (zero && !zero.probe?.ok) return { node: null, serving: false, reason: `waiting for ${zero.name} to answer` };
  return {
    node: null,
    serving: false,
    reason: pods.length === 0 ? `shard ${shard} has no pod yet` : `no pod of shard ${shard} answers as a master`,
  };
}

export function label(n: ClusterNode): string {
  return n.pod ? `${n.pod.name} (${n.id.slice(0, 8)})` : `node ${n.id.slice(0, 8)}`;
}
