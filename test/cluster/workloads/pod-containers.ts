// A pod worker's containers as processes: start (environment, argv and mounts from container.ts,
// the redis-server shim, the exporter image from exporter-image.ts), exit, restart under
// restartPolicy with the kubelet's back-off, probe results, and the graceful kill. The pod's own
// state stays on its PodWorker (pod-worker.ts).
// Invariants:
// - A container has at most one process; each start gets a new containerID (the pod IP stays).
// - A container of a terminating pod is never restarted: its exit is final, and the worker then
//   checks whether the whole pod has terminated.
// - A probe result counts only for the process it was taken against (same containerID, still
//   running), so a late answer about a dead process changes nothing.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Container } from '@kubernetes/client-node';
import { containerArgv, isExporterImage, isRedisImage, mapPath, redisShim, resolveEnv, type Mount } from './container.ts';
import { exporterProcess } from './exporter-image.ts';
import { terminatedState, type TerminatedState } from './pod-status.ts';
import type { ProbeOutcome, ProbeTarget, ProbeType } from './probes.ts';
import { spawnGroup, type ExitInfo, type ProcessGroup } from './processes.ts';
import type { PodWorker } from './pod-worker.ts';

export const REDIS_PORT = 6379;
export const DEFAULT_GRACE_SECONDS = 30;
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
  killing: boolean;
  target?: ProbeTarget;
}

export function killContainer(w: PodWorker, c: ContainerRuntime, graceSeconds: number): void {
  const proc = c.proc;
  if (!proc || c.killing) return;
  c.killing = true;
  proc.signal('SIGTERM');
  c.killTimer = setTimeout(
    () => {
      if (proc.alive()) {
        w.log.warn({ container: c.spec.name }, 'grace period over; SIGKILL');
        proc.signal('SIGKILL');
      }
    },
    graceSeconds * 1000 * w.kubelet.options.timeScale,
  );
}

function containerMounts(w: PodWorker, c: ContainerRuntime): Mount[] | string {
  const mounts: Mount[] = [];
  for (const m of c.spec.volumeMounts ?? []) {
    const host = w.volumes?.get(m.name);
    if (host === undefined) return `volumeMount "${m.name}" names no volume of the pod`;
    const hostPath = m.subPath ? path.join(host, m.subPath) : host;
    if (m.subPath) mkdirSync(hostPath, { recursive: true });
    mounts.push({ containerPath: m.mountPath, hostPath });
  }
  return mounts;
}

/** argv and env of the container's process; the exporter image's with its rewrite (every pod here shares the host's network namespace). */
function processOf(spec: V1Container, env: Array<[string, string]>, podIP: string): { argv: string[]; env: Array<[string, string]> } | { error: string } {
  const argv = containerArgv(spec, env);
  if (!Array.isArray(argv)) return argv;
  return isExporterImage(spec.image) ? exporterProcess(argv, env, { podIP, sharedNetns: true }) : { argv, env };
}

function refuse(w: PodWorker, c: ContainerRuntime, message: string): void {
  if (c.waiting?.message !== message) w.log.warn({ container: c.spec.name, reason: 'CreateContainerError', message }, 'container cannot start');
  c.waiting = { reason: 'CreateContainerError', message };
}

export function startContainer(w: PodWorker, c: ContainerRuntime): void {
  const { store, addresses, redisServer } = w.kubelet.options;
  const ip = w.ip!;
  const lookup = {
    secret: (name: string) => store.get('secrets', w.namespace, name),
    configMap: (name: string) => store.get('configmaps', w.namespace, name),
  };
  const env = resolveEnv(w.pod, c.spec, lookup, { podIP: ip, hostIP: addresses.hostIP }, { memoryBytes: os.totalmem(), cpus: os.cpus().length });
  if (!env.ok) {
    if (c.waiting?.message !== env.message)
      w.log.warn({ container: c.spec.name, reason: 'CreateContainerConfigError', message: env.message }, 'container cannot start');
    c.waiting = { reason: 'CreateContainerConfigError', message: env.message };
    return;
  }
  const mounts = containerMounts(w, c);
  if (typeof mounts === 'string') return refuse(w, c, mounts);
  const spawnable = processOf(c.spec, env.env, ip);
  if ('error' in spawnable) return refuse(w, c, spawnable.error);
  const { argv } = spawnable;
  const cdir = path.join(w.dir, 'containers', c.spec.name);
  const bin = path.join(cdir, 'bin');
  const rootfs = path.join(cdir, 'rootfs');
  mkdirSync(bin, { recursive: true });
  mkdirSync(rootfs, { recursive: true });
  const shim = path.join(bin, 'redis-server');
  writeFileSync(shim, redisShim({ realBinary: redisServer, mounts, podIP: ip, rewrittenConf: path.join(cdir, 'redis.conf') }));
  chmodSync(shim, 0o755);
  const workingDir = c.spec.workingDir ?? (isRedisImage(c.spec.image) ? '/data' : '/');
  const cwd = mapPath(mounts, workingDir) ?? rootfs;
  mkdirSync(cwd, { recursive: true });
  const processEnv: Record<string, string> = { PATH: `${bin}:${BASE_PATH}`, HOSTNAME: w.pod.spec?.hostname ?? w.name, HOME: rootfs };
  for (const [k, v] of spawnable.env) processEnv[k] = v;
  const proc = spawnGroup(argv, { env: processEnv, cwd, logFile: path.join(w.dir, 'logs', `${c.spec.name}.log`) });
  if (c.everStarted) c.restartCount += 1;
  c.everStarted = true;
  c.proc = proc;
  c.containerID = `standin://${randomBytes(16).toString('hex')}`;
  c.startedAtMs = Date.now();
  c.started = c.spec.startupProbe === undefined;
  c.ready = c.started && c.spec.readinessProbe === undefined;
  c.waiting = undefined;
  c.killing = false;
  const ports = Object.fromEntries((c.spec.ports ?? []).filter((p) => p.name).map((p) => [p.name!, p.containerPort]));
  c.target = { podIP: ip, env: Object.entries(processEnv), cwd, ports, mounts };
  w.log.info({ container: c.spec.name, pid: proc.pid, podIP: ip, restartCount: c.restartCount }, 'container started');
  void proc.exited.then((info) => onExit(w, c, proc, info));
  // The kubelet runs a readiness probe at once when a started container is not ready yet.
  if (c.started) triggerReadiness(w, c);
}

