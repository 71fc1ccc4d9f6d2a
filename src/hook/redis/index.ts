// The Redis controller's hooks (routes /sync, /finalize, /customize). Pure: no I/O, clock,
// environment or randomness; the same request gives a byte-identical response. Functions never
// throw for a request that parseHookRequest / parseCustomizeRequest accepted.
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from '../common/options.ts';
import type { HookRequest, HookResponse } from '../common/types.ts';
import { finalizeResponse } from './finalize.ts';
import { readState, syncResponse } from './state.ts';

export { customize } from './customize.ts';
export { syncRedisMonitoring } from './monitoring/objects.ts';

/**
 * The sync hook. A request with finalizing: true (Metacontroller sends one to the sync hook
 * when no finalize hook is configured) is handled as finalize. A parent with a
 * deletionTimestamp but finalizing: false is synced normally: garbage collection removes the
 * children, and nothing here may release the finalizer.
 */
export function sync(request: HookRequest, options: HookOptions = DEFAULT_HOOK_OPTIONS): HookResponse {
  const state = readState(request, options);
  return request.finalizing ? finalizeResponse(state) : syncResponse(state);
}

/** The finalize hook. finalized: true only ever when request.finalizing is true. */
export function finalize(request: HookRequest, options: HookOptions = DEFAULT_HOOK_OPTIONS): HookResponse {
  const state = readState(request, options);
  return request.finalizing ? finalizeResponse(state) : syncResponse(state);
}
