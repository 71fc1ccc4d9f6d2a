// The replication manager's public surface: main.ts and the tests import from here only.
export { RedisManager, type RedisManagerOptions } from './manager.ts';
export { RedisWorker, type KubeWriter, type LeaderView, type RedisHooks, type RedisWorkerOptions } from './worker.ts';
export {
  EventMemory,
  blockedAfterMs,
  blockedFailover,
  isFailover,
  type EventReason,
  type EventToSend,
  type FailoverEpisode,
} from './events.ts';
export {
  belongsTo,
  decideConfig,
  newerVersion,
  observation,
  overlayApplies,
  podView,
  specView,
  type Overlay,
  type PodView,
} from './pods.ts';
export {
  applyRedisSteps,
  redisStepKey,
  type LabelResult,
  type LabelStep,
  type RedisApplied,
  type RedisExecutorContext,
  type RedisStepOutcome,
  type StepIO,
} from './steps.ts';
// The failure policy is the shared core's; its settings are part of ManagerOptions.
export type { FailurePolicyConfig } from '../../core/failure-policy.ts';
