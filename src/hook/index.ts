// The hook module API used by src/server. Pure: no I/O, clock, environment or randomness; the
// same request gives a byte-identical response. Functions never throw for a request that
// parseHookRequest / parseCustomizeRequest accepted. Returned objects may share structure with
// the request (observed children are echoed by reference): treat both as read-only. The wire
// schemas (wire.ts) are exported as values too: the server uses them as its route schemas, checks
// a body once with wireChecker (the checker the parse functions run) and hands the typed body to
// hookRequestOf / customizeRequestOf / decoratorRequestOf, which check nothing again.
import { finalizeResponse } from './finalize.ts';
import { readState, syncResponse } from './state.ts';
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from './context.ts';
import type { HookRequest, HookResponse } from './types.ts';

export { DEFAULT_HOOK_OPTIONS, DEFAULT_RUNBOOK_BASE_URL, type HookOptions } from './context.ts';
export { parseDecoratorRequest, syncMonitoring, type MonitoringVerdict } from './monitoring/decorator.ts';
export { decoratorRequestOf } from './monitoring/decorator.ts';

export { customizeRequestOf, hookRequestOf, parseCustomizeRequest, parseHookRequest } from './parse.ts';
export { customize } from './customize.ts';
export { customizeRedisBackup, syncRedisBackup, type RedisBackupResponse } from './redisbackup.ts';
export { customizeCluster, finalizeCluster, syncCluster, type RedisClusterResponse } from './cluster/index.ts';
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
} from './wire.ts';
export { wireChecker, type WireChecker, type WireProblem } from './wire-check.ts';
export type { ParseResult } from './types.ts';
export type { DecoratorRequest } from './wire.ts';

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
