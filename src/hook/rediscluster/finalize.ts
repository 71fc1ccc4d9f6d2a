// Teardown when a RedisCluster is deleted: the steps and their invariants are common/finalize.ts (no
// data is deleted unless a valid spec says whenDeleted: Delete), over every shard StatefulSet; this
// module gives them the cluster's PVCs and status, and answers a request not finalizing with sync.
import { redisClusterPodBelongsTo } from '../../api/rediscluster-names.ts';
import { formatProblems } from '../../api/validate.ts';
import { invalidTeardown, validTeardown, type TeardownParent } from '../common/finalize.ts';
import {
  redisClusterSyncResponse,
  invalidRedisClusterStatus,
  nameConflictRedisClusterStatus,
  planRedisCluster,
  validRedisClusterStatus,
  type RedisClusterState,
  type RedisClusterResponse,
} from './state.ts';

export function redisClusterFinalizeResponse(state: RedisClusterState): RedisClusterResponse {
  if (!state.request.finalizing) return redisClusterSyncResponse(state);
  const parent: TeardownParent = {
    ...state,
    kind: 'RedisCluster',
    owns: (meta) => redisClusterPodBelongsTo(meta, state),
  };
  // Refused its names: nothing of its own to tear down but what it had before, kept as for an invalid spec.
  if (state.nameConflict !== undefined)
    return invalidTeardown(parent, nameConflictRedisClusterStatus(state, state.nameConflict));
  if (!state.verdict.ok) {
    return invalidTeardown(parent, invalidRedisClusterStatus(state, formatProblems(state.verdict.problems)));
  }
  const plan = planRedisCluster(state, state.verdict.spec);
  return validTeardown(parent, plan.ctx.spec.persistence.whenDeleted, plan.children, (message) =>
    validRedisClusterStatus(state, plan, message),
  );
}
