// A pod's containers as processes (the container runtime's part): start (the process's env, argv,
// mounts and files come from container-setup.ts), exit with its termination message, restart
// under restartPolicy with the kubelet's back-off, signals, and each container's status. Init
// containers run first, one at a time (init-containers.ts decides which). Logs go to
// <pod dir>/logs/<container>/<restartCount>.log, like /var/log/pods/<ns>_<pod>_<uid>/<container>/<n>.log
// on a node.
// Invariants:
// - A container has at most one process; a new process gets a new containerID.
// - A restart is scheduled only when the pod is not terminating; a pod that is terminating
//   never starts a process.
// - No app container starts before every init container has exited 0.
import { randomBytes } from 'node:crypto';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { rfc3339, terminatedState, type ContainerSnapshot, type TerminatedState } from '../../cluster/workloads/pod-status.ts';
import type { ProbeTarget } from '../../cluster/workloads/probes.ts';
import { spawnGroup, type ExitInfo, type ProcessGroup } from '../../cluster/workloads/processes.ts';
import { instanceMessage, planProcess } from './container-setup.ts';
import { completedInits, initStep, isSidecar } from './init-containers.ts';
import type { NodeContext } from './node-context.ts';
import type { PodVolumes } from './pod-volumes.ts';
import type { Sandbox } from './sandbox.ts';

export { logFile } from './container-setup.ts';

export const REDIS_PORT = 6379;
const BACKOFF_INITIAL_MS = 10_000;
const BACKOFF_MAX_MS = 300_000;

export interface ContainerRuntime {
  spec: V1Container;
  /** From spec.initContainers: runs to completion, before the app containers; no probes. */
  init: boolean;
  /** The host file behind terminationMessagePath, this instance's. */
  messageFile?: string;
  proc?: ProcessGroup;
  containerID?: string;
  startedAtMs?: number;
  started: boolean;
  ready: boolean;
  everStarted: boolean;
  restartCount: number;
  waiting?: { reason: string; message?: string };
  /** Final state: the container will not run again (pod terminating, or restartPolicy). */
  terminated?: TerminatedState;
  lastTerminated?: TerminatedState;
  backoff?: { ms: number; lastUpdate: number };
  restartTimer?: NodeJS.Timeout;
  killTimer?: NodeJS.Timeout;
  killDeadline?: number;
  killing: boolean;
  target?: ProbeTarget;
}

/** The pod worker, as its containers see it. */
export interface ContainerHost {
  readonly pod: V1Pod;
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly dir: string;
  readonly ip: string | undefined;
  readonly sandbox: Sandbox | undefined;
  readonly node: NodeContext;
  readonly log: Logger;
  readonly volumes: PodVolumes;
  readonly terminating: boolean;
  readonly gone: boolean;
  requestStatus(): void;
  triggerReadiness(c: ContainerRuntime): void;
  onContainerExit(): void;
  kick(): void;
}

const waitingFor = (reason: string) => ({ reason });

export class ContainerRunner {
  readonly initContainers: ContainerRuntime[];
  readonly containers: ContainerRuntime[];
  readonly #h: ContainerHost;

  constructor(host: ContainerHost) {
    this.#h = host;
    const fresh = (spec: V1Container, init: boolean): ContainerRuntime => ({
      spec,
      init,
      started: false,
      ready: false,
      everStarted: false,
      restartCount: 0,
      killing: false,
    });
    this.initContainers = (host.pod.spec?.initContainers ?? []).map((spec) => fresh(spec, true));
    this.containers = (host.pod.spec?.containers ?? []).map((spec) => fresh(spec, false));
    const done = completedInits(host.pod);
    for (const c of this.initContainers) {
      const d = done.get(c.spec.name);
      if (!d) continue;
      c.terminated = d.terminated;
      c.restartCount = d.restartCount;
      c.containerID = d.containerID;
      c.ready = true;
    }
  }

  /** Init containers first, in order, then the app containers. */
  get all(): ContainerRuntime[] {
    return [...this.initContainers, ...this.containers];
  }

  /** Every init container exited 0 (true without any). */
  get initialized(): boolean {
    return this.initContainers.every((c) => c.terminated?.exitCode === 0);
  }

