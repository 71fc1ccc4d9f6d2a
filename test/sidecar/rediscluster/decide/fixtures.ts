// Small worlds for the RedisCluster decision tables: nodes described once (id, pod, address, role,
// slots, flags, figures), from which every answering node's CLUSTER NODES view and INFO are
// built the way Redis would show them (open slots only on the node itself).
import type { NodeInfo, NodeLine, PodObservation } from '../../../../src/sidecar/rediscluster/decide/types.ts';

const names = new Map<string, string>();

/** A 40-hex node id from a short name (its bytes in hex, repeated); nameOf gives the name back. */
export function id(name: string): string {
  const hex = Buffer.from(name).toString('hex');
  const out = hex.repeat(Math.ceil(40 / hex.length)).slice(0, 40);
  names.set(out, name);
  return out;
}

export const nameOf = (nodeId: string) => names.get(nodeId) ?? nodeId.slice(0, 8);

export interface NodeSpec {
  id: string;
  /** [shard, ordinal] of the pod it is (omit for a node no pod answers as). */
  pod?: [number, number];
  ip?: string;
  role?: 'master' | 'replica';
  master?: string;
  slots?: Array<[number, number]>;
  epoch?: number;
  /** Flagged `fail` by the others. */
  fail?: boolean;
  /** Does not answer (its pod exists but the probe failed). */
  silent?: boolean;
  migrating?: Array<[number, string]>;
  importing?: Array<[number, string]>;
  keys?: number;
  offset?: number;
  linkUp?: boolean;
  syncing?: boolean;
  clusterOk?: boolean;
  usedMemory?: number;
  maxMemory?: number;
  /** Ids this node does not know (default: it knows every node). */
  unknown?: string[];
  /** The address this node's view shows for another node, by id (default: that node's own). */
  sees?: Record<string, string>;
  /** A replica's INFO master_host (default: its master's address). */
  masterHost?: string;
  deleting?: boolean;
}

function line(n: NodeSpec, myself: boolean, seenAt?: string): NodeLine {
  return {
    id: n.id,
    ip: seenAt ?? n.ip ?? '',
    port: 6379,
    myself,
    role: n.role ?? 'master',
    masterId: n.role === 'replica' ? (n.master ?? null) : null,
    fail: !myself && (n.fail ?? false),
    pfail: false,
    handshake: false,
    noaddr: !n.ip,
    configEpoch: n.epoch ?? 0,
    connected: true,
    slots: n.slots ?? [],
    migrating: myself ? (n.migrating ?? []) : [],
    importing: myself ? (n.importing ?? []) : [],
  };
}

function info(n: NodeSpec, masterHost: string | null): NodeInfo {
  const replica = n.role === 'replica';
  return {
    role: replica ? 'replica' : 'master',
    linkUp: replica && (n.linkUp ?? true),
    masterHost: replica ? masterHost : null,
    syncing: n.syncing ?? false,
    offset: n.offset ?? 0,
    usedMemory: n.usedMemory ?? 1_000_000,
    maxMemory: n.maxMemory ?? 0,
    keys: n.keys ?? 0,
    clusterOk: n.clusterOk ?? true,
  };
}

/** The pods of a world: one per node with `pod`, its probe answering unless silent. */
export function world(nodes: NodeSpec[], name = 'c', extraPods: PodObservation[] = []): PodObservation[] {
  const pods = nodes
    .filter((n) => n.pod)
    .map((n): PodObservation => {
      const [shard, ordinal] = n.pod!;
      const view = nodes
        .filter((o) => o.id === n.id || !(n.unknown ?? []).includes(o.id))
        .map((o) => line(o, o.id === n.id, n.sees?.[o.id]));
      const masterHost = n.masterHost ?? nodes.find((o) => o.id === n.master)?.ip ?? null;
      return {
        name: `${name}-shard-${shard}-${ordinal}`,
        uid: `uid-${n.id.slice(0, 6)}`,
        shard,
        ordinal,
        ip: n.ip ?? null,
        deleting: n.deleting ?? false,
        record: null,
        roleLabel: null,
        probe: n.silent
          ? { ok: false, kind: 'refused', message: 'ECONNREFUSED' }
          : { ok: true, nodes: view, info: info(n, masterHost) },
      };
    });
  return [...pods, ...extraPods];
}

/** The usual healthy cluster: `shards` shards of master pod 0 (even contiguous slots) and replica pod 1. */
export function healthy(shards: number, ranges: Array<Array<[number, number]>>): NodeSpec[] {
  const out: NodeSpec[] = [];
  for (let s = 0; s < shards; s++) {
    const m = id(`m${s}`);
    out.push({ id: m, pod: [s, 0], ip: `10.0.${s}.1`, slots: ranges[s] ?? [], epoch: s + 1, offset: 100, keys: 10 });
    out.push({ id: id(`r${s}`), pod: [s, 1], ip: `10.0.${s}.2`, role: 'replica', master: m, offset: 100, keys: 10 });
  }
  return out;
}

export const THREE: Array<Array<[number, number]>> = [[[0, 5461]], [[5462, 10922]], [[10923, 16383]]];
export const SPEC3 = { shards: 3, replicasPerShard: 1, failoverTimeoutMs: 10_000 };
