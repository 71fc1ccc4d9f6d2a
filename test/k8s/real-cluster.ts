// A whole REAL Kubernetes cluster on this machine, installed as a user installs the operator:
//   control plane (built from source, API server on the bridge's host address)
//   + the real CoreDNS on the bridge + N real nodes (containerd, runc, CNI, kubelet, kube-proxy;
//     real-node.ts), the images of images.ts imported into each
//   + Metacontroller's CRDs and the real Metacontroller as upstream runs it (a StatefulSet), from an image of its own
//   + `kubectl apply -k manifests/` verbatim: the operator's Deployment runs its own image.
//
//   const rc = await startRealCluster({ subnet: 45, nodes: 3 });
//   rc.kubeconfig;  rc.kubectl(['get', 'pods', '-A']);  rc.nodes[0].signal('kubelet', 'SIGKILL');
//   await rc.stop();
//
// Invariants: every address is on loopback or in this cluster's 198.18.<subnet>.0/24 (bridge,
// nodes, pods) and 198.19.<subnet>.0/24 (Services); stop() undoes everything start made, in
// reverse order, also after a failed start. Metacontroller reaches the hook only through the
// `redis-operator` Service: cluster DNS, then kube-proxy's rules on its node.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { startClusterDns } from './cluster-dns.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { startFaultProxy, type FaultProxy } from './fault-proxy.ts';
import { helmCommand, helmInstall } from './helm.ts';
import { ensureImages, imagesMissing, PAUSE_IMAGE } from './images.ts';
import { metacontrollerBin, realMetacontrollerUnavailable } from './metacontroller-real.ts';
import { buildNodeParts, nodePartsMissing } from './node-build.ts';
import { METACONTROLLER_CRDS, missingSharedReason, REPO_ROOT, type InstallWith } from './operator.ts';
import { createPodNetwork, unavailableReason, type PodNetwork } from './pod-network.ts';
import { startRealNode, type RealNode } from './real-node.ts';
import { startVolumeProvisioner } from './volume-provisioner.ts';

export const METACONTROLLER_MANIFEST = fileURLToPath(new URL('./metacontroller.yaml', import.meta.url));

/** What the operator's default install runs: its image, Metacontroller's, redis:7.2 and the exporter. */
// Valkey's image too: the engine move runs on the lane's shared cluster instead of booting its own.
export const DEFAULT_IMAGES = ['operator', 'metacontroller', 'redis-7.2', 'valkey-8.0', 'exporter'];

/** Why a real cluster with the default install cannot run here (one line), or undefined. */
export function realClusterMissing(images: string[] = DEFAULT_IMAGES): string | undefined {
  if (process.platform !== 'linux') return `a real cluster needs Linux (this is ${process.platform})`;
  return (
    unavailableReason() ??
    missingSharedReason() ??
    realMetacontrollerUnavailable(metacontrollerBin()) ??
    nodePartsMissing() ??
    imagesMissing(images)
  );
}

