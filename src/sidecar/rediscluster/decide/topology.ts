// The cluster as one picture, merged from what every answering node says (CLUSTER NODES) about
// itself and the others, and the shard each node belongs to. Pure.
// Invariants:
// - A node's own answer is the truth about its role, its slots and, for a master, its open
//   (migrating or importing) slots; for a node that did not answer, the view that has the newest
//   config epoch of it speaks. A slot's owner is the claimant with the highest config epoch: Redis' own rule.
// - `fail` is the cluster's agreement (flag `fail` in another node's view), never our own failure
//   to reach a node; a node only we cannot reach is `pfail` at most.
// - allAnswered is true only when every pod has an address and its node answered: the decisions
//   that cannot be undone (forgetting a node, giving away slots nobody serves) need it.
import { CLUSTER_SLOTS } from '../../../api/rediscluster-schema.ts';
import type { ClusterNode, NodeLine, OpenSlot, PodObservation } from './types.ts';

export interface Topology {
  nodes: Map<string, ClusterNode>;
  /** The id of the node serving each slot; null when nobody claims it. */
  owner: Array<string | null>;
  pods: PodObservation[];
  /** Pods whose node answered, by node id. */
  byId: Map<string, PodObservation>;
  /** Each answering node's own view: which ids it knows (itself included), and its line for each. */
  views: Map<string, Map<string, NodeLine>>;
  allAnswered: boolean;
  openSlots: OpenSlot[];
  /** No node claims a slot in any view: the cluster was never formed. */
  unformed: boolean;
}

/** The line a pod's node gave about itself. */
export function selfLine(pod: PodObservation): NodeLine | null {
  if (!pod.probe?.ok) return null;
  return pod.probe.nodes.find((n) => n.myself) ?? null;
}

function majority(values: number[]): number | null {
  if (values.length === 0) return null;
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]![0];
}

/**
 * Merges the pods' answers. `remembered` maps node ids to the shard they were last seen in (a
 * node whose pod is gone keeps its shard there, so its slots can be traced to the right shard).
 */
export function buildTopology(
  pods: readonly PodObservation[],
  remembered: ReadonlyMap<string, number> = new Map(),
): Topology {
  const byId = new Map<string, PodObservation>();
  const views = new Map<string, Map<string, NodeLine>>();
  for (const pod of pods) {
    const self = selfLine(pod);
    if (!self || byId.has(self.id) || !pod.probe?.ok) continue;
    byId.set(self.id, pod);
    views.set(self.id, new Map(pod.probe.nodes.filter((n) => !n.handshake).map((n) => [n.id, n])));
  }

  const sightings = new Map<string, Array<{ viewer: string; line: NodeLine }>>();
  for (const [viewer, view] of views) {
    for (const line of view.values()) {
      const list = sightings.get(line.id) ?? [];
      list.push({ viewer, line });
      sightings.set(line.id, list);
    }
  }

  const nodes = new Map<string, ClusterNode>();
  for (const [id, seen] of sightings) {
    const pod = byId.get(id) ?? null;
    const own = seen.find((s) => s.viewer === id)?.line;
    const base =
      own ??
      [...seen].sort((a, b) => b.line.configEpoch - a.line.configEpoch || (a.viewer < b.viewer ? -1 : 1))[0]!.line;
    const others = seen.filter((s) => s.viewer !== id);
    nodes.set(id, {
      id,
      ip: pod?.ip ?? base.ip,
      role: pod?.probe?.ok ? pod.probe.info.role : base.role,
      masterId: base.role === 'replica' ? base.masterId : null,
      configEpoch: base.configEpoch,
      fail: others.some((s) => s.line.fail),
      pfail: others.some((s) => s.line.pfail),
      slots: base.slots,
      // Only a master's own open slots are moves in progress. Valkey 8 replicates CLUSTER SETSLOT,
      // so its replicas show their master's open slots too, and keep one their master refused
      // (NOREPLICAS: a replica acknowledged late); a promoted replica brings them along as a master.
      migrating: new Map(own?.role === 'master' ? own.migrating : []),
      importing: new Map(own?.role === 'master' ? own.importing : []),
      pod,
      info: pod?.probe?.ok ? pod.probe.info : null,
      shard: pod ? pod.shard : null,
      knownBy: seen.length,
    });
  }
  // A node no pod answered as: the shard of the pods replicating it, else of the pod whose record
  // names it (a pod that does not answer keeps its last record), else what was remembered.
  const recorded = new Map(pods.flatMap((p) => (p.record ? [[p.record.id, p.shard] as const] : [])));
  for (const node of nodes.values()) {
    if (node.shard !== null) continue;
    const replicaShards = [...nodes.values()].filter((n) => n.pod && n.masterId === node.id).map((n) => n.pod!.shard);
    node.shard = majority(replicaShards) ?? recorded.get(node.id) ?? remembered.get(node.id) ?? null;
  }

  const owner: Array<string | null> = new Array<string | null>(CLUSTER_SLOTS).fill(null);
  const rank = (n: ClusterNode) => [n.configEpoch, n.pod ? 1 : 0] as const;
  const better = (a: ClusterNode, b: ClusterNode) => {
    const [ea, pa] = rank(a);
    const [eb, pb] = rank(b);
    return ea !== eb ? ea > eb : pa !== pb ? pa > pb : a.id < b.id;
  };
  let anySlot = false;
  for (const node of nodes.values()) {
    for (const [a, b] of node.slots) {
      anySlot = true;
      for (let s = a; s <= b; s++) {
        const current = owner[s];
        if (current === null || current === undefined || better(node, nodes.get(current)!)) owner[s] = node.id;
      }
    }
  }

  const open = new Map<number, OpenSlot>();
  const slotEntry = (slot: number) => {
    let e = open.get(slot);
    if (!e) open.set(slot, (e = { slot, migrating: [], importing: [] }));
    return e;
  };
  for (const node of nodes.values()) {
    for (const [slot, to] of node.migrating) slotEntry(slot).migrating.push({ node: node.id, to });
    for (const [slot, from] of node.importing) slotEntry(slot).importing.push({ node: node.id, from });
  }

  return {
    nodes,
    owner,
    pods: [...pods],
    byId,
    views,
    allAnswered: pods.every((p) => p.ip !== null && p.probe?.ok === true),
    openSlots: [...open.values()].sort((a, b) => a.slot - b.slot),
    unformed: !anySlot,
  };
}

/** How many slots each node serves (by the owner table). */
export function slotCounts(t: Topology): Map<string, number> {
  const out = new Map<string, number>();
  for (const id of t.owner) if (id !== null) out.set(id, (out.get(id) ?? 0) + 1);
  return out;
}

/** A node that answered us as a master, not flagged failing by any other node. */
export function healthyMaster(n: ClusterNode | undefined | null): n is ClusterNode {
  return !!n && !!n.pod && !n.pod.deleting && n.info?.role === 'master' && !n.fail && !n.pfail;
}

/** Whether the answering node `viewer` knows `id` (lists it in its own CLUSTER NODES). */
export function knows(t: Topology, viewer: string, id: string): boolean {
  return t.views.get(viewer)?.has(id) ?? false;
}
