// Forming and keeping the cluster whole: slots nobody serves get a master (CLUSTER ADDSLOTSRANGE),
// nodes that do not know the cluster meet it (CLUSTER MEET), and every other pod of a shard
// replicates that shard's master (CLUSTER REPLICATE). Pure; each step carries its reason.
// Invariants:
// - Bring-up assigns slots only once every shard's master answers, each its contiguous even
//   range, so a slow pod never ends up with another shard's slots; later, a slot nobody serves
//   is given out only on a full view (every pod answered: a silent pod may be serving it).
// - Pods of leaving shards (index >= spec shards) are never met nor re-pointed: they are on
//   their way out. Pods marked for deletion neither.
// - A pod is made a replica only of its own shard's master, only when that master answers and is
//   not failing, and only when the pod serves no slots and holds no keys: a node with data is
//   never emptied by REPLICATE, and an empty node never becomes the source of a full sync.
// - A replica of the right master whose link is down while it replicates from an address its
//   master no longer has (every pod back at a new address: a wake, a full restart; Redis re-points
//   replication only when the master's own ping shows the change, not when gossip brought it
//   first) is told CLUSTER REPLICATE again, which re-points it and resyncs partially.
import { formatSlotRanges, rangesOf } from '../../../api/rediscluster-names.ts';
import { bringUpRange, bringUpShardOf } from './layout.ts';
import { label, shardMaster } from './shard-master.ts';
import { healthyMaster, knows, selfLine, slotCounts, type Topology } from './topology.ts';
import type { ClusterNode, ClusterSpecView, ClusterStep, Decided, Hold } from './types.ts';

/** ADDSLOTSRANGE for slots nobody serves. */
export function assignSlots(t: Topology, spec: ClusterSpecView): Decided {
  const steps: ClusterStep[] = [];
  const holds: Hold[] = [];
  const unassigned: number[] = [];
  t.owner.forEach((o, s) => {
    if (o === null) unassigned.push(s);
  });
  if (unassigned.length === 0) return { steps, holds };
  if (!t.allAnswered) {
    holds.push({
      key: 'assign/partial',
      reason: `${unassigned.length} slots are not served, but not every pod answers (one may serve them): waiting`,
      warn: false,
    });
    return { steps, holds };
  }
  if (t.unformed) {
    if (spec.layout === null) {
      holds.push({
        key: 'assign/restore',
        reason: 'bring-up waits for the slots each shard held when backed up (status.restore.shards)',
        warn: false,
      });
      return { steps, holds };
    }
    const masters = Array.from({ length: spec.shards }, (_, i) => shardMaster(t, i));
    const missing = masters.flatMap((m, i) => (m.node && m.node.pod ? [] : [`shard ${i}: ${m.reason}`]));
    if (missing.length > 0) {
      holds.push({
        key: 'assign/bring-up',
        reason: `bring-up waits for every shard's master (${missing.join('; ')})`,
        warn: false,
      });
      return { steps, holds };
    }
    masters.forEach((m, i) => {
      const node = m.node!;
      const alone = (t.views.get(node.id)?.size ?? 0) <= 1 && node.configEpoch === 0;
      // A restored cluster: each shard gets back the slots whose keys its pod 0 loaded.
      const ranges = spec.layout?.[i] ?? [bringUpRange(i, spec.shards)];
      steps.push({
        kind: 'addslots',
        pod: node.pod!.name,
        ranges: ranges.map(([a, b]) => [a, b] as [number, number]),
        // A unique epoch per master before it meets the others spares the collision round.
        configEpoch: alone ? i + 1 : null,
        reason: `bring-up: shard ${i} (${label(node)}) serves slots ${formatSlotRanges(ranges)}${spec.layout ? ' (as backed up)' : ''}`,
      });
    });
    return { steps, holds };
  }
  // A formed cluster with slots nobody serves (a node lost with no replica was forgotten): each to
  // its bring-up shard's master (a restored cluster's: the shard that held it when backed up) when
  // that one answers, else to the answering master with fewest.
  const counts = slotCounts(t);
  const masters = Array.from({ length: spec.shards }, (_, i) => shardMaster(t, i).node).filter(healthyMaster);
  if (masters.length === 0) {
    holds.push({
      key: 'assign/none',
      reason: `${unassigned.length} slots are not served and no shard master answers`,
      warn: true,
    });
    return { steps, holds };
  }
  const fewest = [...masters].sort(
    (a, b) => (counts.get(a.id) ?? 0) - (counts.get(b.id) ?? 0) || a.id.localeCompare(b.id),
  )[0]!;
  const byNode = new Map<string, number[]>();
  const homes = Array.from({ length: spec.shards }, (_, i) => shardMaster(t, i).node);
  for (const s of unassigned) {
    const recorded = spec.layout?.findIndex((ranges) => ranges.some(([a, b]) => s >= a && s <= b)) ?? -1;
    const home = homes[recorded >= 0 ? recorded : bringUpShardOf(s, spec.shards)];
    // A restored shard's master may serve none of its slots yet (no key of them in its snapshot).
    const target = healthyMaster(home) && ((counts.get(home.id) ?? 0) > 0 || recorded >= 0) ? home : fewest;
    byNode.set(target.id, [...(byNode.get(target.id) ?? []), s]);
  }
  for (const [id, slots] of byNode) {
    const node = t.nodes.get(id)!;
    steps.push({
      kind: 'addslots',
      pod: node.pod!.name,
      ranges: rangesOf(slots),
      configEpoch: null,
      reason: `${slots.length} slots nobody served go to ${label(node)}`,
    });
  }
  return { steps, holds };
}

