// The pods of one RedisCluster as the hook reads them: shard (label), ordinal (name), readiness,
// and the node record the sidecar writes (annotation redis.example.com/cluster-node). Pure.
// Invariants: a pod belongs to the cluster by its pod selector labels in the cluster's namespace;
// its shard is its label, never guessed from the name; an unreadable record is `null`, which
// every caller must take as "unknown" (it may hold slots and data), never as empty; views come
// sorted by name.
import {
  CLUSTER_NODE_ANNOTATION,
  redisClusterPodBelongsTo,
  readClusterNodeRecord,
  SHARD_LABEL,
  type ClusterNodeRecord,
} from '../../api/rediscluster-names.ts';
import { REVISION_LABEL } from '../../api/labels.ts';
import { ENGINE_ANNOTATION } from '../../api/node-engine.ts';
import { memberMeta } from '../common/observed.ts';
import type { KubeObject } from '../common/types.ts';
import { array, at, compare, isRecord, str, stringMap } from '../common/util.ts';

export interface RedisClusterPodView {
  name: string;
  /** From the shard label; undefined when it is missing or not a shard number. */
  shard: number | undefined;
  /** The StatefulSet ordinal from the name (<set>-<ordinal>); undefined when the name has none. */
  ordinal: number | undefined;
  ready: boolean;
  readySince: string | undefined;
  running: boolean;
  terminating: boolean;
  /** controller-revision-hash: the template revision the pod was made from. */
  revision: string | undefined;
  record: ClusterNodeRecord | null;
  /** The sidecar's engine annotation (api/node-engine.ts), once the pod's node answered. */
  engine?: string | undefined;
}

export function redisClusterPodViews(
  pods: readonly KubeObject[],
  name: string,
  namespace: string,
): RedisClusterPodView[] {
  const views: RedisClusterPodView[] = [];
  for (const pod of pods) {
    if (pod.kind !== 'Pod' || !redisClusterPodBelongsTo(memberMeta(pod, namespace), { namespace, name })) continue;
    const labels = stringMap(pod.metadata.labels);
    const shardText = labels[SHARD_LABEL];
    const ordinal = /-(0|[1-9][0-9]{0,4})$/.exec(pod.metadata.name)?.[1];
    const readyCondition = array(at(pod, 'status', 'conditions')).find((c) => isRecord(c) && c['type'] === 'Ready');
    views.push({
      name: pod.metadata.name,
      shard: shardText !== undefined && /^(0|[1-9][0-9]?)$/.test(shardText) ? Number(shardText) : undefined,
      ordinal: ordinal !== undefined ? Number(ordinal) : undefined,
      ready: at(readyCondition, 'status') === 'True',
      readySince: str(at(readyCondition, 'lastTransitionTime')),
      running: at(pod, 'status', 'phase') === 'Running',
      terminating: typeof pod.metadata.deletionTimestamp === 'string',
      revision: labels[REVISION_LABEL],
      record: readClusterNodeRecord(stringMap(pod.metadata.annotations)[CLUSTER_NODE_ANNOTATION]),
      engine: stringMap(pod.metadata.annotations)[ENGINE_ANNOTATION],
    });
  }
  return views.sort((a, b) => compare(a.name, b.name));
}

/** A node that serves: Kubernetes calls it Ready and it is not terminating. */
export const serving = (p: RedisClusterPodView): boolean => p.ready && !p.terminating;

/** A master by its own record that the cluster does not flag as failed. */
export const isMaster = (p: RedisClusterPodView): boolean => p.record?.role === 'master' && p.record.linkUp;

/** What a node holds as far as its record says: slots and keys; `unknown` without a record. */
export function holdsData(p: RedisClusterPodView): 'yes' | 'no' | 'unknown' {
  if (p.record === null) return 'unknown';
  return p.record.slots.length > 0 || p.record.keys > 0 ? 'yes' : 'no';
}
