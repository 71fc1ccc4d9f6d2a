// Forcing a shard's election (CLUSTER FAILOVER FORCE on its best replica: no handshake with the
// master, but the votes of a majority of masters, so no split brain; never TAKEOVER) at once when
// its master is gone (master-down.ts: crashed or hung, on evidence our own lost contact cannot
// produce), and when the cluster's own failover did not happen in time (sentinel.failoverTimeout
// after the cluster agreed the master failed). Pure; time is `now`.
// Invariants:
// - Only a master the cluster flags `fail` (the majority of masters agreed) or that master-down.ts
//   finds gone is replaced; never one only this sidecar cannot reach (CLUSTER FAILOVER FORCE would
//   throw away the writes a live master took since its replica's offset). On the fast path a
//   majority of the masters must answer us: an election without their votes fails, and Redis then
//   lets the replica try again only after four times cluster-node-timeout.
// - The replica with the highest replication offset is chosen (ties: the lowest pod name); a
//   replica in a full sync is never chosen; an empty replica (offset 0, no keys) is never chosen
//   over one with data, nor at all when the failed master was last seen holding keys: promoting
//   it would serve an empty shard while the data may still come back with the master's volume.
// - A forced election is sent at most once per failoverTimeout per failed master.
// - Never while the failed master's own pod (the one whose cluster-node record carries its id) is
//   LOADING: it is reading its data set from disk, which may be newer than any replica's (a full
//   restart where its pod came up last); forcing a replica would make it re-sync that away.
// - A master that came back empty (its process restarted faster than the cluster noticed, with no
//   data on disk) while a replica of it still holds data and is not in sync with it is replaced at
//   once by that replica (FORCE: a manual failover the masters vote for): otherwise the replica
//   would full-sync the empty data set and the shard's data would be gone (the trap peers fell
//   into). The replica must not be linked: a FLUSHALL on a healthy master never triggers this.
import { masterDown, mastersAnswering } from './master-down.ts';
import { label } from './shard-master.ts';
import { slotCounts, type Topology } from './topology.ts';
import type { ClusterNode, ClusterStep, Decided, Hold } from './types.ts';

export interface FailoverMemory {
  /** Failed master id -> when this sidecar first saw the cluster flag it `fail`. */
  failingSince: ReadonlyMap<string, number>;
  /** Failed master id -> when a forced election was last sent for it. */
  forcedAt: ReadonlyMap<string, number>;
  /** Node id -> its key count as last seen (probes, node records). */
  lastKeys: ReadonlyMap<string, number>;
}

export interface FailoverDecision extends Decided {
  /** The memory to keep: failing masters only (a master back or replaced is forgotten). */
  failingSince: Map<string, number>;
}

const hasData = (n: ClusterNode) => (n.info?.offset ?? 0) > 0 || (n.info?.keys ?? 0) > 0;

/** The replica of `failed` to promote, or why none. Exported for the decision tables. */
export function chooseReplica(
  t: Topology,
  failed: ClusterNode,
  lastKeys: ReadonlyMap<string, number>,
): { node: ClusterNode | null; reason: string } {
  const replicas = [...t.nodes.values()].filter(
    (n) => n.pod && !n.pod.deleting && n.info?.role === 'replica' && n.masterId === failed.id,
  );
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
  return {
    node: best,
    reason: `${best.pod!.name} has the highest replication offset (${best.info!.offset}) of ${replicas.length} replica(s)`,
  };
}

