// The real cluster's nodes under faults, and what they leave behind: a pod on a node whose
// containerd is SIGKILLed keeps serving (its shim and container outlive the daemon, as on any
// node), the restarted containerd finds it again and the node stays Ready; a pod scheduled to the
// other node reaches it through its Service; a node whose kubelet is SIGKILLed is marked
// unreachable by the node lifecycle controller, its pod not Ready (its container serving on), and
// both come back with the kubelet; stop() leaves no namespace, bridge, cgroup or process.
// Skips, saying why, where a real node cannot run here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isBuilt } from './build.ts';
import { imagesMissing } from './images.ts';
import { nodePartsMissing } from './node-build.ts';
import { unavailableReason } from './pod-network.ts';
import { clusterLeftovers, startRealCluster } from './real-cluster.ts';
import { Redis } from 'ioredis';

const SUBNET = 121;
const why =
  unavailableReason() ??
  nodePartsMissing() ??
  imagesMissing(['pause', 'redis-7.2']) ??
  (isBuilt() ? undefined : 'the control plane is not built (npm run cluster:build)');

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One command to the pod's redis-server (no password: a bare test pod) on a fresh connection. */
async function redisCommand(ip: string, ...args: string[]): Promise<unknown> {
  const c = new Redis({
    host: ip,
    port: 6379,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 3000,
    commandTimeout: 3000,
  });
  c.on('error', () => {});
  await c.connect();
  try {
    return await c.call(args[0]!, ...args.slice(1));
  } finally {
    c.disconnect();
  }
}

test(
  'real nodes: containerd killed under a running pod, a Service across nodes, nothing left after stop()',
  { skip: why ?? false, timeout: 300_000 },
  async (t) => {
    // A 15 s grace instead of the default 40 s: the lifecycle controller acts the same, sooner.
    const rc = await startRealCluster({
      subnet: SUBNET,
      nodes: 2,
      images: ['redis-7.2'],
      install: false,
      nodeMonitorGracePeriod: '15s',
      onProgress: (l) => t.diagnostic(l),
    });
    try {
      const pod = (name: string, node: string) =>
        rc.kubectl([
          'run',
          name,
          '--image=redis:7.2',
          `--overrides={"spec":{"nodeName":"${node}"}}`,
          '--',
          'redis-server',
          '--protected-mode',
          'no',
        ]);
      await pod('r1', 'node-1');
      await rc.kubectl(['wait', '--for=condition=Ready', '--timeout=120s', 'pod/r1']);
      const ip = (await rc.kubectl(['get', 'pod', 'r1', '-o', 'jsonpath={.status.podIP}'])).trim();
      assert.ok(
        ip.startsWith(rc.nodes[0]!.podCidr.split('.').slice(0, 3).join('.')),
        `r1 has an address of node-1's range: ${ip}`,
      );
      assert.equal(await redisCommand(ip, 'SET', 'k', 'before'), 'OK');

      // containerd dies: the container lives on (its shim is not containerd's child).
      assert.ok(rc.nodes[0]!.signal('containerd', 'SIGKILL'));
      for (let i = 0; i < 100 && rc.nodes[0]!.alive('containerd'); i++) await sleep(50);
      assert.equal(rc.nodes[0]!.alive('containerd'), false, 'containerd is gone');
      assert.equal(await redisCommand(ip, 'GET', 'k'), 'before', 'the pod still serves without containerd');
      await rc.nodes[0]!.restart('containerd');
      assert.match(
        await rc.nodes[0]!.ctr(['containers', 'list', '-q']),
        /\S/,
        'the restarted containerd finds its containers',
      );
      await rc.kubectl(['wait', '--for=condition=Ready', '--timeout=60s', 'node/node-1', 'pod/r1']);

      // A client on the other node reaches r1 by its Service name: CoreDNS, then kube-proxy.
      await rc.kubectl(['expose', 'pod', 'r1', '--port=6379']);
      await rc.kubectl([
        'run',
        'c1',
        '--image=redis:7.2',
        '--restart=Never',
        '--overrides={"spec":{"nodeName":"node-2"}}',
        '--',
        'sh',
        '-c',
        'for i in 1 2 3 4 5 6 7 8 9 10; do redis-cli -h r1 GET k && exit 0; sleep 1; done; exit 1',
      ]);
      await rc.kubectl(['wait', '--for=jsonpath={.status.phase}=Succeeded', '--timeout=90s', 'pod/c1']);
      // Until kube-proxy on node-2 has the Service's endpoint, a connection is refused (its reject
      // rule for a Service without endpoints); the client retries, and its last answer is the value.
      assert.equal((await rc.kubectl(['logs', 'c1'])).trim().split('\n').at(-1), 'before');

      // node-2's kubelet dies: the node lifecycle controller marks the node unreachable and its
      // pod not Ready (the Service drops it), while the container keeps serving; the restarted
      // kubelet brings both back.
      await pod('r2', 'node-2');
      await rc.kubectl(['wait', '--for=condition=Ready', '--timeout=120s', 'pod/r2']);
      const ip2 = (await rc.kubectl(['get', 'pod', 'r2', '-o', 'jsonpath={.status.podIP}'])).trim();
      const t0 = Date.now();
      assert.ok(rc.nodes[1]!.signal('kubelet', 'SIGKILL'));
      await rc.kubectl(['wait', '--for=condition=Ready=Unknown', '--timeout=120s', 'node/node-2']);
      await rc.kubectl(['wait', '--for=condition=Ready=False', '--timeout=60s', 'pod/r2']);
      const taints = await rc.kubectl(['get', 'node', 'node-2', '-o', 'jsonpath={.spec.taints[*].key}']);
      assert.match(taints, /node\.kubernetes\.io\/unreachable/, `node-2 tainted unreachable: ${taints}`);
      t.diagnostic(
        `kubelet SIGKILLed -> node-2 NotReady and r2 not Ready after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
      assert.equal(await redisCommand(ip2, 'PING'), 'PONG', "r2's container serves on without its kubelet");
      await rc.nodes[1]!.restart('kubelet');
      await rc.kubectl(['wait', '--for=condition=Ready', '--timeout=120s', 'node/node-2', 'pod/r2']);
    } finally {
      await rc.stop();
    }
    assert.deepEqual(clusterLeftovers(SUBNET), [], 'no namespace, cgroup or bridge of this cluster is left');
  },
);
