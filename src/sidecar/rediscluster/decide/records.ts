// The role label and the cluster-node annotation each cluster pod should carry, and whether to
// write them now. Pure; the wall clock comes in as `nowMs`.
// Invariants (api/rediscluster-names.ts): id, role, slots, master and link are rewritten as soon as
// they change; the memory and key figures at most once a minute and only when one moved by 5% or
// more, so a cluster at rest costs no API write. A pod whose node does not answer keeps its last
// figures; its role, slots and master come from the cluster's view of its node, with link down
// (a failed master whose slots were taken over counts as a replica: it comes back as one).
import { clusterNodeRecord, type ClusterNodeRecord } from '../../../api/rediscluster-names.ts';
import { ROLE_MASTER, ROLE_REPLICA } from '../../../api/labels.ts';
import { selfLine, type Topology } from './topology.ts';
import type { PodObservation } from './types.ts';

export const FIGURES_EVERY_MS = 60_000;
export const FIGURES_MOVE = 0.05;

export interface RecordWrite {
  pod: string;
  uid: string;
  /** The role label to set, or undefined when it is right. */
  role: string | undefined;
  /** The annotation value to set, or undefined when it is right. */
  record: string | undefined;
  reason: string;
}

/** The record the pod's node calls for now; null when nothing is known of it. */
export function recordOf(t: Topology, pod: PodObservation, nowMs: number): ClusterNodeRecord | null {
  const at = new Date(nowMs).toISOString();
  const self = selfLine(pod);
  if (self && pod.probe?.ok) {
    const node = t.nodes.get(self.id)!;
    const info = pod.probe.info;
    return {
      id: self.id,
      role: info.role,
      slots: info.role === 'master' ? self.slots : [],
      masterId: info.role === 'replica' ? self.masterId : null,
      linkUp: info.role === 'replica' ? info.linkUp : !node.fail,
      usedMemory: info.usedMemory,
      maxMemory: info.maxMemory,
      keys: info.keys,
      at,
    };
  }
  const last = pod.record;
  const node = last ? t.nodes.get(last.id) : undefined;
  if (!last || !node) return null;
  // A failed master whose slots another node took over is the master of nothing: Redis makes it a
  // replica of that node when it comes back. Until then its shard carries one master label, not
  // two (found on the real control plane: the dead pod kept its label for the whole restart).
  const deposed = node.role === 'master' && node.fail && node.slots.length === 0;
  const role = deposed ? 'replica' : node.role;
  return {
    ...last,
    role,
    slots: role === 'master' ? node.slots : [],
    masterId: role === 'replica' && !deposed ? node.masterId : null,
    linkUp: false,
    at,
  };
}

const moved = (a: number, b: number) => Math.abs(a - b) >= FIGURES_MOVE * Math.max(a, b, 1);

/** What to write on one pod, or null when its label and record are right. */
export function decideRecord(t: Topology, pod: PodObservation, nowMs: number): RecordWrite | null {
  const next = recordOf(t, pod, nowMs);
  if (!next) return null;
  const last = pod.record;
  const role = next.role === 'master' ? ROLE_MASTER : ROLE_REPLICA;
  let reason = '';
  if (!last) reason = 'first record';
  else if (last.id !== next.id) reason = 'new node id';
  else if (last.role !== next.role) reason = `role ${last.role} -> ${next.role}`;
  else if (
    clusterNodeRecord({ ...last, usedMemory: 0, maxMemory: 0, keys: 0, at: '' }) !==
    clusterNodeRecord({ ...next, usedMemory: 0, maxMemory: 0, keys: 0, at: '' })
  )
    reason = 'slots, master or link changed';
  else if (
    nowMs - Date.parse(last.at) >= FIGURES_EVERY_MS &&
    (moved(last.usedMemory, next.usedMemory) || moved(last.keys, next.keys) || last.maxMemory !== next.maxMemory)
  )
    reason = 'memory or keys moved';
  const write: RecordWrite = {
    pod: pod.name,
    uid: pod.uid,
    role: pod.roleLabel === role ? undefined : role,
    record: reason ? clusterNodeRecord(next) : undefined,
    reason,
  };
  if (write.role === undefined && write.record === undefined) return null;
  if (!write.reason) write.reason = `role label ${pod.roleLabel ?? 'missing'} -> ${role}`;
  return write;
}
