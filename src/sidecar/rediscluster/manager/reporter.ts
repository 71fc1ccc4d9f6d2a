// What a round tells the world besides Redis writes (the pods' labels and records are
// node-records.ts's): once per change, the holds worth a human's attention, the steps applied and
// the shards whose master moved (RedisClusterReporter: log lines and Events on the RedisCluster).
// Invariants:
// - A hold is told when it appears or its reason changes, and its end is logged; Warning holds
//   are Events. Nothing is told twice for one state.
import type { Logger } from 'pino';
import type { RedisRef } from '../../adapters/kube/client.ts';
import type { RoundPlan } from '../decide/plan.ts';
import { shardMaster } from '../decide/shard-master.ts';
import type { Topology } from '../decide/topology.ts';
import type { ClusterStep } from '../decide/types.ts';
import type { ClusterKube, EventToSend } from './types.ts';

interface Common {
  ref: RedisRef;
  kube: Pick<ClusterKube, 'patchPodMetadata'>;
  log: Logger;
  event(e: EventToSend): void;
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
        this.#o.event({
          type: 'Warning',
          reason: HOLD_REASONS[h.key.split('/')[0]!] ?? 'ClusterAttention',
          message: h.reason,
        });
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
        this.#o.event({
          type: 'Normal',
          reason: 'MasterChanged',
          message: `shard ${shard}: ${pod} is master now (was ${before})`,
        });
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
      return {
        type: 'Normal',
        reason: 'NodeForgotten',
        message: `${step.reason}: forgotten by ${step.pods.length} node(s)`,
      };
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
