// The hook module API used by src/server, and the only file of src/hook outside its folders: it
// gathers the kinds (redis/, rediscluster/, redisbackup/, each importing only common/ and
// src/api) and picks the kind where one route serves two (monitoring). Pure: no I/O, clock,
// environment or randomness; the same request gives a byte-identical response. Functions never
// throw for a request that parseHookRequest / parseCustomizeRequest accepted. Returned objects
// may share structure with the request (observed children are echoed by reference): treat both
// as read-only. The wire schemas (common/wire.ts) are exported as values too: the server uses
// them as its route schemas, checks a body once with wireChecker (the checker the parse functions
// run) and hands the typed body to hookRequestOf / customizeRequestOf / decoratorRequestOf, which
// check nothing again.
import { REDIS_CLUSTER_KIND } from '../api/rediscluster-names.ts';
import type { MonitoringVerdict } from './common/monitoring.ts';
import { DEFAULT_HOOK_OPTIONS, type HookOptions } from './common/options.ts';
import type { DecoratorRequest } from './common/wire.ts';
import { syncRedisMonitoring } from './redis/index.ts';
import { syncRedisClusterMonitoring } from './rediscluster/index.ts';

export { DEFAULT_HOOK_OPTIONS, DEFAULT_RUNBOOK_BASE_URL, type HookOptions } from './common/options.ts';
export { decoratorRequestOf, parseDecoratorRequest, type MonitoringVerdict } from './common/monitoring.ts';

export { customizeRequestOf, hookRequestOf, parseCustomizeRequest, parseHookRequest } from './common/parse.ts';
export { customize, finalize, sync } from './redis/index.ts';
export { customizeRedisBackup, syncRedisBackup, type RedisBackupResponse } from './redisbackup/index.ts';
export {
  customizeRedisCluster,
  finalizeRedisCluster,
  syncRedisCluster,
  type RedisClusterResponse,
} from './rediscluster/index.ts';
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

/** The monitoring decorator's sync hook: a Redis's or a RedisCluster's attachments, by the object's kind. */
export function syncMonitoring(
  request: DecoratorRequest,
  options: HookOptions = DEFAULT_HOOK_OPTIONS,
): MonitoringVerdict {
  return request.object.kind === REDIS_CLUSTER_KIND
    ? syncRedisClusterMonitoring(request, options)
    : syncRedisMonitoring(request, options);
}
