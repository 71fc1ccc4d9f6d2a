// The hook module API used by src/server. Pure: no I/O, clock, environment or randomness; the
// same request gives a byte-identical response. Functions never throw for a request that
// parseHookRequest / parseCustomizeRequest accepted. Returned objects may share structure with
// the request (observed children are echoed by reference): treat both as read-only. The wire
// schemas (wire.ts) are exported as values too: the server uses them as its route schemas, and
// wireChecker is the one checker both sides run.
import { finalizeResponse } from './redis/finalize.ts';
import { readState, syncResponse } from './redis/state.ts';
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from './common/options.ts';
import type { HookRequest, HookResponse } from './common/types.ts';

export { DEFAULT_HOOK_OPTIONS, DEFAULT_RUNBOOK_BASE_URL, type HookOptions } from './common/options.ts';
export { parseDecoratorRequest, syncMonitoring, type MonitoringVerdict } from './common/decorator.ts';

export { parseCustomizeRequest, parseHookRequest } from './common/parse.ts';
export { customize } from './redis/customize.ts';
export { customizeRedisBackup, syncRedisBackup, type RedisBackupResponse } from './redisbackup/index.ts';
export { customizeCluster, finalizeCluster, syncCluster, type RedisClusterResponse } from './rediscluster/index.ts';
export {
  CustomizeRequest,
  CustomizeResponse,
  DecoratorRequestBody,
  DecoratorResponse,
  HookRequest,
  HookRequestBody,
  HookResponse,
  KubeObject,
  ObjectMap,
  ObjectMeta,
  Parent,
  RelatedResourceRule,
} from './common/wire.ts';
export { wireChecker, type WireChecker, type WireProblem } from './common/wire-check.ts';
export type { ParseResult } from './common/types.ts';
export type { DecoratorRequest } from './common/wire.ts';

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
