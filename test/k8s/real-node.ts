// One REAL Kubernetes node on this machine: containerd v2 with runc and the CNI plugins, and the
// kubelet and kube-proxy of the control plane's own build (node-build.ts, build.ts).
//
//   const node = await startRealNode({ index: 1, controlPlane: cp, network, parts, images, dns, dir });
//   node.name;  node.address;  await node.signal('kubelet', 'SIGKILL');  await node.restart('kubelet');
//   await node.stop();
//
// How it is contained:
// - Network: a namespace of its own on the cluster's bridge (pod-network.ts attach()), holding the
//   node's address, its `cni0` bridge and its pods' /27, and kube-proxy's iptables rules. The host
//   and every other node route the node's /27 to its address.
// - Everything else: a holder process, `unshare --pid --mount` inside that namespace, whose
//   private mount namespace has the node's own /var/lib/kubelet and /var/log bound over the
//   host's, and whose PID namespace every daemon joins (nsenter). The kubelet's volume mounts,
//   containerd's snapshots, the shims and every container process live there: when the holder
//   (PID 1 of the namespace) dies, the kernel ends them all and drops their mounts.
// - cgroups: the pods' under /<cluster>-<node> in every v1 hierarchy (the kubelet's cgroupRoot),
//   removed once the node's processes are gone.
// Invariants: stop() is idempotent and removes exactly what start made (processes by their
// group, the namespace, routes with the bridge, the cgroups it created, its directory); no port is
// chosen here: every daemon listens inside the node's own network namespace on its fixed port.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { spawnGroup, type ProcessGroup } from '../support/processes.ts';
import { tailLines } from '../support/host.ts';
import { binaryPath } from './build.ts';
import { CLUSTER_DOMAIN, type ControlPlane } from './control-plane.ts';
import type { NodeParts } from './node-build.ts';
import { linkSeed, saveSeed, seedPath } from './node-seed.ts';
import type { PodAttachment, PodNetwork } from './pod-network.ts';
import {
  cniConfDir,
  cniConflist,
  containerdConfig,
  containerdSocket,
  kubeletConfig,
  kubeProxyConfig,
  nodeAddress,
  podCidr,
} from './real-node-config.ts';

const run = promisify(execFile);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export type Daemon = 'containerd' | 'kubelet' | 'kube-proxy';

export interface RealNodeOptions {
  /** 1..5: the node's name is node-<index>, its address and pod range follow from it. */
  index: number;
  /** How many nodes the cluster has: each node routes the others' pod ranges. */
  nodeCount: number;
  controlPlane: ControlPlane;
  network: PodNetwork;
  /** The node's namespace on the bridge (network.attach(), in node order: it gives the address). */
  attachment: PodAttachment;
  parts: NodeParts;
  sandboxImage: string;
  /** docker-archive tars imported into the node's containerd before the kubelet starts. */
  images: readonly string[];
  /** The cluster DNS address the kubelet gives ClusterFirst pods. */
  dns: string;
  /** A directory of the node's own (created; removed by stop()). */
  dir: string;
  log?: (line: string) => void;
}

export interface RealNode {
  readonly name: string;
  readonly address: string;
  readonly podCidr: string;
  readonly netns: string;
  /** The node's directory: its containers' logs are under var-log/pods/<namespace>_<pod>_<uid>/<container>/. */
  readonly dir: string;
  /** Signals one daemon's process group (a crash: SIGKILL; the containers outlive containerd). */
  signal(daemon: Daemon, signal: NodeJS.Signals): boolean;
  /** Starts a daemon again after it was stopped or killed (waits for containerd's socket). */
  restart(daemon: Daemon): Promise<void>;
  alive(daemon: Daemon): boolean;
  logTail(daemon: Daemon, lines?: number): string[];
  /** Runs ctr against this node's containerd (namespace k8s.io). */
  ctr(args: string[]): Promise<string>;
  /**
   * Runs a command in the node's network, mount and PID namespaces (its PIDs are the ones ctr reports); resolves with
   * stdout.
   */
  enter(argv: string[]): Promise<string>;
  stop(): Promise<void>;
}

/** The hierarchies under /sys/fs/cgroup (real directories, not aliases such as cpu -> cpu,cpuacct). */
function cgroupHierarchies(): string[] {
  const root = '/sys/fs/cgroup';
  return readdirSync(root, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => path.join(root, d.name));
}

/** Removes a cgroup subtree depth-first; a cgroup still holding a process stays (returns false). */
function removeCgroupTree(dir: string): boolean {
  if (!existsSync(dir)) return true;
  let ok = true;
  for (const e of readdirSync(dir, { withFileTypes: true }))
    if (e.isDirectory()) ok = removeCgroupTree(path.join(dir, e.name)) && ok;
  try {
    rmdirSync(dir);
  } catch {
    ok = false;
  }
  return ok;
}