/** The node every other one meets: the one that knows the most, preferring one that serves slots. */
export function seedOf(t: Topology, spec: ClusterSpecView): string | null {
  const counts = slotCounts(t);
  const candidates = [...t.byId.entries()]
    .filter(([, pod]) => !pod.deleting && (pod.shard < spec.shards || (counts.get(selfLine(pod)!.id) ?? 0) > 0))
    .map(([id, pod]) => ({ id, pod, known: t.views.get(id)?.size ?? 0, serves: (counts.get(id) ?? 0) > 0 }))
    .sort((a, b) => b.known - a.known || Number(b.serves) - Number(a.serves) || (a.pod.name < b.pod.name ? -1 : 1));
  return candidates[0]?.id ?? null;
}

/**
 * CLUSTER MEET from the seed to every pod of a staying shard that the seed does not know (or knows at an old address),
 * or that does not know it.
 */
export function meetNodes(t: Topology, spec: ClusterSpecView): Decided {
  const steps: ClusterStep[] = [];
  const seed = seedOf(t, spec);
  if (seed === null) return { steps, holds: [] };
  const seedPod = t.byId.get(seed)!;
  const seedView = t.views.get(seed)!;
  for (const [id, pod] of t.byId) {
    if (id === seed || pod.deleting || pod.shard >= spec.shards || pod.ip === null) continue;
    const line = seedView.get(id);
    const why = !line
      ? 'the cluster does not know it'
      : line.ip !== pod.ip
        ? `the cluster knows it at ${line.ip || 'no address'}`
        : !knows(t, id, seed)
          ? 'it does not know the cluster'
          : null;
    if (why === null) continue;
    steps.push({ kind: 'meet', pod: seedPod.name, ip: pod.ip, target: pod.name, reason: `${pod.name} joins: ${why}` });
  }
  return { steps, holds: [] };
}

/** CLUSTER REPLICATE for every pod of a staying shard that is not a replica of its shard's master. */
export function attachReplicas(t: Topology, spec: ClusterSpecView): Decided {
  const steps: ClusterStep[] = [];
  const holds: Hold[] = [];
  const counts = slotCounts(t);
  for (let shard = 0; shard < spec.shards; shard++) {
    const m = shardMaster(t, shard);
    const master = m.node;
    for (const [id, pod] of t.byId) {
      if (pod.shard !== shard || pod.deleting || id === master?.id) continue;
      const node = t.nodes.get(id)!;
      const stale = staleTarget(node, master);
      if (node.role === 'replica' && node.masterId === master?.id && stale === null) continue;
      if (!master) {
        holds.push({
          key: `replicate/${pod.name}`,
          reason: `${pod.name} waits for a master of shard ${shard}: ${m.reason}`,
          warn: false,
        });
        continue;
      }
      if (!healthyMaster(master)) {
        holds.push({
          key: `replicate/${pod.name}`,
          reason: `${pod.name} waits: shard ${shard}'s master ${label(master)} is failing or silent`,
          warn: false,
        });
        continue;
      }
      if ((counts.get(id) ?? 0) > 0) continue; // it serves slots: a failover or a reshard's business, not ours
      if (node.role === 'master' && (node.info?.keys ?? 0) > 0) {
        holds.push({
          key: `replicate/${pod.name}/data`,
          reason: `${pod.name} is a master of shard ${shard} with ${node.info!.keys} keys but no slots: left as it is (REPLICATE would drop its data)`,
          warn: true,
        });
        continue;
      }
      if (!knows(t, id, master.id)) {
        holds.push({
          key: `replicate/${pod.name}`,
          reason: `${pod.name} does not know ${label(master)} yet (gossip)`,
          warn: false,
        });
        continue;
      }
      steps.push({
        kind: 'replicate',
        pod: pod.name,
        masterId: master.id,
        reason:
          stale ??
          `${pod.name} replicates shard ${shard}'s master ${label(master)}${node.role === 'replica' ? ` (was a replica of ${node.masterId?.slice(0, 8) ?? 'nothing'})` : ''}`,
      });
    }
  }
  return { steps, holds };
}

/** Why a replica of `master` must be re-pointed: its link is down, aimed at an address the master no longer has. */
function staleTarget(node: ClusterNode, master: ClusterNode | null | undefined): string | null {
  const info = node.info;
  const at = master?.pod?.ip;
  if (!master || !at || node.masterId !== master.id || info?.role !== 'replica') return null;
  if (info.linkUp || info.syncing || info.masterHost === undefined || info.masterHost === at) return null;
  const who = node.pod?.name ?? node.id.slice(0, 8);
  return (
    `${who} replicates ${label(master)} at ${info.masterHost}, an address it no longer has ` + `(now ${at}): re-pointed`
  );
}
