// A pod's containers as processes (the container runtime's part): environment and argv from the
// pod spec (container.ts, shared with the stand-in), volume mounts mapped to host directories,
// the redis-server shim, start, exit, restart under restartPolicy with the kubelet's back-off,
// and signals. Logs go to <pod dir>/logs/<container>/<restartCount>.log, like
// /var/log/pods/<ns>_<pod>_<uid>/<container>/<n>.log on a node.
// Invariants:
// - A container has at most one process; a new process gets a new containerID.
// - A restart is scheduled only when the pod is not terminating; a pod that is terminating
//   never starts a process.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { containerArgv, isRedisImage, mapPath, redisShim, resolveEnv, type Mount } from '../../cluster/workloads/container.ts';
import { rfc3339, terminatedState, type ContainerSnapshot, type TerminatedState } from '../../cluster/workloads/pod-status.ts';
import type { ProbeTarget } from '../../cluster/workloads/probes.ts';
import { spawnGroup, type ExitInfo, type ProcessGroup } from '../../cluster/workloads/processes.ts';
import type { NodeContext } from './node-context.ts';
import type { PodVolumes } from './pod-volumes.ts';
import type { Sandbox } from './sandbox.ts';

export const REDIS_PORT = 6379;
const BACKOFF_INITIAL_MS = 10_000;
const BACKOFF_MAX_MS = 300_000;
const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface ContainerRuntime {
  spec: V1Container;
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

export function logFile(podDir: string, container: string, restartCount: number): string {
  return path.join(podDir, 'logs', container, `${restartCount}.log`);
}

export class ContainerRunner {
  readonly containers: ContainerRuntime[];
  readonly #h: ContainerHost;

  constructor(host: ContainerHost) {
    this.#h = host;
    this.containers = (host.pod.spec?.containers ?? []).map((spec) => ({
      spec,
      started: false,
      ready: false,
      everStarted: false,
      restartCount: 0,
      killing: false,
    }));
  }

  #mounts(c: ContainerRuntime): Mount[] | string {
    const mounts: Mount[] = [];
    for (const m of c.spec.volumeMounts ?? []) {
      const host = this.#h.volumes.hostPaths?.get(m.name);
      if (host === undefined) return `volumeMount "${m.name}" names no volume of the pod`;
      const hostPath = m.subPath ? path.join(host, m.subPath) : host;
      if (m.subPath) mkdirSync(hostPath, { recursive: true });
      mounts.push({ containerPath: m.mountPath, hostPath });
    }
    return mounts;
  }

  start(c: ContainerRuntime): void {
    const h = this.#h;
    const ip = h.ip!;
    const { secrets, configMaps } = h.volumes.sources;
    const lookup = { secret: (n: string) => secrets.get(n), configMap: (n: string) => configMaps.get(n) };
    const env = resolveEnv(h.pod, c.spec, lookup, { podIP: ip, hostIP: h.node.hostIP }, h.node.machine);
    if (!env.ok) {
      if (c.waiting?.message !== env.message)
        h.log.warn({ container: c.spec.name, reason: 'CreateContainerConfigError', message: env.message }, 'container cannot start');
      c.waiting = { reason: 'CreateContainerConfigError', message: env.message };
      return;
    }
    const argv = containerArgv(c.spec, env.env);
    const mounts = this.#mounts(c);
    if (!Array.isArray(argv) || typeof mounts === 'string') {
      c.waiting = { reason: 'CreateContainerError', message: typeof mounts === 'string' ? mounts : (argv as { error: string }).error };
      return;
    }
    const cdir = path.join(h.dir, 'containers', c.spec.name);
    const bin = path.join(cdir, 'bin');
    const rootfs = path.join(cdir, 'rootfs');
    mkdirSync(bin, { recursive: true });
    mkdirSync(rootfs, { recursive: true });
    const shim = path.join(bin, 'redis-server');
    writeFileSync(shim, redisShim({ realBinary: h.node.redisServer, mounts, podIP: ip, rewrittenConf: path.join(cdir, 'redis.conf') }));
    chmodSync(shim, 0o755);
    const cwd = mapPath(mounts, c.spec.workingDir ?? (isRedisImage(c.spec.image) ? '/data' : '/')) ?? rootfs;
    mkdirSync(cwd, { recursive: true });
    const processEnv: Record<string, string> = { PATH: `${bin}:${BASE_PATH}`, HOSTNAME: h.pod.spec?.hostname ?? h.name, HOME: rootfs };
    for (const [k, v] of env.env) processEnv[k] = v;
    if (c.everStarted) c.restartCount += 1;
    const log = logFile(h.dir, c.spec.name, c.restartCount);
    mkdirSync(path.dirname(log), { recursive: true });
    const proc = spawnGroup([...(h.sandbox?.exec ?? []), ...argv], { env: processEnv, cwd, logFile: log });
    c.everStarted = true;
    c.proc = proc;
    c.containerID = `node-agent://${randomBytes(32).toString('hex')}`;
    c.startedAtMs = Date.now();
    c.started = c.spec.startupProbe === undefined;
    c.ready = c.started && c.spec.readinessProbe === undefined;
    c.waiting = undefined;
    c.killing = false;
    const ports = Object.fromEntries((c.spec.ports ?? []).filter((p) => p.name).map((p) => [p.name!, p.containerPort]));
    c.target = { podIP: ip, env: Object.entries(processEnv), cwd, ports, mounts };
    h.log.info({ container: c.spec.name, pid: proc.pid, podIP: ip, restartCount: c.restartCount }, 'container started');
    void proc.exited.then((info) => this.#onExit(c, proc, info));
    // The kubelet runs a readiness probe at once when a started container is not ready yet.
    if (c.started) h.triggerReadiness(c);
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
        proc.signal('SIGCONT');
        proc.signal('SIGKILL');
      }
    }, graceSeconds * 1000);
  }

  stopAll(graceSeconds: number): void {
    for (const c of this.containers) {
      clearTimeout(c.restartTimer);
      c.restartTimer = undefined;
      if (c.proc) this.kill(c, graceSeconds);
    }
  }

  killAllNow(): Promise<ExitInfo>[] {
    const exits: Promise<ExitInfo>[] = [];
    for (const c of this.containers) {
      clearTimeout(c.restartTimer);
      clearTimeout(c.killTimer);
      if (c.proc) {
        c.proc.signal('SIGCONT');
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
        : { reason: 'ContainerCreating' };
    h.requestStatus();
    c.restartTimer = setTimeout(() => {
      c.restartTimer = undefined;
      if (h.terminating) return;
      c.backoff = { ms: expired ? BACKOFF_INITIAL_MS * scale : Math.min(2 * b!.ms, BACKOFF_MAX_MS * scale), lastUpdate: Date.now() };
      h.kick();
    }, delay);
  }

  snapshot(c: ContainerRuntime, podWaiting: { reason: string; message?: string } | undefined): ContainerSnapshot {
    const state: ContainerSnapshot['state'] = c.proc
      ? { running: { startedAt: rfc3339(c.startedAtMs ?? Date.now()) } }
      : c.terminated
        ? { terminated: c.terminated }
        : { waiting: podWaiting ?? c.waiting ?? { reason: 'ContainerCreating' } };
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