  /** What may start now: the next init container, or (once all completed) the app containers not running. */
  runnable(): ContainerRuntime[] {
    const step = initStep(
      this.initContainers.map((c) => ({
        name: c.spec.name,
        running: c.proc !== undefined,
        restarting: c.restartTimer !== undefined,
        ...(c.terminated ? { exitCode: c.terminated.exitCode } : {}),
      })),
    );
    if ('next' in step) return [this.initContainers[step.next]!];
    if ('done' in step) return this.containers.filter((c) => !c.proc && !c.restartTimer && !c.terminated);
    return [];
  }

  start(c: ContainerRuntime): void {
    const h = this.#h;
    const ip = h.ip!;
    if (c.init && isSidecar(c.spec)) {
      c.waiting = { reason: 'CreateContainerError', message: 'restartable init containers (sidecars) are not supported by the node agent' };
      return;
    }
    const instance = c.everStarted ? c.restartCount + 1 : c.restartCount;
    const plan = planProcess(h, c, instance);
    if ('reason' in plan) {
      if (c.waiting?.message !== plan.message) h.log.warn({ container: c.spec.name, ...plan }, 'container cannot start');
      c.waiting = plan;
      return;
    }
    c.restartCount = instance;
    c.messageFile = plan.messageFile;
    const { env, cwd, mounts } = plan;
    const proc = spawnGroup([...(h.sandbox?.exec ?? []), ...plan.argv], { env, cwd, logFile: plan.log });
    c.everStarted = true;
    c.proc = proc;
    c.containerID = `node-agent://${randomBytes(32).toString('hex')}`;
    c.startedAtMs = Date.now();
    // An init container is started while it runs and never ready before it completed.
    c.started = c.init || c.spec.startupProbe === undefined;
    c.ready = !c.init && c.started && c.spec.readinessProbe === undefined;
    c.waiting = undefined;
    c.killing = false;
    const ports = Object.fromEntries((c.spec.ports ?? []).filter((p) => p.name).map((p) => [p.name!, p.containerPort]));
    c.target = { podIP: ip, env: Object.entries(env), cwd, ports, mounts };
    h.log.info({ container: c.spec.name, init: c.init || undefined, pid: proc.pid, podIP: ip, restartCount: c.restartCount }, 'container started');
    void proc.exited.then((info) => this.#onExit(c, proc, info));
    // The kubelet runs a readiness probe at once when a started container is not ready yet.
    if (c.started && !c.init) h.triggerReadiness(c);
  }

  /**
   * SIGTERM now, SIGKILL after the grace period (seconds of real time: the API set them). Asked
   * again with a shorter grace period (a second DELETE, a force deletion), the deadline moves
   * earlier, never later, as the kubelet's does.
   */
  kill(c: ContainerRuntime, graceSeconds: number): void {
    const proc = c.proc;
    if (!proc) return;
    const deadline = Date.now() + graceSeconds * 1000;
    if (c.killing && c.killDeadline !== undefined && c.killDeadline <= deadline) return;
    if (!c.killing) proc.signal('SIGTERM');
    c.killing = true;
    c.killDeadline = deadline;
    clearTimeout(c.killTimer);
    c.killTimer = setTimeout(() => {
      if (proc.alive()) {
        this.#h.log.warn({ container: c.spec.name }, 'grace period over; SIGKILL');
        // SIGKILL alone: it kills a stopped process too. A SIGCONT first would let the pending
        // SIGTERM run, and on a loaded machine Redis could finish a clean shutdown (exit 0)
        // before the SIGKILL arrived: the hung-pod test saw exactly that once in CI.
        proc.signal('SIGKILL');
      }
    }, graceSeconds * 1000);
  }

  stopAll(graceSeconds: number): void {
    for (const c of this.all) {
      clearTimeout(c.restartTimer);
      c.restartTimer = undefined;
      if (c.proc) this.kill(c, graceSeconds);
    }
  }

  killAllNow(): Promise<ExitInfo>[] {
    const exits: Promise<ExitInfo>[] = [];
    for (const c of this.all) {
      clearTimeout(c.restartTimer);
      clearTimeout(c.killTimer);
      if (c.proc) {
        c.proc.signal('SIGKILL');
        exits.push(c.proc.exited);
      }
    }
    return exits;
  }

  #onExit(c: ContainerRuntime, proc: ProcessGroup, info: ExitInfo): void {
    if (c.proc !== proc) return;
    const h = this.#h;
    clearTimeout(c.killTimer);
    const now = Date.now();
    const finished = terminatedState(info, c.startedAtMs, c.containerID, now);
    const exitCode = finished.exitCode;
    const message = instanceMessage(h, c, exitCode, finished.message);
    if (message !== undefined) finished.message = message;
    c.proc = undefined;
    c.ready = false;
    c.started = false;
    c.killing = false;
    c.killDeadline = undefined;
    h.log.info({ container: c.spec.name, exitCode, signal: info.signal, error: info.error }, 'container exited');
    if (h.terminating) {
      c.terminated = finished;
      h.requestStatus();
      h.onContainerExit();
      return;
    }
    const policy = h.pod.spec?.restartPolicy ?? 'Always';
    if (c.init && exitCode === 0) {
      c.terminated = finished;
      c.ready = true;
      h.requestStatus();
      h.kick(); // the next init container, or the app containers
      return;
    }
    // A failed init container is retried unless restartPolicy is Never (then the pod has failed).
    if (c.init && policy === 'Never') {
      c.terminated = finished;
      h.requestStatus();
      return;
    }
    if (policy === 'Never' || (policy === 'OnFailure' && exitCode === 0)) {
      c.terminated = finished;
      h.requestStatus();
      return;
    }
    c.lastTerminated = finished;
    this.#scheduleRestart(c, now);
  }

