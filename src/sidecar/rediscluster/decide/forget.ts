// Removing nodes that are gone for good from every node's table (CLUSTER FORGET, within Redis'
// 60 s ban on re-learning them through gossip), and letting the pods of a drained leaving shard go
// (forgotten by the others, then CLUSTER RESET so they do not gossip their way back). Pure.
// Invariants:
// - A node is forgotten only on a full view (every pod answered, none with that id), only once
//   the cluster agreed it failed, and only while it serves no slot: then it is no pod of ours.
// - A failed master that still serves slots with no replica left anywhere (every pod answered,
//   none replicates it) is forgotten only after failoverTimeout, with a Warning: its slots are
//   then served by nobody and get an (empty) master from formation.ts. Its data is gone.
// - A node is never asked to forget itself or its own master (Redis refuses both).
// - A leaving shard's nodes are let go only once no node of that shard serves a slot, no slot is
//   open anywhere, and their pods are terminating or gone; the staying nodes forget them first,
//   then the ones still up are reset.
import { label, nodesOfShard } from './shard-master.ts';
import { slotCounts, type Topology } from './topology.ts';
import type { ClusterNode, ClusterSpecView, ClusterStep, Decided, Hold } from './types.ts';

/** Answering nodes that list `gone` and may forget it. */
function forgetters(t: Topology, gone: string, except: ReadonlySet<string> = new Set()): string[] {
  const pods: string[] = [];
  for (const [id, pod] of t.byId) {
    if (id === gone || except.has(id) || !t.views.get(id)?.has(gone)) continue;
    if (t.nodes.get(id)?.masterId === gone && t.nodes.get(id)?.role === 'replica') continue;
    pods.push(pod.name);
  }
  return pods.sort();
}

export function decideForgets(
  t: Topology,
  spec: ClusterSpecView,
  failingSince: ReadonlyMap<string, number>,
  now: number,
): Decided {
  const steps: ClusterStep[] = [];
  const holds: Hold[] = [];
  const counts = slotCounts(t);
  const ghosts = [...t.nodes.values()].filter((n) => !n.pod && n.fail);
  if (ghosts.length > 0 && !t.allAnswered) {
    holds.push({
      key: 'forget/partial',
      reason: `${ghosts.length} failed node(s) to forget, but not every pod answers (one may be such a node coming back): waiting`,
      warn: false,
    });
  } else {
    for (const ghost of ghosts) {
      const serving = counts.get(ghost.id) ?? 0;
      if (serving > 0) {
        const heirs = [...t.nodes.values()].filter((n) => n.pod && n.masterId === ghost.id && n.role === 'replica');
        const since = failingSince.get(ghost.id);
        if (heirs.length > 0 || since === undefined || now - since < spec.failoverTimeoutMs) continue;
        const pods = forgetters(t, ghost.id);
        if (pods.length === 0) continue;
        holds.push({
          key: `forget/lost/${ghost.id}`,
          reason: `${label(ghost)} failed serving ${serving} slots and no pod replicates it: its data is lost; it is forgotten and its slots get a new, empty master`,
          warn: true,
        });
        steps.push({
          kind: 'forget',
          pods,
          id: ghost.id,
          reason: `${label(ghost)} is lost with its ${serving} slots (no replica, every pod answered)`,
        });
        continue;
      }
      const pods = forgetters(t, ghost.id);
      if (pods.length > 0)
        steps.push({
          kind: 'forget',
          pods,
          id: ghost.id,
          reason: `${label(ghost)} failed and is no pod's node any more`,
        });
    }
  }
  steps.push(...letLeavingGo(t, spec, counts));
  return { steps, holds };
}

/**
 * The nodes of drained leaving shards go once their pods do: forgotten by the staying nodes when
 * their pod is terminating (then reset: it must not gossip its way back while it shuts down) or
 * already gone. While the pod is still there the node stays in the cluster, answering MOVED to a
 * client whose slot map is old (its record says it serves nothing: the hook removes the shard).
 */
function letLeavingGo(t: Topology, spec: ClusterSpecView, counts: Map<string, number>): ClusterStep[] {
  if (t.openSlots.length > 0) return [];
  const going: ClusterNode[] = [];
  const shards = new Set(
    [...t.nodes.values()].flatMap((n) => (n.shard !== null && n.shard >= spec.shards ? [n.shard] : [])),
  );
  for (const shard of shards) {
    const nodes = nodesOfShard(t, shard);
    if (nodes.some((n) => (counts.get(n.id) ?? 0) > 0)) continue;
    for (const n of nodes) {
      if (n.pod?.deleting) going.push(n);
      else if (!n.pod && t.allAnswered) going.push(n);
    }
  }
  if (going.length === 0) return [];
  const ids = new Set(going.map((n) => n.id));
  const forgets: ClusterStep[] = going.flatMap((n) => {
    const pods = forgetters(t, n.id, ids);
    return pods.length > 0
      ? [
          {
            kind: 'forget' as const,
            pods,
            id: n.id,
            reason: `${label(n)} left with shard ${n.shard} (it serves no slot${n.pod ? ', its pod is terminating' : ', its pod is gone'})`,
          },
        ]
      : [];
  });
  // Only nodes still in the cluster are reset (a reset one knows only itself); replicas first.
  const resets: ClusterStep[] = going
    .filter((n) => n.pod && (t.views.get(n.id)?.size ?? 0) > 1)
    .sort((a, b) => Number(a.role === 'master') - Number(b.role === 'master') || (a.pod!.name < b.pod!.name ? -1 : 1))
    .map((n) => ({
      kind: 'reset' as const,
      pod: n.pod!.name,
      reason: `${label(n)} left with shard ${n.shard}: reset so it does not gossip its way back`,
    }));
  return [...forgets, ...resets];
}
