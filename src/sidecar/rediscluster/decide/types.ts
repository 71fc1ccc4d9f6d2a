// What the RedisCluster decisions read and return: one pod and what its node answered, the
// cluster as the merge of every node's view (topology.ts), and the steps a round may take.
// Pure data, no behaviour. Invariants: a node id is 40 lower-case hex characters; slot ranges are
// inclusive [first, last] pairs; every decision carries a reason a human can read in a log line
// or an Event.
import type { NodeEngine } from '../../../api/node-engine.ts';
import type { ClusterNodeRecord } from '../../../api/rediscluster-names.ts';

/** One line of CLUSTER NODES, parsed. */
export interface NodeLine {
  id: string;
  /** '' when the node has no known address (noaddr, or a node that never learnt its own). */
  ip: string;
  port: number;
  myself: boolean;
  role: 'master' | 'replica';
  /** A replica's master; null for a master. */
  masterId: string | null;
  /** Agreed failed by the cluster (flag `fail`). */
  fail: boolean;
  /** Failing in this node's view only (flag `fail?`). */
  pfail: boolean;
  handshake: boolean;
  noaddr: boolean;
  configEpoch: number;
  connected: boolean;
  /**
   * The viewer's clock (ms since the epoch) when it sent the ping it still waits a pong for; 0:
   * none pending. Absent in hand-written lines.
   */
  pingSent?: number;
  /** The viewer's clock when its last pong from this node arrived; 0: never. */
  pongRecv?: number;
  slots: Array<[number, number]>;
  /** `[slot->-id]`: this node is migrating the slot to id (shown only on the node itself). */
  migrating: Array<[number, string]>;
  /** `[slot-<-id]`: this node is importing the slot from id. */
  importing: Array<[number, string]>;
}

/** What INFO says about one node. */
export interface NodeInfo {
  role: 'master' | 'replica';
  /** A replica's link to its master is up. */
  linkUp: boolean;
  /**
   * The address a replica replicates from (INFO master_host); null on a master. Redis sets it
   * from its node table when told to replicate, and leaves it when it later learns its master's
   * new address from gossip (it re-points only when the master's own ping shows the change).
   */
  masterHost?: string | null;
  /** A replica is in a full sync (its data set is being replaced). */
  syncing: boolean;
  /** Replication offset: master_repl_offset on a master, slave_repl_offset on a replica. */
  offset: number;
  usedMemory: number;
  /** 0: unlimited. */
  maxMemory: number;
  keys: number;
  /**
   * CLUSTER INFO says cluster_state:ok: the node serves queries. A master that just joined stays
   * `fail` for a moment (Redis' rejoin delay) and would answer CLUSTERDOWN to a redirected client.
   */
  clusterOk: boolean;
  /** The node's own clock when it answered (TIME, ms since the epoch): reads its pingSent/pongRecv. */
  clockMs?: number;
  /** The engine and its own version (INFO server); null or absent when INFO did not say. */
  engine?: NodeEngine | null;
}

export type ProbeOutcome =
  { ok: true; nodes: NodeLine[]; info: NodeInfo } | { ok: false; kind: string; message: string };

/** One pod of the RedisCluster and, when it has an address, what its node answered this round. */
export interface PodObservation {
  name: string;
  uid: string;
  shard: number;
  /** The StatefulSet ordinal (the name's last number). */
  ordinal: number;
  ip: string | null;
  /** Marked for deletion: going away, never made master or joined. */
  deleting: boolean;
  /** The cluster-node annotation as it is now (null when absent or unreadable). */
  record: ClusterNodeRecord | null;
  roleLabel: string | null;
  /** null: not probed (no address yet). */
  probe: ProbeOutcome | null;
  /** The API says its redis container is not running (terminated, or waiting to restart after it did). */
  redisGone?: boolean;
  /**
   * How long (ms, from the start of the first round whose probe it did not answer to the start of
   * this one) our probes of it have gone unanswered; null: it answered this round.
   */
  silentForMs?: number | null;
  /** As silentForMs, counting only rounds where its port refused our connections (nothing listens). */
  refusedForMs?: number | null;
}