/** The host pid of the holder's first child: PID 1 of the node's PID namespace. */
async function namespaceInit(holderPid: number): Promise<number> {
  for (let i = 0; i < 200; i++) {
    try {
      const kids = readFileSync(`/proc/${holderPid}/task/${holderPid}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean);
      if (kids[0]) return Number(kids[0]);
    } catch {
      // not forked yet
    }
    await sleep(25);
  }
  throw new Error(`node holder ${holderPid} never forked its namespace init`);
}

export async function startRealNode(o: RealNodeOptions): Promise<RealNode> {
  const log = o.log ?? (() => undefined);
  const name = `node-${o.index}`;
  const subnet = o.network.subnet;
  const address = nodeAddress(subnet, o.index);
  const cidr = podCidr(subnet, o.index);
  const cgroupRoot = `/${o.network.bridge}-${name}`;
  const dir = o.dir;
  for (const d of ['logs', 'kubelet', 'var-log', 'cni/net.d', 'cni/ipam', 'containerd', 'pki'])
    mkdirSync(path.join(dir, d), { recursive: true });
  const logFile = (d: string) => path.join(dir, 'logs', `${d}.log`);
  const groups = new Map<Daemon | 'holder', ProcessGroup>();
  const cgroupDirs: string[] = [];
  const attachment = o.attachment;
  let stopping: Promise<void> | undefined;

  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const d of ['kube-proxy', 'kubelet', 'containerd'] as const) await end(groups.get(d));
      // PID 1 of the node's namespace: its death ends every shim and container of the node.
      await end(groups.get('holder'), 'SIGKILL');
      for (let i = 0; i < 40 && !cgroupDirs.every(removeCgroupTree); i++) await sleep(100);
      await o.network.detach(attachment);
      if (process.env['KEEP_CLUSTER_DATA'] !== '1') rmSync(dir, { recursive: true, force: true });
    })());

  try {
    if (attachment.ip !== address)
      throw new Error(`${name}: the bridge gave ${attachment.ip}, expected ${address} (nodes attach in index order)`);
    const netns = attachment.netns;
    await run('ip', ['route', 'add', cidr, 'via', address, 'dev', o.network.bridge]);
    for (let j = 1; j <= o.nodeCount; j++) {
      if (j !== o.index)
        await run('ip', ['-n', netns, 'route', 'add', podCidr(subnet, j), 'via', nodeAddress(subnet, j)]);
    }
    await run('ip', ['netns', 'exec', netns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    // Per-namespace on this kernel; where it is not, kube-proxy still works for routed traffic.
    await run('ip', ['netns', 'exec', netns, 'sysctl', '-qw', 'net.bridge.bridge-nf-call-iptables=1']).catch(
      () => undefined,
    );

    for (const h of cgroupHierarchies()) {
      const cg = path.join(h, cgroupRoot);
      if (!existsSync(cg)) {
        mkdirSync(cg);
        cgroupDirs.push(cg);
      }
    }

    const paths = { dir, cniBinDir: o.parts.cniBinDir, runc: o.parts.runc };
    writeFileSync(path.join(dir, 'containerd/config.toml'), containerdConfig(paths, o.sandboxImage));
    writeFileSync(path.join(cniConfDir(paths), '10-bridge.conflist'), cniConflist(paths, cidr));
    writeFileSync(path.join(dir, 'resolv.conf'), 'nameserver 127.0.0.1\n');
    const serving = o.controlPlane.pki.serving(`kubelet-${name}`, [address, '127.0.0.1'], [name]);
    writeFileSync(
      path.join(dir, 'kubelet.yaml'),
      kubeletConfig(paths, {
        caFile: o.controlPlane.pki.ca.cert,
        tlsCert: serving.cert,
        tlsKey: serving.key,
        clusterDns: o.dns,
        clusterDomain: CLUSTER_DOMAIN,
        cgroupRoot,
        resolvConf: path.join(dir, 'resolv.conf'),
        address,
      }),
    );
    const proxyKubeconfig = o.controlPlane.certKubeconfig('system:kube-proxy');
    writeFileSync(
      path.join(dir, 'kube-proxy.yaml'),
      kubeProxyConfig({ kubeconfig: proxyKubeconfig, hostname: name, clusterCidr: `198.18.${subnet}.0/24` }),
    );
    const kubeletKubeconfig = await o.controlPlane.nodeKubeconfig(name);

    // The holder: the node's mount and PID namespaces, with the kubelet's fixed paths made its own.
    const binds = [
      [path.join(dir, 'kubelet'), '/var/lib/kubelet'],
      [path.join(dir, 'var-log'), '/var/log'],
    ];
    const script = [
      ...binds.map(([from, to]) => `mkdir -p ${to} && mount --bind ${from} ${to}`),
      'exec sleep infinity',
    ].join(' && ');
    const holder = spawnGroup(
      [
        // nsenter, not `ip netns exec`: that one mounts a fresh /sys, hiding the cgroup hierarchies.
        'nsenter',
        `--net=/run/netns/${netns}`,
        'unshare',
        '--pid',
        '--fork',
        '--kill-child=SIGKILL',
        '--mount-proc',
        '--propagation',
        'private',
        '--',
        'sh',
        '-c',
        script,
      ],
      { env: { PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin' }, cwd: dir, logFile: logFile('holder') },
    );
    groups.set('holder', holder);
    const init = await namespaceInit(holder.pid);
    // The bind mounts are made before `sleep` runs: wait for it, so no daemon sees the host's paths.
    for (let i = 0; i < 200 && !readFileSync(`/proc/${init}/cmdline`, 'utf8').startsWith('sleep'); i++) await sleep(25);

    const env = {
      PATH: `${path.dirname(o.parts.containerd)}:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
      HOME: dir,
    };
    const argv: Record<Daemon, string[]> = {
      containerd: [o.parts.containerd, '--config', path.join(dir, 'containerd/config.toml')],
      kubelet: [
        binaryPath('kubelet', o.controlPlane.binDir),
        `--config=${path.join(dir, 'kubelet.yaml')}`,
        `--kubeconfig=${kubeletKubeconfig}`,
        `--hostname-override=${name}`,
        `--node-ip=${address}`,
        `--cert-dir=${path.join(dir, 'pki')}`,
        '--v=1',
      ],
      'kube-proxy': [
        binaryPath('kube-proxy', o.controlPlane.binDir),
        `--config=${path.join(dir, 'kube-proxy.yaml')}`,
        '--v=1',
      ],
    };
    const launch = (d: Daemon) => {
      groups.set(
        d,
        spawnGroup(['nsenter', `--target=${init}`, '--mount', '--pid', '--net', '--', ...argv[d]], {
          env,
          cwd: dir,
          logFile: logFile(d),
        }),
      );
    };
    const waitForContainerd = async () => {
      for (let i = 0; i < 400; i++) {
        if (!groups.get('containerd')?.alive())
          throw new Error(`${name}: containerd exited:\n${tailLines(logFile('containerd'), 20).join('\n')}`);
        if (
          existsSync(containerdSocket(paths)) &&
          (await ctr(['version']).then(
            () => true,
            () => false,
          ))
        )
          return;
        await sleep(50);
      }
      throw new Error(
        `${name}: containerd not answering within 20 s:\n${tailLines(logFile('containerd'), 20).join('\n')}`,
      );
    };
    const ctr = async (args: string[]): Promise<string> =>
      (
        await run(o.parts.ctr, ['--address', containerdSocket(paths), '--namespace', 'k8s.io', ...args], {
          maxBuffer: 16 << 20,
        })
      ).stdout;

    const t0 = Date.now();
    const root = path.join(dir, 'containerd/root');
    const seed = seedPath(o.images, o.parts.containerd, o.sandboxImage);
    if (existsSync(seed)) {
      await linkSeed(seed, root);
      launch('containerd');
      await waitForContainerd();
      log(`${name}: ${o.images.length} images linked from ${seed} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    } else {
      launch('containerd');
      await waitForContainerd();
      for (const archive of o.images) await ctr(['images', 'import', archive]);
      // Stopped while the root is copied, so the copy is what a clean shutdown leaves.
      await end(groups.get('containerd'));
      await saveSeed(root, seed);
      launch('containerd');
      await waitForContainerd();
      log(
        `${name}: ${o.images.length} images imported (and kept as ${seed}) in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
    }
    launch('kubelet');
    launch('kube-proxy');

    const node: RealNode = {
      name,
      address,
      podCidr: cidr,
      netns,
      signal: (d, s) => groups.get(d)?.signal(s) ?? false,
      alive: (d) => groups.get(d)?.alive() ?? false,
      async restart(d) {
        const g = groups.get(d);
        if (g?.alive()) await end(g);
        launch(d);
        if (d === 'containerd') await waitForContainerd();
      },
      logTail: (d, lines = 30) => tailLines(logFile(d), lines),
      ctr,
      enter: async (argv) =>
        (
          await run('nsenter', [`--target=${init}`, '--mount', '--pid', '--net', '--', ...argv], {
            env,
            maxBuffer: 16 << 20,
          })
        ).stdout,
      dir,
      stop,
    };
    return node;
  } catch (err) {
    await stop();
    throw err;
  }
}

/** SIGTERM (or `first`), then SIGKILL after 5 s; resolves once the group's leader is gone. */
async function end(group: ProcessGroup | undefined, first: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!group?.alive()) return;
  group.signal(first);
  const done = await Promise.race([group.exited.then(() => true), sleep(5000).then(() => false)]);
  if (!done) {
    group.signal('SIGKILL');
    await group.exited;
  }
}
