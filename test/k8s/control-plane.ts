// A real Kubernetes control plane on loopback for tests: etcd, kube-apiserver (TLS, RBAC + Node
// authorization, service-account tokens), kube-controller-manager (every default controller, each
// with its own service account) and kube-scheduler, from the binaries test/k8s/build.ts builds.
//
//   const cp = await startControlPlane({ onProgress: console.log }); cp.adminKubeconfig; // cluster-admin, for kubectl
//   and the harness await cp.nodeKubeconfig('node-1'); // system:node:node-1 (Node authorizer, NodeRestriction)
//   cp.kubeconfigFor('system:serviceaccount:redis-operator:redis-operator', await cp.tokenFor('redis-operator',
//   'redis-operator')); await cp.stop();
//
// Invariants:
// - Everything listens on 127.0.0.1 (etcd, the API server); the controller-manager and scheduler
//   serve nothing (--secure-port=0). Nothing is reached outside 127.0.0.0/8.
// - Every process runs under `setpriv --pdeathsig KILL` in its own group: when the test process
//   dies, so does the control plane. stop() is idempotent and leaves no process.
// - startControlPlane() returns only when the API server is ready, the controllers have made the
//   `default` ServiceAccount in `default` (pods can be admitted) and the scheduler runs; with
//   `controllers: false`, when the API server is ready (and neither is started).
// - ServiceCIDR 198.19.<subnet>.0/24: a reserved benchmarking range (RFC 2544), never routed off
//   this machine; pods live in 198.18.<subnet>.0/24 (test/k8s/pod-network.ts). One subnet per
//   control plane, so two clusters running at once never share an address.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { spawnGroup, type ProcessGroup } from '../support/processes.ts';
import { tailLines } from '../support/host.ts';
import { startOnFreePorts } from '../support/ports.ts';
import { binaryPath, ensureBinaries, KUBE_VERSION } from './build.ts';
import { createPki, type CertPaths, type Pki } from './pki.ts';

const run = promisify(execFile);

/** The Service CIDR of the control plane for a subnet (its first address is the `kubernetes` Service). */
export const serviceCidr = (subnet: number) => `198.19.${subnet}.0/24`;
export const CLUSTER_DOMAIN = 'cluster.local';

export interface ControlPlaneOptions {
  /** Third octet of this cluster's Service CIDR (198.19.N.0/24) and pod range (198.18.N.0/24). */
  subnet: number;
  /**
   * The address the API server listens on and advertises (default 127.0.0.1). Real nodes and pods
   * reach the API at it, directly and through the `kubernetes` Service, whose endpoint the API
   * server then keeps (a loopback address may not be an endpoint): the host end of their bridge.
   */
  address?: string;
  /**
   * Who keeps the `kubernetes` Service's endpoint: the API server (default), or the caller (false):
   * a fault proxy in front of the API server points it at itself, so every in-cluster client goes
   * through it (real-cluster.ts, `apiFaults`).
   */
  kubernetesEndpoint?: boolean;
  /** Working directory (PKI, etcd data, logs, kubeconfigs); default a fresh temp dir removed by stop(). */
  dir?: string;
  onProgress?: (line: string) => void;
  /** Keep `dir` after stop() (also KEEP_CLUSTER_DATA=1). */
  keepData?: boolean;
  /**
   * Start kube-controller-manager and kube-scheduler (default true). Without them the API server
   * alone answers (CRDs, admission, validation, RBAC checks) and start-up does not wait for the
   * `default` ServiceAccount: for tests that create no pods.
   */
  controllers?: boolean;
  /**
   * How long the node lifecycle controller waits for a silent node before marking it unreachable
   * (kube-controller-manager's --node-monitor-grace-period; its default is 40 s, about 49 s to a
   * NotReady pod): a test that kills a kubelet may shorten it.
   */
  nodeMonitorGracePeriod?: string;
}

