// Teardown when a RedisCluster is deleted, in steps polled with resyncAfterSeconds: the Redis rule
// (redis/finalize.ts; the StatefulSet policy pieces are common/retention.ts) over every shard StatefulSet. Invariants:
// - finalized is true only when the request has finalizing: true (checked by the caller) and the
//   volume policy has been carried out.
// - Data is deleted only when a VALID spec says persistence.whenDeleted: Delete. With Retain, or
//   an invalid spec, every shard StatefulSet is first made to say whenDeleted: Retain and its
//   controller must have seen it before the finalizer goes (garbage collection of a StatefulSet
//   whose policy says Delete removes its volumes).
// - With Delete, the StatefulSets are dropped once their controller applied the policy, and the
//   rest stays until the volumes are gone.
import { redisClusterPodBelongsTo } from '../../api/rediscluster-names.ts';
import { formatProblems } from '../../api/validate.ts';
import { FINALIZE_POLL_SECONDS, policyOf, retentionSettled, withRetain } from '../common/retention.ts';
import { lastAppliedOf, memberMeta, ofKind } from '../common/observed.ts';
import type { KubeObject } from '../common/types.ts';
import { array, at, str } from '../common/util.ts';
import {
  redisClusterSyncResponse,
  invalidRedisClusterStatus,
  planRedisCluster,
  validRedisClusterStatus,
  type RedisClusterState,
  type RedisClusterResponse,
} from './state.ts';

const names = (objects: readonly KubeObject[]) => objects.map((o) => o.metadata.name).join(', ');

function statefulSets(state: RedisClusterState): KubeObject[] {
  return ofKind(state.observed, 'apps/v1', 'StatefulSet', state.namespace);
}

/** Claims of this cluster that something will still delete (owned by a StatefulSet, or deleting). */
function pvcsInFlight(state: RedisClusterState): { pending: KubeObject[]; orphaned: KubeObject[] } {
  const pending: KubeObject[] = [];
  const orphaned: KubeObject[] = [];
  for (const pvc of ofKind(state.related, 'v1', 'PersistentVolumeClaim', state.namespace)) {
    if (!redisClusterPodBelongsTo(memberMeta(pvc, state.namespace), state)) continue;
    const owned = array(pvc.metadata.ownerReferences).some((ref) => at(ref, 'kind') === 'StatefulSet');
    (owned || str(pvc.metadata.deletionTimestamp) !== undefined ? pending : orphaned).push(pvc);
  }
  return { pending, orphaned };
}

export function redisClusterFinalizeResponse(state: RedisClusterState): RedisClusterResponse {
  if (!state.request.finalizing) return redisClusterSyncResponse(state);
  const sets = statefulSets(state);
  if (!state.verdict.ok) {
    const status = invalidRedisClusterStatus(state, formatProblems(state.verdict.problems));
    const children = state.observed.map((o) =>
      sets.includes(o) && policyOf(o) === 'Delete' ? withRetain(lastAppliedOf(o)) : lastAppliedOf(o),
    );
    const unsettled = sets.filter((s) => !retentionSettled(s, 'Retain'));
    return unsettled.length === 0
      ? { status, children, finalized: true }
      : { status, children, resyncAfterSeconds: FINALIZE_POLL_SECONDS, finalized: false };
  }
  const plan = planRedisCluster(state, state.verdict.spec);
  const poll = (message: string, children: KubeObject[]): RedisClusterResponse => ({
    status: validRedisClusterStatus(state, plan, message),
    children,
    resyncAfterSeconds: FINALIZE_POLL_SECONDS,
    finalized: false,
  });
  const policy = plan.ctx.spec.persistence.whenDeleted;
  const unsettled = sets.filter((s) => !retentionSettled(s, policy));
  if (policy === 'Retain') {
    if (unsettled.length > 0)
      return poll(
        `waiting for StatefulSet(s) ${names(unsettled)} to switch to whenDeleted: Retain before releasing the RedisCluster`,
        plan.children,
      );
    return {
      status: validRedisClusterStatus(
        state,
        plan,
        'volumes are retained (persistence.whenDeleted: Retain); children are garbage collected',
      ),
      children: plan.children,
      finalized: true,
    };
  }
  if (unsettled.length > 0)
    return poll(
      `waiting for StatefulSet(s) ${names(unsettled)} to apply whenDeleted: Delete before deleting them`,
      plan.children,
    );
  const keep = plan.children.filter((c) => c.kind !== 'StatefulSet');
  if (sets.length > 0) return poll(`deleting StatefulSet(s) ${names(sets)} and with them their volumes`, keep);
  const { pending, orphaned } = pvcsInFlight(state);
  if (pending.length > 0) return poll(`waiting for PersistentVolumeClaim(s) ${names(pending)} to be deleted`, keep);
  const left =
    orphaned.length > 0
      ? `; PersistentVolumeClaim(s) ${names(orphaned)} are owned by no StatefulSet and were left in place: delete them by hand`
      : '';
  return {
    status: validRedisClusterStatus(state, plan, `volumes deleted (persistence.whenDeleted: Delete)${left}`),
    children: keep,
    finalized: true,
  };
}
