// What a round tells the world besides Redis writes: each pod's role label and cluster-node record
// (NodeRecords), and, once per change, the holds worth a human's attention, the steps applied and
// the shards whose master moved (RedisClusterReporter: log lines and Events on the RedisCluster).
// Invariants:
// - A pod is patched only when decide/records.ts says its label or record changed, with the pod's
//   uid as a precondition (never onto a recreated pod); what we wrote is remembered until the
//   informer shows it, so a round never writes the same value twice.
// - A hold is told when it appears or its reason changes, and its end is logged; Warning holds
//   are Events. Nothing is told twice for one state.
import type { Logger } from 'pino';
import { CLUSTER_NODE_ANNOTATION } from '../../../api/cluster-names.ts';
import { ROLE_LABEL } from '../../../api/labels.ts';
import { isReplaced, isNotFound, kubeFailure, type RedisRef } from '../../adapters/kube/client.ts';
import { decideRecord } from '../decide/records.ts';
import type { RoundPlan } from '../decide/plan.ts';
import { shardMaster } from '../decide/shard-master.ts';
import type { Topology } from '../decide/topology.ts';
import type { ClusterStep } from '../decide/types.ts';
import type { Written } from './pods.ts';
import type { ClusterKube, EventToSend } from './types.ts';

interface Common {
  ref: RedisRef;
  kube: Pick<ClusterKube, 'patchPodMetadata'>;
  log: Logger;
  event(e: EventToSend): void;
}

export class NodeRecords {
  readonly #o: Common & { isLeader(): boolean };
  readonly #written = new Map<string, Written>();

  constructor(options: Common & { isLeader(): boolean }) {
    this.#o = options;
  }

  /** What we wrote on the pod and the informer may not show yet. */
  written(uid: string): Written | undefined {
    return this.#written.get(uid);
  }

  async write(t: Topology, nowMs: number): Promise<void> {
    const alive = new Set(t.pods.map((p) => p.uid));
    for (const uid of [...this.#written.keys()]) if (!alive.has(uid)) this.#written.delete(uid);
    const writes = t.pods.flatMap((p) => {
      const w = decideRecord(t, p, nowMs);
      return w ? [w] : [];
    });
    await Promise.all(
      writes.map(async (w) => {
        if (!this.#o.isLeader()) return;
        const labels = w.role ? { [ROLE_LABEL]: w.role } : undefined;
        const annotations = w.record ? { [CLUSTER_NODE_ANNOTATION]: w.record } : undefined;
        try {
          const pod = await this.#o.kube.patchPodMetadata(this.#o.ref.namespace, w.pod, { labels, annotations, uid: w.uid });
          this.#written.set(w.uid, { role: pod.metadata?.labels?.[ROLE_LABEL], record: pod.metadata?.annotations?.[CLUSTER_NODE_ANNOTATION] });
          this.#o.log.debug({ pod: w.pod, reason: w.reason }, 'node record written');
        } catch (err) {
          if (isReplaced(err) || isNotFound(err)) return;
          const f = kubeFailure(err);
          this.#o.log.warn({ pod: w.pod, code: f.code, err: f.message }, 'could not write the node record');
        }
      }),
    );
  }
}

const HOLD_REASONS: Record<string, string> = {
  failover: 'FailoverBlocked',
  forget: 'SlotsLost',
  replicate: 'NodeNotAttached',
  open: 'SlotStuck',
  assign: 'SlotsUncovered',
  split: 'ShardSplit',
};

export class RedisClusterReporter {
  readonly #o: Common & { masterChanged?: (() => void) | undefined };
  readonly #holds = new Map<string, string>();
  #masters = new Map<number, string>();

  constructor(options: Common & { masterChanged?: (() => void) | undefined }) {
    this.#o = options;
  }

  round(plan: RoundPlan): void {
    const seen = new Set<string>();
    for (const h of plan.holds) {
      seen.add(h.key);
      if (this.#holds.get(h.key) === h.reason) continue;
      this.#holds.set(h.key, h.reason);
      if (h.warn) {
        this.#o.log.warn({ hold: h.key, reason: h.reason }, 'cluster needs attention');
        this.#o.event({ type: 'Warning', reason: HOLD_REASONS[h.key.split('/')[0]!] ?? 'ClusterAttention', message: h.reason });
      } else this.#o.log.info({ hold: h.key, reason: h.reason }, 'waiting');
    }
    for (const key of [...this.#holds.keys()]) {
      if (seen.has(key)) continue;
      this.#holds.delete(key);
      this.#o.log.info({ hold: key }, 'no longer waiting');
    }
    this.#mastersMoved(plan.topology);
  }

  /** A shard's serving master changed (a failover, by the cluster or forced): said once. */
  #mastersMoved(t: Topology): void {
    const now = new Map<number, string>();
    const shards = new Set([...t.nodes.values()].flatMap((n) => (n.shard === null ? [] : [n.shard])));
    for (const shard of shards) {
      const m = shardMaster(t, shard);
      if (m.serving && m.node?.pod) now.set(shard, m.node.pod.name);
    }
    for (const [shard, pod] of now) {
      const before = this.#masters.get(shard);
      if (before !== undefined && before !== pod) {
        this.#o.log.warn({ shard, from: before, to: pod }, 'shard master changed');
        this.#o.masterChanged?.();
        this.#o.event({ type: 'Normal', reason: 'MasterChanged', message: `shard ${shard}: ${pod} is master now (was ${before})` });
      }
    }
    this.#masters = new Map([...this.#masters, ...now]);
  }

  /** A step worked: the notable ones become Events. */
  applied(step: ClusterStep): void {
    const e = stepEvent(step);
    if (e) this.#o.event(e);
  }
}

function stepEvent(step: ClusterStep): EventToSend | null {
  switch (step.kind) {
    case 'addslots':
      return { type: 'Normal', reason: 'SlotsAssigned', message: step.reason };
    case 'replicate':
      return { type: 'Normal', reason: 'ReplicaAttached', message: step.reason };
    case 'failover':
      return { type: 'Warning', reason: 'FailoverForced', message: step.reason };
    case 'forget':
      return { type: 'Normal', reason: 'NodeForgotten', message: `${step.reason}: forgotten by ${step.pods.length} node(s)` };
    case 'reset':
      return { type: 'Normal', reason: 'NodeReleased', message: step.reason };
    case 'move':
      return step.quiet ? null : { type: 'Warning', reason: 'SlotMoveFinished', message: step.reason };
    case 'stable':
      return { type: 'Warning', reason: 'SlotMoveRolledBack', message: step.reason };
    case 'meet':
      return null;
  }
}
