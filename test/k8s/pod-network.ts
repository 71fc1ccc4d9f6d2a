// The local cluster's pod network (a CNI bridge plugin in miniature): one Linux bridge per cluster
// and one network namespace per pod, joined to the bridge by a veth pair.
//
//   const net = await createPodNetwork({ subnet: 60 });    // bridge rok60, 198.18.60.1/24
//   const pod = await net.attach();                        // { ip: '198.18.60.2', netns: 'rok60-2', exec: [...] }
//   await net.attach({ resolvConf: 'nameserver ...' });    // its processes see that /etc/resolv.conf
//   spawn([...pod.exec, 'redis-server', ...]);             // runs inside the pod's namespace
//   await net.detach(pod); await net.destroy();
//
// Why not loopback pod IPs: the API server refuses loopback addresses in Endpoints and
// EndpointSlices (ValidateEndpointIP), so Services could never route to such pods. 198.18.0.0/15
// is the range reserved for benchmarking test networks (RFC 2544); these addresses exist only on
// this bridge and in namespaces this module made, so no packet for them leaves the machine.
// Invariants:
// - Addresses 198.18.<subnet>.2..249 are handed out once per network (never reused: the real
//   nodes, real-node-config.ts); .1 is the bridge (the host side), .250..253 are host addresses,
//   .254 is where the host's own services listen for pods (the cluster DNS on :53, a test's S3).
// - destroy() removes every namespace and the bridge it made, also after a failed attach, and
//   every /etc/netns/<namespace> directory (a pod's resolv.conf) with its namespace.
// - Needs root and iproute2 (`ip`); available() says whether this machine can do it.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const POD_RANGE = '198.18.0.0/16';
/**
 * `ip netns exec <ns>` bind-mounts every file of /etc/netns/<ns>/ over its /etc namesake for the
 * command it runs (iproute2's NETNS_ETC_DIR): how a pod's processes get their own resolv.conf
 * without a mount namespace of ours.
 */
export const NETNS_ETC_DIR = '/etc/netns';

export interface AttachOptions {
  /** The pod's /etc/resolv.conf (what the kubelet writes for its DNS policy); default: the host's. */
  resolvConf?: string;
}

export interface PodAttachment {
  readonly ip: string;
  readonly netns: string;
  /** argv prefix that runs a command inside the pod's network namespace. */
  readonly exec: readonly string[];
}

export interface PodNetwork {
  readonly subnet: number;
  readonly bridge: string;
  readonly gateway: string;
  /** Host-side addresses on the bridge for clients that need a distinct source (sidecars). */
  readonly hostAddresses: readonly string[];
  /** A host-side address on the bridge for servers on this host that pods or Services reach. */
  readonly serviceAddress: string;
  attach(options?: AttachOptions): Promise<PodAttachment>;
  detach(pod: PodAttachment): Promise<void>;
  /** The namespace a live pod address belongs to. */
  netnsOf(ip: string): string | undefined;
  destroy(): Promise<void>;
}

/** Why this machine cannot run the pod network, or undefined when it can. */
export function unavailableReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'the pod network needs root (network namespaces, a bridge)';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'the pod network needs iproute2 (`ip`)';
  }
  return undefined;
}

async function ip(...args: string[]): Promise<void> {
  await run('ip', args);
}

function etcEntries(): string[] {
  try {
    return readdirSync(NETNS_ETC_DIR);
  } catch {
    return [];
  }
}

/** Deletes a namespace and its /etc/netns files; never throws (it may be gone already). */
async function deleteNetns(netns: string): Promise<void> {
  await ip('netns', 'del', netns).catch(() => undefined);
  rmSync(path.join(NETNS_ETC_DIR, netns), { recursive: true, force: true });
}

