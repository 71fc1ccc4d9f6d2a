// Every kind's teardown steps once the parent is deleted, polled with resyncAfterSeconds; a kind
// gives its observed and related objects, which PVCs are its own, and how its status reads.
// Invariants:
// - finalized is true only once the volume policy has been carried out.
// - Data is deleted only for a VALID spec saying persistence.whenDeleted: Delete. With Retain, or an
//   invalid spec, every StatefulSet is first made to say whenDeleted: Retain and its controller must
//   have seen it (retention.ts) before we let go: collecting a StatefulSet whose policy says Delete
//   removes its PVCs.
// - With Delete, the StatefulSets are dropped only once their controller applied the policy (their
//   PVCs are owned and collected with them); the other children stay until the volumes are gone.
import type { MemberMeta } from '../../api/membership.ts';
import { lastAppliedOf, memberMeta, ofKind } from './observed.ts';
import { FINALIZE_POLL_SECONDS, policyOf, retentionSettled, withRetain, type Policy } from './retention.ts';
import type { KubeObject } from './types.ts';
import { array, at, str } from './util.ts';

/** What a finalize step answers: a hook response whose status is the kind's. */
export interface Teardown<S> {
  status: S;
  children: KubeObject[];
  resyncAfterSeconds?: number;
  finalized: boolean;
}

/** The parent being torn down, as the steps see it. */
export interface TeardownParent {
  namespace: string;
  /** Observed children, canonical order. */
  observed: KubeObject[];
  related: KubeObject[];
  /** The kind as the messages name it ("Redis", "RedisCluster"). */
  kind: string;
  /** Whether a PVC (by its namespace and labels) holds this parent's data. */
  owns: (meta: MemberMeta) => boolean;
}

const names = (objects: readonly KubeObject[]) => objects.map((o) => o.metadata.name).join(', ');

function statefulSets(parent: TeardownParent): KubeObject[] {
  return ofKind(parent.observed, 'apps/v1', 'StatefulSet', parent.namespace);
}

/** An invalid spec: keep every child as last applied, each StatefulSet switched to Retain. */
export function invalidTeardown<S>(parent: TeardownParent, status: S): Teardown<S> {
  const sets = statefulSets(parent);
  const children = parent.observed.map((o) =>
    sets.includes(o) && policyOf(o) === 'Delete' ? withRetain(lastAppliedOf(o)) : lastAppliedOf(o),
  );
  const unsettled = sets.filter((s) => !retentionSettled(s, 'Retain'));
  return unsettled.length === 0
    ? { status, children, finalized: true }
    : { status, children, resyncAfterSeconds: FINALIZE_POLL_SECONDS, finalized: false };
}

/** PVCs of this parent that something will still delete (owned by a StatefulSet, or already deleting). */
function pvcsInFlight(parent: TeardownParent): { pending: KubeObject[]; orphaned: KubeObject[] } {
  const pending: KubeObject[] = [];
  const orphaned: KubeObject[] = [];
  for (const pvc of ofKind(parent.related, 'v1', 'PersistentVolumeClaim', parent.namespace)) {
    if (!parent.owns(memberMeta(pvc, parent.namespace))) continue;
    const owned = array(pvc.metadata.ownerReferences).some((ref) => at(ref, 'kind') === 'StatefulSet');
    const deleting = str(pvc.metadata.deletionTimestamp) !== undefined;
    (owned || deleting ? pending : orphaned).push(pvc);
  }
  return { pending, orphaned };
}

/** A valid spec: the step toward `policy`, with `children` the planned ones and `status` the kind's for a message. */
export function validTeardown<S>(
  parent: TeardownParent,
  policy: Policy,
  children: KubeObject[],
  status: (message: string) => S,
): Teardown<S> {
  const sets = statefulSets(parent);
  const poll = (message: string, kept: KubeObject[]): Teardown<S> => ({
    status: status(message),
    children: kept,
    resyncAfterSeconds: FINALIZE_POLL_SECONDS,
    finalized: false,
  });
  const unsettled = sets.filter((s) => !retentionSettled(s, policy));
  if (policy === 'Retain') {
    if (unsettled.length > 0) {
      return poll(
        `waiting for StatefulSet(s) ${names(unsettled)} to switch to whenDeleted: Retain before releasing the ${parent.kind}`,
        children,
      );
    }
    return {
      status: status('volumes are retained (persistence.whenDeleted: Retain); children are garbage collected'),
      children,
      finalized: true,
    };
  }
  if (unsettled.length > 0) {
    return poll(
      `waiting for StatefulSet(s) ${names(unsettled)} to apply whenDeleted: Delete before deleting them`,
      children,
    );
  }
  const keep = children.filter((c) => c.kind !== 'StatefulSet');
  if (sets.length > 0) return poll(`deleting StatefulSet(s) ${names(sets)} and with them their volumes`, keep);
  const { pending, orphaned } = pvcsInFlight(parent);
  if (pending.length > 0) return poll(`waiting for PersistentVolumeClaim(s) ${names(pending)} to be deleted`, keep);
  const left =
    orphaned.length > 0
      ? `; PersistentVolumeClaim(s) ${names(orphaned)} are owned by no StatefulSet and were left in place: delete them by hand`
      : '';
  return {
    status: status(`volumes deleted (persistence.whenDeleted: Delete)${left}`),
    children: keep,
    finalized: true,
  };
}
