// What the RedisCluster system test and bench:reshard read from a running cluster, as a user
// would: the kubectl row, the status, the pods' records, and each node over the operator's own
// Redis user (its password from the <name>-operator Secret).
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import {
  CLUSTER_NODE_ANNOTATION,
  readClusterNodeRecord,
  readReshardRecord,
  RESHARD_ANNOTATION,
} from '../../src/api/rediscluster-names.ts';
import { ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import { isPodReady } from '../support/kubectl-tables.ts';
import type { SystemCluster } from './cluster.ts';
import { NS, type Pod } from './support.ts';

export type Json = Record<string, any>;

export function secretValue(c: SystemCluster, secret: string): string {
  const data = (c.get('secrets', secret, NS)?.['data'] ?? {}) as Record<string, string>;
  assert.ok(data['password'], `Secret ${secret} has a password`);
  return Buffer.from(data['password'], 'base64').toString('utf8');
}

export const clusterOf = (c: SystemCluster, name: string) => c.get('redisclusters', name, NS) as Json | undefined;
export const statusOf = (c: SystemCluster, name: string) => (clusterOf(c, name)?.['status'] ?? {}) as Json;
export const condition = (c: SystemCluster, name: string, type: string) =>
  ((statusOf(c, name)['conditions'] ?? []) as Json[]).find((x) => x['type'] === type);
export const reshardOf = (c: SystemCluster, name: string) =>
  readReshardRecord(clusterOf(c, name)?.['metadata']?.['annotations']?.[RESHARD_ANNOTATION]);

/** What `kubectl get rediscluster` prints (NAME SHARDS MASTERS REPLICAS SLOTS PHASE). */
export function row(c: SystemCluster, name: string): string {
  const s = statusOf(c, name);
  return [name, s['shards'], s['readyMasters'], s['readyReplicas'], s['slotsCovered'], s['phase']].join(' ');
}

export const livePods = (c: SystemCluster, name: string) =>
  (c.pods(name) as Pod[]).filter((p) => !p.metadata.deletionTimestamp);
export const seedsOf = (c: SystemCluster, name: string) =>
  livePods(c, name).map((p) => ({ host: p.status!.podIP!, port: 6379 }));
export const shardPods = (c: SystemCluster, name: string, shard: number) =>
  livePods(c, name).filter((p) => p.metadata.name.startsWith(`${name}-shard-${shard}-`));
export const labelledMaster = (c: SystemCluster, name: string, shard: number) =>
  shardPods(c, name, shard).find((p) => p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER);

/** Every pod Ready, one master per shard, every record linked: what the sidecar reports on a healthy cluster. */
export function healthy(c: SystemCluster, name: string, shards: number, perShard: number): boolean {
  const pods = livePods(c, name);
  if (pods.length !== shards * perShard || !pods.every(isPodReady)) return false;
  const records = pods.map((p) => readClusterNodeRecord(p.metadata.annotations?.[CLUSTER_NODE_ANNOTATION]));
  if (records.some((r) => !r || !r.linkUp)) return false;
  return pods.filter((p) => p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER).length === shards;
}

/** A connection to one node as the operator's Redis user. */
export function admin(c: SystemCluster, name: string, ip: string): Redis {
  const r = new Redis({
    host: ip,
    port: 6379,
    username: 'redis-operator',
    password: secretValue(c, `${name}-operator`),
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
  });
  r.on('error', () => {});
  return r;
}

/** Whether the node at `ip` answers INFO with role:master now (false when it does not answer). */
export async function isRedisMaster(c: SystemCluster, name: string, ip: string): Promise<boolean> {
  const r = admin(c, name, ip);
  try {
    return (await r.info('replication')).includes('role:master');
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

/** Slots some node still has open (CLUSTER NODES `[slot->-id]` or `[slot-<-id]`), over every live pod. */
export async function openSlots(c: SystemCluster, name: string): Promise<string[]> {
  const out: string[] = [];
  for (const p of livePods(c, name)) {
    const r = admin(c, name, p.status!.podIP!);
    try {
      const nodes = (await r.call('CLUSTER', 'NODES')) as string;
      for (const m of nodes.matchAll(/\[\d+-[<>]-[0-9a-f]+\]/g)) out.push(`${p.metadata.name}: ${m[0]}`);
    } finally {
      r.disconnect();
    }
  }
  return out;
}

/**
 * used_memory summed over the masters, read from each node (what the autoscaler reads); a node that does not answer is
 * asked again.
 */
export async function mastersUsedMemory(c: SystemCluster, name: string): Promise<number> {
  let sum = 0;
  for (const p of livePods(c, name)) {
    const ip = p.status?.podIP;
    if (!ip) continue;
    for (let attempt = 1; ; attempt++) {
      const r = admin(c, name, ip);
      try {
        const info = `${await r.info('replication')}${await r.info('memory')}`;
        if (info.includes('role:master')) sum += Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
        break;
      } catch (err) {
        if (attempt >= 5) throw new Error(`${p.metadata.name} (${ip}) did not answer INFO: ${String(err)}`);
        await new Promise((res) => setTimeout(res, 200));
      } finally {
        r.disconnect();
      }
    }
  }
  return sum;
}