/** One node of the cluster, merged from every answering node's view. */
export interface ClusterNode {
  id: string;
  ip: string;
  role: 'master' | 'replica';
  masterId: string | null;
  configEpoch: number;
  /** Some answering node (not itself) flags it `fail`: the cluster agreed it failed. */
  fail: boolean;
  /** Some answering node flags it `fail?`, or it did not answer us while a pod had its id. */
  pfail: boolean;
  /** Its slots: from its own answer when it answered, else from the view with the newest config epoch of it. */
  slots: Array<[number, number]>;
  /** Only known when it answered (Redis shows them on the node itself only). */
  migrating: Map<number, string>;
  importing: Map<number, string>;
  /** The pod whose node answered with this id this round; null for a node no pod answered as. */
  pod: PodObservation | null;
  info: NodeInfo | null;
  /** The shard it belongs to: its pod's, else the shard of its replicas, else remembered; null: unknown. */
  shard: number | null;
  /** How many answering nodes know it (list it in their view, themselves included). */
  knownBy: number;
}

export interface OpenSlot {
  slot: number;
  migrating: Array<{ node: string; to: string }>;
  importing: Array<{ node: string; from: string }>;
}

/** The spec fields the decisions read (from a validated RedisClusterSpec). */
export interface ClusterSpecView {
  /** spec.master.replicas: the number of shards wanted. */
  shards: number;
  /** spec.replicas: replicas per shard. */
  replicasPerShard: number;
  /** sentinel.failoverTimeout. */
  failoverTimeoutMs: number;
  /**
   * A restored cluster's bring-up slots per shard (restored-layout.ts); null: restored, but the
   * layout is not known yet (bring-up waits); absent: no restore, even contiguous ranges.
   */
  layout?: ReadonlyArray<ReadonlyArray<[number, number]>> | null;
  /** spec.engine (redis, valkey) when the spec says it: a rollout's switchover goes onto a node running it. */
  engine?: string;
}

/** One Redis write of a round. Each names the pod it is sent to (by name) and why. */
export type ClusterStep =
  | { kind: 'addslots'; pod: string; ranges: Array<[number, number]>; configEpoch: number | null; reason: string }
  | { kind: 'meet'; pod: string; ip: string; target: string; reason: string }
  | { kind: 'replicate'; pod: string; masterId: string; reason: string }
  | { kind: 'failover'; pod: string; failedId: string; reason: string }
  | { kind: 'forget'; pods: string[]; id: string; reason: string }
  | { kind: 'reset'; pod: string; reason: string }
  /**
   * Move a slot's keys from `from` to `to` (both answering masters). Not cold: `from` serves the
   * slot; it is opened where needed (IMPORTING on `to`, MIGRATING on `from`), emptied, and given to
   * `to` everywhere (SETSLOT NODE). Cold: `from` does not serve it (an importer left with keys);
   * its keys go to `to`, the owner, and `from` closes the slot (SETSLOT STABLE). Quiet: no Event
   * per slot (a hold of the same round told the whole).
   */
  | { kind: 'move'; slot: number; from: string; to: string; cold: boolean; quiet?: boolean; reason: string }
  /** Close a slot's migrating/importing state on these pods (the slot stays with its owner). */
  | { kind: 'stable'; slot: number; pods: string[]; reason: string };

/** What one part of a round decided: the steps to take, and why it takes none about the rest. */
export interface Decided {
  steps: ClusterStep[];
  holds: Hold[];
}

/** Why a round takes no step about something, said once (a log line, maybe an Event). */
export interface Hold {
  key: string;
  reason: string;
  /** A Warning Event is worth it (a human should know), not only a log line. */
  warn: boolean;
}