function triggerReadiness(w: PodWorker, c: ContainerRuntime): void {
  for (const p of w.probes) if (p.type === 'readiness' && c.spec.readinessProbe) p.trigger();
}

function onExit(w: PodWorker, c: ContainerRuntime, proc: ProcessGroup, info: ExitInfo): void {
  if (c.proc !== proc) return;
  clearTimeout(c.killTimer);
  const now = Date.now();
  const finished = terminatedState(info, c.startedAtMs, c.containerID, now);
  const exitCode = finished.exitCode;
  c.proc = undefined;
  c.ready = false;
  c.started = false;
  c.killing = false;
  w.log.info({ container: c.spec.name, exitCode, signal: info.signal, error: info.error }, 'container exited');
  if (w.terminating) {
    c.terminated = finished;
    if (!w.gone) w.writeStatus();
    w.checkTerminated();
    return;
  }
  const policy = w.pod.spec?.restartPolicy ?? 'Always';
  if (policy === 'Never' || (policy === 'OnFailure' && exitCode === 0)) {
    c.terminated = finished;
    w.writeStatus();
    return;
  }
  c.lastTerminated = finished;
  scheduleRestart(w, c, now);
}

/** The kubelet's container back-off (client-go flowcontrol.Backoff: 10 s doubling to 5 min; the first restart is immediate; reset after 10 min without a restart). */
function scheduleRestart(w: PodWorker, c: ContainerRuntime, finishedMs: number): void {
  const scale = w.kubelet.options.timeScale;
  const b = c.backoff;
  const expired = !b || finishedMs - b.lastUpdate > 2 * BACKOFF_MAX_MS * scale;
  const delay = expired ? 0 : b.ms;
  if (delay > 0) {
    c.waiting = {
      reason: 'CrashLoopBackOff',
      message: `back-off ${Math.round(delay / scale / 1000)}s restarting failed container=${c.spec.name} pod=${w.name}_${w.namespace}(${w.uid})`,
    };
  } else {
    c.waiting = { reason: 'ContainerCreating' };
  }
  w.writeStatus();
  c.restartTimer = setTimeout(() => {
    c.restartTimer = undefined;
    if (w.terminating) return;
    c.backoff = { ms: expired ? BACKOFF_INITIAL_MS * scale : Math.min(2 * b!.ms, BACKOFF_MAX_MS * scale), lastUpdate: Date.now() };
    startContainer(w, c);
    w.writeStatus();
  }, delay);
}

export function onProbe(w: PodWorker, c: ContainerRuntime, type: ProbeType, outcome: ProbeOutcome, containerID: string, output: string): void {
  if (c.containerID !== containerID || !c.proc || w.gone) return;
  const probe = type === 'startup' ? c.spec.startupProbe : type === 'liveness' ? c.spec.livenessProbe : c.spec.readinessProbe;
  if (type === 'readiness') {
    const ready = outcome === 'success';
    if (ready !== c.ready) {
      c.ready = ready;
      w.log.info({ container: c.spec.name, ready, output: ready ? undefined : output.trim().slice(0, 200) }, 'readiness changed');
      w.writeStatus();
    }
    return;
  }
  if (outcome === 'success') {
    if (type === 'startup' && !c.started) {
      c.started = true;
      if (!c.spec.readinessProbe) c.ready = true;
      w.log.info({ container: c.spec.name }, 'startup probe succeeded');
      w.writeStatus();
      triggerReadiness(w, c);
    }
    return;
  }
  if (w.terminating) return;
  w.log.warn({ container: c.spec.name, probe: type, output: output.trim().slice(0, 200) }, `container failed ${type} probe, will be restarted`);
  const grace = probe?.terminationGracePeriodSeconds ?? w.pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
  killContainer(w, c, grace);
}
