// Forcing a shard's election when the cluster's own failover did not happen in time
// (sentinel.failoverTimeout after the cluster agreed the master failed). Pure; time is `now`.
// Invariants:
// - Only a master the cluster flags `fail` (the majority of masters agreed) is replaced; never one
//   only this sidecar cannot reach (CLUSTER FAILOVER FORCE would throw away the writes a live
//   master took since its replica's offset).
// - The replica with the highest replication offset is chosen (ties: the lowest pod name); a
//   replica in a full sync is never chosen; an empty replica (offset 0, no keys) is never chosen
//   over one with data, nor at all when the failed master was last seen holding keys: promoting
//   it would serve an empty shard while the data may still come back with the master's volume.
// - A forced election is sent at most once per failoverTimeout per failed master.
import { label } from './shard-master.ts';
import { slotCounts, type Topology } from './topology.ts';
import type { ClusterNode, ClusterStep, Hold } from './types.ts';

export interface FailoverMemory {
  /** Failed master id -> when this sidecar first saw the cluster flag it `fail`. */
  failingSince: ReadonlyMap<string, number>;
  /** Failed master id -> when a forced election was last sent for it. */
  forcedAt: ReadonlyMap<string, number>;
  /** Node id -> its key count as last seen (probes, node records). */
  lastKeys: ReadonlyMap<string, number>;
}

export interface FailoverDecision {
  steps: ClusterStep[];
  holds: Hold[];
  /** The memory to keep: failing masters only (a master back or replaced is forgotten). */
  failingSince: Map<string, number>;
}

const hasData = (n: ClusterNode) => (n.info?.offset ?? 0) > 0 || (n.info?.keys ?? 0) > 0;

/** The replica of `failed` to promote, or why none. Exported for the decision tables. */
export function chooseReplica(t: Topology, failed: ClusterNode, lastKeys: ReadonlyMap<string, number>): { node: ClusterNode | null; reason: string } {
  const replicas = [...t.nodes.values()].filter((n) => n.pod && !n.pod.deleting && n.info?.role === 'replica' && n.masterId === failed.id);
  if (replicas.length === 0) return { node: null, reason: `no replica of ${label(failed)} answers` };
  const usable = replicas.filter((n) => !n.info!.syncing);
  if (usable.length === 0) return { node: null, reason: `every replica of ${label(failed)} is in a full sync` };
  const withData = usable.filter(hasData);
  if (withData.length === 0 && (lastKeys.get(failed.id) ?? 0) > 0) {
    return {
      node: null,
      reason: `every replica of ${label(failed)} is empty and it held ${lastKeys.get(failed.id)} keys: an empty node is never promoted over the data`,
    };
  }
  const pool = withData.length > 0 ? withData : usable;
  pool.sort((a, b) => b.info!.offset - a.info!.offset || (a.pod!.name < b.pod!.name ? -1 : 1));
  const best = pool[0]!;
  return { node: best, reason: `${best.pod!.name} has the highest replication offset (${best.info!.offset}) of ${replicas.length} replica(s)` };
}

export function decideForcedFailovers(t: Topology, failoverTimeoutMs: number, memory: FailoverMemory, now: number): FailoverDecision {
  const steps: ClusterStep[] = [];
  const holds: Hold[] = [];
  const failingSince = new Map<string, number>();
  const counts = slotCounts(t);
  for (const node of t.nodes.values()) {
    if (!node.fail || node.role !== 'master' || (counts.get(node.id) ?? 0) === 0) continue;
    const since = memory.failingSince.get(node.id) ?? now;
    failingSince.set(node.id, since);
    const shard = node.shard === null ? 'its shard' : `shard ${node.shard}`;
    const waited = now - since;
    if (waited < failoverTimeoutMs) {
      holds.push({
        key: `failover/${node.id}`,
        reason: `${label(node)} failed: waiting for the cluster's own failover of ${shard} (${Math.round(waited)} of ${failoverTimeoutMs} ms)`,
        warn: false,
      });
      continue;
    }
    const forced = memory.forcedAt.get(node.id);
    if (forced !== undefined && now - forced < failoverTimeoutMs) {
      holds.push({
        key: `failover/${node.id}/forced`,
        reason: `a forced election for ${shard} was sent ${Math.round(now - forced)} ms ago: waiting for it`,
        warn: false,
      });
      continue;
    }
    const choice = chooseReplica(t, node, memory.lastKeys);
    if (!choice.node) {
      holds.push({
        key: `failover/${node.id}/none`,
        reason: `${shard} has had no master for ${Math.round(waited)} ms and cannot be failed over: ${choice.reason}`,
        warn: true,
      });
      continue;
    }
    steps.push({
      kind: 'failover',
      pod: choice.node.pod!.name,
      failedId: node.id,
      reason: `${label(node)} failed ${Math.round(waited)} ms ago and the cluster did not replace it within failoverTimeout ${failoverTimeoutMs} ms: CLUSTER FAILOVER FORCE on ${choice.reason}`,
    });
  }
  return { steps, holds, failingSince };
}
