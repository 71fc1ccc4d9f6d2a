// From the informer's pods to the decisions' PodObservation (minus the probe): which pods belong
// to a RedisCluster, their shard and ordinal, address, and the role label and node record they
// carry (what our last patch returned wins: node-records.ts), and whether the API says its redis
// container is not running. Pure.
// Invariant: membership is api/rediscluster-names.ts's rule (all of clusterPodSelectorLabels),
// and a pod without a shard label or a StatefulSet ordinal is no cluster node of ours.
import type { V1Pod } from '@kubernetes/client-node';
import {
  CLUSTER_NODE_ANNOTATION,
  SHARD_LABEL,
  redisClusterPodBelongsTo as clusterPodBelongsTo,
  readClusterNodeRecord,
} from '../../../api/rediscluster-names.ts';
import { ROLE_LABEL } from '../../../api/labels.ts';
import { redisContainerGone } from '../../core/container-status.ts';
import type { Overlay } from '../../core/pod-labels.ts';
import type { PodObservation } from '../decide/types.ts';

type Observed = Omit<PodObservation, 'probe'>;

type Ref = { namespace: string; name: string };

export function podObservation(pod: V1Pod, cluster: Ref, written?: Overlay): Observed | null {
  const m = pod.metadata;
  if (!m?.name || !m.uid || !clusterPodBelongsTo(m, cluster)) return null;
  const shardText = m.labels?.[SHARD_LABEL];
  const shard = shardText !== undefined && /^\d+$/.test(shardText) ? Number(shardText) : NaN;
  const ordinalMatch = /-(\d+)$/.exec(m.name);
  if (!Number.isInteger(shard) || !ordinalMatch) return null;
  const annotation = written?.annotations[CLUSTER_NODE_ANNOTATION] ?? m.annotations?.[CLUSTER_NODE_ANNOTATION];
  return {
    name: m.name,
    uid: m.uid,
    shard,
    ordinal: Number(ordinalMatch[1]),
    ip: pod.status?.podIP || null,
    deleting: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    record: readClusterNodeRecord(annotation),
    roleLabel: written?.labels[ROLE_LABEL] ?? m.labels?.[ROLE_LABEL] ?? null,
    redisGone: redisContainerGone(pod),
  };
}
