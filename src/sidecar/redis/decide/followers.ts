// Who follows the labelled master: the replicas whose testimony failure detection weighs. Pure.
// Invariant: a follower answers now and replicates from the master's current IP on the Redis
// port; a node following an older address or the placeholder testifies about nothing.
import { REDIS_PORT } from '../../../api/labels.ts';
import { currentFacts } from './observe.ts';
import type { RedisFacts } from '../../adapters/redis/types.ts';
import type { DecideInput, PodObservation } from './types.ts';

/** The master's IP as the replicas know it: the pod's IP, or where we last reached it. */
export function masterIpOf(master: PodObservation): string | null {
  return master.ip ?? master.redis?.ip ?? null;
}

/** Answering replicas that follow the master's IP, with their current facts. */
export function followersOf(
  input: DecideInput,
  master: PodObservation,
): Array<{ pod: PodObservation; facts: RedisFacts }> {
  const ip = masterIpOf(master);
  const out: Array<{ pod: PodObservation; facts: RedisFacts }> = [];
  if (!ip) return out;
  for (const pod of input.pods) {
    if (pod === master) continue;
    const facts = currentFacts(pod, input.now, input.config);
    const r = facts?.replication;
    if (facts && r && r.role === 'replica' && r.masterHost === ip && r.masterPort === REDIS_PORT)
      out.push({ pod, facts });
  }
  return out;
}
