// The cluster DNS (test/k8s/cluster-dns.ts: the real CoreDNS) on a REAL control plane with the
// pod network and the node agent: pods resolve a Service's short and namespaced names to its
// ClusterIP and a headless Service's `<hostname>.<subdomain>` to the pod's IP, through the
// resolv.conf the node agent writes for ClusterFirst pods (exec probes see it too); a name outside
// cluster.local does not resolve; a dnsPolicy Default pod keeps the host's resolver. The pure
// parts (resolv.conf per policy, the Corefile, the RBAC) are checked without a cluster.
// Skipped (with the reason) when the binaries are not built or the pod network is unavailable.
// Network: control plane and pod network on subnet 78 (pods 198.18.78.x, Services 198.19.78.x,
// CoreDNS on 198.18.78.254:53, the node on 127.0.78.1).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { corefile, corednsRbac, startClusterDns, type ClusterDns } from './cluster-dns.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { corednsBinary, isCorednsBuilt } from './coredns-build.ts';
import { KubeClient, type Json } from './node-agent/api-client.ts';
import { startNodeAgent, type NodeAgent } from './node-agent/index.ts';
import { podResolvConf } from './node-agent/sandbox.ts';
import { skipReason, until, type Pod } from './node-agent/testing.ts';
import { createPodNetwork, NETNS_ETC_DIR, unavailableReason, type PodNetwork } from './pod-network.ts';

const SUBNET = 78;
const NS = 'dns-test';
const DNS = { nameserver: `198.18.${SUBNET}.254`, clusterDomain: 'cluster.local' };

function clusterSkip(): string | false {
  const base = skipReason();
  if (base) return base;
  const net = unavailableReason();
  if (net) return net;
  if (!isCorednsBuilt()) return `CoreDNS not built at ${corednsBinary()} (run: node test/k8s/cli.ts build)`;
  return false;
}

const podOf = (spec: V1PodSpec | Json, namespace = 'ns1'): V1Pod => ({ metadata: { name: 'p', namespace }, spec: spec as V1PodSpec });

