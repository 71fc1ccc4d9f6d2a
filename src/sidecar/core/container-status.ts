// What a pod's status says about its redis container, shared by the kinds' pod readers. Pure.
// Invariant: "gone" only on the API's own word (terminated, or waiting after having terminated);
// a status that says nothing is not gone.
import type { V1Pod } from '@kubernetes/client-node';
import { REDIS_CONTAINER } from '../../api/labels.ts';

/** Terminated, or waiting after having terminated (a restart or its back-off): the process is gone. */
export function redisContainerGone(pod: V1Pod): boolean {
  const s = (pod.status?.containerStatuses ?? []).find((c) => c.name === REDIS_CONTAINER);
  if (!s?.state) return false;
  if (s.state.terminated) return true;
  return s.state.waiting !== undefined && s.lastState?.terminated !== undefined;
}
