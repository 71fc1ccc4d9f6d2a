// Teardown when the Redis is deleted, in steps polled with resyncAfterSeconds. Invariants:
// - finalized is true only when the request has finalizing: true (checked by the caller) and
//   the observed state shows the volume policy has been carried out.
// - Data is deleted only when a VALID spec says persistence.whenDeleted: Delete. With Retain,
//   or with an invalid spec, every StatefulSet is first made to say whenDeleted: Retain and the
//   StatefulSet controller must have seen it (status.observedGeneration) before we let go,
//   because garbage collection of a StatefulSet whose policy says Delete removes its PVCs.
// - With Delete, the StatefulSets are dropped only once their controller has applied the Delete
//   policy (so their PVCs are owned and collected with them); the Services, ConfigMap and PDB
//   stay until the volumes are gone.
import { podBelongsTo } from '../../api/membership.ts';
import type { SpecProblem } from '../../api/validate.ts';
import { lastAppliedOf, memberMeta, ofKind } from '../common/observed.ts';
import { invalidStatus, planValid, validStatus, type HookState } from './state.ts';
import type { HookResponse, KubeObject } from '../common/types.ts';
import { FINALIZE_POLL_SECONDS, policyOf, retentionSettled, withRetain } from '../common/retention.ts';
import { array, at, str } from '../common/util.ts';

function statefulSets(state: HookState): KubeObject[] {
  return ofKind(state.observed, 'apps/v1', 'StatefulSet', state.namespace);
}

function names(objects: readonly KubeObject[]): string {
  return objects.map((o) => o.metadata.name).join(', ');
}

function invalidFinalize(state: HookState, problems: readonly SpecProblem[]): HookResponse {
  const status = invalidStatus(state, problems);
  const sets = statefulSets(state);
  const children = state.observed.map((o) =>
    sets.includes(o) && policyOf(o) === 'Delete' ? withRetain(lastAppliedOf(o)) : lastAppliedOf(o),
  );
  const unsettled = sets.filter((s) => !retentionSettled(s, 'Retain'));
  return unsettled.length === 0
    ? { status, children, finalized: true }
    : { status, children, resyncAfterSeconds: FINALIZE_POLL_SECONDS, finalized: false };
}

/** PVCs of this Redis that something will still delete (owned by a StatefulSet, or already deleting). */
function pvcsInFlight(state: HookState): { pending: KubeObject[]; orphaned: KubeObject[] } {
  const pending: KubeObject[] = [];
  const orphaned: KubeObject[] = [];
  for (const pvc of ofKind(state.related, 'v1', 'PersistentVolumeClaim', state.namespace)) {
    if (!podBelongsTo(memberMeta(pvc, state.namespace), state)) continue;
    const owned = array(pvc.metadata.ownerReferences).some((ref) => at(ref, 'kind') === 'StatefulSet');
    const deleting = str(pvc.metadata.deletionTimestamp) !== undefined;
    (owned || deleting ? pending : orphaned).push(pvc);
  }
  return { pending, orphaned };
}

export function finalizeResponse(state: HookState): HookResponse {
  if (!state.verdict.ok) return invalidFinalize(state, state.verdict.problems);
  const plan = planValid(state, state.verdict.spec);
  const sets = statefulSets(state);
  const poll = (message: string, children: KubeObject[]): HookResponse => ({
    status: validStatus(state, plan, message),
    children,
    resyncAfterSeconds: FINALIZE_POLL_SECONDS,
    finalized: false,
  });

  if (plan.ctx.spec.persistence.whenDeleted === 'Retain') {
    const unsettled = sets.filter((s) => !retentionSettled(s, 'Retain'));
    if (unsettled.length > 0) {
      return poll(
        `waiting for StatefulSet(s) ${names(unsettled)} to switch to whenDeleted: Retain before releasing the Redis`,
        plan.children,
      );
    }
    return {
      status: validStatus(
        state,
        plan,
        'volumes are retained (persistence.whenDeleted: Retain); children are garbage collected',
      ),
      children: plan.children,
      finalized: true,
    };
  }

  const unsettled = sets.filter((s) => !retentionSettled(s, 'Delete'));
  if (unsettled.length > 0) {
    return poll(
      `waiting for StatefulSet(s) ${names(unsettled)} to apply whenDeleted: Delete before deleting them`,
      plan.children,
    );
  }
  const keep = plan.children.filter((c) => c.kind !== 'StatefulSet');
  if (sets.length > 0) return poll(`deleting StatefulSet(s) ${names(sets)} and with them their volumes`, keep);
  const { pending, orphaned } = pvcsInFlight(state);
  if (pending.length > 0) return poll(`waiting for PersistentVolumeClaim(s) ${names(pending)} to be deleted`, keep);
  const left =
    orphaned.length > 0
      ? `; PersistentVolumeClaim(s) ${names(orphaned)} are owned by no StatefulSet and were left in place: delete them by hand`
      : '';
  return {
    status: validStatus(state, plan, `volumes deleted (persistence.whenDeleted: Delete)${left}`),
    children: keep,
    finalized: true,
  };
}
