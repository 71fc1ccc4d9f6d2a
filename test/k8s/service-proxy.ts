// A userspace service proxy (kube-proxy's oldest mode, in miniature): every ClusterIP Service of
// the cluster gets its ClusterIP on the pod bridge and a TCP listener per port; each accepted
// connection goes to one endpoint that its REAL EndpointSlices list as ready right now.
// What this models: a client connects to `my-redis-master` (by ClusterIP) and lands on whichever
// pod the EndpointSlice controller says is ready; an established connection stays where it
// landed when the endpoints change (as with kube-proxy), and a Service without a ready endpoint
// refuses connections. What it does not: UDP, session affinity, NodePorts, topology hints,
// load-balancing policy (the endpoint is picked at random), iptables/IPVS.
// Invariants: listeners exist only for ClusterIPs inside this cluster's Service CIDR; stop()
// closes every listener and connection and removes every address it added.
import { execFile } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ServicePort {
  name?: string;
  port: number;
  protocol?: string;
  targetPort?: number | string;
}

export interface ServiceView {
  namespace: string;
  name: string;
  clusterIP: string | undefined;
  ports: ServicePort[];
}

export interface ReadyEndpoint {
  ip: string;
  /** EndpointSlice ports by name ('' for an unnamed port). */
  ports: Record<string, number>;
}

/** Where the proxy reads the cluster's state (the harness feeds it from its informer cache). */
export interface ServiceSource {
  services(): ServiceView[];
  readyEndpoints(namespace: string, service: string): ReadyEndpoint[];
  /** Calls back after any Service or EndpointSlice change; returns an unsubscribe. */
  onChange(cb: () => void): () => void;
}

export interface ServiceProxy {
  /** `ip:port` of a Service port, once its listener is up. */
  address(namespace: string, name: string, port?: number): string | undefined;
  stop(): Promise<void>;
}

/** The endpoint port a Service port maps to: by name, else the targetPort number, else the port. */
export function endpointPort(sp: ServicePort, ep: ReadyEndpoint): number | undefined {
  const byName = ep.ports[sp.name ?? ''];
  if (byName !== undefined) return byName;
  if (typeof sp.targetPort === 'number') return sp.targetPort;
  return typeof sp.targetPort === 'string' ? undefined : sp.port;
}

export async function startServiceProxy(options: { source: ServiceSource; device: string; cidrPrefix: string }): Promise<ServiceProxy> {
  const { source, device, cidrPrefix } = options;
  const listeners = new Map<string, { server: Server; ip: string }>();
  const addresses = new Set<string>();
  const sockets = new Set<Socket>();
  let stopped = false;
  let syncing = Promise.resolve();

  function accept(ns: string, name: string, sp: ServicePort, client: Socket): void {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    const candidates = source
      .readyEndpoints(ns, name)
      .map((ep) => ({ ep, port: endpointPort(sp, ep) }))
      .filter((c) => c.port !== undefined);
    const pick = candidates[Math.floor(Math.random() * candidates.length)];
    if (!pick) {
      client.destroy();
      return;
    }
    const upstream = connect({ host: pick.ep.ip, port: pick.port! });
    sockets.add(upstream);
    upstream.once('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.once('close', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  }

  async function sync(): Promise<void> {
    const wanted = new Map<string, { view: ServiceView; sp: ServicePort }>();
    for (const view of source.services()) {
      if (!view.clusterIP || !view.clusterIP.startsWith(cidrPrefix)) continue;
      for (const sp of view.ports) if ((sp.protocol ?? 'TCP') === 'TCP') wanted.set(`${view.clusterIP}:${sp.port}`, { view, sp });
    }
    for (const [key, l] of [...listeners]) {
      if (wanted.has(key)) continue;
      listeners.delete(key);
      l.server.close();
    }
    const liveIps = new Set([...wanted.values()].map((w) => w.view.clusterIP!));
    for (const ip of [...addresses]) {
      if (liveIps.has(ip) || [...listeners.values()].some((l) => l.ip === ip)) continue;
      addresses.delete(ip);
      await run('ip', ['addr', 'del', `${ip}/32`, 'dev', device]).catch(() => undefined);
    }
    for (const [key, { view, sp }] of wanted) {
      if (listeners.has(key) || stopped) continue;
      const ip = view.clusterIP!;
      if (!addresses.has(ip)) {
        await run('ip', ['addr', 'add', `${ip}/32`, 'dev', device]).catch(() => undefined);
        addresses.add(ip);
      }
      const server = createServer((c) => accept(view.namespace, view.name, sp, c));
      server.on('error', () => listeners.delete(key));
      await new Promise<void>((resolve) => server.listen(sp.port, ip, resolve)).catch(() => undefined);
      listeners.set(key, { server, ip });
    }
  }

  const resync = () => {
    syncing = syncing.then(sync, sync);
  };
  const unsubscribe = source.onChange(resync);
  resync();
  await syncing;

  return {
    address(namespace, name, port) {
      const view = source.services().find((s) => s.namespace === namespace && s.name === name);
      const sp = view?.ports.find((p) => port === undefined || p.port === port);
      if (!view?.clusterIP || !sp || !listeners.has(`${view.clusterIP}:${sp.port}`)) return undefined;
      return `${view.clusterIP}:${sp.port}`;
    },
    async stop() {
      stopped = true;
      unsubscribe();
      await syncing;
      for (const s of sockets) s.destroy();
      await Promise.all([...listeners.values()].map((l) => new Promise<void>((r) => l.server.close(() => r()))));
      listeners.clear();
      for (const ip of addresses) await run('ip', ['addr', 'del', `${ip}/32`, 'dev', device]).catch(() => undefined);
      addresses.clear();
    },
  };
}
