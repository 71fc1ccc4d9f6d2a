// The configuration files of one real node (test/k8s/real-node.ts), as pure functions of where
// its parts live: containerd's config.toml (v3), the CNI network list, the KubeletConfiguration
// and the KubeProxyConfiguration. Kept apart from the processes so a unit test can read them.
// Invariants:
// - Every path is under the node's own directory, every address in the cluster's
//   198.18.<subnet>.0/24: two nodes never share a socket, a state directory or an IP range.
// - Nothing here changes a host-wide setting: containerd may not raise its OOM score or load an
//   AppArmor profile, kube-proxy sets no conntrack limit or timeout (those are global sysctls).
import { stringify } from 'yaml';

/** Node `index` (1..5) of a cluster: its address on the bridge and its pods' /27. */
export function nodeAddress(subnet: number, index: number): string {
  return `198.18.${subnet}.${1 + index}`;
}

/**
 * Pods of node `index` live in 198.18.<subnet>.(32 + 32 * index)/27: .64/27, .96/27, ... up to
 * .192/27, clear of the node addresses (.2..) and the host's own (.250..254) on the bridge.
 */
export function podCidr(subnet: number, index: number): string {
  if (!Number.isInteger(index) || index < 1 || index > 5) throw new Error(`node index must be 1..5, got ${index}`);
  return `198.18.${subnet}.${32 + 32 * index}/27`;
}

export interface NodePaths {
  /** The node's own directory; everything it writes is below it. */
  dir: string;
  cniBinDir: string;
  runc: string;
}

export const containerdSocket = (p: Pick<NodePaths, 'dir'>): string => `${p.dir}/containerd/containerd.sock`;
export const cniConfDir = (p: Pick<NodePaths, 'dir'>): string => `${p.dir}/cni/net.d`;

const toml = (s: string): string => JSON.stringify(s);

/** containerd v2 configuration (version 3): CRI with runc on cgroupfs, CNI of the node's own. */
export function containerdConfig(p: NodePaths, sandboxImage: string): string {
  return [
    'version = 3',
    `root = ${toml(`${p.dir}/containerd/root`)}`,
    `state = ${toml(`${p.dir}/containerd/state`)}`,
    '',
    '[grpc]',
    `  address = ${toml(containerdSocket(p))}`,
    '[ttrpc]',
    `  address = ${toml(`${containerdSocket(p)}.ttrpc`)}`,
    '[debug]',
    '  address = ""',
    '[metrics]',
    '  address = ""',
    '',
    "[plugins.'io.containerd.cri.v1.runtime']",
    // The VM grants no CAP_SYS_RESOURCE: raising a container's OOM score fails every sandbox.
    '  restrict_oom_score_adj = true',
    '  disable_apparmor = true',
    // hugetlb sits on the cgroup2 mount of this hybrid hierarchy, where runc cannot set it.
    '  disable_hugetlb_controller = true',
    '  enable_selinux = false',
    // Pod network namespaces' files under the node's state, not the host's /run/netns.
    '  netns_mounts_under_state_dir = true',
    '  enable_cdi = false',
    "[plugins.'io.containerd.cri.v1.runtime'.containerd]",
    '  default_runtime_name = "runc"',
    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]",
    '  runtime_type = "io.containerd.runc.v2"',
    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]",
    `  BinaryName = ${toml(p.runc)}`,
    '  SystemdCgroup = false',
    "[plugins.'io.containerd.cri.v1.runtime'.cni]",
    `  bin_dirs = [${toml(p.cniBinDir)}]`,
    `  conf_dir = ${toml(cniConfDir(p))}`,
    "[plugins.'io.containerd.cri.v1.images'.pinned_images]",
    `  sandbox = ${toml(sandboxImage)}`,
    "[plugins.'io.containerd.grpc.v1.cri']",
    '  disable_tcp_service = true',
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    "[plugins.'io.containerd.internal.v1.opt']",
    `  path = ${toml(`${p.dir}/containerd/opt`)}`,
    "[plugins.'io.containerd.nri.v1.nri']",
    '  disable = true',
    '',
  ].join('\n');
}

/** The CNI network: a bridge `cni0` in the node's namespace, host-local addresses from its /27. */
export function cniConflist(p: Pick<NodePaths, 'dir'>, cidr: string): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'redis-operator-test',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          // Pods keep their own source address: the host and the other nodes route to every /27.
          ipMasq: false,
          // A pod reaching a Service whose endpoint is itself goes out and back on the bridge.
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: cidr }]],
            routes: [{ dst: '0.0.0.0/0' }],
            dataDir: `${p.dir}/cni/ipam`,
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

export interface KubeletFiles {
  caFile: string;
  tlsCert: string;
  tlsKey: string;
  clusterDns: string;
  clusterDomain: string;
  /** The cgroup (under every v1 hierarchy) that holds this node's pods. */
  cgroupRoot: string;
  resolvConf: string;
  address: string;
}

export function kubeletConfig(p: Pick<NodePaths, 'dir'>, f: KubeletFiles): string {
  return stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: f.address,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    tlsCertFile: f.tlsCert,
    tlsPrivateKeyFile: f.tlsKey,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: f.caFile } },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${containerdSocket(p)}`,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: f.cgroupRoot,
    // Kubernetes 1.37 refuses cgroup v1 unless told; v1 is what these machines have.
    failCgroupV1: false,
    failSwapOn: false,
    clusterDNS: [f.clusterDns],
    clusterDomain: f.clusterDomain,
    resolvConf: f.resolvConf,
    // No registry can be reached: an image garbage-collected is an image lost for the run.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // The disk is shared with other work; only a nearly full one should evict test pods.
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '1%',
      'imagefs.available': '1%',
      'nodefs.inodesFree': '1%',
    },
    serializeImagePulls: false,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    makeIPTablesUtilChains: true,
    // Status and pod events reach the API sooner than the defaults on a test cluster.
    nodeStatusUpdateFrequency: '5s',
    syncFrequency: '10s',
    fileCheckFrequency: '10s',
    shutdownGracePeriod: '0s',
  });
}

export function kubeProxyConfig(f: { kubeconfig: string; hostname: string; clusterCidr: string }): string {
  return stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: f.kubeconfig },
    mode: 'iptables',
    hostnameOverride: f.hostname,
    clusterCIDR: f.clusterCidr,
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    // Zero: leave the host-wide conntrack table size and timeouts as they are.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
  });
}
