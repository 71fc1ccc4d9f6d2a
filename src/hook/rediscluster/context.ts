// What every RedisCluster child builder needs (its identity and validated spec), and the labels
// and metadata its children share. Invariants, as redis/children/meta.ts for Redis: every child carries
// `controller-uid` (Metacontroller's generated selector) and the app.kubernetes.io labels, with
// app.kubernetes.io/name=redis-cluster (never `redis`: nothing of the Redis kind may take a cluster
// object for its own); metadata is name, namespace, labels and nothing else; ownerReferences are
// Metacontroller's; the role label is never produced here.
import { REDIS_CLUSTER_APP_NAME, SHARD_LABEL } from '../../api/rediscluster-names.ts';
import type { RedisClusterSpec } from '../../api/rediscluster-schema.ts';
import {
  COMPONENT_LABEL,
  CONTROLLER_UID_LABEL,
  INSTANCE_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NAME_LABEL,
  PART_OF_LABEL,
  VERSION_LABEL,
} from '../../api/labels.ts';
import { versionLabelValue, type ChildMetadata } from '../common/child.ts';

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
  const labels: Record<string, string> = {};
  if (ctx.uid !== undefined) labels[CONTROLLER_UID_LABEL] = ctx.uid;
  labels[NAME_LABEL] = REDIS_CLUSTER_APP_NAME;
  labels[INSTANCE_LABEL] = ctx.name;
  labels[COMPONENT_LABEL] = component;
  labels[MANAGED_BY_LABEL] = MANAGED_BY;
  labels[PART_OF_LABEL] = REDIS_CLUSTER_APP_NAME;
  const version = versionLabelValue(ctx.spec.version);
  if (version !== undefined) labels[VERSION_LABEL] = version;
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
