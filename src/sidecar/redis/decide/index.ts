// The pure decision layer's public surface: the manager imports from here only.
export { planRound } from './plan.ts';
export { decideMaster } from './master.ts';
export type { MasterAssessment } from './master.ts';
export { assessMaster, witnessesOf, apiEvidence, masterIpOf } from './failure.ts';
export type { MasterHealth, Witnesses } from './failure.ts';
export { choosePromotion, chooseBootstrap, historyOf, missingContenders } from './choose.ts';
export type { Choice, Missing } from './choose.ts';
export { bootstrapWaits, describeHolders, NOT_PROBED, parseBootstrapWithout, podOfClaim } from './bootstrap-wait.ts';
export type { BootstrapWaits, Holder } from './bootstrap-wait.ts';
export { planReplication, planFencing, desiredFencing } from './replication.ts';
export { planRuntimeConfig, runtimeConfigChanges } from './runtime-config.ts';
export type { ConfigChange } from './runtime-config.ts';
export { planLabels } from './labels.ts';
export type { LabelContext } from './labels.ts';
export {
  track,
  isAnswering,
  currentFacts,
  silentForMs,
  reportsMasterDown,
  isEmpty,
  pointsAtPlaceholder,
  expectedPodNames,
  isBeyondScale,
  ordinalOf,
  endpointOf,
} from './observe.ts';
export { decideRollout } from './rollout.ts';
export type { RolloutDecision } from './rollout.ts';
export { CAUGHT_UP_BYTES, bestTarget, checkTarget, decideRequest, parseRequest } from './switchover.ts';
export type { RequestDecision, SwitchoverRequest, TargetCheck, TargetChoice } from './switchover.ts';
export { DEFAULT_DECIDE_CONFIG } from './types.ts';
export type {
  ClaimFact,
  DecideConfig,
  DecideInput,
  MasterDecision,
  PodObservation,
  PodPatch,
  RoundPlan,
  RedisTrack,
  SpecView,
  Step,
} from './types.ts';
export { decideReplicationReports, REPORT_EVERY_MS, REPORT_MIN_BYTES } from './replication-report.ts';
export type { ReplicationReport } from './replication-report.ts';
