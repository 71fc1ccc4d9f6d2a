// The cluster DNS (test/k8s/cluster-dns.ts: the real CoreDNS) on a real cluster (one real node):
// a pod resolves a Service's short and namespaced names to its ClusterIP and a headless Service's
// `<hostname>.<subdomain>` to the pod's IP, through the resolv.conf the kubelet writes for
// ClusterFirst pods; a name outside cluster.local does not resolve; a dnsPolicy Default pod does
// not get the cluster DNS. The pure parts (the Corefile, the RBAC) are checked without a cluster.
// Skipped (with the reason) where a real cluster cannot run here.
// Network: subnet 78 (nodes and pods 198.18.78.x, Services 198.19.78.x, CoreDNS on 198.18.78.254:53).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import { parse } from 'yaml';
import { until } from '../support/until.ts';
import { isBuilt } from './build.ts';
import { corefile, corednsRbac } from './cluster-dns.ts';
import { corednsBinary, isCorednsBuilt } from './coredns-build.ts';
import { imagesMissing } from './images.ts';
import { nodePartsMissing } from './node-build.ts';
import { unavailableReason } from './pod-network.ts';
import { startRealCluster, type RealCluster } from './real-cluster.ts';

const SUBNET = 78;
const NS = 'dns-test';
type Json = Record<string, unknown>;

function clusterSkip(): string | false {
  if (!isCorednsBuilt()) return `CoreDNS not built at ${corednsBinary()} (run: node test/k8s/cli.ts build)`;
  return (
    unavailableReason() ??
    nodePartsMissing() ??
    imagesMissing(['pause', 'redis-7.2']) ??
    (isBuilt() ? false : 'the control plane is not built (npm run cluster:build)')
  );
}

describe('cluster DNS, the pure parts', () => {
  test('the Corefile serves the cluster domain and reverse zones from the API on one address, and forwards nothing', () => {
    const conf = corefile({
      address: '198.18.78.254',
      kubeconfig: '/x/coredns.kubeconfig',
      clusterDomain: 'cluster.local',
      queryLog: false,
    });
    assert.match(conf, /^cluster\.local:53 in-addr\.arpa:53 ip6\.arpa:53 \{\n {4}bind 198\.18\.78\.254\n/);
    assert.match(
      conf,
      / {4}kubernetes cluster\.local in-addr\.arpa ip6\.arpa \{\n {8}kubeconfig \/x\/coredns\.kubeconfig local\n/,
    );
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

describe('cluster DNS on a real cluster', { skip: clusterSkip() }, () => {
  let rc: RealCluster;
  let dns: string;
  const kubectl = (args: string[], input?: string) => rc.kubectl([...args], input);
  const apply = (obj: Json) => kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify(obj));
  const shell = (name: string, script: string, extra: Json = {}) =>
    apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: 'redis:7.2', command: ['sh', '-c', script] }],
        ...extra,
      },
    });
  const finished = async (name: string) => {
    await kubectl(['wait', '-n', NS, '--for=jsonpath={.status.phase}=Succeeded', '--timeout=60s', `pod/${name}`]);
    return kubectl(['logs', '-n', NS, name]);
  };

  before(async () => {
    rc = await startRealCluster({ subnet: SUBNET, nodes: 1, images: ['redis-7.2'], install: false });
    dns = rc.network.serviceAddress;
    await kubectl(['create', 'namespace', NS]);
    await until('the default ServiceAccount', () =>
      kubectl(['get', 'serviceaccount', 'default', '-n', NS]).catch(() => undefined),
    );
  });
  after(() => rc?.stop());

  test("a pod resolves Services to ClusterIPs and headless pod names to pod IPs through the kubelet's resolv.conf; names outside the cluster domain do not resolve", async () => {
    const selector = { app: 'dns-web' };
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { selector, ports: [{ port: 80 }] },
    });
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web-headless' },
      spec: { clusterIP: 'None', selector, ports: [{ port: 80 }] },
    });
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web-0', labels: selector },
      spec: {
        hostname: 'web-0',
        subdomain: 'web-headless',
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: 'redis:7.2', command: ['sleep', '3600'] }],
      },
    });
    await kubectl(['wait', '-n', NS, '--for=condition=Ready', '--timeout=60s', 'pod/web-0']);
    const podIP = (await kubectl(['get', 'pod', 'web-0', '-n', NS, '-o', 'jsonpath={.status.podIP}'])).trim();
    const clusterIP = (await kubectl(['get', 'service', 'web', '-n', NS, '-o', 'jsonpath={.spec.clusterIP}'])).trim();
    assert.match(clusterIP, new RegExp(`^198\\.19\\.${SUBNET}\\.\\d+$`));

    // CoreDNS learns of the slice through its own watch, a moment after the API has it: ask it
    // directly until it answers, so the pod's lookups below test the pod's resolver, not that race.
    const direct = new Resolver({ timeout: 1000, tries: 1 });
    direct.setServers([dns]);
    await until('CoreDNS answers for web-0.web-headless', async () =>
      (await direct.resolve4(`web-0.web-headless.${NS}.svc.cluster.local`).catch((): string[] => [])).includes(podIP)
        ? true
        : undefined,
    );

    const names = [
      'web',
      `web.${NS}.svc`,
      'web-0.web-headless',
      `web-0.web-headless.${NS}.svc.cluster.local`,
      'kubernetes.default',
      'outside.example.com',
    ];
    await shell(
      'resolver',
      `cat /etc/resolv.conf; for n in ${names.join(' ')}; do echo "answer $n $(getent hosts $n | cut -d' ' -f1)"; done`,
    );
    const log = await finished('resolver');
    const answer = (n: string) => new RegExp(`^answer ${n.replace(/\./g, '\\.')} (\\S*)`, 'm').exec(log)?.[1] ?? '';
    assert.match(
      log,
      new RegExp(`^search ${NS}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local$`, 'm'),
      log,
    );
    assert.match(log, new RegExp(`^nameserver ${dns.replace(/\./g, '\\.')}$`, 'm'), log);
    assert.match(log, /^options ndots:5$/m, log);
    assert.equal(answer('web'), clusterIP, log);
    assert.equal(answer(`web.${NS}.svc`), clusterIP, log);
    assert.equal(answer('web-0.web-headless'), podIP, log);
    assert.equal(answer(`web-0.web-headless.${NS}.svc.cluster.local`), podIP, log);
    assert.equal(answer('kubernetes.default'), `198.19.${SUBNET}.1`, log);
    assert.equal(answer('outside.example.com'), '', `a name outside cluster.local does not resolve:\n${log}`);
  });

  test('CoreDNS answers the cluster domain only: REFUSED outside it, NXDOMAIN for a reverse name not of the cluster', async () => {
    const r = new Resolver({ timeout: 2000, tries: 1 });
    r.setServers([dns]);
    assert.deepEqual(await r.resolve4(`kubernetes.default.svc.cluster.local`), [`198.19.${SUBNET}.1`]);
    await assert.rejects(r.resolve4('example.com'), (err: NodeJS.ErrnoException) => err.code === 'EREFUSED');
    await assert.rejects(r.reverse('192.0.2.1'), (err: NodeJS.ErrnoException) => err.code === 'ENOTFOUND');
  });

  test("a dnsPolicy Default pod gets its node's resolv.conf, not the cluster DNS", async () => {
    await shell('host-dns', 'cat /etc/resolv.conf', { dnsPolicy: 'Default' });
    const log = await finished('host-dns');
    assert.doesNotMatch(log, new RegExp(dns.replace(/\./g, '\\.')), log);
    assert.doesNotMatch(log, /svc\.cluster\.local/, log);
  });
});
