// A pod's status as the kubelet reports it, computed from what the kubelet knows about its
// containers (pkg/kubelet/kubelet_pods.go getPhase, pkg/kubelet/status generate.go). Pure.
// Invariants: a condition's lastTransitionTime changes only when its status changes, so writing
// the same situation twice is a no-op for the API server; a pod without init containers gets
// exactly the status it always did (no initContainerStatuses, Initialized plainly True).
import os from 'node:os';
import { isExporterImage } from './container.ts';

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
  /** spec.initContainers in order (regular ones: each runs to completion before the next). */
  initContainers?: ContainerSnapshot[];
}

export interface ConditionMemory {
  status: string;
  time: string;
}

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

/** RFC 3339 with second precision, as metav1.Time is serialised. */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function podPhase(s: PodSnapshot): 'Pending' | 'Running' | 'Succeeded' | 'Failed' {
  // An init container still to run (or running) keeps the pod Pending; one that failed fails the
  // pod only under restartPolicy Never (otherwise it is retried, and the app containers wait).
  let pendingInit = 0;
  let failedInit = 0;
  for (const c of s.initContainers ?? []) {
    if ('terminated' in c.state) {
      if (c.state.terminated.exitCode !== 0) failedInit++;
    } else if ('waiting' in c.state && c.lastTerminated) {
      if (c.lastTerminated.exitCode !== 0) failedInit++;
    } else pendingInit++;
  }
  if (failedInit > 0 && s.restartPolicy === 'Never') return 'Failed';
  if (pendingInit > 0) return 'Pending';
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

/**
 * The Initialized condition (GeneratePodInitializedCondition) as [status, reason, message]: True
 * once every init container completed (its `ready`) or any app container has started.
 */
export function initializedCondition(s: PodSnapshot, phase: string): [boolean, string?, string?] {
  const inits = s.initContainers ?? [];
  // Without init containers the kubelet would still say PodCompleted once Succeeded; this status
  // never did, and nothing reads it.
  if (inits.length === 0) return [true];
  if (phase === 'Succeeded') return [true, 'PodCompleted'];
  if (s.containers.some((c) => !('waiting' in c.state))) return [true];
  const incomplete = inits.filter((c) => !c.ready).map((c) => c.name);
  if (incomplete.length === 0) return [true];
  return [false, 'ContainersNotInitialized', `containers with incomplete status: [${incomplete.join(' ')}]`];
}

function containerStatus(c: ContainerSnapshot): Record<string, unknown> {
  return {
    name: c.name,
    image: c.image,
    // The program that runs the image here (the node agent overrides it with the binary's digest).
    imageID: c.containerID ? `standin://${isExporterImage(c.image) ? 'redis_exporter' : 'redis-server'}@${c.image}` : '',
    ...(c.containerID ? { containerID: c.containerID } : {}),
    ready: c.ready,
    started: c.started,
    restartCount: c.restartCount,
    state: c.state,
    lastState: c.lastTerminated ? { terminated: c.lastTerminated } : {},
  };
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
  const phase = podPhase(s);
  const conditions = [
    condition('PodReadyToStartContainers', s.podIP !== undefined),
    condition('Initialized', ...initializedCondition(s, phase)),
    condition('Ready', ready, notReady[0], notReady[1]),
    condition('ContainersReady', ready, notReady[0], notReady[1]),
    condition('PodScheduled', true),
  ];
  const status: Record<string, unknown> = {
    phase,
    conditions,
    hostIP: s.hostIP,
    hostIPs: [{ ip: s.hostIP }],
    startTime: s.startTime,
    ...(s.initContainers?.length ? { initContainerStatuses: s.initContainers.map(containerStatus) } : {}),
    containerStatuses: s.containers.map(containerStatus),
  };
  if (s.podIP !== undefined) {
    status['podIP'] = s.podIP;
    status['podIPs'] = [{ ip: s.podIP }];
  }
  return status;
}
