// The workload half of the local cluster stand-in (issue 4): a StatefulSet controller, a PVC
// provisioner with pvc-protection, and a kubelet that runs each pod as a real redis-server on its
// own loopback address, on top of the in-process API store. Services are answered on demand
// (serviceEndpoints). See README.md for what is modelled, what is rewritten, and what is not.
// Invariant: stop() leaves no process behind (and a process 'exit' hook plus pdeathsig cover
// the cases where stop() is never reached).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import type { ObjectStore, StoredObject } from '../../support/kube-api/index.ts';
import { AddressPool, Kubelet, type ProcessInfo } from './kubelet.ts';
import { serviceEndpoints, type Endpoint } from './services.ts';
import { StatefulSetController } from './statefulset-controller.ts';
import { VolumeController } from './volumes.ts';

export { KUBELET_FINALIZER, type ProcessInfo } from './kubelet.ts';
export { PVC_PROTECTION } from './volumes.ts';
export { POD_INDEX_LABEL, POD_NAME_LABEL, REVISION_LABEL } from './statefulset-plan.ts';
export type { Endpoint } from './services.ts';

export interface WorkloadsOptions {
  store: ObjectStore;
  /** Third octet N: pods get 127.0.N.2, .3, ... (never reused while this runs); 127.0.N.1 is the node's hostIP. */
  subnet: number;
  /** A directory this owns for its lifetime: PVC directories, pod volumes, container logs. */
  dataRoot: string;
  logger?: Logger;
  /**
   * Multiplies every period the kubelet waits on: probe periodSeconds and initialDelaySeconds,
   * the container restart back-off and termination grace periods (never probe timeouts).
   * Default 1 (real time, the pod spec's own figures). Tests may speed up with e.g. 0.1.
   */
  timeScale?: number;
  /** Which pods the kubelet runs. Default: pods controlled by a StatefulSet. */
  runPod?: (pod: StoredObject) => boolean;
}

export interface Workloads {
  /** SIGKILLs every process and stops every controller. Pods stay in the store as they were. */
  stop(): Promise<void>;
  /** The current pod IP of a pod the kubelet runs (undefined before its sandbox exists). */
  podAddress(namespace: string, name: string): string | undefined;
  /** Names of the pods a Service routes to right now (Ready only, unless publishNotReadyAddresses). */
  serviceEndpoints(namespace: string, service: string): string[];
  /** The same with addresses. */
  serviceAddresses(namespace: string, service: string): Endpoint[];
  /** Sends a signal to a pod's container process group (default: its first container). */
  killPodProcess(namespace: string, name: string, signal?: NodeJS.Signals, container?: string): boolean;
  /** What the container printed so far (all its restarts), like `kubectl logs` without --previous. */
  podLog(namespace: string, name: string, container?: string): string;
  /** Host directory of a bound PersistentVolumeClaim. */
  claimPath(namespace: string, claim: string): string | undefined;
  /** Every running container process. */
  processes(): ProcessInfo[];
  /** The node's address (status.hostIP of every pod). */
  readonly hostIP: string;
}

const silent = pino({ level: 'silent' });

function findRedisServer(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('redis-server is not installed (the workloads stand-in runs every pod as a real redis-server)');
  }
}

export function startWorkloads(options: WorkloadsOptions): Workloads {
  const { store } = options;
  const logger = (options.logger ?? silent).child({ standIn: 'workloads' });
  const timeScale = options.timeScale ?? 1;
  if (!(timeScale > 0)) throw new Error(`timeScale must be > 0, got ${timeScale}`);
  mkdirSync(options.dataRoot, { recursive: true });
  const addresses = new AddressPool(options.subnet);
  const runPod = options.runPod ?? ((pod: StoredObject) => (pod.metadata.ownerReferences ?? []).some((r) => r.controller === true && r.kind === 'StatefulSet'));
  // eslint-disable-next-line prefer-const -- the volume controller's callback reads it before it is built
  let kubelet: Kubelet | undefined;
  const volumes = new VolumeController(store, options.dataRoot, logger, (uid) => kubelet?.claimBusy(uid) ?? false);
  kubelet = new Kubelet({ store, dataRoot: options.dataRoot, addresses, logger, timeScale, runPod, volumes, redisServer: findRedisServer() });
  const statefulSets = new StatefulSetController(store, logger);
  volumes.start();
  kubelet.start();
  statefulSets.start();
  const k = kubelet;
  let stopped: Promise<void> | undefined;

  const service = (namespace: string, name: string) => serviceEndpoints(store.read('services', namespace, name), store.list('pods', { namespace }));

  return {
    hostIP: addresses.hostIP,
    stop() {
      stopped ??= (async () => {
        statefulSets.stop();
        volumes.stop();
        await k.stop();
      })();
      return stopped;
    },
    podAddress: (namespace, name) => k.worker(namespace, name)?.ip,
    serviceEndpoints: (namespace, name) => service(namespace, name).map((e) => e.pod),
    serviceAddresses: (namespace, name) => service(namespace, name),
    killPodProcess: (namespace, name, signal = 'SIGKILL', container) => k.signal(namespace, name, signal, container),
    podLog(namespace, name, container) {
      const file = k.logPath(namespace, name, container);
      if (!file) return '';
      try {
        return readFileSync(file, 'utf8');
      } catch {
        return '';
      }
    },
    claimPath(namespace, claim) {
      const c = store.get('persistentvolumeclaims', namespace, claim);
      return c ? volumes.pathOf(c) : undefined;
    },
    processes: () => k.processes(),
  };
}

/**
 * For tests: pids of redis-server processes serving an address in 127.0.<subnet>.0/24, found in
 * /proc (redis-server retitles itself `redis-server <ip>:<port>`, so the address is in cmdline).
 */
export function redisProcessesOnSubnet(subnet: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(path.join('/proc', entry, 'cmdline'), 'utf8');
      if (cmd.includes('redis-server') && cmd.includes(`127.0.${subnet}.`)) out.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return out;
}
