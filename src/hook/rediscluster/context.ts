// What every RedisCluster child builder needs (its identity and validated spec), and the labels
// and metadata its children share. Invariants, as redis/children/meta.ts for Redis: every child carries
// `controller-uid` (Metacontroller's generated selector) and the app.kubernetes.io labels, with
// app.kubernetes.io/name=redis-cluster (never `redis`: nothing of the Redis kind may take a cluster
// object for its own); metadata is name, namespace, labels and nothing else; ownerReferences are
// Metacontroller's; the role label is never produced here.
import { REDIS_CLUSTER_APP_NAME, SHARD_LABEL } from '../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../api/rediscluster-schema.ts';
import { childLabelsOf, type ChildMetadata } from '../common/child.ts';

export interface RedisClusterContext {
  name: string;
  namespace: string;
  /** The parent's uid: children are selected by `controller-uid`. */
  uid: string | undefined;
  /** Validated and defaulted (validateRedisClusterSpec's copy). */
  spec: RedisClusterSpec;
  /** The operator's image: the backup Jobs run it. */
  operatorImage: string;
}

export function redisClusterChildLabels(
  ctx: RedisClusterContext,
  component: string,
  shard?: number,
): Record<string, string> {
  const labels = childLabelsOf(REDIS_CLUSTER_APP_NAME, ctx, component);
  if (shard !== undefined) labels[SHARD_LABEL] = String(shard);
  return labels;
}

export function redisClusterChildMetadata(
  ctx: RedisClusterContext,
  name: string,
  component: string,
  shard?: number,
): ChildMetadata {
  return { name, namespace: ctx.namespace, labels: redisClusterChildLabels(ctx, component, shard) };
}
