// A pod's sandbox, the network part of it: the pod IP, the pod's resolv.conf, and how to run a
// process "inside" it. Two kinds:
// - loopback (default): a node's own 127.0.N.x address from its AddressPool; processes run in
//   the host's namespaces and bind to that address (the redis-server shim forces it), with the
//   host's resolver;
// - a pod network (test/k8s/pod-network.ts: a bridge and one network namespace per pod, with
//   addresses the API server accepts in EndpointSlices): processes run under its exec prefix
//   (`ip netns exec <ns>`), and so do exec probes, as in a container. Given the cluster DNS
//   (`withClusterDns`), the sandbox gets the resolv.conf the kubelet writes for the pod's
//   dnsPolicy, before any of its processes exists.
// Invariants: an address is never handed out twice while the agent runs; release() is
// idempotent and never throws (a namespace is deleted once the pod's processes are gone, its
// resolv.conf with it).
import type { V1Pod } from '@kubernetes/client-node';
import type { AddressPool } from '../../cluster/workloads/kubelet.ts';
import type { PodAttachment, PodNetwork } from '../pod-network.ts';

/** The kubelet's --cluster-dns and --cluster-domain. */
export interface ClusterDnsConfig {
  readonly nameserver: string;
  readonly clusterDomain: string;
}

/**
 * What the agent uses of a pod network, and the cluster DNS its pods use (carried with the
 * network because the network is what reaches a sandbox).
 */
export type PodNetworkLike = Pick<PodNetwork, 'subnet' | 'attach' | 'detach'> & { readonly dns?: ClusterDnsConfig };

export function withClusterDns(network: Pick<PodNetwork, 'subnet' | 'attach' | 'detach'>, dns: ClusterDnsConfig): PodNetworkLike {
  return { subnet: network.subnet, attach: (o) => network.attach(o), detach: (p) => network.detach(p), dns };
}

export interface Sandbox {
  readonly ip: string;
  /** argv prefix that runs a command in the pod's network namespace ([] on loopback). */
  readonly exec: readonly string[];
  release(): Promise<void>;
}

/**
 * The resolv.conf the kubelet writes for a pod (pkg/kubelet/network/dns, GetPodDNS), undefined
 * when the pod keeps the host's (dnsPolicy Default), or `{ error }` for what is not modelled.
 * ClusterFirstWithHostNet is ClusterFirst for a pod off the host network, and every pod here is.
 * The kubelet also appends the host's search domains to ClusterFirst's; here they could only ever
 * be answered REFUSED (the cluster DNS forwards nothing), so they are left out.
 */
export function podResolvConf(pod: V1Pod, dns: ClusterDnsConfig): string | undefined | { error: string } {
  const spec = pod.spec;
  const policy = spec?.dnsPolicy ?? 'ClusterFirst';
  if (policy === 'Default') return spec?.dnsConfig ? { error: 'dnsConfig with dnsPolicy Default is not modelled by the node agent' } : undefined;
  if (policy !== 'ClusterFirst' && policy !== 'ClusterFirstWithHostNet') return { error: `dnsPolicy ${policy} is not modelled by the node agent` };
  if (spec?.dnsConfig) return { error: 'dnsConfig is not modelled by the node agent' };
  const ns = pod.metadata?.namespace ?? 'default';
  const d = dns.clusterDomain;
  return `search ${ns}.svc.${d} svc.${d} ${d}\nnameserver ${dns.nameserver}\noptions ndots:5\n`;
}

/**
 * A sandbox, or the reason none can be made (the kubelet's FailedCreatePodSandBox). The pod
 * decides its resolv.conf; without it (or without cluster DNS) its processes use the host's.
 */
export async function createSandbox(pool: AddressPool | undefined, network: PodNetworkLike | undefined, pod?: V1Pod): Promise<Sandbox | string> {
  if (!network) {
    const ip = pool?.allocate();
    if (ip === undefined) return 'failed to create pod sandbox: no pod address left on this node (pod IPs are never reused)';
    return { ip, exec: [], release: async () => undefined };
  }
  const resolvConf = pod && network.dns ? podResolvConf(pod, network.dns) : undefined;
  if (typeof resolvConf === 'object') return `failed to create pod sandbox: ${resolvConf.error}`;
  let attached: PodAttachment;
  try {
    attached = await network.attach(resolvConf === undefined ? {} : { resolvConf });
  } catch (err) {
    return `failed to create pod sandbox: ${(err as Error).message}`;
  }
  let released: Promise<void> | undefined;
  return {
    ip: attached.ip,
    exec: attached.exec,
    release: () => (released ??= network.detach(attached).catch(() => undefined)),
  };
}
