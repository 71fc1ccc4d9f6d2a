// The real nodes' address plan and configuration files: no two nodes share a pod address, no pod
// range covers a node's or the host's own address on the bridge, and each file names only the
// node's own paths.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import {
  cniConflist,
  containerdConfig,
  kubeletConfig,
  kubeProxyConfig,
  nodeAddress,
  podCidr,
} from './real-node-config.ts';

const lastOctets = (cidr: string): number[] => {
  const [base, bits] = cidr.split('/');
  const start = Number(base!.split('.')[3]);
  return Array.from({ length: 2 ** (32 - Number(bits)) }, (_, i) => start + i);
};

test('pod ranges: disjoint, inside the /24, clear of node and host addresses', () => {
  const taken = new Set<number>();
  const hostAndNodes = [
    1,
    ...[1, 2, 3, 4, 5].map((i) => Number(nodeAddress(45, i).split('.')[3])),
    250,
    251,
    252,
    253,
    254,
  ];
  for (const i of [1, 2, 3, 4, 5]) {
    const cidr = podCidr(45, i);
    assert.ok(cidr.startsWith('198.18.45.'), cidr);
    for (const o of lastOctets(cidr)) {
      assert.ok(o <= 255, `${cidr} leaves the /24`);
      assert.ok(!taken.has(o), `.${o} in two nodes' ranges`);
      assert.ok(!hostAndNodes.includes(o), `${cidr} covers the bridge's own .${o}`);
      taken.add(o);
    }
  }
});

test('a node index outside 1..5 is refused', () => {
  for (const bad of [0, 6, 1.5]) assert.throws(() => podCidr(45, bad), /node index must be 1\.\.5/);
});

test("the files name only the node's own directory", () => {
  const p = { dir: '/tmp/n1', cniBinDir: '/cache/cni', runc: '/usr/sbin/runc' };
  const toml = containerdConfig(p, 'registry.k8s.io/pause:3.10.1');
  for (const line of toml.split('\n').filter((l) => /(root|state|address|conf_dir) = "\//.test(l)))
    assert.match(line, /"\/tmp\/n1\//, line);
  assert.match(toml, /restrict_oom_score_adj = true/);
  assert.match(toml, /sandbox = "registry\.k8s\.io\/pause:3\.10\.1"/);
  const cni = JSON.parse(cniConflist(p, podCidr(45, 2))) as {
    plugins: Array<{ ipam?: { ranges: Array<Array<{ subnet: string }>>; dataDir: string } }>;
  };
  assert.equal(cni.plugins[0]!.ipam!.ranges[0]![0]!.subnet, '198.18.45.96/27');
  assert.equal(cni.plugins[0]!.ipam!.dataDir, '/tmp/n1/cni/ipam');
  const kubelet = parse(
    kubeletConfig(p, {
      caFile: 'ca',
      tlsCert: 'c',
      tlsKey: 'k',
      clusterDns: '198.18.45.254',
      clusterDomain: 'cluster.local',
      cgroupRoot: '/rok45-node-1',
      resolvConf: '/tmp/n1/resolv.conf',
      address: nodeAddress(45, 1),
    }),
  ) as Record<string, unknown>;
  assert.equal(kubelet['containerRuntimeEndpoint'], 'unix:///tmp/n1/containerd/containerd.sock');
  assert.equal(kubelet['failCgroupV1'], false);
  assert.equal(kubelet['readOnlyPort'], 0);
  const proxy = parse(kubeProxyConfig({ kubeconfig: 'kc', hostname: 'node-1', clusterCidr: '198.18.45.0/24' })) as {
    conntrack: Record<string, unknown>;
  };
  assert.deepEqual(proxy.conntrack, { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' });
});
