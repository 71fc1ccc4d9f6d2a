// A master cut off from its replicas while the sidecar still reaches it. Pure.
// Fenced (min-replicas-to-write), such a master cannot take a write any client could have
// acknowledged with WAIT, so the data set is unavailable for as long as the cut lasts. Moving the
// master to the best replica (the plan demotes the old one, which the sidecar still reaches)
// gives writes back; what the old master took after the cut was never replicated, so never
// acknowledged, exactly as in a crash.
// Invariants (each one a way a healthy set could look cut off, refused here):
// - fencing is on (min-replicas-to-write > 0): without it the master serves writes, and moving
//   it would throw away writes it accepted;
// - at least min-replicas-to-write + 1 answering replicas follow it: after the move the others
//   must be able to acknowledge writes on the new master, or nothing is gained;
// - every one of them holds this master's data set (its replication id, a non-zero offset) and
//   is not copying one (a replica in its first sync, or waiting for one, is no witness);
// - every one of them has testified that it lost the master (link down, no I/O, or its offset
//   still) continuously for downAfterMs: a late ping or a pause shorter than that never counts;
// - the master hears none of its replicas either (no replica line online with an ACK younger
//   than silentAfterSeconds): both sides of the link agree that it is cut.
import { offsetStalledMs, reportsMasterDown } from './observe.ts';
import { followersOf } from './followers.ts';
import type { RedisFacts } from '../../adapters/redis/types.ts';
import type { DecideInput, PodObservation } from './types.ts';

/** The evidence that the answering master `master` is cut off from its replicas; empty when it is not. */
export function cutOffEvidence(input: DecideInput, master: PodObservation, facts: RedisFacts): string[] {
  const { now, config } = input;
  const r = facts.replication;
  if (r.role !== 'master' || facts.loading || facts.minReplicasToWrite <= 0) return [];
  const followers = followersOf(input, master);
  if (followers.length < facts.minReplicasToWrite + 1) return [];
  for (const { pod, facts: f } of followers) {
    const fr = f.replication;
    if (fr.masterReplid !== r.masterReplid || (fr.slaveReplOffset ?? 0) <= 0 || fr.masterSyncInProgress || f.loading)
      return [];
    const since = pod.redis?.witnessDownSince ?? null;
    if (since === null || now - since < config.downAfterMs) return [];
    if (!reportsMasterDown(f, config, offsetStalledMs(pod.redis))) return [];
  }
  const heard = r.replicas.filter((l) => l.state === 'online' && l.lag < config.silentAfterSeconds);
  if (heard.length > 0) return [];
  const names = followers.map((x) => x.pod.name).join(', ');
  return [
    `every replica following it (${names}) has lost it for >= downAfterMilliseconds ${config.downAfterMs}`,
    `it has had no acknowledgement from any replica for >= ${config.silentAfterSeconds} s`,
  ];
}
