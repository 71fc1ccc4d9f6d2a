// A pod's sandbox, the network part of it: the pod IP and how to run a process "inside" it.
// Two kinds:
// - loopback (default): a node's own 127.0.N.x address from its AddressPool; processes run in
//   the host's namespaces and bind to that address (the redis-server shim forces it);
// - a pod network (test/k8s/pod-network.ts: a bridge and one network namespace per pod, with
//   addresses the API server accepts in EndpointSlices): processes run under its exec prefix
//   (`ip netns exec <ns>`), and so do exec probes, as in a container.
// Invariants: an address is never handed out twice while the agent runs; release() is
// idempotent and never throws (a namespace is deleted once the pod's processes are gone).
import type { AddressPool } from '../../cluster/workloads/kubelet.ts';
import type { PodAttachment, PodNetwork } from '../pod-network.ts';

/** What the agent uses of a pod network. */
export type PodNetworkLike = Pick<PodNetwork, 'subnet' | 'attach' | 'detach'>;

export interface Sandbox {
  readonly ip: string;
  /** argv prefix that runs a command in the pod's network namespace ([] on loopback). */
  readonly exec: readonly string[];
  release(): Promise<void>;
}

/** A sandbox, or the reason none can be made (the kubelet's FailedCreatePodSandBox). */
export async function createSandbox(pool: AddressPool | undefined, network: PodNetworkLike | undefined): Promise<Sandbox | string> {
  if (!network) {
    const ip = pool?.allocate();
    if (ip === undefined) return 'failed to create pod sandbox: no pod address left on this node (pod IPs are never reused)';
    return { ip, exec: [], release: async () => undefined };
  }
  let pod: PodAttachment;
  try {
    pod = await network.attach();
  } catch (err) {
    return `failed to create pod sandbox: ${(err as Error).message}`;
  }
  let released: Promise<void> | undefined;
  return {
    ip: pod.ip,
    exec: pod.exec,
    release: () => (released ??= network.detach(pod).catch(() => undefined)),
  };
}
