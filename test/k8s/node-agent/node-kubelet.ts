// The kubelet of one node: watches the pods bound to it (fieldSelector spec.nodeName=<node>, the
// only pod list the Node authorizer allows a node), runs one PodWorker per pod uid, writes their
// status (status-sync.ts) and answers the test hooks and the log server.
// Invariants:
// - Watch events only enqueue (queue.ts); all work happens in workers, their timers and exits.
// - A worker is keyed by pod uid: a pod deleted and recreated under its name is a new worker
//   (new IP, new containers) while the old one finishes terminating.
// - A periodic resync (every resyncMs) re-runs every worker: volume refresh, retries, and the
//   status manager's reconcile (the API's copy is compared and repaired when it drifted).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AddressPool, ProcessInfo } from '../../cluster/workloads/kubelet.ts';
import { WorkQueue } from '../../cluster/workloads/queue.ts';
import type { KubeClient } from './api-client.ts';
import { logFile, type ContainerRuntime } from './containers.ts';
import type { NodeContext } from './node-context.ts';
import type { MachineShape } from './pod-volumes.ts';
import { PodWorker } from './pod-worker.ts';
import type { PodNetworkLike } from './sandbox.ts';
import { objectKey, Reflector, type KubeObject } from './reflector.ts';
import { StatusSync } from './status-sync.ts';

const RETAIN_LOGS_MS = 60_000;

export interface NodeKubeletOptions {
  name: string;
  hostIP: string;
  client: KubeClient;
  addresses: AddressPool | undefined;
  network: PodNetworkLike | undefined;
  dataDir: string;
  logger: Logger;
  timeScale: number;
  redisServer: string;
  imageID: string;
  machine: MachineShape;
  volumeRefreshMs: number;
  resyncMs: number;
  /** Agent-wide: another live pod (on any of the agent's nodes) using this PersistentVolume. */
  holderOf: (pvName: string, except: PodWorker) => string | undefined;
}

/** Where a container's log is, for `kubectl logs` and the podLog hook. */
export interface LogTarget {
  files: string[];
  /** The container is running now (follow keeps reading). */
  running: () => boolean;
}

export class NodeKubelet implements NodeContext {
  readonly name: string;
  readonly hostIP: string;
  readonly client: KubeClient;
  readonly addresses: AddressPool | undefined;
  readonly network: PodNetworkLike | undefined;
  readonly dataDir: string;
  readonly logger: Logger;
  readonly timeScale: number;
  readonly redisServer: string;
  readonly machine: MachineShape;
  readonly volumeRefreshMs: number;
  readonly workers = new Map<string, PodWorker>();
  readonly #o: NodeKubeletOptions;
  readonly #pods: Reflector;
  readonly #queue: WorkQueue;
  readonly #status: StatusSync;
  #resync: NodeJS.Timeout | undefined;
  readonly #retired = new Map<string, { dir: string; at: number; first: string }>();