/** What a cluster of this subnet left behind after stop(): namespaces, cgroups, its bridge (none expected). */
export function clusterLeftovers(subnet: number): string[] {
  const bridge = `rok${subnet}`;
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns').filter((n) => n.startsWith(`${bridge}-`)) : [];
  const cgroups = readdirSync('/sys/fs/cgroup', { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .flatMap((d) =>
      readdirSync(`/sys/fs/cgroup/${d.name}`)
        .filter((n) => n.startsWith(`${bridge}-`))
        .map((n) => `cgroup ${d.name}/${n}`),
    );
  return [
    ...netns.map((n) => `netns ${n}`),
    ...cgroups,
    ...(existsSync(`/sys/class/net/${bridge}`) ? [`link ${bridge}`] : []),
  ];
}

export interface RealClusterOptions {
  subnet: number;
  /** How many nodes (1..5); default 3. */
  nodes?: number;
  /**
   * The images (images.ts recipe names) the nodes get (pause always); default: what the operator's default install
   * runs.
   */
  images?: string[];
  /** Install Metacontroller and manifests/ (default true); false leaves a bare cluster. */
  install?: boolean;
  /** How the operator is installed (default: `kubectl apply -k manifests/` verbatim). */
  operator?: OperatorInstall;
  /**
   * A fault proxy (fault-proxy.ts) in front of the API server for every in-cluster client: the
   * `kubernetes` Service's endpoint is the proxy, so rules can name a pod (its bound token names it).
   */
  apiFaults?: boolean;
  /** kube-controller-manager's --node-monitor-grace-period (control-plane.ts). */
  nodeMonitorGracePeriod?: string;
  onProgress?: (line: string) => void;
}

export interface OperatorInstall {
  /**
   * Values for the sidecar container's env, as a user's kustomize patch would set them; a key
   * the Deployment has keeps its place, a new one is appended.
   */
  sidecarEnv?: Record<string, string>;
  /** The chart with the real Helm instead of manifests/ with kubectl (`set`: --set values). */
  helm?: InstallWith;
  /**
   * CRD files applied and Established before Metacontroller starts (the Prometheus Operator's,
   * say): it discovers new APIs only every 20 s, and a DecoratorController's attachments must be served.
   */
  extraCrds?: string[];
}

export interface RealCluster {
  readonly controlPlane: ControlPlane;
  readonly kubeconfig: string;
  readonly nodes: readonly RealNode[];
  /** containerd://<version>, as the nodes report their runtime. */
  readonly runtime: string;
  readonly version: string;
  readonly dataRoot: string;
  readonly network: PodNetwork;
  /** The fault proxy every in-cluster client reaches the API through (with `apiFaults`). */
  readonly faults: FaultProxy | undefined;
  kubectl(args: string[], input?: string): Promise<string>;
  /**
   * The operator's objects applied again as at install (a scenario scaled or edited its Deployment), and rolled out.
   */
  reinstallOperator(): Promise<void>;
  stop(): Promise<void>;
}

export async function startRealCluster(o: RealClusterOptions): Promise<RealCluster> {
  const log = o.onProgress ?? (() => undefined);
  const count = o.nodes ?? 3;
  const dataRoot = mkdtempSync(path.join(os.tmpdir(), 'redis-real-'));
  const cleanups: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch((e: unknown) => log(`cleanup: ${String(e)}`));
    if (process.env['KEEP_CLUSTER_DATA'] !== '1') rmSync(dataRoot, { recursive: true, force: true });
  };
  try {
    const [parts, images] = [
      await buildNodeParts(log),
      await ensureImages(log, ['pause', ...(o.images ?? DEFAULT_IMAGES)]),
    ];
    const network = await createPodNetwork({ subnet: o.subnet });
    cleanups.push(() => network.destroy());
    const cp = await startControlPlane({
      subnet: o.subnet,
      address: network.gateway,
      kubernetesEndpoint: o.apiFaults !== true,
      dir: path.join(dataRoot, 'control-plane'),
      ...(o.nodeMonitorGracePeriod ? { nodeMonitorGracePeriod: o.nodeMonitorGracePeriod } : {}),
      onProgress: log,
    });
    cleanups.push(() => cp.stop());
    const faults = o.apiFaults ? await startApiFaults(cp, network) : undefined;
    if (faults) cleanups.push(() => faults.close());
    const archives = [...new Set(Object.values(images).map((i) => i.archive))];
    // The nodes (mostly importing the images into each containerd) start side by side with
    // CoreDNS, the volume provisioner and the install's objects, which need no node; the
    // rollouts wait for both.
    const nodesUp = async (): Promise<RealNode[]> => {
      // Addresses follow the order of attach().
      const attachments = [];
      for (let i = 1; i <= count; i++) attachments.push(await network.attach());
      const t0 = Date.now();
      const started = await Promise.allSettled(
        attachments.map((attachment, n) => {
          const dir = path.join(dataRoot, `node-${n + 1}`);
          mkdirSync(dir, { recursive: true });
          return startRealNode({
            index: n + 1,
            nodeCount: count,
            controlPlane: cp,
            network,
            attachment,
            parts,
            sandboxImage: PAUSE_IMAGE,
            images: archives,
            dns: network.serviceAddress,
            dir,
            log,
          });
        }),
      );
      const up = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      for (const node of up) cleanups.push(() => node.stop());
      const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
      log(
        `${count} nodes started in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${up.map((n) => `${n.name} ${n.address} pods ${n.podCidr}`).join(', ')}`,
      );
      await nodesReady(cp, up);
      return up;
    };
    const servicesUp = async (): Promise<void> => {
      const dns = await startClusterDns({
        controlPlane: cp,
        address: network.serviceAddress,
        dir: path.join(dataRoot, 'dns'),
        onProgress: log,
      });
      cleanups.push(() => dns.stop());
      cleanups.push(await startVolumeProvisioner(cp, dataRoot, log));
      if (o.install !== false) await installObjects(cp, log, o.operator ?? {});
    };
    const [nodesDone, servicesDone] = await Promise.allSettled([nodesUp(), servicesUp()]);
    if (nodesDone.status === 'rejected') throw nodesDone.reason;
    if (servicesDone.status === 'rejected') throw servicesDone.reason;
    const nodes = nodesDone.value;
    const runtime = (
      await cp.kubectl(['get', 'node', nodes[0]!.name, '-o', 'jsonpath={.status.nodeInfo.containerRuntimeVersion}'])
    ).trim();
    log(`${count} nodes Ready (${runtime})`);
    if (o.install !== false) await rolledOut(cp, log);
    return {
      controlPlane: cp,
      kubeconfig: cp.adminKubeconfig,
      nodes,
      runtime,
      version: cp.version,
      dataRoot,
      network,
      faults,
      kubectl: (args, input) => cp.kubectl(args, input),
      async reinstallOperator() {
        if (o.install === false || o.operator?.helm)
          throw new Error('reinstallOperator: only a kubectl install is applied again');
        await applyOperator(cp, o.operator ?? {});
        await cp.kubectl(['-n', 'redis-operator', 'rollout', 'status', 'deployment/redis-operator', '--timeout=180s']);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Waits for every node to register and be Ready; fails early with its kubelet's log when one dies. */
async function nodesReady(cp: ControlPlane, nodes: readonly RealNode[]): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const dead = nodes.find((n) => !n.alive('kubelet') || !n.alive('containerd'));
    if (dead)
      throw new Error(
        `${dead.name}: a daemon exited:\n${[...dead.logTail('kubelet', 20), ...dead.logTail('containerd', 10)].join('\n')}`,
      );
    const out = await cp.kubectl([
      'get',
      'nodes',
      '-o',
      'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}',
    ]);
    const ready = new Set(
      out
        .split('\n')
        .filter((l) => l.endsWith('=True'))
        .map((l) => l.split('=')[0]),
    );
    if (nodes.every((n) => ready.has(n.name))) return;
    if (Date.now() > deadline)
      throw new Error(
        `nodes not Ready within 120 s (${out.trim() || 'none registered'}):\n${nodes.flatMap((n) => n.logTail('kubelet', 10)).join('\n')}`,
      );
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * The fault proxy on the bridge, serving a certificate for the `kubernetes` Service's address, and
 * that Service's endpoint pointed at it (the API server keeps none: kubernetesEndpoint false).
 */
async function startApiFaults(cp: ControlPlane, network: PodNetwork): Promise<FaultProxy> {
  const serviceIp = `198.19.${cp.subnet}.1`;
  const cert = cp.pki.serving(
    'api-fault-proxy',
    [network.gateway, serviceIp],
    ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
  );
  const proxy = await startFaultProxy({
    server: cp.server,
    caFile: cp.pki.ca.cert,
    listen: { host: network.gateway, ...cert },
  });
  const slice = {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name: 'kubernetes', namespace: 'default', labels: { 'kubernetes.io/service-name': 'kubernetes' } },
    addressType: 'IPv4',
    endpoints: [{ addresses: [network.gateway], conditions: { ready: true } }],
    ports: [{ name: 'https', port: proxy.port, protocol: 'TCP' }],
  };
  try {
    await cp.kubectl(['apply', '-f', '-'], JSON.stringify(slice));
  } catch (err) {
    await proxy.close();
    throw err;
  }
  return proxy;
}

/** `kubectl kustomize manifests/` with the sidecar's env set as `env` says (what a user's patch does). */
async function patchedManifests(cp: ControlPlane, env: Record<string, string>): Promise<string> {
  const docs = parseAllDocuments(await cp.kubectl(['kustomize', path.join(REPO_ROOT, 'manifests')]))
    .map((d) => d.toJSON() as Record<string, unknown>)
    .filter(Boolean);
  for (const doc of docs) {
    if (doc['kind'] !== 'Deployment') continue;
    const containers = (
      doc['spec'] as {
        template: { spec: { containers: Array<{ name: string; env?: Array<{ name: string; value?: string }> }> } };
      }
    ).template.spec.containers;
    const sidecar = containers.find((c) => c.name === 'sidecar');
    if (!sidecar) throw new Error('manifests/: the Deployment has no sidecar container');
    const list = (sidecar.env ??= []);
    for (const [name, value] of Object.entries(env)) {
      const at = list.find((e) => e.name === name);
      if (at) at.value = value;
      else list.push({ name, value });
    }
  }
  return docs.map((d) => stringify(d)).join('---\n');
}

/** `kubectl apply -k manifests/` as the README says (with the sidecar env patched in), or the chart with Helm. */
async function applyOperator(cp: ControlPlane, operator: OperatorInstall): Promise<void> {
  if (operator.helm) {
    const helm = helmCommand(operator.helm.helm, path.join(cp.dir, 'helm'), cp.adminKubeconfig);
    await helmInstall(helm, 'redis-operator', operator.helm.set ?? []);
  } else if (operator.sidecarEnv && Object.keys(operator.sidecarEnv).length > 0)
    await cp.kubectl(['apply', '-f', '-'], await patchedManifests(cp, operator.sidecarEnv));
  else await cp.kubectl(['apply', '-k', path.join(REPO_ROOT, 'manifests')]);
}

/**
 * Metacontroller's CRDs, `kubectl apply -k manifests/` as the README says (or the chart), then Metacontroller itself.
 */
async function installObjects(cp: ControlPlane, log: (line: string) => void, operator: OperatorInstall): Promise<void> {
  const t0 = Date.now();
  await cp.kubectl(['apply', '-f', METACONTROLLER_CRDS]);
  await cp.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/compositecontrollers.metacontroller.k8s.io',
    'crd/decoratorcontrollers.metacontroller.k8s.io',
  ]);
  await applyOperator(cp, operator);
  for (const crd of operator.extraCrds ?? []) {
    await cp.kubectl(['apply', '-f', crd]);
    await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', '-f', crd]);
  }
  // Metacontroller looks for new APIs every 20 s (--discovery-interval, as upstream deploys it):
  // started before our CRDs are served, it refuses the CompositeControllers until its next look,
  // and a Redis applied meanwhile waits up to 20 s. Started after, it sees them at once.
  await cp.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/redises.redis.example.com',
    'crd/redisclusters.redis.example.com',
    'crd/redisbackups.redis.example.com',
  ]);
  await cp.kubectl(['apply', '-f', METACONTROLLER_MANIFEST]);
  log(`Metacontroller and the operator applied in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/** Metacontroller's StatefulSet and the operator's Deployment rolled out. */
async function rolledOut(cp: ControlPlane, log: (line: string) => void): Promise<void> {
  const t0 = Date.now();
  await cp.kubectl(['-n', 'metacontroller', 'rollout', 'status', 'statefulset/metacontroller', '--timeout=120s']);
  await cp.kubectl(['-n', 'redis-operator', 'rollout', 'status', 'deployment/redis-operator', '--timeout=180s']);
  log(`Metacontroller and the operator rolled out in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
