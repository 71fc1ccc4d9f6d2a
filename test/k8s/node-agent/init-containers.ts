// Init containers, in the order the kubelet runs them (kuberuntime computePodActions): the regular
// init containers one at a time in spec order, each to a successful exit before the next starts,
// and the app containers only once every one of them has. Pure.
// Invariants:
// - At most one init container runs at a time, and never alongside an app container.
// - A failed init container stops the sequence: it is retried under restartPolicy Always or
//   OnFailure (the runner's back-off), and under Never the pod has failed and nothing more runs.
import type { V1Pod } from '@kubernetes/client-node';
import type { TerminatedState } from '../../cluster/workloads/pod-status.ts';

/** What the order needs to know of one init container. */
export interface InitView {
  name: string;
  running: boolean;
  /** A restart is scheduled (back-off after a failure). */
  restarting: boolean;
  /** Its final exit code, once it will not run again. */
  exitCode?: number;
}

export type InitStep =
  /** Start this init container (index into spec.initContainers). */
  | { next: number }
  /** One is running or backing off: nothing to start. */
  | { busy: string }
  /** One failed for good (restartPolicy Never): the app containers never run. */
  | { failed: string }
  /** Every init container completed (or there are none): the app containers may run. */
  | { done: true };

export function initStep(inits: readonly InitView[]): InitStep {
  for (const [i, c] of inits.entries()) {
    if (c.exitCode === 0) continue;
    if (c.exitCode !== undefined) return { failed: c.name };
    if (c.running || c.restarting) return { busy: c.name };
    return { next: i };
  }
  return { done: true };
}

/** Restartable init containers (sidecars: `restartPolicy: Always` on the init container) are not run. */
export function isSidecar(spec: { restartPolicy?: string }): boolean {
  return spec.restartPolicy === 'Always';
}

export interface CompletedInit {
  terminated: TerminatedState;
  restartCount: number;
  containerID?: string;
}

/**
 * Init containers a new worker for an existing pod (the agent restarted) must not run again: under
 * restartPolicy Never or OnFailure the API server refuses a status that moves a completed container
 * back to running, so the completion the API recorded stands. Under Always they run again, as on a
 * rebooted node.
 */
export function completedInits(pod: V1Pod): Map<string, CompletedInit> {
  const out = new Map<string, CompletedInit>();
  if ((pod.spec?.restartPolicy ?? 'Always') === 'Always') return out;
  // The API's JSON: times are RFC 3339 strings, as TerminatedState has them.
  const statuses = (pod.status?.initContainerStatuses ?? []) as unknown as Array<{
    name: string;
    restartCount?: number;
    containerID?: string;
    state?: { terminated?: TerminatedState };
  }>;
  for (const s of statuses) {
    const t = s.state?.terminated;
    if (t?.exitCode !== 0) continue;
    out.set(s.name, { terminated: t, restartCount: s.restartCount ?? 0, ...(s.containerID ? { containerID: s.containerID } : {}) });
  }
  return out;
}
