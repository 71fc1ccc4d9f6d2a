// The Redis adapter's public surface: the manager imports from here only.
export { RedisAdapter, MANAGED_CONFIG } from './adapter.ts';
export type { RoleResult } from './adapter.ts';
export type { SwitchoverMethod, SwitchoverOptions, SwitchoverResult } from './switchover.ts';
export { RedisPool, endpointKey } from './pool.ts';
export type { PoolOptions } from './pool.ts';
export { DEFAULT_TIMEOUTS } from './client.ts';
export type { ClientTimeouts } from './client.ts';
export { classifyError, isSilence, breaksConnection } from './errors.ts';
export {
  parseFacts,
  parseInfoFields,
  parseReplication,
  parseReplicaLine,
  parseKeyCount,
  parseConfigReply,
} from './info.ts';
export { PLACEHOLDER_MASTER, NO_REPLID } from './types.ts';
export type {
  ActionResult,
  Endpoint,
  ProbeResult,
  RedisErrorKind,
  RedisFacts,
  RedisFailure,
  ReplicaLine,
  ReplicationInfo,
} from './types.ts';
