// Inputs and outputs of the pure decision functions. Nothing here does I/O or reads a clock:
// every function takes `now` (milliseconds, any monotonic-enough origin, the same for all the
// times in one input) and returns a decision with a human reason.
import type { Endpoint, RedisFacts, RedisFailure } from '../../adapters/redis/types.ts';

export interface DecideConfig {
  /** spec.failover.downAfterMilliseconds: how long the master must be silent before a failover. */
  downAfterMs: number;
  /**
   * A replica testifies that its master is silent when master_last_io_seconds_ago reaches this.
   * The ConfigMap's repl-ping-replica-period 1 makes 0..1 normal; 2 means at least one missed ping.
   */
  silentAfterSeconds: number;
  /**
   * A replica also testifies that its master is silent when its replication offset has not moved
   * across our probes for this long: with repl-ping-replica-period 1 the master sends at least a
   * ping (14 bytes) every second (serverCron: +-100 ms), so a second without a byte is a missed
   * ping, seen at our probe rate instead of master_last_io_seconds_ago's whole seconds. Counts
   * after witnessConfirmMs like any testimony (1.3 s of stall by default).
   */
  offsetStallMs: number;
  /**
   * A replica's "down/silent" testimony counts only after it held for this long (two probes or
   * more): master_last_io_seconds_ago is whole seconds and can show 2 for a few ms when a ping
   * is a little late, which must not look like a hung master.
   */
  witnessConfirmMs: number;
  /** A probe older than this is no longer "answering now" (the manager stalled or lost the pod). */
  staleAfterMs: number;
  /** A replica whose link went down this long before the master fell silent is too stale to promote. */
  maxReplicaLinkDownMs: number;
  /**
   * Failover only: how long to wait for pods that are not visible (or not answering) and could
   * hold more data before choosing among the visible ones (see choose.ts). A bootstrap has no such
   * limit: it waits for every pod that may hold data (bootstrap-wait.ts).
   */
  maxPartialWaitMs: number;
  /**
   * Crash evidence (the port refuses connections and every replica following the master reports
   * its link down, or the API says the container is gone) fails the master over once the
   * refusal has lasted this long, without waiting for downAfterMs: a crashed process cannot
   * answer again, while a paused or unreachable one never refuses.
   */
  crashConfirmMs: number;
}

export const DEFAULT_DECIDE_CONFIG: DecideConfig = {
  downAfterMs: 1000,
  silentAfterSeconds: 2,
  offsetStallMs: 1000,
  witnessConfirmMs: 300,
  staleAfterMs: 1500,
  maxReplicaLinkDownMs: 10000,
  maxPartialWaitMs: 30000,
  crashConfirmMs: 0,
};

/** What the manager remembers of one pod's Redis at one IP (see track() in observe.ts). */
export interface RedisTrack {
  /** The address these facts belong to; a new pod IP starts a new track. */
  ip: string;
  /** When the track started (first probe at this ip). */
  firstSeenAt: number;
  /** Time of the latest probe, successful or not. */
  lastAt: number;
  /** Error of the latest probe; null when it succeeded. */
  lastError: RedisFailure | null;
  /** Facts of the latest SUCCESSFUL probe (may be older than lastAt). */
  facts: RedisFacts | null;
  /** When it last answered; null if never at this ip. */
  okAt: number | null;
  /** When it first answered at this ip. */
  firstOkAt: number | null;
  /** Start of the current run of failed probes; null while answering. */
  failingSince: number | null;
  /**
   * Start of the current run of probes refused at the TCP level (ECONNREFUSED: nothing listens on
   * the port, so no Redis process runs there); null once a probe ends any other way.
   */
  refusedSince: number | null;
  /** The latest facts in which this node was a master (its history, offset, replica lines). */
  lastMasterFacts: {
    at: number;
    replid: string;
    replid2: string;
    offset: number;
    keys: number;
    onlineReplicaIps: string[];
  } | null;
  /** Replica: since when it has continuously reported its link to `witnessOf` down or silent. */
  witnessDownSince: number | null;
  /** host:port the witness streak is about (a re-point resets it). */
  witnessOf: string | null;
  /**
   * Replica: the first probe that saw its current slave_repl_offset (following witnessOf): no
   * byte from the master has arrived since at least then. Absent or null: not known.
   */
  offsetSince?: number | null;
}

