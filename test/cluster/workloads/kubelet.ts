// The stand-in kubelet: runs every pod it is given as real processes on this machine. Owns the
// pod lifecycle (admission, volumes, a pod IP, container start/restart with back-off, probes,
// graceful termination) and the pod's status. See README.md for what is rewritten and why.
// Invariants:
// - A pod gets a new IP (127.0.N.x, never reused) each time it is created; a container restart
//   keeps it. The IP is assigned after the volumes are set up, as the sandbox is.
// - Every status write comes from one pure function of the worker's state (pod-status.ts), is
//   made only for the pod uid the worker runs, and only when something changed.
// - A pod that is deleted stays in the API (the kubelet's finalizer) until its processes have
//   exited: SIGTERM, then SIGKILL after terminationGracePeriodSeconds; then the finalizer goes.
// - Store watch listeners only enqueue; all work happens in the queue, timers and exit callbacks.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { V1Container, V1KeyToPath, V1Pod, V1Probe } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ObjectStore, StoredObject, WatchHandle } from '../../support/kube-api/index.ts';
import { containerArgv, isRedisImage, mapPath, redisShim, resolveEnv, type Mount } from './container.ts';
import { buildPodStatus, rfc3339, terminatedState, type ConditionMemory, type ContainerSnapshot, type TerminatedState } from './pod-status.ts';
import { ProbeWorker, type ProbeOutcome, type ProbeTarget, type ProbeType } from './probes.ts';
import { spawnGroup, type ExitInfo, type ProcessGroup } from './processes.ts';
import { WorkQueue } from './queue.ts';
import type { VolumeController } from './volumes.ts';

/** Added to every pod the kubelet runs, on create: it stands in for the API server's graceful deletion. */
export const KUBELET_FINALIZER = 'stand-in.redis-operator.test/kubelet-termination';
export const REDIS_PORT = 6379;
const DEFAULT_GRACE_SECONDS = 30;
const BACKOFF_INITIAL_MS = 10_000;
const BACKOFF_MAX_MS = 300_000;
const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

type Json = Record<string, unknown>;

/** Pod IPs 127.0.N.2 .. 127.0.N.254, each handed out once; 127.0.N.1 is the "node". */
export class AddressPool {
  readonly hostIP: string;
  readonly #subnet: number;
  #next = 2;

  constructor(subnet: number) {
    if (!Number.isInteger(subnet) || subnet < 1 || subnet > 255) throw new Error(`subnet must be a third octet 1..255, got ${subnet}`);
    this.#subnet = subnet;
    this.hostIP = `127.0.${subnet}.1`;
  }

  allocate(): string | undefined {
    if (this.#next > 254) return undefined;
    return `127.0.${this.#subnet}.${this.#next++}`;
  }
}

export interface KubeletOptions {
  store: ObjectStore;
  dataRoot: string;
  addresses: AddressPool;
  logger: Logger;
  /** Multiplies probe periods/initial delays, restart back-off and grace periods. 1 = real time. */
  timeScale: number;
  runPod: (pod: StoredObject) => boolean;
  volumes: VolumeController;
  redisServer: string;
}

interface ContainerRuntime {
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

export interface ProcessInfo {
  namespace: string;
  pod: string;
  uid: string;
  container: string;
  pid: number;
  ip: string;
}

function writeFileAtomic(file: string, content: string | Buffer): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, content);
  renameSync(tmp, file);
}

class PodWorker {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly dir: string;
  readonly #k: Kubelet;
  readonly #log: Logger;
  #pod: V1Pod;
  ip: string | undefined;
  #startTimeMs = Date.now();
  #admitted = false;
  #volumes: Map<string, string> | undefined;
  claimUids: string[] = [];
  #podWaiting: { reason: string; message?: string } | undefined;
  readonly containers: ContainerRuntime[];
  readonly #probes: ProbeWorker[] = [];
  readonly #conditions = new Map<string, ConditionMemory>();
  terminating = false;
  #gone = false;
  #finished = false;

