// Re-pointing and fencing plans for a chosen master. Pure.
// Invariants: every answering non-master pod replicates from the master's CURRENT pod IP; a node
// that reports role master but is not the chosen master is demoted (REPLICAOF the master) before
// any label of it changes (plan.ts orders that); deleting and loading pods are left alone (a
// re-point would start a pointless full sync); nothing is pointed at a master that does not answer.
import { currentFacts, endpointOf, pointsAtPlaceholder } from './observe.ts';
import type { DecideInput, PodObservation, Step } from './types.ts';

export function planReplication(input: DecideInput, master: PodObservation, masterIp: string): Step[] {
  const { now, config } = input;
  const steps: Step[] = [];
  const target = endpointOf(masterIp);
  for (const pod of input.pods) {
    if (pod === master || pod.deleting || !pod.ip) continue;
    const facts = currentFacts(pod, now, config);
    if (!facts || facts.loading) continue;
    const r = facts.replication;
    if (r.role === 'master') {
      steps.push({
        kind: 'replicaof',
        pod: pod.name,
        endpoint: endpointOf(pod.ip),
        master: target,
        demote: true,
        critical: false,
        reason: `${pod.name} reports role master but ${master.name} is the master (an old master returning, or a promotion that lost): demoting it to a replica of ${masterIp}`,
      });
      continue;
    }
    if (r.masterHost === masterIp && r.masterPort === target.port) continue;
    const why = pointsAtPlaceholder(facts)
      ? 'started as a replica of nowhere (new, restarted or recreated pod)'
      : `replicates from ${r.masterHost}:${r.masterPort}, not the master's address`;
    steps.push({
      kind: 'replicaof',
      pod: pod.name,
      endpoint: endpointOf(pod.ip),
      master: target,
      demote: false,
      critical: false,
      reason: `${pod.name} ${why}: re-pointing it to ${master.name} at ${masterIp}`,
    });
  }
  return steps;
}

/**
 * Fencing for the master: min-replicas-to-write = min(spec value, spec.replicas, replicas that
 * can acknowledge). "Can acknowledge" counts answering replicas that already hold this data set's
 * stream (they follow the master, or a previous master and are re-pointed in the same plan) and
 * are not copying a full data set. So a replica cut off from the master still counts (an
 * isolated master keeps refusing writes), and right after a failover the replicas being
 * re-pointed count (the new master is fenced from its first write). A dead pod, a pod that
 * started as a replica of nowhere, or one in its first full sync does not count: a new master
 * whose only possible replica is the dead old master takes writes instead of refusing them until
 * that pod returns and syncs (then the value is raised again). The old master, if merely cut
 * off, is fenced by its own setting, which is never lowered while we cannot reach it.
 */
export function desiredFencing(
  input: DecideInput,
  master: PodObservation,
): { count: number; maxLag: number; reason: string } {
  const { now, config, spec } = input;
  let able = 0;
  for (const pod of input.pods) {
    if (pod === master || pod.deleting) continue;
    const facts = currentFacts(pod, now, config);
    if (!facts || facts.loading) continue;
    const r = facts.replication;
    if (r.role === 'replica' && !pointsAtPlaceholder(facts) && !r.masterSyncInProgress) able++;
  }
  const count = Math.max(0, Math.min(spec.minReplicasToWrite, spec.replicas, able));
  const reason =
    count < Math.min(spec.minReplicasToWrite, spec.replicas)
      ? `min-replicas-to-write ${count}: only ${able} replica(s) can acknowledge now (spec ${spec.minReplicasToWrite}); raised again when they can`
      : `min-replicas-to-write ${count} (spec ${spec.minReplicasToWrite}, ${spec.replicas} replicas)`;
  return { count, maxLag: spec.minReplicasMaxLagSeconds, reason };
}

export function planFencing(input: DecideInput, master: PodObservation, masterIp: string): Step | null {
  const facts = master.redis?.facts;
  const want = desiredFencing(input, master);
  if (facts && facts.minReplicasToWrite === want.count && facts.minReplicasMaxLag === want.maxLag) return null;
  return {
    kind: 'config',
    pod: master.name,
    endpoint: endpointOf(masterIp),
    settings: { 'min-replicas-to-write': want.count, 'min-replicas-max-lag': want.maxLag },
    critical: false,
    reason: want.reason,
  };
}