  constructor(o: NodeKubeletOptions) {
    this.#o = o;
    this.name = o.name;
    this.hostIP = o.hostIP;
    this.client = o.client;
    this.addresses = o.addresses;
    this.network = o.network;
    this.dataDir = o.dataDir;
    this.logger = o.logger.child({ node: o.name });
    this.timeScale = o.timeScale;
    this.redisServer = o.redisServer;
    this.machine = o.machine;
    this.volumeRefreshMs = o.volumeRefreshMs;
    this.#status = new StatusSync({ logger: this.logger, hostIP: o.hostIP, imageID: o.imageID });
    this.#queue = new WorkQueue(
      (uid) => this.workers.get(uid)?.kick(),
      (uid, err) => this.logger.warn({ uid, err }, 'pod sync failed'),
    );
    this.#pods = new Reflector({
      client: o.client,
      path: '/api/v1/pods',
      fieldSelector: `spec.nodeName=${o.name}`,
      logger: this.logger,
      onEvent: (type, pod) => this.#onPod(type, pod),
    });
  }

  #onPod(type: string, pod: KubeObject): void {
    const uid = pod.metadata.uid;
    if (!this.workers.has(uid)) {
      if (type === 'DELETED') return;
      this.workers.set(uid, new PodWorker(this, pod as unknown as V1Pod));
    }
    this.#queue.add(uid);
  }

  async start(): Promise<void> {
    this.#pods.start();
    await this.#pods.waitSynced();
    this.#resync = setInterval(() => {
      for (const w of this.workers.values()) {
        this.#queue.add(w.uid);
        w.requestStatus();
      }
    }, this.#o.resyncMs);
  }

  /** Stops watching and SIGKILLs every process of this node's pods (no API writes). */
  async stop(): Promise<void> {
    clearInterval(this.#resync);
    this.#queue.stop();
    this.#status.stop();
    await this.#pods.stop();
    await Promise.all([...this.workers.values()].map((w) => w.killNow()));
    this.workers.clear();
  }

  // ------------------------------------------------------------ NodeContext

  currentPod(uid: string): V1Pod | undefined {
    const w = this.workers.get(uid);
    if (!w) return undefined;
    const pod = this.#pods.get(objectKey({ metadata: { namespace: w.namespace, name: w.name } }));
    return pod && pod.metadata.uid === uid ? (pod as unknown as V1Pod) : undefined;
  }

  holderOf(pvName: string, except: PodWorker): string | undefined {
    return this.#o.holderOf(pvName, except);
  }

  requestStatus(worker: PodWorker): void {
    this.#status.request(worker);
  }

  forget(worker: PodWorker): void {
    if (this.workers.get(worker.uid) === worker) this.workers.delete(worker.uid);
    this.#retire(worker);
  }

  /**
   * A removed pod's logs stay readable (previousPodLog) for RETAIN_LOGS_MS, as a node's
   * container GC removes dead containers' logs on its own schedule rather than at once.
   */
  #retire(w: PodWorker): void {
    const now = Date.now();
    for (const [key, r] of this.#retired) {
      if (now - r.at < RETAIN_LOGS_MS) continue;
      rmSync(r.dir, { recursive: true, force: true });
      this.#retired.delete(key);
    }
    const dir = path.join(this.dataDir, 'retired-logs', w.uid);
    try {
      mkdirSync(path.dirname(dir), { recursive: true });
      renameSync(path.join(w.dir, 'logs'), dir);
    } catch {
      return; // the pod never got as far as writing logs
    }
    const old = this.#retired.get(`${w.namespace}/${w.name}`);
    if (old) rmSync(old.dir, { recursive: true, force: true });
    this.#retired.set(`${w.namespace}/${w.name}`, { dir, at: now, first: w.containers[0]?.spec.name ?? '' });
  }

  /** Every log line the last removed pod of that name printed (all restarts), while retained. */
  retiredLog(namespace: string, name: string, container?: string): { at: number; log: string } | undefined {
    const r = this.#retired.get(`${namespace}/${name}`);
    if (!r) return undefined;
    const dir = path.join(r.dir, container ?? r.first);
    if (!existsSync(dir)) return { at: r.at, log: '' };
    const files = readdirSync(dir)
      .filter((f) => /^\d+\.log$/.test(f))
      .sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
    return { at: r.at, log: files.map((f) => readFileSync(path.join(dir, f), 'utf8')).join('') };
  }

  // ------------------------------------------------------------ hooks

  /** The worker of the pod that has this name now (its uid is the API's), else the newest one by that name. */
  worker(namespace: string, name: string): PodWorker | undefined {
    const pod = this.#pods.get(objectKey({ metadata: { namespace, name } }));
    if (pod) {
      const w = this.workers.get(pod.metadata.uid);
      if (w) return w;
    }
    return [...this.workers.values()].reverse().find((w) => w.namespace === namespace && w.name === name);
  }

  processes(): ProcessInfo[] {
    const out: ProcessInfo[] = [];
    for (const w of this.workers.values()) {
      for (const c of w.allContainers) {
        if (c.proc && w.ip) out.push({ namespace: w.namespace, pod: w.name, uid: w.uid, container: c.spec.name, pid: c.proc.pid, ip: w.ip });
      }
    }
    return out;
  }

  signal(namespace: string, name: string, signal: NodeJS.Signals, container?: string): boolean {
    return containerOf(this.worker(namespace, name), container)?.proc?.signal(signal) ?? false;
  }

  /**
   * A container's log files, oldest first (one file per container instance): `current` is what
   * `kubectl logs` shows, `previous` the instance before it (`--previous`), `all` every restart.
   */
  logTarget(namespace: string, name: string, container: string | undefined, which: 'current' | 'previous' | 'all'): LogTarget | undefined {
    const w = this.worker(namespace, name);
    const c = containerOf(w, container);
    if (!w || !c || !c.everStarted) return undefined;
    const n = c.restartCount;
    if (which === 'previous' && n === 0) return undefined;
    const counts = which === 'all' ? Array.from({ length: n + 1 }, (_, i) => i) : [which === 'previous' ? n - 1 : n];
    return { files: counts.map((i) => logFile(w.dir, c.spec.name, i)), running: () => which !== 'previous' && c.proc !== undefined && !w.gone };
  }

  podDir(namespace: string, name: string): string | undefined {
    const w = this.worker(namespace, name);
    return w ? path.resolve(w.dir) : undefined;
  }
}

/** A container by name (init containers too), or the first app container, as `kubectl logs` defaults. */
function containerOf(w: PodWorker | undefined, container: string | undefined): ContainerRuntime | undefined {
  return container === undefined ? w?.containers[0] : w?.allContainers.find((x) => x.spec.name === container);
}
