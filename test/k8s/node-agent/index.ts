// The node agent: a kubelet (and container runtime) in place of the real one, for a REAL
// control plane (test/k8s/control-plane.ts). It registers Nodes with their own node credentials,
// keeps them Ready (Lease + status heartbeat), runs the pods the real scheduler binds to them as
// real processes on loopback addresses, reports their status, honours graceful deletion, serves
// `kubectl logs`, and provisions `local-dir` volumes for the real PV controller to bind.
// See README.md for what it models and what it does not.
//
//   const cp = await startControlPlane();
//   const agent = await startNodeAgent({ controlPlane: cp, subnetBase: 60, dataDir });  // node-1..3 on 127.0.61-63.x
//   agent.podAddress('default', 'web-0'); agent.killPodProcess('default', 'web-0', 'SIGSTOP');
//   await agent.stop();   // SIGKILLs every process it started; the API objects stay as they were
//
// Invariants:
// - Node k (1-based) has hostIP 127.0.<subnetBase+k>.1 and hands out pod IPs 127.0.<subnetBase+k>.2+
//   (given a pod network instead: node k is 127.0.<network subnet>.k, pods get the network's
//   addresses), each address once while the agent runs.
//   Nothing listens or connects outside 127.0.0.0/8 and the pod network's own range.
// - stop() leaves no process behind (and pdeathsig + the exit hook of processes.ts cover a test
//   process that dies without calling it).
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino, type Logger } from 'pino';
import { AddressPool, type ProcessInfo } from '../../cluster/workloads/kubelet.ts';
import { KubeClient } from './api-client.ts';
import { startLogServer, selfSignedCert, type LogServer } from './log-server.ts';
import { machineCapacity, NodeHeartbeat } from './node.ts';
import { NodeKubelet } from './node-kubelet.ts';
import type { PodWorker } from './pod-worker.ts';
import { Provisioner } from './provisioner.ts';
import { PROVISIONER_ACCOUNT, PROVISIONER_NAMESPACE, setUpProvisioner } from './provisioner-setup.ts';
import { withClusterDns, type PodNetworkLike } from './sandbox.ts';

export { PROVISIONER_NAME, STORAGE_CLASS } from './provisioner-setup.ts';

/** What the agent needs of the control plane (test/k8s/control-plane.ts's ControlPlane has it). */
export interface ControlPlaneAccess {
  readonly adminKubeconfig: string;
  readonly version: string;
  nodeKubeconfig(nodeName: string): Promise<string>;
  tokenFor(namespace: string, serviceAccount: string): Promise<string>;
  kubeconfigFor(user: string, token: string): string;
}

export interface NodeAgentOptions {
  controlPlane: ControlPlaneAccess;
  /**
   * Node k (1-based) has hostIP (and kubelet endpoint) 127.0.<subnetBase+k>.1 and, without a
   * `network`, hands out pod IPs 127.0.<subnetBase+k>.2+. Required without a network; with one
   * and no subnetBase, node k is 127.0.<network subnet>.k.
   */
  subnetBase?: number;
  /**
   * A pod network (test/k8s/pod-network.ts): pods get its addresses and run in its namespaces,
   * so EndpointSlices can hold them. Default: loopback pod IPs.
   */
  network?: PodNetworkLike;
  /**
   * The cluster DNS (the kubelet's --cluster-dns, --cluster-domain; test/k8s/cluster-dns.ts):
   * ClusterFirst pods get a resolv.conf naming it. Needs `network` (loopback pods share the
   * host's /etc/resolv.conf). Default: none, every pod uses the host's resolver.
   */
  dns?: { nameserver: string; clusterDomain?: string };
  /** A directory the agent owns: pods/<uid> (pod volumes, logs), volumes/pvc-<uid> (PVs), pki/. */
  dataDir: string;
  /** Node names, or how many (node-1..node-N). Default 3. */
  nodes?: number | string[];
  /** The kubelet port on every node's address. Default 10250. */
  kubeletPort?: number;
  logger?: Logger;
  /** Multiplies probe periods/initial delays and the restart back-off (never grace periods: the API sets those). Default 1. */
  timeScale?: number;
  /** Lease duration; renewed every quarter of it. Default 40 (the kubelet's). */
  leaseDurationSeconds?: number;
  /** NodeReady heartbeat (lastHeartbeatTime) period. Default 60 000. */
  statusHeartbeatMs?: number;
  /** Every pod's periodic sync and status reconcile. Default 10 000. */
  resyncMs?: number;
  /** Secret/ConfigMap/projected volume re-read period for running pods. Default 10 000. */
  volumeRefreshMs?: number;
  /** Run the local-dir provisioner (and create its StorageClass). Default true. */
  provisioner?: boolean;
  /** Node capacity (default: this machine's CPUs and memory, 110 pods); allocatable is the same. */
  capacity?: Record<string, string>;
}

