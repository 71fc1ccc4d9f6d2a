// `kubectl redis status NAME`: which object NAME is (a Redis, else a RedisCluster; `redis/NAME`
// or `rediscluster/NAME` picks), the reads its view needs, and the output. The views are pure
// (view.ts, cluster-view.ts, leader.ts); the reads are kube.ts.
// Invariants: only reads; a RedisCluster is looked for only when no Redis has the name (a Redis
// of that name is what `status NAME` always meant); the operator's objects that cannot be read
// make the leader "unknown", never the command fail.
import { clusterStatusLines, clusterStatusView } from './cluster-view.ts';
import { KubeError, type ClusterLike, type Kube, type RedisLike } from './kube.ts';
import { leaderLines, leaderOf, type LeaderLookup } from './leader.ts';
import { clusterNow } from './ops.ts';
import { statusLines, statusView, type Paint } from './view.ts';

/** A NAME argument the command cannot use (exit 2 in main.ts). */
export class UsageError extends Error {}

type Target =
  { kind: 'Redis'; name: string; object: RedisLike } | { kind: 'RedisCluster'; name: string; object: ClusterLike };

const CLUSTER_KINDS = ['rediscluster', 'redisclusters', 'rdc'];
const REDIS_KINDS = ['redis', 'redises', 'rd'];

export async function target(k: Kube, arg: string): Promise<Target> {
  const slash = arg.indexOf('/');
  const kind =
    slash < 0
      ? ''
      : arg
          .slice(0, slash)
          .toLowerCase()
          .replace(/\.redis\.example\.com$/, '');
  const name = slash < 0 ? arg : arg.slice(slash + 1);
  if (CLUSTER_KINDS.includes(kind)) return { kind: 'RedisCluster', name, object: await k.getCluster(name) };
  if (kind !== '' && !REDIS_KINDS.includes(kind))
    throw new UsageError(`status ${arg}: not a Redis or a RedisCluster (redis/NAME, rediscluster/NAME)`);
  try {
    return { kind: 'Redis', name, object: await k.getRedis(name) };
  } catch (err) {
    // No Redis of that name: a RedisCluster of that name, else the Redis's own "no such Redis".
    if (kind !== '' || !(err instanceof KubeError) || err.failure.code !== 404) throw err;
    const cluster = await k.getCluster(name).catch(() => null);
    if (cluster === null) throw err;
    return { kind: 'RedisCluster', name, object: cluster };
  }
}

/** What `-o leader` prints: the pod of the sidecar that leads, or why there is none (exit 1). */
export function leaderName(l: LeaderLookup): string {
  if (!l.ok) throw new Error(`the leading sidecar is unknown: ${l.reason}`);
  if (l.view.state !== 'held') throw new Error(`no sidecar leads it now: ${leaderLines(l)[0]!.trim()}`);
  return l.view.holder!;
}

/**
 * output: undefined (the text view), `json`, or `leader` (the leading sidecar's pod name alone, for `kubectl logs`).
 */
export async function run(
  k: Kube,
  arg: string,
  output: string | undefined,
  out: (line: string) => void,
  paint: Paint,
): Promise<number> {
  if (output !== undefined && output !== 'json' && output !== 'leader')
    throw new UsageError(`status: -o ${output}: not json or leader`);
  const json = output === 'json';
  const t = await target(k, arg);
  const o = await k.operator();
  const operator = leaderOf(
    k.namespace,
    t.name,
    o.deployment,
    o.leases,
    o.located.namespace,
    clusterNow(o.serverDate, Date.now()),
  );
  if (output === 'leader') return (out(leaderName(operator)), 0);
  if (t.kind === 'RedisCluster') {
    const v = clusterStatusView(
      t.object,
      await k.clusterPods(t.name),
      await k.events(t.name, 'RedisCluster'),
      operator,
    );
    (json ? [JSON.stringify(v, null, 2)] : clusterStatusLines(v, paint)).forEach((l) => out(l));
    return 0;
  }
  const v = statusView(
    t.object,
    await k.pods(t.name),
    await k.events(t.name),
    await k.backups().catch(() => []),
    operator,
  );
  (json ? [JSON.stringify(v, null, 2)] : statusLines(v, paint)).forEach((l) => out(l));
  return 0;
}
