// What the sidecar may do to a RedisCluster around a hibernation (spec.hibernate). Pure: the spec,
// the reshard record, the Hibernated condition the hook wrote, and this round's pods.
// Invariants:
// - Hibernating (spec.hibernate true): nothing at all, no probe, no Redis write, no Event, no
//   pod deleted: the pods are going away on purpose, and a failover, a slot fix or a forgotten node
//   would only damage what the volumes keep. One exception: a reshard whose record says Running
//   goes on to its end, because the hook keeps the pods until then (a slot in flight is never left
//   open); no new reshard starts while spec.hibernate is true.
// - Waking (spec.hibernate false, the hook's Hibernated condition still Hibernated, Hibernating
//   or Waking): the pods come back on their volumes with new addresses, masters last (each holds
//   until it may serve: hook/rediscluster/statefulset.ts). Meeting nodes, attaching replicas and
//   closing open slots go on; a forced failover, a forget or a reset is held while any pod the
//   spec asks for is missing, has no address or does not answer (a node whose pod has not started
//   yet is not gone). Once every pod answers, a failover is still held while its failed master
//   answers with keys: the cluster's fail flag is then about its old address, and its replica may
//   hold less (a master back empty while its replica holds the data is still replaced: the trap
//   failover.ts guards against). No reshard, rollout, switchover or autoscaling until the hook
//   says the RedisCluster is Ready again (the condition Awake); no Warning while waking.
import type { ReshardRecord } from '../../../api/rediscluster-names.ts';
import type { ClusterStep, Hold, PodObservation } from './types.ts';

export type HibernationMode =
  { kind: 'awake' } | { kind: 'hibernating'; reason: string } | { kind: 'waking'; complete: boolean; reason: string };

export interface HibernationInput {
  hibernate: boolean;
  reshard: ReshardRecord | null;
  /** The reason of the Hibernated condition on the RedisCluster's status, as the hook last wrote it. */
  conditionReason: string | undefined;
  /** spec.master.replicas * (1 + spec.replicas): the pods of the staying shards when awake. */
  expectedPods: number;
  shards: number;
  pods: readonly PodObservation[];
}

const ASLEEP = new Set(['Hibernated', 'Hibernating', 'Waking']);

export function hibernationMode(input: HibernationInput): HibernationMode {
  if (input.hibernate) {
    if (input.reshard?.state === 'Running') return { kind: 'awake' };
    return {
      kind: 'hibernating',
      reason: 'spec.hibernate is true: the pods are stopping or stopped; no failover, slot fix, reshard or forget',
    };
  }
  if (input.conditionReason === undefined || !ASLEEP.has(input.conditionReason)) return { kind: 'awake' };
  const staying = input.pods.filter((p) => p.shard < input.shards && !p.deleting);
  const answering = staying.filter((p) => p.ip !== null && p.probe?.ok === true).length;
  const complete = staying.length >= input.expectedPods && answering === staying.length;
  return {
    kind: 'waking',
    complete,
    reason: complete
      ? 'waking from hibernation: every pod answers; no reshard, rollout or autoscaling until the RedisCluster is Ready'
      : `waking from hibernation: ${answering} of ${input.expectedPods} pods answer; ` +
        'no failover and no node forgotten until every pod does',
  };
}

/** Steps that would treat a node still starting as gone. */
const GONE_STEPS: ReadonlySet<ClusterStep['kind']> = new Set(['failover', 'forget', 'reset']);

/** Keys of each node that answers this round, by node id. */
function answeringKeys(pods: readonly PodObservation[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of pods) {
    if (p.probe?.ok !== true) continue;
    const me = p.probe.nodes.find((l) => l.myself);
    if (me) out.set(me.id, p.probe.info.keys);
  }
  return out;
}

/** The steps and holds of a round while waking: see the header. */
export function wakingRound(
  mode: Extract<HibernationMode, { kind: 'waking' }>,
  steps: readonly ClusterStep[],
  holds: readonly Hold[],
  pods: readonly PodObservation[],
): { steps: ClusterStep[]; holds: Hold[] } {
  const keys = answeringKeys(pods);
  const why = (s: ClusterStep): string | null => {
    if (!GONE_STEPS.has(s.kind)) return null;
    if (!mode.complete) return mode.reason;
    if (s.kind === 'failover' && (keys.get(s.failedId) ?? 0) > 0)
      return (
        `waking from hibernation: ${s.failedId.slice(0, 8)} answers with ${keys.get(s.failedId)} keys ` +
        'at its new address (the fail flag is about its old one)'
      );
    return null;
  };
  const kept: ClusterStep[] = [];
  const held: Hold[] = [];
  for (const s of steps) {
    const reason = why(s);
    if (reason === null) kept.push(s);
    else held.push({ key: `waking/${s.kind}`, reason: `${reason}: held: ${s.reason}`, warn: false });
  }
  return { steps: kept, holds: [...holds.map((h) => ({ ...h, warn: false })), ...held] };
}