export interface AgentNode {
  readonly name: string;
  readonly hostIP: string;
  readonly kubeletPort: number;
}

export interface NodeAgent {
  readonly nodes: readonly AgentNode[];
  /** SIGKILLs every process, stops heartbeats, watches and the log servers. API objects stay. */
  stop(): Promise<void>;
  /** The pod IP of the pod of that name this agent runs (undefined before its sandbox). */
  podAddress(namespace: string, name: string): string | undefined;
  /** The node the agent runs that pod on. */
  podNode(namespace: string, name: string): string | undefined;
  /** Signals a pod's container process group (default: its first container). SIGKILL = crash, SIGSTOP = hang, SIGCONT. */
  killPodProcess(namespace: string, name: string, signal?: NodeJS.Signals, container?: string): boolean;
  /** Everything the container printed, across its restarts. */
  podLog(namespace: string, name: string, container?: string): string;
  /** What the last removed pod of that name printed (kept for a minute after it is gone). */
  previousPodLog(namespace: string, name: string, container?: string): string | undefined;
  /** The directory of a bound claim provisioned by the agent. */
  claimPath(namespace: string, claim: string): string | undefined;
  processes(): Array<ProcessInfo & { node: string }>;
}

const silent = pino({ level: 'silent' });

function findRedisServer(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('redis-server is not installed (the node agent runs redis pods as real redis-server processes)');
  }
}

function nodeNames(nodes: NodeAgentOptions['nodes']): string[] {
  if (Array.isArray(nodes)) return nodes;
  return Array.from({ length: nodes ?? 3 }, (_, i) => `node-${i + 1}`);
}

