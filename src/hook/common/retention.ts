// The volume policy of a StatefulSet on deletion, as every kind's finalize reads and sets it.
// Invariant: a StatefulSet is let go only once its controller has seen the policy wanted
// (status.observedGeneration), because garbage collection of a StatefulSet whose policy says
// Delete removes its PVCs.
import type { KubeObject } from './types.ts';
import { at, int, isRecord } from './util.ts';

/** How long to wait before looking again while teardown is in progress. */
export const FINALIZE_POLL_SECONDS = 5;

export type Policy = 'Retain' | 'Delete';

export function policyOf(set: KubeObject): Policy {
  return at(set, 'spec', 'persistentVolumeClaimRetentionPolicy', 'whenDeleted') === 'Delete' ? 'Delete' : 'Retain';
}

/** The StatefulSet says `want` and its controller has processed the spec that says so. */
export function retentionSettled(set: KubeObject, want: Policy): boolean {
  if (policyOf(set) !== want) return false;
  const generation = int(set.metadata.generation);
  return generation === undefined || int(at(set, 'status', 'observedGeneration')) === generation;
}

/** A copy of an observed StatefulSet whose volume policy says Retain on deletion. */
export function withRetain(set: KubeObject): KubeObject {
  const spec = isRecord(set['spec']) ? set['spec'] : {};
  const policy = isRecord(spec['persistentVolumeClaimRetentionPolicy'])
    ? spec['persistentVolumeClaimRetentionPolicy']
    : {};
  return { ...set, spec: { ...spec, persistentVolumeClaimRetentionPolicy: { ...policy, whenDeleted: 'Retain' } } };
}
