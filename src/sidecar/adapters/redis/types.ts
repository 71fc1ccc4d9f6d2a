// What the Redis adapter reports about one node, as plain data. The decision functions in
// ../decide import these types only (never the adapter), so they stay pure and testable.
// Invariants: numbers Redis reports as -1 ("never" / "not applicable") become null here, so no
// caller can mistake -1 for a real duration or offset.
import { PLACEHOLDER_MASTER as API_PLACEHOLDER_MASTER } from '../../../api/labels.ts';
import type { NodeEngine } from '../../../api/node-engine.ts';

/** Where a Redis listens: the pod IP and port 6379 in a cluster, 127.0.N.x:6379 in tests. */
export interface Endpoint {
  host: string;
  port: number;
}

/** One `slaveN:` line of a master's INFO replication. */
export interface ReplicaLine {
  ip: string;
  port: number;
  /** wait_bgsave, send_bulk, online, ... */
  state: string;
  offset: number;
  /** Seconds since the replica's last REPLCONF ACK. */
  lag: number;
}

export interface ReplicationInfo {
  role: 'master' | 'replica';
  /** Replica only: whom it replicates from (127.0.0.1:1 is the ConfigMap's placeholder "nowhere"). */
  masterHost: string | null;
  masterPort: number | null;
  masterLinkStatus: 'up' | 'down' | null;
  /** Seconds since the last byte from its master (pings every repl-ping-replica-period); null when never linked. */
  masterLastIoSecondsAgo: number | null;
  /** Seconds the link has been down; null when up or never linked since this process started. */
  masterLinkDownSinceSeconds: number | null;
  masterSyncInProgress: boolean;
  /** Only while a full sync is running: seconds since the last byte of the transfer. */
  masterSyncLastIoSecondsAgo: number | null;
  slaveReplOffset: number | null;
  slavePriority: number | null;
  /**
   * This node's position in its replication stream. Comparable between nodes of one history.
   * Measured with redis 7.0.15: 0 on a fresh node and on a master that never had a replica (no
   * backlog yet); restored from an RDB file on restart (with master_replid); NOT restored from an
   * AOF file (a node restarted from AOF reports a new random replid and offset 0).
   */
  masterReplOffset: number;
  masterReplid: string;
  /** The previous history after a promotion (PSYNC2); all zeros when none. */
  masterReplid2: string;
  secondReplOffset: number | null;
  connectedSlaves: number;
  replicas: ReplicaLine[];
  /** no-failover, waiting-for-sync, failover-in-progress (FAILOVER command). */
  failoverState: string | null;
}

export interface RedisFacts {
  runId: string;
  /** redis_version as INFO says it (Valkey 8.0.1 says 7.2.4 here: read `engine` for what runs). */
  version: string;
  /** The engine and its own version (INFO server); null or absent when INFO did not say. */
  engine?: NodeEngine | null;
  uptimeSeconds: number;
  replication: ReplicationInfo;
  /** CONFIG GET replica-priority: lower is preferred, 0 = never promote. */
  replicaPriority: number;
  minReplicasToWrite: number;
  minReplicasMaxLag: number;
  /** Still loading its RDB/AOF: offsets and keys are not final. */
  loading: boolean;
  /** Keys over all databases (INFO keyspace). */
  keys: number;
  aofEnabled: boolean;
  /**
   * CONFIG GET of the runtime-managed directives (src/api/config-directives.ts), as Redis prints
   * them. A directive this node does not report (an older Redis, CONFIG GET refused) is absent.
   */
  runtimeConfig: Record<string, string>;
}

/**
 * Why a call failed. timeout: no answer in time (a hung or unreachable node; also a dropped SYN);
 * refused: nothing listens (process dead or restarting); unreachable: no route / not permitted;
 * closed: the connection broke mid-call; auth: the node answered but refused our password;
 * loading: the node is loading its data set; busy: a script blocks it; readonly/noreplicas: a
 * write was refused (replica, or fenced by min-replicas-to-write).
 */
export type RedisErrorKind =
  'timeout' | 'refused' | 'unreachable' | 'closed' | 'auth' | 'loading' | 'busy' | 'readonly' | 'noreplicas' | 'other';

export interface RedisFailure {
  kind: RedisErrorKind;
  message: string;
}

export type ProbeResult =
  { ok: true; facts: RedisFacts; latencyMs: number } | { ok: false; error: RedisFailure; latencyMs: number };

export type ActionResult = { ok: true; latencyMs: number } | { ok: false; error: RedisFailure; latencyMs: number };

/** The placeholder master in redis.conf: a node pointing here was never re-pointed since it started. */
export const PLACEHOLDER_MASTER: Endpoint = API_PLACEHOLDER_MASTER;

export const NO_REPLID = '0000000000000000000000000000000000000000';
