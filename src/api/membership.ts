// Which pods belong to a Redis: the one rule the hook (status, replica floor, finalize) and the
// sidecar (which pods it manages) share, so they never disagree about a pod.
// Invariants: membership is all of podSelectorLabels(name) (never the role label, which the
// sidecar writes and may be absent) in the Redis' own namespace; a pod without a namespace
// belongs nowhere (callers that read objects whose namespace is implied pass the implied one).
// Claims made from the StatefulSets' templates carry the same labels and follow the same rule.
import { podSelectorLabels } from './labels.ts';

/** The parts of an object's metadata membership looks at (V1ObjectMeta and ObjectMeta fit). */
export interface MemberMeta {
  namespace?: string | undefined;
  labels?: Readonly<Record<string, string>> | undefined;
}

/** True when `meta` carries every pod selector label of Redis `redis.name`, in `redis.namespace`. */
export function podBelongsTo(meta: MemberMeta | undefined, redis: { namespace: string; name: string }): boolean {
  if (meta?.namespace !== redis.namespace) return false;
  const labels = meta.labels ?? {};
  return Object.entries(podSelectorLabels(redis.name)).every(([k, v]) => labels[k] === v);
}
