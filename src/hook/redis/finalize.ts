// Teardown when the Redis is deleted: the steps and their invariants are common/finalize.ts (no data
// is deleted unless a valid spec says whenDeleted: Delete); this module gives them the Redis's PVCs
// and status. finalized is true only when the request has finalizing: true (checked by the caller).
import { podBelongsTo } from '../../api/membership.ts';
import { invalidTeardown, validTeardown, type TeardownParent } from '../common/finalize.ts';
import type { HookResponse } from '../common/types.ts';
import { invalidStatus, nameConflictStatus, planValid, validStatus, type HookState } from './state.ts';

export function finalizeResponse(state: HookState): HookResponse {
  const parent: TeardownParent = { ...state, kind: 'Redis', owns: (meta) => podBelongsTo(meta, state) };
  // Refused its names: nothing of its own to tear down but what it had before, kept as for an invalid spec.
  if (state.nameConflict !== undefined) return invalidTeardown(parent, nameConflictStatus(state, state.nameConflict));
  if (!state.verdict.ok) return invalidTeardown(parent, invalidStatus(state, state.verdict.problems));
  const plan = planValid(state, state.verdict.spec);
  return validTeardown(parent, plan.ctx.spec.persistence.whenDeleted, plan.children, (message) =>
    validStatus(state, plan, message),
  );
}
