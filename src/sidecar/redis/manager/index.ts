// The replication manager's public surface: main.ts and the tests import from here only.
export { RedisManager, type RedisManagerOptions } from './manager.ts';
export { RedisWorker, type KubeWriter, type LeaderView, type RedisHooks, type RedisWorkerOptions } from './worker.ts';
export { EventMemory, blockedAfterMs, blockedFailover, isFailover, type EventReason, type EventToSend, type FailoverEpisode } from './events.ts';
export { belongsTo, decideConfig, newerVersion, observation, overlayApplies, podView, specView, type Overlay, type PodView } from './pods.ts';
export { applyPlan, type Applied, type ExecutorContext, type LabelResult, type LabelStep, type StepIO, type StepOutcome } from './executor.ts';
export {
  classifyKubeFailure,
  classifyRedisFailure,
  DEFAULT_FAILURE_POLICY,
  stepKey,
  StepFailures,
  type FailurePolicyConfig,
  type StepFailure,
} from './failure-policy.ts';