export async function createPodNetwork(options: { subnet: number }): Promise<PodNetwork> {
  const { subnet } = options;
  if (!Number.isInteger(subnet) || subnet < 1 || subnet > 254) throw new Error(`subnet must be 1..254, got ${subnet}`);
  const bridge = `rok${subnet}`;
  const prefix = `198.18.${subnet}`;
  const gateway = `${prefix}.1`;
  const hostAddresses = [250, 251, 252, 253].map((n) => `${prefix}.${n}`);
  const serviceAddress = `${prefix}.254`;
  const namespaces = new Set<string>();
  const byIp = new Map<string, string>();
  let next = 2;

  // A bridge left by a crashed run of the same subnet would make every address clash.
  await ip('link', 'del', bridge).catch(() => undefined);
  const listed = (await run('ip', ['netns', 'list'])).stdout.split('\n').map((l) => l.split(' ')[0] ?? '');
  for (const ns of new Set([...listed, ...etcEntries()])) if (ns.startsWith(`${bridge}-`)) await deleteNetns(ns);
  // A bridge without an address of its own takes the lowest MAC of its ports, so it changes when
  // a pod's veth comes or goes; pods then answer the host at a stale MAC until their ARP entry
  // expires (~30 s of silence between the host and a pod, e.g. right after a switchover deleted
  // the old master's pod). A fixed, locally administered MAC keeps it stable.
  const mac = `02:72:6f:6b:${subnet.toString(16).padStart(2, '0')}:01`;
  await ip('link', 'add', bridge, 'address', mac, 'type', 'bridge');
  await ip('addr', 'add', `${gateway}/24`, 'dev', bridge);
  for (const a of [...hostAddresses, serviceAddress]) await ip('addr', 'add', `${a}/32`, 'dev', bridge);
  await ip('link', 'set', bridge, 'up');

  async function detach(pod: PodAttachment): Promise<void> {
    namespaces.delete(pod.netns);
    byIp.delete(pod.ip);
    // Deleting the namespace destroys its end of the veth pair and with it the host end.
    await deleteNetns(pod.netns);
  }

  return {
    subnet,
    bridge,
    gateway,
    hostAddresses,
    serviceAddress,
    async attach(options = {}) {
      if (next > 249) throw new Error(`pod network ${bridge}: no pod address left`);
      const n = next++;
      const podIp = `${prefix}.${n}`;
      const netns = `${bridge}-${n}`;
      const hostEnd = `${bridge}h${n}`;
      const podEnd = `${bridge}p${n}`;
      namespaces.add(netns);
      try {
        await ip('netns', 'add', netns);
        await ip('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', podEnd);
        await ip('link', 'set', podEnd, 'netns', netns);
        await ip('link', 'set', hostEnd, 'master', bridge, 'up');
        const inNs = (...args: string[]) => ip('-n', netns, ...args);
        await inNs('link', 'set', 'lo', 'up');
        await inNs('link', 'set', podEnd, 'name', 'eth0');
        await inNs('addr', 'add', `${podIp}/24`, 'dev', 'eth0');
        await inNs('link', 'set', 'eth0', 'up');
        await inNs('route', 'add', 'default', 'via', gateway);
        if (options.resolvConf !== undefined) {
          // Before any process of the pod exists: each one sees the file from its first exec.
          mkdirSync(path.join(NETNS_ETC_DIR, netns), { recursive: true });
          writeFileSync(path.join(NETNS_ETC_DIR, netns, 'resolv.conf'), options.resolvConf);
        }
      } catch (err) {
        await ip('link', 'del', hostEnd).catch(() => undefined);
        await detach({ ip: podIp, netns, exec: [] });
        throw err;
      }
      byIp.set(podIp, netns);
      return { ip: podIp, netns, exec: ['ip', 'netns', 'exec', netns] };
    },
    detach,
    netnsOf: (addr) => byIp.get(addr),
    async destroy() {
      for (const ns of [...namespaces]) await deleteNetns(ns);
      namespaces.clear();
      await ip('link', 'del', bridge).catch(() => undefined);
    },
  };
}
