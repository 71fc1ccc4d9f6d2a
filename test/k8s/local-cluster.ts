// The operator on a REAL Kubernetes control plane on this machine, composed:
//   control plane (etcd, kube-apiserver, controller-manager, scheduler; built from source)
//   + pod network (a bridge, a netns per pod) + cluster DNS (the real CoreDNS on the bridge, so
//     pods resolve Service and headless pod names) + node agent (kubelet stand-in, real API client)
//   + userspace service proxy (ClusterIPs routed by the real EndpointSlices)
//   + manifests/ installed with the real kubectl (all but the Deployment), then any `extraCrds`
//     (Established before Metacontroller starts) and `decoratorControllers` YAMLs
//   + the hook process behind the `redis-operator` Service (an EndpointSlice of ours points the
//     Service at it, as the Deployment's pods would be) + Metacontroller (the real binary when
//     METACONTROLLER_BIN names one, else our stand-in with its own ServiceAccount: one runner per
//     CompositeController, then one per DecoratorController)
//   + N sidecar processes with the operator ServiceAccount's tokens, through a fault proxy.
//
//   const lc = await startLocalCluster({ subnet: 45 });
//   lc.kubeconfig;  lc.kubectl(['get', 'redis']);  await lc.stop();
//
// Invariants: every address is 127.0.0.0/8 or this cluster's own 198.18.<subnet>/198.19.<subnet>
// ranges on its own bridge and namespaces; stop() tears down everything it started (processes,
// namespaces, bridge, addresses) in reverse order, also after a failed start.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino, type Logger } from 'pino';
import { pollUntil } from '../support/cluster-views.ts';
import { httpClient, type HttpKubeClient, type ResourceRef } from '../support/kube-client/index.ts';
import {
  loadCompositeController,
  loadDecoratorController,
  startDecoratorController,
  startMetacontroller,
  type DecoratorControllerHandle,
  type Metacontroller,
} from '../cluster/metacontroller/index.ts';
import { startClusterDns, type ClusterDns } from './cluster-dns.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { startFaultProxy, type FaultProxy } from './fault-proxy.ts';
import { metacontrollerBin, realMetacontrollerUnavailable, startRealMetacontroller } from './metacontroller-real.ts';
import { startNodeAgent, type NodeAgent } from './node-agent/index.ts';
import { installOperator, OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, type InstallWith } from './operator.ts';
import { createSidecar, LEASE_NAME, startHook, waitForSidecars, type HookProcess, type SidecarProcess } from './operator-processes.ts';
import { createPodNetwork, type PodNetwork } from './pod-network.ts';
import { kubeClientSource } from './service-source.ts';
import { startServiceProxy, type ServiceProxy } from './service-proxy.ts';

export interface LocalClusterOptions {
  /** Third octet of this cluster's ranges: pods 198.18.N.0/24, Services 198.19.N.0/24. One per test file. */
  subnet: number;
  /** Nodes the node agent registers (default 3, so the pods' preferred anti-affinity can spread them). */
  nodes?: number;
  /** Sidecar instances on one Lease (default 2: sidecar-a, sidecar-b). */
  sidecars?: number;
  sidecarEnv?: Record<string, string>;
  /** Install the chart with Helm instead of manifests/ with kubectl (operator.ts). */
  install?: InstallWith;
  sidecarLogLevel?: string;
  /** Wait for every sidecar's /readyz and a Lease holder (default true). */
  waitForSidecars?: boolean;
  /** The stand-in Metacontroller's resync override (ms). */
  resyncPeriodMs?: number;
  /** Default: real when a binary is there (METACONTROLLER_BIN, else ../shared's), else the stand-in. */
  metacontroller?: 'real' | 'stand-in';
  /**
   * DecoratorController YAML files, applied with the real kubectl after manifests/; the stand-in
   * runs one runner for each (the real binary runs whatever the cluster has).
   */
  decoratorControllers?: Array<string | URL>;
  /** CRD YAML files applied with the real kubectl and Established before Metacontroller starts (a decorator's attachment kinds must be served). */
  extraCrds?: string[];
  dataRoot?: string;
  keepData?: boolean;
  logger?: Logger;
  onProgress?: (line: string) => void;
}

export interface LocalCluster {
  readonly subnet: number;
  readonly controlPlane: ControlPlane;
  readonly kubeconfig: string;
  readonly version: string;
  readonly network: PodNetwork;
  /** The cluster DNS every ClusterFirst pod's resolv.conf names (`dns.address`, port 53). */
  readonly dns: ClusterDns;
  readonly agent: NodeAgent;
  readonly client: HttpKubeClient;
  readonly proxy: ServiceProxy;
  readonly faults: FaultProxy;
  readonly hook: HookProcess;
  readonly metacontrollerKind: 'real' | 'stand-in';
  /** The stand-in's handle (undefined when the real Metacontroller runs). */
  readonly metacontroller: Metacontroller | undefined;
  /** The stand-in's DecoratorController runners, in `decoratorControllers` order (empty when the real Metacontroller runs). */
  readonly decorators: readonly DecoratorControllerHandle[];
  readonly sidecars: readonly SidecarProcess[];
  readonly dataRoot: string;
  readonly logDir: string;
  /** What `kubectl apply -k manifests/` has that was not applied (the Deployment). */
  readonly skipped: readonly string[];
  kubectl(args: string[], input?: string): Promise<string>;
  /** A discovered resource, informed (cached) before it is returned. */
  ref(apiVersion: string, plural: string): Promise<ResourceRef>;
  leader(): string | undefined;
  stop(): Promise<void>;
}

