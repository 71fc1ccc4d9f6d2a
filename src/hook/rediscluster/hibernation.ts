// The Hibernated condition of a RedisCluster: whether spec.hibernate has stopped every pod, is
// waiting for a reshard to finish first, or is waking the cluster back up. Pure; no clock.
// Invariants:
// - Hibernating only stops pods (shards.ts: every shard StatefulSet at 0, claims, Services,
//   ConfigMap and Secrets kept); a reshard moving slots (its record Running) finishes first, and
//   the condition says so, naming how far it got.
// - Waking (reason Waking) lasts from spec.hibernate: false after a hibernation until the
//   RedisCluster is Ready again (every slot served by a ready master, every shard whole); the
//   sidecar reads it and, meanwhile, neither forces a failover nor forgets a node: a node whose pod
//   has not started yet is not gone (sidecar/rediscluster/decide/hibernation.ts).
import type { ReshardRecord } from '../../api/rediscluster-names.ts';
import type { Verdict } from './conditions.ts';
import type { RedisClusterPodView } from './pods.ts';

export const HIBERNATED_CONDITION = 'Hibernated';

export interface HibernationInput {
  hibernate: boolean;
  reshard: ReshardRecord | null;
  views: readonly RedisClusterPodView[];
  /** The previous Hibernated condition's status and reason, as received. */
  previous: { status: string; reason: string } | undefined;
  /** The Ready verdict of this sync without hibernation: the end of a wake. */
  ready: boolean;
}

export function hibernationVerdict(input: HibernationInput): Verdict {
  if (input.hibernate) {
    if (input.reshard?.state === 'Running') {
      const r = input.reshard;
      return {
        status: 'False',
        reason: 'WaitingForReshard',
        message:
          `spec.hibernate is true; the pods stop once the reshard ${r.from} -> ${r.to} shards has finished ` +
          `(${r.moved} of ${r.total} slots moved): a slot in flight is never left open`,
      };
    }
    const left = input.views.map((v) => v.name);
    if (left.length === 0)
      return {
        status: 'True',
        reason: 'Hibernated',
        message:
          'every pod is stopped; the data volumes (with nodes.conf), Services, ConfigMap and Secrets are kept ' +
          '(spec.hibernate: false brings the RedisCluster back)',
      };
    return {
      status: 'False',
      reason: 'Hibernating',
      message:
        `spec.hibernate is true; waiting for ${left.length} pod(s) to stop: ` +
        `${left.slice(0, 6).join(', ')}${left.length > 6 ? ', ...' : ''}`,
    };
  }
  const p = input.previous;
  const wasAsleep = p !== undefined && (p.status === 'True' || p.reason === 'Hibernating' || p.reason === 'Waking');
  if (wasAsleep && !input.ready) {
    const running = input.views.filter((v) => v.ready && !v.terminating).length;
    return {
      status: 'False',
      reason: 'Waking',
      message:
        `spec.hibernate is false; the pods start on their volumes (${running} of the pods Ready) and the nodes ` +
        'meet again at their new addresses; no failover and no node forgotten until the RedisCluster is Ready',
    };
  }
  return { status: 'False', reason: 'Awake', message: 'spec.hibernate is false' };
}
