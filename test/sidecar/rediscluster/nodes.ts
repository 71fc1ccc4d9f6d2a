// What the RedisCluster tests ask the nodes directly (as the default user, the clients' password):
// each node's own view (CLUSTER NODES, parsed by the sidecar's own parser), CLUSTER INFO, and
// the checks every scenario ends with: every slot covered, no slot left open, one view shared.
import { parseClusterNodes } from '../../../src/sidecar/rediscluster/decide/cluster-nodes.ts';
import type { NodeLine } from '../../../src/sidecar/rediscluster/decide/types.ts';
import { redisClient } from '../redis/manager/harness-redis.ts';

export async function nodesOf(ip: string): Promise<NodeLine[] | null> {
  const c = redisClient(ip);
  try {
    await c.connect();
    return parseClusterNodes(String(await c.call('CLUSTER', 'NODES')));
  } catch {
    return null;
  } finally {
    c.disconnect();
  }
}

export async function clusterInfo(ip: string): Promise<Record<string, string>> {
  const c = redisClient(ip);
  try {
    await c.connect();
    const out: Record<string, string> = {};
    for (const line of String(await c.call('CLUSTER', 'INFO')).split('\r\n')) {
      const i = line.indexOf(':');
      if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
    }
    return out;
  } catch {
    return {};
  } finally {
    c.disconnect();
  }
}

export function myself(view: NodeLine[] | null): NodeLine | undefined {
  return view?.find((n) => n.myself);
}

/** Every node answers cluster_state:ok with all 16384 slots ok and the same node count. */
export async function allCovered(ips: readonly string[], nodes: number): Promise<boolean> {
  const infos = await Promise.all(ips.map(clusterInfo));
  return infos.every(
    (i) =>
      i['cluster_state'] === 'ok' && i['cluster_slots_ok'] === '16384' && i['cluster_known_nodes'] === String(nodes),
  );
}

/** Slots some node shows migrating or importing, as `<ip> <slot> <state>`. */
export async function openSlots(ips: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const ip of ips) {
    const me = myself(await nodesOf(ip));
    for (const [slot] of me?.migrating ?? []) out.push(`${ip} ${slot} migrating`);
    for (const [slot] of me?.importing ?? []) out.push(`${ip} ${slot} importing`);
  }
  return out;
}

/** Slot count of each node's own answer, by ip. */
export async function slotCountsOf(ips: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const ip of ips) {
    const me = myself(await nodesOf(ip));
    out.set(
      ip,
      (me?.slots ?? []).reduce((n, [a, b]) => n + b - a + 1, 0),
    );
  }
  return out;
}