export function decideForcedFailovers(
  t: Topology,
  failoverTimeoutMs: number,
  memory: FailoverMemory,
  now: number,
  crashConfirmMs = 0,
): FailoverDecision {
  const steps: ClusterStep[] = [];
  const holds: Hold[] = [];
  const failingSince = new Map<string, number>();
  const counts = slotCounts(t);
  for (const node of t.nodes.values()) {
    if (node.role !== 'master' || (counts.get(node.id) ?? 0) === 0) continue;
    const down = masterDown(t, node, crashConfirmMs);
    if (!down.down && down.reason !== null && !node.fail) {
      holds.push({ key: `failover/${node.id}/heard`, reason: down.reason, warn: false });
      continue;
    }
    if (!down.down && !node.fail) continue;
    const shard = node.shard === null ? 'its shard' : `shard ${node.shard}`;
    let why: string;
    if (node.fail) failingSince.set(node.id, memory.failingSince.get(node.id) ?? now);
    if (down.down) {
      // Its process is gone: no reason to wait for cluster-node-timeout, or for the cluster's own election.
      why = `${label(node)} ${down.how}: ${down.evidence.join('; ')}`;
      const { total, answering } = mastersAnswering(t, counts);
      if (answering * 2 <= total) {
        holds.push({
          key: `failover/${node.id}/quorum`,
          reason: `${why}; but only ${answering} of ${total} masters answer, and an election needs a majority of their votes: not forcing one`,
          warn: true,
        });
        continue;
      }
    } else {
      const waited = now - failingSince.get(node.id)!;
      if (waited < failoverTimeoutMs) {
        holds.push({
          key: `failover/${node.id}`,
          // No elapsed time in the reason: a hold is told again whenever its reason changes.
          reason: `${label(node)} failed: waiting for the cluster's own failover of ${shard} (forced after failoverTimeout ${failoverTimeoutMs} ms)`,
          warn: false,
        });
        continue;
      }
      why = `${label(node)} failed ${Math.round(waited)} ms ago and the cluster did not replace it within failoverTimeout ${failoverTimeoutMs} ms`;
    }
    const forced = memory.forcedAt.get(node.id);
    if (forced !== undefined && now - forced < failoverTimeoutMs) {
      holds.push({
        key: `failover/${node.id}/forced`,
        reason: `a forced election for ${shard} was sent: waiting for it (up to failoverTimeout ${failoverTimeoutMs} ms)`,
        warn: false,
      });
      continue;
    }
    const own = t.pods.find((p) => !p.deleting && p.record?.id === node.id);
    if (own?.probe && !own.probe.ok && own.probe.kind === 'loading') {
      holds.push({
        key: `failover/${node.id}/loading`,
        reason: `${label(node)} failed but its pod ${own.name} is loading its data set, which may be newer than its replicas': no forced election of ${shard} while it loads`,
        warn: false,
      });
      continue;
    }
    const choice = chooseReplica(t, node, memory.lastKeys);
    if (!choice.node) {
      holds.push({
        key: `failover/${node.id}/none`,
        // Told once (a Warning Event): no elapsed time in it, or every round would be a new Event.
        reason: down.down
          ? `${label(node)} ${down.how} and ${shard} cannot be failed over: ${choice.reason}`
          : `${shard} has had no master for over failoverTimeout ${failoverTimeoutMs} ms and cannot be failed over: ${choice.reason}`,
        warn: true,
      });
      continue;
    }
    steps.push({
      kind: 'failover',
      pod: choice.node.pod!.name,
      failedId: node.id,
      reason: `${why}: CLUSTER FAILOVER FORCE on ${choice.reason}`,
    });
  }
  steps.push(...returnedEmpty(t, memory, now, failoverTimeoutMs));
  return { steps, holds, failingSince };
}

/** Masters that serve slots with no key while a replica, not linked to them, still has data. */
function returnedEmpty(t: Topology, memory: FailoverMemory, now: number, failoverTimeoutMs: number): ClusterStep[] {
  const counts = slotCounts(t);
  const steps: ClusterStep[] = [];
  for (const m of t.nodes.values()) {
    if (!m.info || m.info.role !== 'master' || m.info.keys > 0 || (counts.get(m.id) ?? 0) === 0) continue;
    const forced = memory.forcedAt.get(m.id);
    if (forced !== undefined && now - forced < failoverTimeoutMs) continue;
    const holders = [...t.nodes.values()]
      .filter(
        (r) =>
          r.pod &&
          !r.pod.deleting &&
          r.info?.role === 'replica' &&
          r.masterId === m.id &&
          r.info.keys > 0 &&
          (!r.info.linkUp || r.info.syncing),
      )
      .sort((a, b) => b.info!.offset - a.info!.offset || b.info!.keys - a.info!.keys);
    const best = holders[0];
    if (!best) continue;
    steps.push({
      kind: 'failover',
      pod: best.pod!.name,
      failedId: m.id,
      reason: `${label(m)} serves ${counts.get(m.id)} slots with no key (it restarted empty) while its replica ${best.pod!.name} still holds ${best.info!.keys} keys and is not in sync: CLUSTER FAILOVER FORCE on ${best.pod!.name} before it copies the empty data set`,
    });
  }
  return steps;
}