  constructor(kubelet: Kubelet, pod: StoredObject) {
    this.#k = kubelet;
    this.uid = pod.metadata.uid;
    this.namespace = pod.metadata.namespace ?? '';
    this.name = pod.metadata.name;
    this.dir = path.join(kubelet.options.dataRoot, 'pods', this.uid);
    this.#log = kubelet.options.logger.child({ namespace: this.namespace, pod: this.name });
    this.#pod = pod as unknown as V1Pod;
    this.containers = (this.#pod.spec?.containers ?? []).map((spec) => ({
      spec,
      started: false,
      ready: false,
      everStarted: false,
      restartCount: 0,
      killing: false,
    }));
  }

  get live(): boolean {
    return !this.#finished;
  }

  // ------------------------------------------------------------ lifecycle

  sync(pod: StoredObject): void {
    if (this.terminating || this.#gone) return;
    this.#pod = pod as unknown as V1Pod;
    if (!this.#admitted) this.#admit();
    if (this.#volumes === undefined) {
      const problem = this.#prepareVolumes();
      if (problem) {
        this.#podWaiting = { reason: 'ContainerCreating', message: problem };
        this.writeStatus();
        return;
      }
    } else {
      this.#refreshConfigVolumes();
    }
    if (this.ip === undefined) {
      this.ip = this.#k.options.addresses.allocate();
      if (this.ip === undefined) {
        this.#podWaiting = { reason: 'ContainerCreating', message: `failed to create pod sandbox: no address left in 127.0.x.0/24 (pod IPs are never reused)` };
        this.writeStatus();
        return;
      }
      this.#log.info({ podIP: this.ip }, 'pod sandbox ready');
    }
    this.#podWaiting = undefined;
    for (const c of this.containers) {
      if (!c.proc && !c.restartTimer && !c.terminated) this.#startContainer(c);
    }
    this.writeStatus();
  }

  #admit(): void {
    this.#admitted = true;
    this.#startTimeMs = Date.now();
    mkdirSync(path.join(this.dir, 'logs'), { recursive: true });
    if ((this.#pod.spec?.initContainers ?? []).length > 0) this.#log.warn('initContainers are not run by the stand-in kubelet');
    for (const c of this.containers) {
      const probes: Array<[ProbeType, V1Probe | undefined]> = [
        ['startup', c.spec.startupProbe],
        ['readiness', c.spec.readinessProbe],
        ['liveness', c.spec.livenessProbe],
      ];
      for (const [type, probe] of probes) {
        if (!probe) continue;
        this.#probes.push(
          new ProbeWorker({
            type,
            probe,
            timeScale: this.#k.options.timeScale,
            container: () => ({
              containerID: c.containerID,
              running: c.proc !== undefined,
              startedAtMs: c.startedAtMs,
              started: c.started,
              terminating: this.terminating,
              target: c.target,
            }),
            onResult: (t, outcome, id, output) => this.#onProbe(c, t, outcome, id, output),
          }),
        );
      }
    }
    this.writeStatus();
  }

  /** Graceful deletion: SIGTERM, SIGKILL after the grace period, then the finalizer goes. */
  terminate(): void {
    if (this.terminating || this.#gone) return;
    this.terminating = true;
    const grace = this.#pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
    this.#log.info({ gracePeriodSeconds: grace }, 'pod deleted; stopping containers');
    this.#stopContainers(grace);
    this.writeStatus();
    this.#checkTerminated();
  }

  /** The pod left the API without the kubelet's say (no finalizer): stop and clean up, no writes. */
  vanish(): void {
    if (this.#gone) return;
    const wasTerminating = this.terminating;
    this.#gone = true;
    this.terminating = true;
    if (!wasTerminating) {
      this.#log.info('pod removed from the API; stopping containers');
      this.#stopContainers(this.#pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS);
    }
    this.#checkTerminated();
  }

  #stopContainers(graceSeconds: number): void {
    for (const c of this.containers) {
      clearTimeout(c.restartTimer);
      c.restartTimer = undefined;
      if (c.proc) this.#kill(c, graceSeconds);
    }
  }

  #kill(c: ContainerRuntime, graceSeconds: number): void {
    const proc = c.proc;
    if (!proc || c.killing) return;
    c.killing = true;
    proc.signal('SIGTERM');
    c.killTimer = setTimeout(
      () => {
        if (proc.alive()) {
          this.#log.warn({ container: c.spec.name }, 'grace period over; SIGKILL');
          proc.signal('SIGKILL');
        }
      },
      graceSeconds * 1000 * this.#k.options.timeScale,
    );
  }

  #checkTerminated(): void {
    if (this.#finished || this.containers.some((c) => c.proc)) return;
    this.#finished = true;
    for (const p of this.#probes) p.stop();
    if (!this.#gone) {
      this.writeStatus(true);
      try {
        const current = this.#k.options.store.get('pods', this.namespace, this.name);
        if (current && current.metadata.uid === this.uid && (current.metadata.finalizers ?? []).includes(KUBELET_FINALIZER)) {
          this.#k.options.store.mutate('pods', this.namespace, this.name, (p) => {
            p.metadata.finalizers = (p.metadata.finalizers ?? []).filter((f) => f !== KUBELET_FINALIZER);
          });
        }
      } catch (err) {
        this.#log.warn({ err }, 'could not release the pod finalizer');
      }
    }
    this.#log.info('pod terminated');
    this.#cleanup();
  }

  #cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
    this.#k.forget(this);
  }

  /** Test teardown: SIGKILL everything now, no API writes. */
  async killNow(): Promise<void> {
    this.#gone = true;
    this.terminating = true;
    for (const p of this.#probes) p.stop();
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
    await Promise.all(exits);
  }

  // ------------------------------------------------------------ volumes

  #prepareVolumes(): string | undefined {
    const { store } = this.#k.options;
    const volumes = new Map<string, string>();
    const claims: string[] = [];
    for (const v of this.#pod.spec?.volumes ?? []) {
      const host = path.join(this.dir, 'volumes', v.name);
      if (v.emptyDir) {
        mkdirSync(host, { recursive: true });
      } else if (v.configMap || v.secret) {
        const problem = this.#writeKeyVolume(v.name, host);
        if (problem) return problem;
      } else if (v.persistentVolumeClaim) {
        const claimName = v.persistentVolumeClaim.claimName;
        const claim = store.get('persistentvolumeclaims', this.namespace, claimName);
        if (!claim) return `persistentvolumeclaim "${claimName}" not found`;
        if (claim.metadata.deletionTimestamp) return `persistentvolumeclaim "${claimName}" is being deleted`;
        const dir = this.#k.options.volumes.pathOf(claim);
        if (!dir) return `pod has unbound immediate PersistentVolumeClaims (${claimName})`;
        const holder = this.#k.claimHolder(claim.metadata.uid, this);
        if (holder) return `Multi-Attach error for volume "pvc-${claim.metadata.uid}": Volume is already used by pod ${holder}`;
        mkdirSync(dir, { recursive: true });
        volumes.set(v.name, dir);
        claims.push(claim.metadata.uid);
        continue;
      } else {
        return `volume "${v.name}": the stand-in kubelet supports emptyDir, configMap, secret and persistentVolumeClaim volumes`;
      }
      volumes.set(v.name, host);
    }
    this.#volumes = volumes;
    this.claimUids = claims;
    return undefined;
  }

  /** Writes a configMap/secret volume's files; returns the FailedMount message when its source is missing. */
  #writeKeyVolume(name: string, host: string): string | undefined {
    const v = (this.#pod.spec?.volumes ?? []).find((x) => x.name === name);
    const isSecret = v?.secret !== undefined;
    const sourceName = (isSecret ? v?.secret?.secretName : v?.configMap?.name) ?? '';
    const optional = (isSecret ? v?.secret?.optional : v?.configMap?.optional) === true;
    const items: V1KeyToPath[] | undefined = isSecret ? v?.secret?.items : v?.configMap?.items;
    const source = this.#k.options.store.get(isSecret ? 'secrets' : 'configmaps', this.namespace, sourceName);
    if (!source) {
      if (optional) {
        mkdirSync(host, { recursive: true });
        return undefined;
      }
      return `MountVolume.SetUp failed for volume "${name}" : ${isSecret ? 'secret' : 'configmap'} "${sourceName}" not found`;
    }
    const files = new Map<string, Buffer>();
    for (const [key, value] of Object.entries((source['data'] ?? {}) as Record<string, string>)) {
      files.set(key, isSecret ? Buffer.from(value, 'base64') : Buffer.from(value, 'utf8'));
    }
    for (const [key, value] of Object.entries((source['binaryData'] ?? {}) as Record<string, string>)) files.set(key, Buffer.from(value, 'base64'));
    const wanted = new Map<string, Buffer>();
    if (items && items.length > 0) {
      for (const item of items) {
        const content = files.get(item.key);
        if (content === undefined) return `MountVolume.SetUp failed for volume "${name}" : configmap references non-existent config key: ${item.key}`;
        wanted.set(item.path, content);
      }
    } else {
      for (const [key, content] of files) wanted.set(key, content);
    }
    mkdirSync(host, { recursive: true });
    for (const [rel, content] of wanted) {
      const file = path.join(host, rel);
      if (!existsSync(file) || !readFileSync(file).equals(content)) writeFileAtomic(file, content);
    }
    for (const entry of readdirSync(host, { recursive: true, withFileTypes: true })) {
      const rel = path.relative(host, path.join(entry.parentPath, entry.name));
      if (entry.isFile() && !wanted.has(rel)) rmSync(path.join(host, rel), { force: true });
    }
    return undefined;
  }

  /** ConfigMap/Secret edits reach mounted volumes (at once here; within about a minute on a real node). */
  #refreshConfigVolumes(): void {
    for (const v of this.#pod.spec?.volumes ?? []) {
      const host = this.#volumes?.get(v.name);
      if (host && (v.configMap || v.secret)) this.#writeKeyVolume(v.name, host);
    }
  }

  // ------------------------------------------------------------ containers

  #mounts(c: ContainerRuntime): Mount[] | string {
    const mounts: Mount[] = [];
    for (const m of c.spec.volumeMounts ?? []) {
      const host = this.#volumes?.get(m.name);
      if (host === undefined) return `volumeMount "${m.name}" names no volume of the pod`;
      const hostPath = m.subPath ? path.join(host, m.subPath) : host;
      if (m.subPath) mkdirSync(hostPath, { recursive: true });
      mounts.push({ containerPath: m.mountPath, hostPath });
    }
    return mounts;
  }

  #startContainer(c: ContainerRuntime): void {
    const { store, addresses, redisServer } = this.#k.options;
    const ip = this.ip!;
    const lookup = {
      secret: (name: string) => store.get('secrets', this.namespace, name),
      configMap: (name: string) => store.get('configmaps', this.namespace, name),
    };
    const env = resolveEnv(this.#pod, c.spec, lookup, { podIP: ip, hostIP: addresses.hostIP }, { memoryBytes: os.totalmem(), cpus: os.cpus().length });
    if (!env.ok) {
      if (c.waiting?.message !== env.message)
        this.#log.warn({ container: c.spec.name, reason: 'CreateContainerConfigError', message: env.message }, 'container cannot start');
      c.waiting = { reason: 'CreateContainerConfigError', message: env.message };
      return;
    }
    const argv = containerArgv(c.spec, env.env);
    const mounts = this.#mounts(c);
    if (!Array.isArray(argv) || typeof mounts === 'string') {
      const message = typeof mounts === 'string' ? mounts : (argv as { error: string }).error;
      c.waiting = { reason: 'CreateContainerError', message };
      return;
    }
    const cdir = path.join(this.dir, 'containers', c.spec.name);
    const bin = path.join(cdir, 'bin');
    const rootfs = path.join(cdir, 'rootfs');
    mkdirSync(bin, { recursive: true });
    mkdirSync(rootfs, { recursive: true });
    const shim = path.join(bin, 'redis-server');
    writeFileSync(shim, redisShim({ realBinary: redisServer, mounts, podIP: ip, port: REDIS_PORT, rewrittenConf: path.join(cdir, 'redis.conf') }));
    chmodSync(shim, 0o755);
    const workingDir = c.spec.workingDir ?? (isRedisImage(c.spec.image) ? '/data' : '/');
    const cwd = mapPath(mounts, workingDir) ?? rootfs;
    mkdirSync(cwd, { recursive: true });
    const processEnv: Record<string, string> = { PATH: `${bin}:${BASE_PATH}`, HOSTNAME: this.#pod.spec?.hostname ?? this.name, HOME: rootfs };
    for (const [k, v] of env.env) processEnv[k] = v;
    const proc = spawnGroup(argv, { env: processEnv, cwd, logFile: path.join(this.dir, 'logs', `${c.spec.name}.log`) });
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
    c.target = { podIP: ip, env: Object.entries(processEnv), cwd, ports };
    this.#log.info({ container: c.spec.name, pid: proc.pid, podIP: ip, restartCount: c.restartCount }, 'container started');
    void proc.exited.then((info) => this.#onExit(c, proc, info));
    // The kubelet runs a readiness probe at once when a started container is not ready yet.
    if (c.started) this.#triggerReadiness(c);
  }

  #triggerReadiness(c: ContainerRuntime): void {
    for (const p of this.#probes) if (p.type === 'readiness' && c.spec.readinessProbe) p.trigger();
  }

  #onExit(c: ContainerRuntime, proc: ProcessGroup, info: ExitInfo): void {
    if (c.proc !== proc) return;
    clearTimeout(c.killTimer);
    const now = Date.now();
    const finished = terminatedState(info, c.startedAtMs, c.containerID, now);
    const exitCode = finished.exitCode;
    c.proc = undefined;
    c.ready = false;
    c.started = false;
    c.killing = false;
    this.#log.info({ container: c.spec.name, exitCode, signal: info.signal, error: info.error }, 'container exited');
    if (this.terminating) {
      c.terminated = finished;
      if (!this.#gone) this.writeStatus();
      this.#checkTerminated();
      return;
    }
    const policy = this.#pod.spec?.restartPolicy ?? 'Always';
    if (policy === 'Never' || (policy === 'OnFailure' && exitCode === 0)) {
      c.terminated = finished;
      this.writeStatus();
      return;
    }
    c.lastTerminated = finished;
    this.#scheduleRestart(c, now);
  }

  /** The kubelet's container back-off (client-go flowcontrol.Backoff: 10 s doubling to 5 min; the first restart is immediate; reset after 10 min without a restart). */
  #scheduleRestart(c: ContainerRuntime, finishedMs: number): void {
    const scale = this.#k.options.timeScale;
    const b = c.backoff;
    const expired = !b || finishedMs - b.lastUpdate > 2 * BACKOFF_MAX_MS * scale;
    const delay = expired ? 0 : b.ms;
    if (delay > 0) {
      c.waiting = {
        reason: 'CrashLoopBackOff',
        message: `back-off ${Math.round(delay / scale / 1000)}s restarting failed container=${c.spec.name} pod=${this.name}_${this.namespace}(${this.uid})`,
      };
    } else {
      c.waiting = { reason: 'ContainerCreating' };
    }
    this.writeStatus();
    c.restartTimer = setTimeout(() => {
      c.restartTimer = undefined;
      if (this.terminating) return;
      c.backoff = { ms: expired ? BACKOFF_INITIAL_MS * scale : Math.min(2 * b!.ms, BACKOFF_MAX_MS * scale), lastUpdate: Date.now() };
      this.#startContainer(c);
      this.writeStatus();
    }, delay);
  }

  #onProbe(c: ContainerRuntime, type: ProbeType, outcome: ProbeOutcome, containerID: string, output: string): void {
    if (c.containerID !== containerID || !c.proc || this.#gone) return;
    const probe = type === 'startup' ? c.spec.startupProbe : type === 'liveness' ? c.spec.livenessProbe : c.spec.readinessProbe;
    if (type === 'readiness') {
      const ready = outcome === 'success';
      if (ready !== c.ready) {
        c.ready = ready;
        this.#log.info({ container: c.spec.name, ready, output: ready ? undefined : output.trim().slice(0, 200) }, 'readiness changed');
        this.writeStatus();
      }
      return;
    }
    if (outcome === 'success') {
      if (type === 'startup' && !c.started) {
        c.started = true;
        if (!c.spec.readinessProbe) c.ready = true;
        this.#log.info({ container: c.spec.name }, 'startup probe succeeded');
        this.writeStatus();
        this.#triggerReadiness(c);
      }
      return;
    }
    if (this.terminating) return;
    this.#log.warn({ container: c.spec.name, probe: type, output: output.trim().slice(0, 200) }, `container failed ${type} probe, will be restarted`);
    const grace = probe?.terminationGracePeriodSeconds ?? this.#pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
    this.#kill(c, grace);
  }

  // ------------------------------------------------------------ status

  snapshotContainer(c: ContainerRuntime): ContainerSnapshot {
    const state: ContainerSnapshot['state'] = c.proc
      ? { running: { startedAt: rfc3339(c.startedAtMs ?? Date.now()) } }
      : c.terminated
        ? { terminated: c.terminated }
        : { waiting: this.#podWaiting ?? c.waiting ?? { reason: 'ContainerCreating' } };
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

  writeStatus(terminal = false): void {
    if (this.#gone) return;
    const { store } = this.#k.options;
    const status = buildPodStatus(
      {
        terminal,
        restartPolicy: this.#pod.spec?.restartPolicy ?? 'Always',
        hostIP: this.#k.options.addresses.hostIP,
        ...(this.ip !== undefined ? { podIP: this.ip } : {}),
        startTime: rfc3339(this.#startTimeMs),
        containers: this.containers.map((c) => this.snapshotContainer(c)),
      },
      this.#conditions,
      Date.now(),
    );
    const current = store.get('pods', this.namespace, this.name);
    if (!current || current.metadata.uid !== this.uid || isDeepStrictEqual(current['status'], status)) return;
    try {
      store.update('pods', { ...current, status }, { subresource: 'status' });
    } catch (err) {
      this.#log.warn({ err }, 'pod status write failed');
    }
  }
}

export class Kubelet {
  readonly options: KubeletOptions;
  readonly #workers = new Map<string, PodWorker>();
  readonly #queue: WorkQueue;
  readonly #watches: WatchHandle[] = [];
  readonly #log: Logger;
  #resync: NodeJS.Timeout | undefined;
  #unmutate: (() => void) | undefined;

  constructor(options: KubeletOptions) {
    this.options = options;
    this.#log = options.logger.child({ component: 'kubelet' });
    this.#queue = new WorkQueue(
      (uid) => this.#syncPod(uid),
      (uid, error) => this.#log.warn({ uid, err: error }, 'pod sync failed; retrying'),
    );
  }

  start(): void {
    const { store } = this.options;
    this.#unmutate = store.addMutator('pods', (ctx) => {
      if (ctx.operation !== 'CREATE' || !this.options.runPod(ctx.object)) return;
      const f = ctx.object.metadata.finalizers ?? [];
      if (!f.includes(KUBELET_FINALIZER)) ctx.object.metadata.finalizers = [...f, KUBELET_FINALIZER];
    });
    const byNamespace = (ns: string | undefined) => {
      for (const w of this.#workers.values()) if (w.namespace === ns) this.#queue.add(w.uid);
    };
    this.#watches.push(
      store.watch('pods', {}, (ev) => {
        const pod = ev.object as StoredObject;
        const uid = pod.metadata.uid;
        if (!this.#workers.has(uid)) {
          if (ev.type === 'DELETED' || !this.options.runPod(pod)) return;
          this.#workers.set(uid, new PodWorker(this, pod));
        }
        this.#queue.add(uid);
      }),
      store.watch('secrets', {}, (ev) => byNamespace((ev.object as StoredObject).metadata.namespace)),
      store.watch('configmaps', {}, (ev) => byNamespace((ev.object as StoredObject).metadata.namespace)),
      store.watch('persistentvolumeclaims', {}, (ev) => byNamespace((ev.object as StoredObject).metadata.namespace)),
    );
    // The kubelet's periodic pod sync: retries what no event will announce.
    this.#resync = setInterval(() => {
      for (const uid of this.#workers.keys()) this.#queue.add(uid);
    }, 1000);
  }

  async stop(): Promise<void> {
    for (const w of this.#watches) w.stop();
    this.#watches.length = 0;
    clearInterval(this.#resync);
    this.#queue.stop();
    this.#unmutate?.();
    await Promise.all([...this.#workers.values()].map((w) => w.killNow()));
    this.#workers.clear();
  }

  #syncPod(uid: string): void {
    const w = this.#workers.get(uid);
    if (!w) return;
    const pod = this.options.store.get('pods', w.namespace, w.name);
    if (!pod || pod.metadata.uid !== uid) w.vanish();
    else if (pod.metadata.deletionTimestamp) w.terminate();
    else w.sync(pod);
  }

  forget(w: PodWorker): void {
    if (this.#workers.get(w.uid) === w) this.#workers.delete(w.uid);
    this.options.volumes.recheckNamespace(w.namespace);
  }

  /** `namespace/name` of another live pod holding this claim's directory, if any. */
  claimHolder(claimUid: string, except: PodWorker): string | undefined {
    for (const w of this.#workers.values()) {
      if (w !== except && w.live && w.claimUids.includes(claimUid)) return `${w.namespace}/${w.name}`;
    }
    return undefined;
  }

  claimBusy(claimUid: string): boolean {
    for (const w of this.#workers.values()) if (w.live && w.claimUids.includes(claimUid)) return true;
    return false;
  }

  /** The worker running the current pod of that name (not one that is only finishing). */
  worker(namespace: string, name: string): PodWorker | undefined {
    const pod = this.options.store.get('pods', namespace, name);
    return pod ? this.#workers.get(pod.metadata.uid) : undefined;
  }

  processes(): ProcessInfo[] {
    const out: ProcessInfo[] = [];
    for (const w of this.#workers.values()) {
      for (const c of w.containers) {
        if (c.proc && w.ip) out.push({ namespace: w.namespace, pod: w.name, uid: w.uid, container: c.spec.name, pid: c.proc.pid, ip: w.ip });
      }
    }
    return out;
  }

  signal(namespace: string, name: string, signal: NodeJS.Signals, container?: string): boolean {
    const w = this.worker(namespace, name);
    const c = w?.containers.find((x) => container === undefined || x.spec.name === container);
    return c?.proc?.signal(signal) ?? false;
  }

  logPath(namespace: string, name: string, container?: string): string | undefined {
    const w = this.worker(namespace, name);
    const c = w?.containers.find((x) => container === undefined || x.spec.name === container);
    return w && c ? path.join(w.dir, 'logs', `${c.spec.name}.log`) : undefined;
  }
}

export type { Json };
