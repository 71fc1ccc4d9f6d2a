// A pod's status as the kubelet reports it, computed from what the kubelet knows about its
// containers (pkg/kubelet/kubelet_pods.go getPhase, pkg/kubelet/status generate.go). Pure.
// Invariant: a condition's lastTransitionTime changes only when its status changes, so writing
// the same situation twice is a no-op for the API server.

export type ContainerState = { waiting: { reason: string; message?: string } } | { running: { startedAt: string } } | { terminated: TerminatedState };

export interface TerminatedState {
  exitCode: number;
  signal?: number;
  reason: string;
  message?: string;
  startedAt?: string;
  finishedAt: string;
  containerID?: string;
}

export interface ContainerSnapshot {
  name: string;
  image: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: ContainerState;
  lastTerminated?: TerminatedState;
}

export interface PodSnapshot {
  /** The pod is being deleted and all its containers have stopped for good. */
  terminal: boolean;
  restartPolicy: string;
  hostIP: string;
  podIP?: string;
  startTime: string;
  containers: ContainerSnapshot[];
}

export interface ConditionMemory {
  status: string;
  time: string;
}

/** RFC 3339 with second precision, as metav1.Time is serialised. */
/** A container's terminated state from how its process ended (both kubelets use it). */
export function terminatedState(
  info: { code: number | null; signal: NodeJS.Signals | null; error?: string },
  startedAtMs: number | undefined,
  containerID: string | undefined,
  now: number,
): TerminatedState {
  const signal = info.signal ? (os.constants.signals[info.signal] ?? 0) : 0;
  const exitCode = info.code ?? (info.signal ? 128 + signal : 128);
  return {
    exitCode,
    ...(info.signal ? { signal } : {}),
    reason: info.error ? 'StartError' : exitCode === 0 ? 'Completed' : 'Error',
    ...(info.error ? { message: info.error } : {}),
    startedAt: rfc3339(startedAtMs ?? now),
    finishedAt: rfc3339(now),
    ...(containerID ? { containerID } : {}),
  };
}

export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function podPhase(s: PodSnapshot): 'Pending' | 'Running' | 'Succeeded' | 'Failed' {
  let waiting = 0;
  let running = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of s.containers) {
    if ('running' in c.state) running++;
    else if ('terminated' in c.state) {
      stopped++;
      if (c.state.terminated.exitCode === 0) succeeded++;
    } else if (c.lastTerminated) stopped++;
    else waiting++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped > 0) {
    if (s.terminal || s.restartPolicy === 'Never') return succeeded === stopped ? 'Succeeded' : 'Failed';
    if (s.restartPolicy === 'OnFailure' && succeeded === stopped) return 'Succeeded';
    return 'Running';
  }
  return 'Pending';
}

export function buildPodStatus(s: PodSnapshot, memory: Map<string, ConditionMemory>, nowMs: number): Record<string, unknown> {
  const now = rfc3339(nowMs);
  const unready = s.containers.filter((c) => !c.ready).map((c) => c.name);
  const ready = unready.length === 0 && s.containers.length > 0;
  const condition = (type: string, ok: boolean, reason?: string, message?: string) => {
    const status = ok ? 'True' : 'False';
    const prev = memory.get(type);
    const time = prev && prev.status === status ? prev.time : now;
    memory.set(type, { status, time });
    return { type, status, lastTransitionTime: time, ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
  };
  const notReady = ready ? [] : ['ContainersNotReady', `containers with unready status: [${unready.join(' ')}]`];
  const conditions = [
    condition('PodReadyToStartContainers', s.podIP !== undefined),
    condition('Initialized', true),
    condition('Ready', ready, notReady[0], notReady[1]),
    condition('ContainersReady', ready, notReady[0], notReady[1]),
    condition('PodScheduled', true),
  ];
  const status: Record<string, unknown> = {
    phase: podPhase(s),
    conditions,
    hostIP: s.hostIP,
    hostIPs: [{ ip: s.hostIP }],
    startTime: s.startTime,
    containerStatuses: s.containers.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: c.containerID ? `standin://redis-server@${c.image}` : '',
      ...(c.containerID ? { containerID: c.containerID } : {}),
      ready: c.ready,
      started: c.started,
      restartCount: c.restartCount,
      state: c.state,
      lastState: c.lastTerminated ? { terminated: c.lastTerminated } : {},
    })),
  };
  if (s.podIP !== undefined) {
    status['podIP'] = s.podIP;
    status['podIPs'] = [{ ip: s.podIP }];
  }
  return status;
}
import os from 'node:os';