export interface ControlPlane {
  readonly server: string;
  readonly adminKubeconfig: string;
  readonly dir: string;
  readonly version: string;
  readonly binDir: string;
  readonly subnet: number;
  /** The CA and certificates of this control plane (kubelets' serving certificates come from it). */
  readonly pki: Pki;
  /** A kubeconfig (path) for system:node:<nodeName> in group system:nodes. */
  nodeKubeconfig(nodeName: string): Promise<string>;
  /** A kubeconfig (path) with a client certificate for user `cn` in groups `orgs` (system:kube-proxy, say). */
  certKubeconfig(cn: string, orgs?: string[]): string;
  /** A bound service-account token (TokenRequest API, 24 h) for namespace/serviceAccount. */
  tokenFor(namespace: string, serviceAccount: string): Promise<string>;
  /** Writes a kubeconfig for a bearer token and returns its path. */
  kubeconfigFor(user: string, token: string): string;
  /** Runs the real kubectl as cluster-admin; resolves with stdout. */
  kubectl(args: string[], input?: string): Promise<string>;
  /** The last lines a component logged (etcd, kube-apiserver, kube-controller-manager, kube-scheduler). */
  logTail(component: string, lines?: number): string[];
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
/** A grace period that does not keep the process alive once what it waits for is done (unref). */
const grace = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

function kubeconfigYaml(server: string, ca: string, user: string, auth: { cert?: CertPaths; token?: string }): string {
  const cluster = { server, 'certificate-authority': ca };
  const credentials = auth.cert
    ? { 'client-certificate': auth.cert.cert, 'client-key': auth.cert.key }
    : { token: auth.token };
  return stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'local', cluster }],
      users: [{ name: user, user: credentials }],
      contexts: [{ name: 'local', context: { cluster: 'local', user } }],
      'current-context': 'local',
      // Quoted: kubectl reads YAML 1.1, where a bare `y` or `on` is a boolean.
    },
    { defaultStringType: 'QUOTE_DOUBLE', defaultKeyType: 'PLAIN', lineWidth: 0 },
  );
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const log = options.onProgress ?? (() => undefined);
  const bin = await ensureBinaries(log);
  const ownsDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(path.join(os.tmpdir(), 'redis-k8s-'));
  const keep = options.keepData === true || process.env['KEEP_CLUSTER_DATA'] === '1';
  const logs = path.join(dir, 'logs');
  mkdirSync(logs, { recursive: true });
  const pki = createPki(path.join(dir, 'pki'));
  const groups: Array<{ name: string; group: ProcessGroup }> = [];
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', HOME: dir };
  const logFile = (name: string) => path.join(logs, `${name}.log`);

  function launch(name: string, args: string[]): ProcessGroup {
    const group = spawnGroup([binaryPath(name as never, bin), ...args], { cwd: dir, env, logFile: logFile(name) });
    groups.push({ name, group });
    return group;
  }

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      // Reverse start order: the controllers and scheduler, the API server, then etcd.
      for (const { group } of [...groups].reverse()) {
        group.signal('SIGTERM');
        const done = await Promise.race([group.exited.then(() => true), grace(5000).then(() => false)]);
        if (!done) {
          group.signal('SIGKILL');
          await group.exited;
        }
      }
      if (ownsDir && !keep) rmSync(dir, { recursive: true, force: true });
    })();
    return stopping;
  };

  try {
    // etcd and the API server take fixed ports (the API server refuses :0, etcd would advertise it), so
    // startOnFreePorts starts each again on fresh ports when one was taken before it bound it.
    const etcd = await startOnFreePorts({
      what: 'etcd',
      count: 2,
      logFile: logFile('etcd'),
      launch: ([etcdClient, etcdPeer]) =>
        launch('etcd', [
          '--name=local',
          `--data-dir=${path.join(dir, 'etcd')}`,
          `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
          `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
          `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
          `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
          `--initial-cluster=local=http://127.0.0.1:${etcdPeer}`,
          '--log-level=warn',
          // A test cluster's data is thrown away; fsync on a shared disk only adds latency.
          '--unsafe-no-fsync',
        ]),
    });
    const etcdClient = etcd.ports[0]!;
    log(`etcd on 127.0.0.1:${etcdClient}`);

    const address = options.address ?? '127.0.0.1';
    const serving = pki.serving(
      'kube-apiserver',
      [...new Set(['127.0.0.1', address]), `198.19.${options.subnet}.1`],
      [
        'localhost',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        `kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      ],
    );
    const kubeletClient = pki.client('kube-apiserver-kubelet-client', ['system:masters']);
    const apiserverArgs = (apiPort: number): string[] => [
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      `--bind-address=${address}`,
      `--advertise-address=${address}`,
      `--secure-port=${apiPort}`,
      `--tls-cert-file=${serving.cert}`,
      `--tls-private-key-file=${serving.key}`,
      `--client-ca-file=${pki.ca.cert}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      `--service-account-issuer=https://kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--service-cluster-ip-range=${serviceCidr(options.subnet)}`,
      `--kubelet-client-certificate=${kubeletClient.cert}`,
      `--kubelet-client-key=${kubeletClient.key}`,
      '--kubelet-preferred-address-types=InternalIP',
      // A loopback address may not be an endpoint; with one, no client here reaches the API
      // through the `kubernetes` Service (the pods of real nodes do, so they give an address).
      ...(address === '127.0.0.1' || options.kubernetesEndpoint === false ? ['--endpoint-reconciler-type=none'] : []),
      '--allow-privileged=true',
      '--profiling=false',
      '--v=1',
    ];
    const started = await startOnFreePorts({
      what: 'kube-apiserver',
      count: 1,
      host: address,
      logFile: logFile('kube-apiserver'),
      launch: ([apiPort]) => launch('kube-apiserver', apiserverArgs(apiPort!)),
    });
    const apiserver = started.proc;
    const server = `https://${address}:${started.ports[0]!}`;
    log(`kube-apiserver ${KUBE_VERSION} on ${server}`);

    const admin = pki.client('admin', ['system:masters']);
    const adminKubeconfig = path.join(dir, 'admin.kubeconfig');
    writeFileSync(adminKubeconfig, kubeconfigYaml(server, pki.ca.cert, 'admin', { cert: admin }), { mode: 0o600 });
    const kubectl = async (args: string[], input?: string): Promise<string> => {
      const p = run(binaryPath('kubectl', bin), [`--kubeconfig=${adminKubeconfig}`, ...args], {
        env,
        maxBuffer: 64 << 20,
      });
      if (input !== undefined) {
        p.child.stdin?.end(input);
      }
      return (await p).stdout;
    };

    const deadline = Date.now() + 120_000;
    for (;;) {
      if (!apiserver.alive())
        throw new Error(`kube-apiserver exited:\n${tailLines(logFile('kube-apiserver'), 30).join('\n')}`);
      const ok = await kubectl(['get', '--raw=/readyz']).then(
        (o) => o.trim() === 'ok',
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline)
        throw new Error(
          `kube-apiserver not ready within 120 s:\n${tailLines(logFile('kube-apiserver'), 30).join('\n')}`,
        );
      await sleep(250);
    }
    log('kube-apiserver ready');

    if (options.controllers !== false) {
      const component = (name: string, cn: string) => {
        const file = path.join(dir, `${name}.kubeconfig`);
        writeFileSync(file, kubeconfigYaml(server, pki.ca.cert, cn, { cert: pki.client(cn) }), { mode: 0o600 });
        return file;
      };
      const kcmConfig = component('kube-controller-manager', 'system:kube-controller-manager');
      launch('kube-controller-manager', [
        `--kubeconfig=${kcmConfig}`,
        `--authentication-kubeconfig=${kcmConfig}`,
        `--authorization-kubeconfig=${kcmConfig}`,
        '--secure-port=0',
        '--leader-elect=false',
        '--use-service-account-credentials=true',
        ...(options.nodeMonitorGracePeriod ? [`--node-monitor-grace-period=${options.nodeMonitorGracePeriod}`] : []),
        `--root-ca-file=${pki.ca.cert}`,
        `--service-account-private-key-file=${pki.serviceAccountKey}`,
        `--cluster-signing-cert-file=${pki.ca.cert}`,
        `--cluster-signing-key-file=${pki.ca.key}`,
        `--service-cluster-ip-range=${serviceCidr(options.subnet)}`,
        '--v=1',
      ]);
      const schedConfig = component('kube-scheduler', 'system:kube-scheduler');
      launch('kube-scheduler', [
        `--kubeconfig=${schedConfig}`,
        `--authentication-kubeconfig=${schedConfig}`,
        `--authorization-kubeconfig=${schedConfig}`,
        '--secure-port=0',
        '--leader-elect=false',
        '--v=1',
      ]);
      for (;;) {
        for (const { name, group } of groups) {
          if (!group.alive()) throw new Error(`${name} exited:\n${tailLines(logFile(name), 30).join('\n')}`);
        }
        const ok = await kubectl(['get', 'serviceaccount', 'default', '-n', 'default', '-o', 'name']).then(
          () => true,
          () => false,
        );
        if (ok) break;
        if (Date.now() > deadline)
          throw new Error(
            `the controllers did not create the default ServiceAccount within 120 s:\n${tailLines(logFile('kube-controller-manager'), 30).join('\n')}`,
          );
        await sleep(250);
      }
    }
    const certKubeconfig = (cn: string, orgs: string[] = []): string => {
      const file = path.join(dir, `cert-${cn.replace(/[^A-Za-z0-9_.-]/g, '_')}.kubeconfig`);
      writeFileSync(file, kubeconfigYaml(server, pki.ca.cert, cn, { cert: pki.client(cn, orgs) }), { mode: 0o600 });
      return file;
    };
    const version = JSON.parse(await kubectl(['version', '-o', 'json'])) as { serverVersion?: { gitVersion?: string } };
    log(`control plane ready: ${version.serverVersion?.gitVersion ?? '?'}`);

    return {
      server,
      adminKubeconfig,
      dir,
      binDir: bin,
      subnet: options.subnet,
      version: version.serverVersion?.gitVersion ?? 'unknown',
      pki,
      async nodeKubeconfig(nodeName) {
        return certKubeconfig(`system:node:${nodeName}`, ['system:nodes']);
      },
      certKubeconfig,
      async tokenFor(namespace, serviceAccount) {
        return (await kubectl(['create', 'token', serviceAccount, '-n', namespace, '--duration=24h'])).trim();
      },
      kubeconfigFor(user, token) {
        const file = path.join(dir, `user-${user.replace(/[^A-Za-z0-9_.-]/g, '_')}.kubeconfig`);
        writeFileSync(file, kubeconfigYaml(server, pki.ca.cert, user, { token }), { mode: 0o600 });
        return file;
      },
      kubectl,
      logTail: (name, lines = 30) => tailLines(logFile(name), lines),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
