// One Node as the kubelet keeps it: registration (POST /api/v1/nodes with the node's own
// credential, which NodeRestriction allows only for itself), status (capacity/allocatable,
// addresses, daemonEndpoints, nodeInfo, the four conditions) and liveness (the Lease in
// kube-node-lease, renewed every leaseDuration/4 like the kubelet's lease controller, plus a
// periodic status heartbeat).
// Invariants:
// - Conditions keep their lastTransitionTime; only lastHeartbeatTime moves on a heartbeat.
// - A failed renewal is retried on the next tick; the node lifecycle controller marks the node
//   NotReady only after its grace period (50 s by default) without a renewal.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Logger } from 'pino';
import { isStatus, type Json, type KubeClient } from './api-client.ts';

export interface NodeIdentity {
  name: string;
  hostIP: string;
  kubeletPort: number;
  /** kubeletVersion, e.g. v1.37.2. */
  version: string;
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
}

const LEASE_NAMESPACE = 'kube-node-lease';

function readTrim(file: string, fallback: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return fallback;
  }
}

function osImage(): string {
  const m = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(readTrim('/etc/os-release', ''));
  return m?.[1] ?? 'Linux';
}

const ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' };

/** The machine's capacity, as the kubelet's cAdvisor would report it (every node shares this machine). */
export function machineCapacity(): Record<string, string> {
  return { cpu: String(os.cpus().length), memory: `${Math.floor(os.totalmem() / 1024)}Ki`, pods: '110', 'ephemeral-storage': '100Gi' };
}

/** The kubelet's conditions; `since` keeps each one's lastTransitionTime. */
export function nodeConditions(nowIso: string, since: string): Json[] {
  const c = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: nowIso,
    lastTransitionTime: since,
  });
  return [
    c('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
    c('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
    c('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    c('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
  ];
}

export function nodeStatus(n: NodeIdentity, nowIso: string, since: string): Json {
  return {
    capacity: n.capacity,
    allocatable: n.allocatable,
    conditions: nodeConditions(nowIso, since),
    addresses: [
      { type: 'InternalIP', address: n.hostIP },
      { type: 'Hostname', address: n.name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: n.kubeletPort } },
    nodeInfo: {
      machineID: readTrim('/etc/machine-id', 'node-agent'),
      systemUUID: readTrim('/sys/class/dmi/id/product_uuid', 'node-agent'),
      bootID: readTrim('/proc/sys/kernel/random/boot_id', 'node-agent'),
      kernelVersion: os.release(),
      osImage: osImage(),
      containerRuntimeVersion: 'node-agent://0.1.0',
      kubeletVersion: n.version,
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: ARCH[os.arch()] ?? os.arch(),
    },
  };
}

export function nodeObject(n: NodeIdentity, nowIso: string): Json {
  const arch = ARCH[os.arch()] ?? os.arch();
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: n.name,
      // Only labels NodeRestriction lets a node set on itself.
      labels: {
        'kubernetes.io/hostname': n.name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': arch,
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': arch,
      },
    },
    spec: {},
    status: nodeStatus(n, nowIso, nowIso),
  };
}

/** metav1.MicroTime as the API server serialises it. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const secondsIso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

export interface NodeHeartbeatOptions {
  client: KubeClient;
  identity: NodeIdentity;
  logger: Logger;
  leaseDurationSeconds: number;
  /** How often the NodeReady condition's lastHeartbeatTime is refreshed. */
  statusHeartbeatMs: number;
}

export class NodeHeartbeat {
  readonly #o: NodeHeartbeatOptions;
  readonly #log: Logger;
  #since = secondsIso(Date.now());
  #uid = '';
  #lease: Json | undefined;
  #timers: NodeJS.Timeout[] = [];
  #stopped = false;

  constructor(options: NodeHeartbeatOptions) {
    this.#o = options;
    this.#log = options.logger.child({ node: options.identity.name });
  }

  get name(): string {
    return this.#o.identity.name;
  }

  /** Creates the Node (or adopts an existing one of that name), marks it Ready and takes its Lease. */
  async register(): Promise<void> {
    const { client, identity } = this.#o;
    const now = secondsIso(Date.now());
    let node: Json;
    try {
      node = await client.request('POST', '/api/v1/nodes', { body: nodeObject(identity, now) });
      this.#log.info({ hostIP: identity.hostIP }, 'node registered');
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
      node = await client.request('GET', `/api/v1/nodes/${identity.name}`);
      this.#log.info('node already registered; taking it over');
    }
    this.#uid = String((node['metadata'] as Json)['uid']);
    this.#since = now;
    await this.postStatus();
    await this.renewLease();
  }

  start(): void {
    const renewMs = (this.#o.leaseDurationSeconds * 1000) / 4;
    this.#timers.push(
      setInterval(() => void this.renewLease().catch((err: unknown) => this.#log.warn({ err: (err as Error).message }, 'lease renewal failed')), renewMs),
      setInterval(
        () => void this.postStatus().catch((err: unknown) => this.#log.warn({ err: (err as Error).message }, 'node status update failed')),
        this.#o.statusHeartbeatMs,
      ),
    );
  }

  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
  }

  async postStatus(): Promise<void> {
    if (this.#stopped) return;
    const { client, identity } = this.#o;
    await client.request('PATCH', `/api/v1/nodes/${identity.name}/status`, {
      contentType: 'application/strategic-merge-patch+json',
      body: { status: nodeStatus(identity, secondsIso(Date.now()), this.#since) },
    });
  }

  async renewLease(retry = true): Promise<void> {
    if (this.#stopped) return;
    const { client, identity, leaseDurationSeconds } = this.#o;
    const base = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`;
    const spec = { holderIdentity: identity.name, leaseDurationSeconds, renewTime: microTime(Date.now()) };
    if (!this.#lease) {
      const existing = await client.get<Json>(`${base}/${identity.name}`);
      if (!existing) {
        this.#lease = await client.request<Json>('POST', base, {
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: {
              name: identity.name,
              namespace: LEASE_NAMESPACE,
              ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: identity.name, uid: this.#uid }],
            },
            spec,
          },
        });
        return;
      }
      this.#lease = existing;
    }
    try {
      this.#lease = await client.request<Json>('PUT', `${base}/${identity.name}`, {
        body: { ...this.#lease, spec: { ...(this.#lease['spec'] as Json), ...spec } },
      });
    } catch (err) {
      // A stale resourceVersion or a deleted lease: start over from a fresh read next time.
      this.#lease = undefined;
      if (retry && isStatus(err, 409, 404)) return this.renewLease(false);
      throw err;
    }
  }
}
