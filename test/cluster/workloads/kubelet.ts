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
// Modules: this one owns the pod watch, the work queue and the map of pod workers (one per pod
// uid); pod-worker.ts runs one pod, pod-volumes.ts and pod-containers.ts its volumes and
// containers.
import path from 'node:path';
import type { Logger } from 'pino';
import type { ObjectStore, StoredObject, WatchHandle } from '../../support/kube-api/index.ts';
import { KUBELET_FINALIZER, PodWorker } from './pod-worker.ts';
import { WorkQueue } from './queue.ts';
import type { VolumeController } from './volumes.ts';

export { KUBELET_FINALIZER } from './pod-worker.ts';
export { REDIS_PORT } from './pod-containers.ts';

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

export interface ProcessInfo {
  namespace: string;
  pod: string;
  uid: string;
  container: string;
  pid: number;
  ip: string;
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