export async function startNodeAgent(options: NodeAgentOptions): Promise<NodeAgent> {
  const logger = (options.logger ?? silent).child({ component: 'node-agent' });
  const names = nodeNames(options.nodes);
  if (names.length === 0) throw new Error('startNodeAgent needs at least one node');
  const { subnetBase } = options;
  if (subnetBase === undefined && !options.network) throw new Error('startNodeAgent needs subnetBase (or a network)');
  if (options.dns && !options.network) throw new Error('startNodeAgent: dns needs a network (loopback pods share the host resolv.conf)');
  const network =
    options.network && options.dns
      ? withClusterDns(options.network, { nameserver: options.dns.nameserver, clusterDomain: options.dns.clusterDomain ?? 'cluster.local' })
      : options.network;
  if (subnetBase !== undefined && (subnetBase < 0 || subnetBase + names.length > 254))
    throw new Error(`subnetBase ${subnetBase} leaves no room for ${names.length} nodes`);
  if (subnetBase === undefined && names.length > 249) throw new Error(`too many nodes: ${names.length}`);
  const timeScale = options.timeScale ?? 1;
  if (!(timeScale > 0)) throw new Error(`timeScale must be > 0, got ${timeScale}`);
  const kubeletPort = options.kubeletPort ?? 10250;
  const dataDir = path.resolve(options.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const redisServer = findRedisServer();
  const imageID = `node-agent://redis-server@sha256:${createHash('sha256').update(readFileSync(redisServer)).digest('hex')}`;
  const capacity = options.capacity ?? machineCapacity();
  const machine = { memoryBytes: os.totalmem(), cpus: os.cpus().length };
  // Loopback mode: node k owns 127.0.<subnetBase+k>.0/24 (itself .1, its pods .2+). With a pod
  // network and no subnetBase, the nodes are 127.0.<network subnet>.1, .2, ... (kubelet ports
  // only), so clusters on different subnets never share a node address.
  const pools = names.map((_, i) => (subnetBase !== undefined ? new AddressPool(subnetBase + i + 1) : undefined));
  const hostIPs = names.map((_, i) => pools[i]?.hostIP ?? `127.0.${network!.subnet}.${i + 1}`);
  const tls = selfSignedCert(path.join(dataDir, 'pki'), hostIPs);

  const kubelets: NodeKubelet[] = [];
  const heartbeats: NodeHeartbeat[] = [];
  const servers: LogServer[] = [];
  const clients: KubeClient[] = [];
  let provisioner: Provisioner | undefined;
  const holderOf = (pv: string, except: PodWorker) => {
    for (const k of kubelets)
      for (const w of k.workers.values()) if (w !== except && w.live && w.volumes.volumes.includes(pv)) return `${w.namespace}/${w.name}`;
    return undefined;
  };
  const find = (namespace: string, name: string) => {
    for (const k of kubelets) {
      const w = k.worker(namespace, name);
      if (w && !w.gone) return { k, w };
    }
    for (const k of kubelets) {
      const w = k.worker(namespace, name);
      if (w) return { k, w };
    }
    return undefined;
  };

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      for (const h of heartbeats) h.stop();
      await Promise.all([...servers.map((s) => s.close()), ...kubelets.map((k) => k.stop()), provisioner?.stop()]);
      for (const c of clients) c.close();
    })();
    return stopping;
  };

  try {
    for (const [i, name] of names.entries()) {
      const hostIP = hostIPs[i]!;
      const client = new KubeClient(await options.controlPlane.nodeKubeconfig(name));
      clients.push(client);
      const kubelet = new NodeKubelet({
        name,
        hostIP,
        client,
        addresses: pools[i],
        network,
        dataDir,
        logger,
        timeScale,
        redisServer,
        imageID,
        machine,
        holderOf,
        volumeRefreshMs: options.volumeRefreshMs ?? 10_000,
        resyncMs: options.resyncMs ?? 10_000,
      });
      kubelets.push(kubelet);
      servers.push(
        await startLogServer({
          host: hostIP,
          port: kubeletPort,
          tls,
          resolve: (ns, pod, container, which) =>
            kubelet.logTarget(ns, pod, container, which) ?? `container "${container}" in pod "${pod}" (namespace ${ns}) has no log on node ${name}`,
        }),
      );
      const heartbeat = new NodeHeartbeat({
        client,
        logger,
        identity: { name, hostIP, kubeletPort, version: options.controlPlane.version, capacity, allocatable: capacity },
        leaseDurationSeconds: options.leaseDurationSeconds ?? 40,
        statusHeartbeatMs: options.statusHeartbeatMs ?? 60_000,
      });
      heartbeats.push(heartbeat);
      await heartbeat.register();
      heartbeat.start();
      await kubelet.start();
    }
    if (options.provisioner !== false) {
      const admin = new KubeClient(options.controlPlane.adminKubeconfig);
      clients.push(admin);
      await setUpProvisioner(admin);
      const token = await options.controlPlane.tokenFor(PROVISIONER_NAMESPACE, PROVISIONER_ACCOUNT);
      const client = new KubeClient(options.controlPlane.kubeconfigFor(PROVISIONER_ACCOUNT, token));
      clients.push(client);
      provisioner = new Provisioner({ client, dataDir, logger });
      await provisioner.start();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  logger.info({ nodes: names, hostIPs }, 'node agent ready');

  return {
    nodes: names.map((name, i) => ({ name, hostIP: hostIPs[i]!, kubeletPort })),
    stop,
    podAddress: (ns, name) => find(ns, name)?.w.ip,
    podNode: (ns, name) => find(ns, name)?.k.name,
    killPodProcess: (ns, name, signal = 'SIGKILL', container) => find(ns, name)?.k.signal(ns, name, signal, container) ?? false,
    podLog(ns, name, container) {
      const target = find(ns, name)?.k.logTarget(ns, name, container, 'all');
      let out = '';
      for (const f of target?.files ?? []) {
        try {
          out += readFileSync(f, 'utf8');
        } catch {
          // not written yet
        }
      }
      return out;
    },
    previousPodLog(ns, name, container) {
      const found = kubelets.map((k) => k.retiredLog(ns, name, container)).filter((r) => r !== undefined);
      return found.sort((a, b) => b.at - a.at)[0]?.log;
    },
    claimPath: (ns, claim) => provisioner?.claimPath(ns, claim),
    processes: () => kubelets.flatMap((k) => k.processes().map((p) => ({ ...p, node: k.name }))),
  };
}