describe('cluster DNS, the pure parts', () => {
  test('a ClusterFirst pod (the default) gets the cluster DNS, its namespace first in the search path, ndots:5', () => {
    const want = 'search ns1.svc.cluster.local svc.cluster.local cluster.local\nnameserver 198.18.78.254\noptions ndots:5\n';
    assert.equal(podResolvConf(podOf({ containers: [] }), DNS), want);
    assert.equal(podResolvConf(podOf({ dnsPolicy: 'ClusterFirst', containers: [] }), DNS), want);
    assert.equal(podResolvConf(podOf({ dnsPolicy: 'ClusterFirstWithHostNet', containers: [] }), DNS), want, 'the same for a pod off the host network');
    assert.match(
      String(podResolvConf(podOf({ containers: [] }, 'other'), { ...DNS, clusterDomain: 'example.test' })),
      /^search other\.svc\.example\.test svc\.example\.test example\.test\n/,
    );
  });

  test('dnsPolicy Default keeps the host resolv.conf; None and dnsConfig are refused, not silently ignored', () => {
    assert.equal(podResolvConf(podOf({ dnsPolicy: 'Default', containers: [] }), DNS), undefined);
    assert.deepEqual(podResolvConf(podOf({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.2.3.4'] }, containers: [] }), DNS), {
      error: 'dnsPolicy None is not modelled by the node agent',
    });
    assert.deepEqual(podResolvConf(podOf({ dnsConfig: { options: [{ name: 'ndots', value: '2' }] }, containers: [] }), DNS), {
      error: 'dnsConfig is not modelled by the node agent',
    });
  });

  test('the Corefile serves the cluster domain and reverse zones from the API on one address, and forwards nothing', () => {
    const conf = corefile({ address: '198.18.78.254', kubeconfig: '/x/coredns.kubeconfig', clusterDomain: 'cluster.local', queryLog: false });
    assert.match(conf, /^cluster\.local:53 in-addr\.arpa:53 ip6\.arpa:53 \{\n {4}bind 198\.18\.78\.254\n/);
    assert.match(conf, / {4}kubernetes cluster\.local in-addr\.arpa ip6\.arpa \{\n {8}kubeconfig \/x\/coredns\.kubeconfig local\n/);
    assert.doesNotMatch(conf, /forward|fallthrough|\blog\b/);
    assert.match(corefile({ address: 'a', kubeconfig: 'k', clusterDomain: 'c', queryLog: true }), /\n {4}log\n/);
  });

  test("CoreDNS's ClusterRole is list/watch of services, namespaces and endpointslices, nothing more", () => {
    const role = corednsRbac()
      .split('---\n')
      .map((d) => parse(d) as Json)
      .find((d) => d['kind'] === 'ClusterRole');
    assert.deepEqual(role?.['rules'], [
      { apiGroups: [''], resources: ['services', 'namespaces'], verbs: ['list', 'watch'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
    ]);
  });
});

describe('cluster DNS on a real control plane', { skip: clusterSkip() }, () => {
  let cp: ControlPlane;
  let network: PodNetwork;
  let dns: ClusterDns;
  let agent: NodeAgent;
  let admin: KubeClient;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cluster-dns-'));

  const create = (kind: string, body: Json) => admin.request('POST', `/api/v1/namespaces/${NS}/${kind}`, { body: { apiVersion: 'v1', ...body } });
  const pod = (name: string) => admin.get<Pod>(`/api/v1/namespaces/${NS}/pods/${name}`);
  const finished = (name: string) => until(`${name} Succeeded`, async () => ((await pod(name))?.status?.['phase'] === 'Succeeded' ? true : undefined), 60_000);
  const shell = (name: string, script: string, extra: Json = {}) =>
    create('pods', {
      kind: 'Pod',
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', script] }],
        ...extra,
      },
    });

  before(async () => {
    cp = await startControlPlane({ subnet: SUBNET });
    network = await createPodNetwork({ subnet: SUBNET });
    dns = await startClusterDns({ controlPlane: cp, address: network.serviceAddress, dir: path.join(dir, 'dns') });
    agent = await startNodeAgent({
      controlPlane: cp,
      network,
      dns: { nameserver: dns.address, clusterDomain: dns.clusterDomain },
      dataDir: path.join(dir, 'nodes'),
      nodes: ['dns-1'],
      provisioner: false,
    });
    admin = new KubeClient(cp.adminKubeconfig);
    await admin.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });
    await until('the default ServiceAccount', () => admin.get(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
  });

  after(async () => {
    admin?.close();
    await agent?.stop();
    await dns?.stop();
    await network?.destroy();
    await cp?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('pods resolve Services to ClusterIPs and headless pod names to pod IPs; exec probes see the resolv.conf; the file goes with the pod', async () => {
    const selector = { app: 'dns-web' };
    await create('services', { kind: 'Service', metadata: { name: 'web' }, spec: { selector, ports: [{ port: 80 }] } });
    await create('services', { kind: 'Service', metadata: { name: 'web-headless' }, spec: { clusterIP: 'None', selector, ports: [{ port: 80 }] } });
    await create('pods', {
      kind: 'Pod',
      metadata: { name: 'web-0', labels: selector },
      spec: {
        hostname: 'web-0',
        subdomain: 'web-headless',
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image: 'busybox',
            command: ['sleep', '3600'],
            // Ready (and so in the headless Service's EndpointSlice) only if the probe, a process of
            // its own, sees the pod's resolv.conf.
            readinessProbe: { exec: { command: ['grep', '-qx', `nameserver ${dns.address}`, '/etc/resolv.conf'] }, periodSeconds: 1 },
          },
        ],
      },
    });
    const sandboxIP = await until('web-0 has an IP', async () => (await pod('web-0'))?.status?.['podIP'] as string | undefined);
    const webNetns = network.netnsOf(sandboxIP) ?? '';
    const written = path.join(NETNS_ETC_DIR, webNetns, 'resolv.conf');
    assert.equal(
      existsSync(written) ? readFileSync(written, 'utf8') : `no ${written}`,
      `search ${NS}.svc.cluster.local svc.cluster.local cluster.local\nnameserver ${dns.address}\noptions ndots:5\n`,
      "the node agent writes the pod's resolv.conf into its sandbox (createSandbox is given the pod)",
    );
    const web = await until('web-0 Ready', async () => {
      const p = await pod('web-0');
      return ((p?.status?.['conditions'] ?? []) as Json[]).some((c) => c['type'] === 'Ready' && c['status'] === 'True') ? p : undefined;
    });
    const podIP = String(web.status?.['podIP']);
    const clusterIP = String((await admin.get<{ spec: Json }>(`/api/v1/namespaces/${NS}/services/web`))?.spec['clusterIP']);
    assert.match(clusterIP, new RegExp(`^198\\.19\\.${SUBNET}\\.\\d+$`));
    await until('the headless EndpointSlice names web-0', async () => {
      const list = await admin.get<{ items: Array<{ endpoints?: Json[] }> }>(`/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`, {
        labelSelector: 'kubernetes.io/service-name=web-headless',
      });
      return list?.items.some((s) => (s.endpoints ?? []).some((e) => e['hostname'] === 'web-0')) ? true : undefined;
    });

    // CoreDNS learns of the slice through its own watch, a moment after the API has it: ask it
    // directly until it answers, so the pod's lookups below test the pod's resolver, not that race.
    const direct = new Resolver({ timeout: 1000, tries: 1 });
    direct.setServers([dns.address]);
    await until('CoreDNS answers for web-0.web-headless', async () =>
      (await direct.resolve4(`web-0.web-headless.${NS}.svc.cluster.local`).catch((): string[] => [])).includes(podIP) ? true : undefined,
    );

    const names = ['web', `web.${NS}.svc`, 'web-0.web-headless', `web-0.web-headless.${NS}.svc.cluster.local`, 'kubernetes.default', 'outside.example.com'];
    await shell('resolver', `cat /etc/resolv.conf; for n in ${names.join(' ')}; do echo "answer $n $(getent hosts $n | awk '{print $1; exit}')"; done`);
    await finished('resolver');
    const log = agent.podLog(NS, 'resolver');
    const answer = (n: string) => new RegExp(`^answer ${n.replace(/\./g, '\\.')} (\\S*)`, 'm').exec(log)?.[1] ?? '';
    assert.match(log, new RegExp(`^search ${NS}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local$`, 'm'), log);
    assert.match(log, /^options ndots:5$/m, log);
    assert.equal(answer('web'), clusterIP, log);
    assert.equal(answer(`web.${NS}.svc`), clusterIP, log);
    assert.equal(answer('web-0.web-headless'), podIP, log);
    assert.equal(answer(`web-0.web-headless.${NS}.svc.cluster.local`), podIP, log);
    assert.equal(answer('kubernetes.default'), `198.19.${SUBNET}.1`, log);
    assert.equal(answer('outside.example.com'), '', `a name outside cluster.local does not resolve:\n${log}`);

    assert.equal(podIP, sandboxIP);
    await admin.request('DELETE', `/api/v1/namespaces/${NS}/pods/web-0`);
    await until('web-0 gone', async () => ((await pod('web-0')) === undefined ? true : undefined), 30_000);
    await until(`${NETNS_ETC_DIR}/${webNetns} removed`, () => (existsSync(path.join(NETNS_ETC_DIR, webNetns)) ? undefined : true), 10_000);
  });

  test('CoreDNS answers the cluster domain only: REFUSED outside it, NXDOMAIN for a reverse name not of the cluster', async () => {
    const r = new Resolver({ timeout: 2000, tries: 1 });
    r.setServers([dns.address]);
    assert.deepEqual(await r.resolve4(`kubernetes.default.svc.cluster.local`), [`198.19.${SUBNET}.1`]);
    await assert.rejects(r.resolve4('example.com'), (err: NodeJS.ErrnoException) => err.code === 'EREFUSED');
    await assert.rejects(r.reverse('192.0.2.1'), (err: NodeJS.ErrnoException) => err.code === 'ENOTFOUND');
  });

  test('a dnsPolicy Default pod keeps the host resolv.conf', async () => {
    await shell('host-dns', 'cat /etc/resolv.conf', { dnsPolicy: 'Default' });
    await finished('host-dns');
    assert.equal(agent.podLog(NS, 'host-dns'), readFileSync('/etc/resolv.conf', 'utf8'));
  });
});