/** One pod as the API and our probes show it. */
export interface PodObservation {
  name: string;
  /** Which StatefulSet (app.kubernetes.io/component): never the role. */
  component: 'master-set' | 'replica-set' | null;
  /** status.podIP; null before it has one. */
  ip: string | null;
  /** status.phase. */
  phase: string | null;
  /** The Ready condition. */
  ready: boolean;
  /**
   * The API says the redis container is not running (terminated, or waiting to restart after
   * it terminated); false when it runs or the status does not say. Absent: not known.
   */
  redisContainerGone?: boolean;
  /** metadata.deletionTimestamp is set. */
  deleting: boolean;
  /** Current value of the role label (null when absent or unknown). */
  roleLabel: string | null;
  /** Current value of the link annotation. */
  linkAnnotation: string | null;
  /** Our probes of this pod's Redis; null if never probed. Must belong to `ip` (track() ensures it). */
  redis: RedisTrack | null;
  /**
   * Whether the pod runs its StatefulSet's current template (controller-revision-hash equals the
   * set's update revision); null or absent while that is not known.
   */
  updated?: boolean | null;
}

export interface SpecView {
  /** spec.replicas: pods of the replica StatefulSet. */
  replicas: number;
  minReplicasToWrite: number;
  minReplicasMaxLagSeconds: number;
  /** RDB or AOF on: a pod that is down may come back with its data. */
  persistence: boolean;
  /** spec.hibernate: the StatefulSets run no pod (absent: false). */
  hibernate?: boolean;
  /**
   * What every node should report for the runtime-managed directives (desiredRuntimeConfig of
   * spec.config: the spec's value or Redis' default, normalised). Empty: manage none.
   */
  runtimeConfig: Record<string, string>;
  /** spec.engine (redis, valkey) when the spec says it: a rollout's switchover goes onto a node running it. */
  engine?: string;
}

export interface DecideInput {
  /** The Redis resource's name (pods are <name>-master-0, <name>-replica-N). */
  name: string;
  spec: SpecView;
  pods: PodObservation[];
  now: number;
  config: DecideConfig;
  /**
   * A planned switchover asked for by a day-2 operation (a request on the Redis, or a rollout
   * moving the master off a stale pod): honoured only while the master is healthy and the target
   * passes checkTarget (switchover.ts).
   */
  switchoverTo?: string | undefined;
  /**
   * The Redis' PersistentVolumeClaims as last listed; undefined while not known (a bootstrap then
   * counts every pod's volume as bound when persistence is on). Read only by a bootstrap.
   */
  claims?: readonly ClaimFact[] | undefined;
  /** Pods the user gave up on (the bootstrap-without annotation, parsed): a bootstrap does not wait for them. */
  bootstrapWithout?: readonly string[] | undefined;
}

/** One PersistentVolumeClaim of the Redis, as far as a bootstrap cares. */
export interface ClaimFact {
  name: string;
  /** status.phase: Pending, Bound or Lost. */
  phase: string | undefined;
  /** metadata.deletionTimestamp is set. */
  deleting: boolean;
}

export type MasterDecision =
  /** The labelled master is healthy: only repairs (re-point, fencing, labels). */
  | { kind: 'keep'; master: string; reason: string }
  /** Nothing is decided now (suspected failure, partial view, ...); master is the labelled one if any. */
  | { kind: 'wait'; master: string | null; reason: string }
  /**
   * Make `master` the master: bootstrap (no master yet), failover (the previous one failed), or
   * adopt (an earlier leader promoted it but did not finish: no Redis command needed).
   */
  | {
      kind: 'promote';
      cause: 'bootstrap' | 'failover' | 'adopt';
      master: string;
      previous: string | null;
      reason: string;
    }
  /** Planned move of a healthy master that is going away (pod deleting, or removed by a scale-down). */
  | { kind: 'switchover'; from: string; master: string; reason: string };

/** A merge patch for one pod: only keys that change. */
export interface PodPatch {
  metadata: { labels?: Record<string, string | null>; annotations?: Record<string, string | null> };
}

export type Step =
  | { kind: 'promote'; pod: string; endpoint: Endpoint; critical: true; reason: string }
  | {
      kind: 'switchover';
      pod: string;
      endpoint: Endpoint;
      from: { pod: string; endpoint: Endpoint };
      critical: true;
      reason: string;
    }
  | {
      kind: 'replicaof';
      pod: string;
      endpoint: Endpoint;
      master: Endpoint;
      demote: boolean;
      critical: false;
      reason: string;
    }
  | {
      kind: 'config';
      pod: string;
      endpoint: Endpoint;
      settings: Record<string, string | number>;
      critical: false;
      reason: string;
    }
  | { kind: 'label'; pod: string; patch: PodPatch; critical: boolean; reason: string };

export interface RoundPlan {
  decision: MasterDecision;
  /** The master once the steps are applied; null while there is none. */
  master: { pod: string; endpoint: Endpoint } | null;
  /** In the order the manager must apply them (see plan.ts). */
  steps: Step[];
}
