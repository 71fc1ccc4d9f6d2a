// The local cluster's DNS, as a real cluster has it: the real CoreDNS (test/k8s/coredns-build.ts)
// with the `kubernetes` plugin serving cluster.local from the real API server, reached by pods
// through the resolv.conf the kubelet writes for them (real-node.ts gives it the address).
//
//   const dns = await startClusterDns({ controlPlane: cp, address: network.serviceAddress, dir });
//   // in a pod: getent hosts my-svc  ->  its ClusterIP;  web-0.web-headless -> the pod's IP
//   await dns.stop();
//
// Invariants:
// - CoreDNS reads the API as ServiceAccount kube-system/coredns bound to a ClusterRole of exactly
//   what its `kubernetes` plugin lists and watches (services, endpointslices, namespaces; pods
//   only with `pods verified`, which is not used), so RBAC is the real server's.
// - It serves cluster.local and the reverse zones only, on <address>:53 (UDP and TCP), and has
//   no `forward`: a name outside them is REFUSED (a reverse name not of the cluster is NXDOMAIN),
//   so no query ever leaves the machine.
// - It runs under `setpriv --pdeathsig KILL` in its own process group; startClusterDns() returns
//   once it answers for the `kubernetes` Service (its informers have synced), stop() is
//   idempotent and leaves no process.
import { Resolver } from 'node:dns/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { spawnGroup } from '../support/processes.ts';
import { tailLines } from '../support/host.ts';
import { CLUSTER_DOMAIN, type ControlPlane } from './control-plane.ts';
import { buildCoredns } from './coredns-build.ts';

export const DNS_NAMESPACE = 'kube-system';
export const DNS_SERVICE_ACCOUNT = 'coredns';
export const DNS_CLUSTER_ROLE = 'system:coredns';
/** resolv.conf names a server without a port: 53 is the only one pods can use. */
export const DNS_PORT = 53;

export interface ClusterDnsOptions {
  controlPlane: Pick<ControlPlane, 'kubectl' | 'tokenFor' | 'kubeconfigFor'>;
  /** An address on the pod bridge that pod namespaces reach (the network's serviceAddress). */
  address: string;
  /** Corefile, kubeconfig and coredns.log go here. */
  dir: string;
  clusterDomain?: string;
  /** Log every query (CoreDNS's `log` plugin) to coredns.log; also CLUSTER_DNS_LOG=1. */
  queryLog?: boolean;
  onProgress?: (line: string) => void;
}

export interface ClusterDns {
  /** What pods' resolv.conf names (port 53). */
  readonly address: string;
  readonly clusterDomain: string;
  readonly logFile: string;
  logTail(lines?: number): string[];
  stop(): Promise<void>;
}

/**
 * The RBAC kubeadm gives CoreDNS, less what this version no longer reads (endpoints) or is not configured to (pods).
 */
export function corednsRbac(): string {
  const docs = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DNS_SERVICE_ACCOUNT, namespace: DNS_NAMESPACE } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: DNS_CLUSTER_ROLE },
      rules: [
        { apiGroups: [''], resources: ['services', 'namespaces'], verbs: ['list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: DNS_CLUSTER_ROLE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: DNS_CLUSTER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: DNS_SERVICE_ACCOUNT, namespace: DNS_NAMESPACE }],
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

/**
 * kubeadm's Corefile (cmd/kubeadm/app/phases/addons/dns) for this machine: no `forward` (and so
 * no `loop`), no `cache` (kubeadm disables it for the cluster domain anyway), no health, ready,
 * prometheus or reload endpoints (nothing probes or scrapes them here); bound to one address.
 */
export function corefile(o: { address: string; kubeconfig: string; clusterDomain: string; queryLog: boolean }): string {
  const zones = [o.clusterDomain, 'in-addr.arpa', 'ip6.arpa'];
  return [
    `${zones.map((z) => `${z}:${DNS_PORT}`).join(' ')} {`,
    `    bind ${o.address}`,
    '    errors',
    ...(o.queryLog ? ['    log'] : []),
    `    kubernetes ${zones.join(' ')} {`,
    `        kubeconfig ${o.kubeconfig} local`,
    '        pods insecure',
    '        ttl 30',
    '    }',
    '    loadbalance',
    '}',
    '',
  ].join('\n');
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startClusterDns(options: ClusterDnsOptions): Promise<ClusterDns> {
  const log = options.onProgress ?? (() => undefined);
  const clusterDomain = options.clusterDomain ?? CLUSTER_DOMAIN;
  const cp = options.controlPlane;
  const bin = await buildCoredns(log);
  mkdirSync(options.dir, { recursive: true });
  await cp.kubectl(['apply', '-f', '-'], corednsRbac());
  const kubeconfig = cp.kubeconfigFor(
    `system:serviceaccount:${DNS_NAMESPACE}:${DNS_SERVICE_ACCOUNT}`,
    await cp.tokenFor(DNS_NAMESPACE, DNS_SERVICE_ACCOUNT),
  );
  const conf = path.join(options.dir, 'Corefile');
  const queryLog = options.queryLog === true || process.env['CLUSTER_DNS_LOG'] === '1';
  writeFileSync(conf, corefile({ address: options.address, kubeconfig, clusterDomain, queryLog }));
  const logFile = path.join(options.dir, 'coredns.log');
  const group = spawnGroup([bin, '-conf', conf], {
    cwd: options.dir,
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
    logFile,
  });

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      group.signal('SIGTERM');
      const done = await Promise.race([group.exited.then(() => true), sleep(5000).then(() => false)]);
      if (!done) {
        group.signal('SIGKILL');
        await group.exited;
      }
    })();
    return stopping;
  };

  try {
    // Answering for the `kubernetes` Service proves the listener, the credentials and the
    // plugin's synced informers at once (before it syncs, the plugin answers SERVFAIL).
    const want = (
      await cp.kubectl(['get', 'service', 'kubernetes', '-n', 'default', '-o', 'jsonpath={.spec.clusterIP}'])
    ).trim();
    const resolver = new Resolver({ timeout: 500, tries: 1 });
    resolver.setServers([options.address]);
    const name = `kubernetes.default.svc.${clusterDomain}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (!group.alive()) throw new Error(`coredns exited:\n${tailLines(logFile, 30).join('\n')}`);
      const got = await resolver.resolve4(name).catch((): string[] => []);
      if (got.includes(want)) break;
      if (Date.now() > deadline)
        throw new Error(
          `coredns did not answer ${name} with ${want} within 60 s:\n${tailLines(logFile, 30).join('\n')}`,
        );
      await sleep(200);
    }
    log(`cluster DNS: CoreDNS on ${options.address}:${DNS_PORT} serving ${clusterDomain}`);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address: options.address, clusterDomain, logFile, logTail: (lines = 30) => tailLines(logFile, lines), stop };
}
