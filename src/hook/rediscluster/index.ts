// The RedisCluster controller's hooks (routes /rediscluster/*), pure like the Redis hook: no I/O,
// no clock; the same request gives a byte-identical response. Functions never throw for a request
// parseHookRequest / parseCustomizeRequest accepted. A sync request with finalizing: true is
// handled as finalize; finalized: true is only ever answered when the request has finalizing: true.
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from '../common/options.ts';
import type { HookRequest } from '../common/types.ts';
import { redisClusterFinalizeResponse } from './finalize.ts';
import { readRedisClusterState, type RedisClusterResponse } from './state.ts';

export { customizeRedisCluster } from './customize.ts';
export { syncRedisClusterMonitoring } from './monitoring/objects.ts';
export type { RedisClusterResponse } from './state.ts';

export function syncRedisCluster(
  request: HookRequest,
  options: HookOptions = DEFAULT_HOOK_OPTIONS,
): RedisClusterResponse {
  return redisClusterFinalizeResponse(readRedisClusterState(request, options));
}

/** The same logic: finalize answers a request without finalizing: true as a sync. */
export function finalizeRedisCluster(
  request: HookRequest,
  options: HookOptions = DEFAULT_HOOK_OPTIONS,
): RedisClusterResponse {
  return redisClusterFinalizeResponse(readRedisClusterState(request, options));
}