  /** The kubelet's back-off (10 s doubling to 5 min; the first restart is immediate; reset after 10 min without a restart). */
  #scheduleRestart(c: ContainerRuntime, finishedMs: number): void {
    const h = this.#h;
    const scale = h.node.timeScale;
    const b = c.backoff;
    const expired = !b || finishedMs - b.lastUpdate > 2 * BACKOFF_MAX_MS * scale;
    const delay = expired ? 0 : b.ms;
    c.waiting =
      delay > 0
        ? {
            reason: 'CrashLoopBackOff',
            message: `back-off ${Math.round(delay / scale / 1000)}s restarting failed container=${c.spec.name} pod=${h.name}_${h.namespace}(${h.uid})`,
          }
        : waitingFor(c.init ? 'PodInitializing' : 'ContainerCreating');
    h.requestStatus();
    c.restartTimer = setTimeout(() => {
      c.restartTimer = undefined;
      if (h.terminating) return;
      c.backoff = { ms: expired ? BACKOFF_INITIAL_MS * scale : Math.min(2 * b!.ms, BACKOFF_MAX_MS * scale), lastUpdate: Date.now() };
      h.kick();
    }, delay);
  }

  /**
   * A container's status now. Not yet running, a container waits with the pod's reason (a mount
   * problem) or its own, else the kubelet's default: PodInitializing in a pod with init containers
   * (app containers keep it until every init container completed), ContainerCreating otherwise.
   */
  snapshot(c: ContainerRuntime, podWaiting: { reason: string; message?: string } | undefined): ContainerSnapshot {
    const initializing = this.initContainers.length > 0;
    const waiting =
      !c.init && !this.initialized
        ? waitingFor('PodInitializing')
        : (podWaiting ?? c.waiting ?? waitingFor(initializing ? 'PodInitializing' : 'ContainerCreating'));
    const state: ContainerSnapshot['state'] = c.proc
      ? { running: { startedAt: rfc3339(c.startedAtMs ?? Date.now()) } }
      : c.terminated
        ? { terminated: c.terminated }
        : { waiting };
    return {
      name: c.spec.name,
      image: c.spec.image ?? '',
      ...(c.containerID ? { containerID: c.containerID } : {}),
      ready: c.ready,
      started: c.started,
      restartCount: c.restartCount,
      state,
      ...(c.lastTerminated ? { lastTerminated: c.lastTerminated } : {}),
    };
  }
}