export const HOOK_PORT = 8080;

export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const { subnet } = options;
  const log = options.onProgress ?? (() => undefined);
  const logger = options.logger ?? pino({ level: 'silent' });
  const ownsRoot = options.dataRoot === undefined;
  const dataRoot = options.dataRoot ?? mkdtempSync(path.join(os.tmpdir(), `redis-local-${subnet}-`));
  const keep = options.keepData === true || process.env['KEEP_CLUSTER_DATA'] === '1';
  const logDir = path.join(dataRoot, 'logs');
  mkdirSync(logDir, { recursive: true });
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      for (const c of cleanups.reverse())
        await Promise.resolve()
          .then(c)
          .catch(() => undefined);
      if (ownsRoot && !keep) rmSync(dataRoot, { recursive: true, force: true });
    })();
    return stopping;
  };

  try {
    const cp = await startControlPlane({ subnet, dir: path.join(dataRoot, 'control-plane'), keepData: true, onProgress: log });
    cleanups.push(() => cp.stop());
    const network = await createPodNetwork({ subnet });
    cleanups.push(() => network.destroy());
    const dns = await startClusterDns({ controlPlane: cp, address: network.serviceAddress, dir: path.join(dataRoot, 'dns'), onProgress: log });
    cleanups.push(() => dns.stop());
    const agent = await startNodeAgent({
      controlPlane: cp,
      network,
      dns: { nameserver: dns.address, clusterDomain: dns.clusterDomain },
      dataDir: path.join(dataRoot, 'nodes'),
      nodes: options.nodes ?? 3,
      logger: logger.child({ component: 'node-agent' }),
    });
    cleanups.push(() => agent.stop());
    log(`node agent: ${agent.nodes.map((n) => n.name).join(', ')}`);
    const installed = await installOperator(cp, log, options.install);
    for (const crd of (options.extraCrds ?? []).map((f) => path.resolve(f))) {
      await cp.kubectl(['apply', '-f', crd]);
      await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', crd]);
      log(`installed CRDs of ${crd}`);
    }
    const decoratorFiles = (options.decoratorControllers ?? []).map((f) => path.resolve(f instanceof URL ? fileURLToPath(f) : f));
    if (decoratorFiles.length > 0) {
      // Installed with Metacontroller's other CRDs, but installOperator waits only for the CompositeController's.
      await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/decoratorcontrollers.metacontroller.k8s.io']);
      for (const file of decoratorFiles) await cp.kubectl(['apply', '-f', file]);
      log(`applied DecoratorControllers: ${decoratorFiles.join(', ')}`);
    }

    const client = httpClient(cp.adminKubeconfig);
    cleanups.push(() => client.close());
    const refs = new Map<string, ResourceRef>();
    const ref = async (apiVersion: string, plural: string) => {
      const key = `${apiVersion}/${plural}`;
      let r = refs.get(key);
      if (!r) {
        r = await client.resource(apiVersion, plural);
        await client.inform(r);
        refs.set(key, r);
      }
      return r;
    };
    const services = await ref('v1', 'services');
    const slices = await ref('discovery.k8s.io/v1', 'endpointslices');
    const leases = await ref('coordination.k8s.io/v1', 'leases');
    const proxy = await startServiceProxy({ source: kubeClientSource(client, services, slices), device: network.bridge, cidrPrefix: `198.19.${subnet}.` });
    cleanups.push(() => proxy.stop());

    // The hook process plays the Deployment's pods behind the `redis-operator` Service.
    const hook = await startHook(logDir, network.serviceAddress, HOOK_PORT);
    cleanups.push(async () => {
      hook.group.signal('SIGKILL');
      await hook.group.exited;
    });
    await client.create(slices, {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'redis-operator-hook-process',
        namespace: OPERATOR_NAMESPACE,
        labels: { 'kubernetes.io/service-name': 'redis-operator', 'endpointslice.kubernetes.io/managed-by': 'local-cluster.redis-operator.test' },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [network.serviceAddress], conditions: { ready: true } }],
      ports: [{ name: 'http', port: HOOK_PORT, protocol: 'TCP' }],
    });
    const hookAddress = await pollUntil(
      () => proxy.address(OPERATOR_NAMESPACE, 'redis-operator', 80),
      30_000,
      'the redis-operator Service routed by the service proxy',
      () => cp.logTail('kube-controller-manager', 10).join('\n'),
    );
    const hookBaseUrl = `http://${hookAddress}`;

    const realBin = metacontrollerBin();
    const wantReal = options.metacontroller ?? (realBin ? 'real' : 'stand-in');
    let metacontroller: Metacontroller | undefined;
    const decorators: DecoratorControllerHandle[] = [];
    if (wantReal === 'real') {
      const bin = realBin;
      if (!bin) throw new Error(`metacontroller: real needs a binary: ${realMetacontrollerUnavailable(bin)}`);
      const real = await startRealMetacontroller({
        bin,
        kubeconfig: installed.metacontrollerKubeconfig,
        logFile: path.join(logDir, 'metacontroller.log'),
        hosts: { 'redis-operator.redis-operator': hookAddress.split(':')[0]! },
      });
      cleanups.push(() => real.stop());
      log(`Metacontroller: the real binary ${bin}`);
    } else {
      metacontroller = startMetacontroller({
        kubeconfig: installed.metacontrollerKubeconfig,
        controller: loadCompositeController(),
        hookBaseUrl,
        logger: logger.child({ component: 'metacontroller' }),
        ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
      });
      const mc = metacontroller;
      cleanups.push(() => mc.stop());
      // The stand-in runs one CompositeController per instance: a second one for RedisBackups and
      // a third for RedisClusters (the real binary runs every CompositeController the cluster has).
      const backups = startMetacontroller({
        kubeconfig: installed.metacontrollerKubeconfig,
        controller: loadCompositeController(new URL('../../metacontroller/redisbackup-controller.yaml', import.meta.url)),
        hookBaseUrl,
        logger: logger.child({ component: 'metacontroller-backups' }),
        ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
      });
      cleanups.push(() => backups.stop());
      // And a third for RedisClusters.
      const clusters = startMetacontroller({
        kubeconfig: installed.metacontrollerKubeconfig,
        controller: loadCompositeController(new URL('../../metacontroller/rediscluster-controller.yaml', import.meta.url)),
        hookBaseUrl,
        logger: logger.child({ component: 'metacontroller-clusters' }),
        ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
      });
      cleanups.push(() => clusters.stop());
      await Promise.all([mc.ready, backups.ready, clusters.ready]);
      for (const file of decoratorFiles) {
        const controller = loadDecoratorController(file);
        const decorator = startDecoratorController({
          kubeconfig: installed.metacontrollerKubeconfig,
          controller,
          hookBaseUrl,
          logger: logger.child({ component: `metacontroller-decorator-${controller.metadata.name}` }),
          ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
        });
        decorators.push(decorator);
        cleanups.push(() => decorator.stop());
        await decorator.ready;
      }
      log('Metacontroller: the stand-in (test/cluster/metacontroller), as ServiceAccount metacontroller/metacontroller');
    }

    const faults = await startFaultProxy({ server: cp.server, caFile: path.join(cp.dir, 'pki/ca.crt') });
    cleanups.push(() => faults.close());
    const sidecars: SidecarProcess[] = [];
    for (let i = 0; i < (options.sidecars ?? 2); i++) {
      const name = `sidecar-${String.fromCharCode(97 + i)}`;
      const token = await cp.tokenFor(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT);
      faults.register(name, token);
      const kubeconfig = cp.kubeconfigFor(`${name}.system:serviceaccount:${OPERATOR_NAMESPACE}:${OPERATOR_SERVICE_ACCOUNT}`, token, faults.url);
      const s = await createSidecar({
        name,
        kubeconfig,
        sourceIp: network.hostAddresses[i]!,
        logDir,
        ...(options.sidecarLogLevel ? { logLevel: options.sidecarLogLevel } : {}),
        ...(options.sidecarEnv ? { env: options.sidecarEnv } : {}),
      });
      sidecars.push(s);
      cleanups.push(() => s.kill('SIGKILL'));
    }
    const leader = () => {
      const holder = (client.get(leases, OPERATOR_NAMESPACE, LEASE_NAME)?.['spec'] as { holderIdentity?: string } | undefined)?.holderIdentity;
      return holder ? holder : undefined;
    };
    for (const s of sidecars) s.launch();
    if (sidecars.length > 0 && options.waitForSidecars !== false) await waitForSidecars(sidecars, leader);
    log(`operator running: hook ${hook.url}, ${sidecars.length} sidecars, Lease holder ${leader() ?? 'none yet'}`);

    return {
      subnet,
      controlPlane: cp,
      kubeconfig: cp.adminKubeconfig,
      version: cp.version,
      network,
      dns,
      agent,
      client,
      proxy,
      faults,
      hook,
      metacontrollerKind: wantReal,
      metacontroller,
      decorators,
      sidecars,
      dataRoot,
      logDir,
      skipped: installed.skipped,
      kubectl: (args, input) => cp.kubectl(args, input),
      ref,
      leader,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
