// The node agent (test/k8s/node-agent) against a REAL control plane (test/k8s/control-plane.ts):
// three Nodes, a StatefulSet of redis pods with a volumeClaimTemplate scheduled by the real
// scheduler, claims bound by the real PV controller, graceful deletion seen through the real
// StatefulSet controller, `kubectl logs` through kube-apiserver, probes, init containers and the
// operator image (Node 24) with termination messages. Skipped (with the reason) when the control
// plane binaries are not built or redis-server is missing.
// Network: nodes on 127.0.61-63.1 (kubelet port 10250), pods on 127.0.61-63.2+, port 6379.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { redisProcessesOnSubnet } from '../cluster/workloads/index.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { createPodNetwork, unavailableReason } from './pod-network.ts';
import { KubeClient, type Json } from './node-agent/api-client.ts';
import { startNodeAgent, STORAGE_CLASS, type NodeAgent } from './node-agent/index.ts';
import { Reflector, type KubeObject } from './node-agent/reflector.ts';
import {
  authCli,
  cli,
  conditionOf,
  containerOf,
  hookChildren,
  initPods,
  isReady,
  PASSWORD,
  skipReason,
  sleep,
  statefulSet,
  until,
  type Pod,
} from './node-agent/testing.ts';

const NS = 'node-agent-test';
const BASE = 60;
const SUBNETS = [61, 62, 63];
/** The pod network's subnet (bridge rok64, pods 198.18.64.x; its node on 127.0.64.1). */
const NET_SUBNET = 64;

describe('node agent on a real control plane', { skip: skipReason() }, () => {
  let cp: ControlPlane;
  let agent: NodeAgent;
  let admin: KubeClient;
  let pods: Reflector;
  let nodes: Reflector;
  let agentStarted = 0;
  /** Every Ready condition status any node showed, as the watch saw them. */
  const nodeReady = new Set<string>();
  const podEvents: Array<{ type: string; pod: Pod; at: number }> = [];
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'node-agent-'));
  const logger = process.env['NODE_AGENT_LOG'] ? pino({ level: process.env['NODE_AGENT_LOG'] }, pino.destination(2)) : undefined;

  const pod = async (name: string) => admin.get<Pod>(`/api/v1/namespaces/${NS}/pods/${name}`);
  const claim = async (name: string) => admin.get<KubeObject & { spec: Json; status?: Json }>(`/api/v1/namespaces/${NS}/persistentvolumeclaims/${name}`);
  const readyPod = (name: string, timeoutMs?: number) =>
    until(
      `${name} Ready`,
      async () => {
        const p = await pod(name);
        return p && isReady(p) && !p.metadata.deletionTimestamp ? p : undefined;
      },
      timeoutMs,
    );

  before(async () => {
    cp = await startControlPlane({ subnet: BASE, ...(process.env['NODE_AGENT_LOG'] ? { onProgress: (l: string) => console.error(l) } : {}) });
    agent = await startNodeAgent({ controlPlane: cp, subnetBase: BASE, dataDir, nodes: 3, ...(logger ? { logger } : {}) });
    agentStarted = Date.now();
    admin = new KubeClient(cp.adminKubeconfig);
    nodes = new Reflector({
      client: admin,
      path: '/api/v1/nodes',
      logger: pino({ level: 'silent' }),
      onEvent: (_t, n) => {
        const ready = (((n['status'] as Json | undefined)?.['conditions'] ?? []) as Json[]).find((c) => c['type'] === 'Ready');
        nodeReady.add(`${n.metadata.name}=${String(ready?.['status'])}`);
      },
    });
    nodes.start();
    await admin.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });
    // The controllers give every namespace a `default` ServiceAccount; pods are refused until then.
    await until('the default ServiceAccount', () => admin.get(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    pods = new Reflector({
      client: admin,
      path: `/api/v1/namespaces/${NS}/pods`,
      logger: pino({ level: 'silent' }),
      onEvent: (type, p) => podEvents.push({ type, pod: p as Pod, at: Date.now() }),
    });
    pods.start();
    await pods.synced;
  });

  after(async () => {
    await pods?.stop();
    await nodes?.stop();
    admin?.close();
    await agent?.stop();
    for (const n of SUBNETS) assert.deepEqual(redisProcessesOnSubnet(n), [], `stop() left redis-server processes on 127.0.${n}.x`);
    await cp?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('three Nodes register with their own credentials and are Ready, with addresses, capacity and a Lease', async () => {
    const nodes = await admin.request<{ items: Array<KubeObject & { status: Json }> }>('GET', '/api/v1/nodes');
    assert.deepEqual(nodes.items.map((n) => n.metadata.name).sort(), ['node-1', 'node-2', 'node-3']);
    for (const n of nodes.items) {
      const k = Number(n.metadata.name.slice('node-'.length));
      assert.equal((n.status['conditions'] as Json[]).find((c) => c['type'] === 'Ready')?.['status'], 'True');
      assert.deepEqual(n.status['addresses'], [
        { type: 'InternalIP', address: `127.0.${BASE + k}.1` },
        { type: 'Hostname', address: n.metadata.name },
      ]);
      assert.equal((n.status['nodeInfo'] as Json)['kubeletVersion'], cp.version);
      assert.ok((n.status['allocatable'] as Json)['pods']);
      const lease = await admin.get<{ spec: Json }>(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${n.metadata.name}`);
      assert.equal(lease?.spec['holderIdentity'], n.metadata.name);
    }
    const sc = await admin.get<KubeObject>(`/apis/storage.k8s.io/v1/storageclasses/${STORAGE_CLASS}`);
    assert.equal(sc?.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'], 'true');
  });

  test("a StatefulSet's pods run as redis-server on their node's addresses, Ready, with claims bound by the real PV controller", async () => {
    await admin.request('POST', `/apis/apps/v1/namespaces/${NS}/statefulsets`, { body: statefulSet(NS) });
    const names = ['web-0', 'web-1', 'web-2'];
    const ready = await Promise.all(names.map((n) => readyPod(n, 90_000)));
    const ips = new Set<string>();
    for (const p of ready) {
      const name = p.metadata.name;
      const node = agent.nodes.find((n) => n.name === p.spec.nodeName);
      assert.ok(node, `${name} is bound to one of the agent's nodes (${p.spec.nodeName})`);
      const st = p.status!;
      assert.equal(st['phase'], 'Running');
      assert.equal(st['hostIP'], node.hostIP);
      assert.deepEqual(st['hostIPs'], [{ ip: node.hostIP }]);
      const ip = st['podIP'] as string;
      assert.equal(ip.split('.').slice(0, 3).join('.'), node.hostIP.split('.').slice(0, 3).join('.'), "the pod IP is in its node's range");
      assert.deepEqual(st['podIPs'], [{ ip }]);
      assert.equal(agent.podAddress(NS, name), ip);
      ips.add(ip);
      for (const type of ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready', 'PodReadyToStartContainers'])
        assert.equal(conditionOf(p, type), 'True', `${name} ${type}`);
      const cs = containerOf(p);
      assert.equal(cs['ready'], true);
      assert.equal(cs['started'], true);
      assert.equal(cs['restartCount'], 0);
      assert.ok((cs['state'] as Json)['running']);
      assert.match(String(cs['containerID']), /^node-agent:\/\/[0-9a-f]{64}$/);
      assert.match(String(cs['imageID']), /^node-agent:\/\/redis-server@sha256:[0-9a-f]{64}$/);
      assert.equal(await cli(ip, 'PING'), 'PONG');

      const c = await claim(`data-${name}`);
      assert.equal(c?.status?.['phase'], 'Bound');
      assert.equal(c?.spec['storageClassName'], STORAGE_CLASS, 'the default StorageClass was applied');
      assert.equal(c?.spec['volumeName'], `pvc-${c?.metadata.uid}`);
      const pv = await admin.get<KubeObject & { spec: Json; status: Json }>(`/api/v1/persistentvolumes/${c?.spec['volumeName']}`);
      assert.equal(pv?.status['phase'], 'Bound');
      assert.equal((pv?.spec['claimRef'] as Json)['uid'], c?.metadata.uid);
      const dir = agent.claimPath(NS, `data-${name}`);
      assert.equal((pv?.spec['hostPath'] as Json)['path'], dir);
      // redis-server runs in /data, which is the claim's directory: its AOF is there.
      assert.ok(dir && readdirSync(dir).includes('appendonlydir'), `${name} writes its AOF into the claim`);
    }
    assert.equal(ips.size, 3);
  });

  test('`kubectl logs` reaches the node agent through kube-apiserver', async () => {
    const out = await cp.kubectl(['logs', '-n', NS, 'web-1', '--tail=50']);
    assert.match(out, /Ready to accept connections/);
    const last = await admin.request<string>('GET', `/api/v1/namespaces/${NS}/pods/web-1/log`, { query: { tailLines: 1 } });
    assert.equal(String(last).trim().split('\n').length, 1);
    assert.ok(agent.podLog(NS, 'web-1').includes(String(last).trim()));
  });

  test('a hung (SIGSTOPped) redis fails its readiness probe; SIGCONT makes it Ready again', async () => {
    assert.equal(agent.killPodProcess(NS, 'web-2', 'SIGSTOP'), true);
    const unready = await until(
      'web-2 not Ready',
      async () => {
        const p = await pod('web-2');
        return p && conditionOf(p, 'Ready') === 'False' ? p : undefined;
      },
      20_000,
    );
    assert.equal(conditionOf(unready, 'ContainersReady'), 'False');
    assert.equal(containerOf(unready)['ready'], false);
    assert.ok((containerOf(unready)['state'] as Json)['running'], 'still running: only readiness failed');
    await until(
      'the StatefulSet counts 2 ready',
      async () => (await admin.get<{ status: Json }>(`/apis/apps/v1/namespaces/${NS}/statefulsets/web`))?.status['readyReplicas'] === 2,
    );
    agent.killPodProcess(NS, 'web-2', 'SIGCONT');
    await readyPod('web-2', 20_000);
  });

  test('a crashed container restarts in place (same pod, same IP, restartCount 1) and `kubectl logs --previous` shows the old one', async () => {
    const before = await readyPod('web-1');
    assert.equal(agent.killPodProcess(NS, 'web-1', 'SIGKILL'), true);
    const after = await until(
      'web-1 restarted and Ready',
      async () => {
        const p = await pod('web-1');
        return p && containerOf(p)['restartCount'] === 1 && isReady(p) ? p : undefined;
      },
      30_000,
    );
    assert.equal(after.metadata.uid, before.metadata.uid);
    assert.equal(after.status?.['podIP'], before.status?.['podIP']);
    const last = ((containerOf(after)['lastState'] as Json)['terminated'] ?? {}) as Json;
    assert.equal(last['exitCode'], 137);
    assert.equal(last['reason'], 'Error');
    assert.match(await cp.kubectl(['logs', '-n', NS, 'web-1', '--previous']), /Ready to accept connections/);
  });

  test('graceful deletion: SIGTERM, a terminal status, the final DELETE; the real StatefulSet controller recreates the pod with the same claim and data', async () => {
    const old = await readyPod('web-0');
    const oldIP = old.status?.['podIP'] as string;
    assert.equal(await cli(oldIP, 'SET', 'greeting', 'hello'), 'OK');
    const t0 = Date.now();
    const deleted = await admin.request<Pod>('DELETE', `/api/v1/namespaces/${NS}/pods/web-0`);
    assert.ok(deleted.metadata.deletionTimestamp, 'the API server deletes gracefully: the pod stays, Terminating');
    assert.equal(deleted.metadata.deletionGracePeriodSeconds, 20);
    await until('the old web-0 gone from the API', () => podEvents.some((e) => e.type === 'DELETED' && e.pod.metadata.uid === old.metadata.uid), 30_000);
    const elapsed = Date.now() - t0;
    assert.ok(elapsed < 15_000, `redis stopped on SIGTERM well within the grace period (${elapsed} ms)`);
    const terminal = podEvents.filter((e) => e.pod.metadata.uid === old.metadata.uid && e.pod.status?.['phase'] === 'Succeeded');
    assert.ok(terminal.length > 0, 'the terminal phase was written before the pod was removed');
    const state = ((containerOf(terminal[0]!.pod)['state'] as Json)['terminated'] ?? {}) as Json;
    assert.equal(state['exitCode'], 0, 'redis-server exited by itself after SIGTERM (no SIGKILL)');
    assert.match(agent.previousPodLog(NS, 'web-0') ?? '', /Received SIGTERM scheduling shutdown/);

    const fresh = await readyPod('web-0', 60_000);
    assert.notEqual(fresh.metadata.uid, old.metadata.uid);
    const newIP = fresh.status?.['podIP'] as string;
    assert.notEqual(newIP, oldIP, 'a new pod gets a new IP');
    const volume = (fresh.spec.volumes ?? []).find((v) => v['name'] === 'data');
    assert.deepEqual(volume?.['persistentVolumeClaim'], { claimName: 'data-web-0' });
    assert.equal(await cli(newIP, 'GET', 'greeting'), 'hello', 'the data survived in the claim');
  });

  test('a hung pod is SIGKILLed when its grace period ends', async () => {
    const old = await readyPod('web-2');
    assert.equal(agent.killPodProcess(NS, 'web-2', 'SIGSTOP'), true);
    const t0 = Date.now();
    await admin.request('DELETE', `/api/v1/namespaces/${NS}/pods/web-2`, { body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 3 } });
    await until('the old web-2 gone', () => podEvents.some((e) => e.type === 'DELETED' && e.pod.metadata.uid === old.metadata.uid), 30_000);
    assert.ok(Date.now() - t0 >= 3000, 'not before the grace period');
    const seen = podEvents.filter((e) => e.pod.metadata.uid === old.metadata.uid);
    const failed = seen.find((e) => e.pod.status?.['phase'] === 'Failed');
    const story = seen.map((e) => `${e.type}:${String(e.pod.status?.['phase'])}:${JSON.stringify(containerOf(e.pod)['state'] ?? null)}`).join(' | ');
    assert.ok(failed, `a Failed status before the pod went: ${story}`);
    assert.equal((((containerOf(failed.pod)['state'] as Json | undefined)?.['terminated'] ?? {}) as Json)['exitCode'], 137, story);
    await readyPod('web-2', 60_000);
  });

  test("a claim's request grows: the provisioner expands the volume (allowVolumeExpansion)", async () => {
    await admin.request('PATCH', `/api/v1/namespaces/${NS}/persistentvolumeclaims/data-web-1`, {
      contentType: 'application/merge-patch+json',
      body: { spec: { resources: { requests: { storage: '2Gi' } } } },
    });
    await until('data-web-1 capacity 2Gi', async () => ((await claim('data-web-1'))?.status?.['capacity'] as Json | undefined)?.['storage'] === '2Gi', 20_000);
  });

  test('scale down with whenScaled Delete: the claim goes, the PV is Released, the provisioner removes its directory and the PV', async () => {
    const c = await claim('data-web-2');
    const pvName = String(c?.spec['volumeName']);
    const dir = agent.claimPath(NS, 'data-web-2');
    assert.ok(dir && existsSync(dir));
    await admin.request('PATCH', `/apis/apps/v1/namespaces/${NS}/statefulsets/web`, {
      contentType: 'application/merge-patch+json',
      body: { spec: { replicas: 2 } },
    });
    await until(`PV ${pvName} deleted`, async () => (await admin.get(`/api/v1/persistentvolumes/${pvName}`)) === undefined, 60_000);
    assert.equal(existsSync(dir), false, 'the volume directory is gone');
    assert.equal(await claim('data-web-2'), undefined);
  });

  test('deleting the StatefulSet (whenDeleted Retain) keeps the claims and their data', async () => {
    const dir = agent.claimPath(NS, 'data-web-0');
    await admin.request('DELETE', `/apis/apps/v1/namespaces/${NS}/statefulsets/web`, {
      body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background' },
    });
    await until('every pod gone', () => pods.list().length === 0, 60_000);
    for (const n of ['data-web-0', 'data-web-1']) assert.equal((await claim(n))?.status?.['phase'], 'Bound');
    assert.ok(dir && readdirSync(dir).includes('appendonlydir'));
    assert.deepEqual(agent.processes(), []);
  });

  test("the operator's own children (from the hook) run: ConfigMap volume, Secret env, exec probes; Ready once promoted or replicating", async () => {
    const ns = 'node-agent-hook';
    await admin.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } });
    await until('the default ServiceAccount', () => admin.get(`/api/v1/namespaces/${ns}/serviceaccounts/default`));
    for (const [name, password] of [
      ['my-redis-auth', PASSWORD],
      ['my-redis-operator', `${PASSWORD}-operator`],
    ]) {
      await admin.request('POST', `/api/v1/namespaces/${ns}/secrets`, {
        body: { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { password } },
      });
    }
    for (const child of hookChildren(ns)) {
      const [group, version] = child.apiVersion.includes('/') ? child.apiVersion.split('/') : ['', child.apiVersion];
      const plural = `${child.kind.toLowerCase()}s`; // configmaps, services, statefulsets, poddisruptionbudgets
      await admin.request('POST', `${group ? `/apis/${group}/${version}` : '/api/v1'}/namespaces/${ns}/${plural}`, { body: child });
    }
    const ipOf = async (name: string) =>
      until(
        `${name} Running`,
        async () => {
          const p = await admin.get<Pod>(`/api/v1/namespaces/${ns}/pods/${name}`);
          return p?.status?.['phase'] === 'Running' && containerOf(p)['started'] === true ? String(p.status['podIP']) : undefined;
        },
        60_000,
      );
    const readyIn = (name: string) => until(`${name} Ready`, async () => isReady(await admin.get<Pod>(`/api/v1/namespaces/${ns}/pods/${name}`)), 30_000);
    const master = await ipOf('my-redis-master-0');
    // Every node starts as a replica of nowhere, so not Ready until someone (the sidecar) decides.
    assert.equal(isReady(await admin.get<Pod>(`/api/v1/namespaces/${ns}/pods/my-redis-master-0`)), false);
    assert.equal(await authCli(master, 'REPLICAOF', 'NO', 'ONE'), 'OK');
    await readyIn('my-redis-master-0');
    const replica = await ipOf('my-redis-replica-0');
    assert.equal(await authCli(replica, 'REPLICAOF', master, '6379'), 'OK');
    await readyIn('my-redis-replica-0');
  });

  test('init containers run in order before the app container; the operator image runs on Node 24; termination messages', async () => {
    for (const body of initPods()) await admin.request('POST', `/api/v1/namespaces/${NS}/pods`, { body });
    const finished = (name: string, phase: string) =>
      until(
        `${name} ${phase}`,
        async () => {
          const p = await pod(name);
          return p?.status?.['phase'] === phase ? p : undefined;
        },
        60_000,
      );
    const initOf = (p: Pod) => ((p.status?.['initContainerStatuses'] ?? []) as Json[])[0] ?? {};
    const terminated = (cs: Json) => ((cs['state'] as Json | undefined)?.['terminated'] ?? {}) as Json;

    const ok = await finished('init-ok', 'Succeeded');
    assert.equal(terminated(initOf(ok))['reason'], 'Completed');
    assert.equal(terminated(initOf(ok))['exitCode'], 0);
    assert.equal(initOf(ok)['ready'], true);
    const app = containerOf(ok);
    assert.equal(terminated(app)['exitCode'], 0, agent.podLog(NS, 'init-ok', 'check'));
    const message = JSON.parse(String(terminated(app)['message'])) as { ok: boolean; v: string; src: boolean };
    assert.equal(message.ok, true);
    assert.match(message.v, /^v24\./, 'node is the project Node 24');
    assert.equal(message.src, true, 'the working directory is the image WORKDIR: the repository, with src/');
    assert.match(String(app['imageID']), /^node-agent:\/\/node@sha256:[0-9a-f]{64}$/);
    assert.equal(conditionOf(ok, 'Initialized'), 'True');
    const whileInit = podEvents.find((e) => e.pod.metadata.name === 'init-ok' && conditionOf(e.pod, 'Initialized') === 'False');
    const initCondition = ((whileInit?.pod.status?.['conditions'] ?? []) as Json[]).find((c) => c['type'] === 'Initialized');
    assert.equal(initCondition?.['message'], 'containers with incomplete status: [prepare]');
    assert.equal(((containerOf(whileInit?.pod)['state'] as Json)['waiting'] as Json)['reason'], 'PodInitializing');

    const failed = await finished('init-fails', 'Failed');
    assert.equal(terminated(initOf(failed))['exitCode'], 1);
    assert.equal(terminated(initOf(failed))['reason'], 'Error');
    assert.equal(terminated(initOf(failed))['message'], 'cannot restore\n', 'FallbackToLogsOnError: the log, the file being empty');
    const never = containerOf(failed);
    assert.equal(((never['state'] as Json)['waiting'] as Json)['reason'], 'PodInitializing', 'the app container never ran');
    assert.equal(never['containerID'], undefined);
    assert.equal(conditionOf(failed, 'Initialized'), 'False');
    assert.match(await cp.kubectl(['logs', '-n', NS, 'init-fails', '-c', 'fail']), /cannot restore/);
    assert.equal(agent.podLog(NS, 'init-fails', 'never'), '');

    for (const name of ['init-ok', 'init-fails']) await admin.request('DELETE', `/api/v1/namespaces/${NS}/pods/${name}`);
    await until('the init pods gone', async () => (await pod('init-ok')) === undefined && (await pod('init-fails')) === undefined, 30_000);
  });

  test(
    'with a pod network: the pod gets a namespace and an address on the bridge, its exec probe runs inside it, the namespace goes with the pod',
    { skip: unavailableReason() ?? false },
    async () => {
      const network = await createPodNetwork({ subnet: NET_SUBNET });
      const netDir = mkdtempSync(path.join(os.tmpdir(), 'node-agent-net-'));
      const second = await startNodeAgent({ controlPlane: cp, network, dataDir: netDir, nodes: ['net-1'], provisioner: false, ...(logger ? { logger } : {}) });
      try {
        assert.equal(second.nodes[0]?.hostIP, `127.0.${NET_SUBNET}.1`, 'the node itself stays on loopback');
        await admin.request('POST', `/api/v1/namespaces/${NS}/pods`, {
          body: {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'netpod' },
            spec: {
              nodeSelector: { 'kubernetes.io/hostname': 'net-1' },
              terminationGracePeriodSeconds: 5,
              containers: [
                {
                  name: 'redis',
                  image: 'redis:7.2',
                  // The redis image compiles protected mode off; the host's redis-server does not, and
                  // without a password it would refuse clients that are not on loopback.
                  args: ['--protected-mode', 'no'],
                  env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
                  // True only inside the pod's namespace, where eth0 carries the pod IP.
                  readinessProbe: {
                    exec: { command: ['sh', '-c', 'ip -o -4 addr show dev eth0 | grep -q "inet $POD_IP/" && redis-cli -h "$POD_IP" ping | grep -q PONG'] },
                    periodSeconds: 1,
                  },
                },
              ],
            },
          },
        });
        const p = await readyPod('netpod', 60_000);
        const ip = String(p.status?.['podIP']);
        assert.match(ip, new RegExp(`^198\\.18\\.${NET_SUBNET}\\.\\d+$`));
        assert.equal(p.status?.['hostIP'], `127.0.${NET_SUBNET}.1`);
        assert.equal(await cli(ip, 'PING'), 'PONG', 'the host reaches the pod over the bridge');
        const proc = second.processes().find((x) => x.pod === 'netpod');
        assert.ok(proc);
        assert.notEqual(readlinkSync(`/proc/${proc.pid}/ns/net`), readlinkSync('/proc/self/ns/net'), 'redis-server runs in its own network namespace');
        const netns = () => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
        assert.match(netns(), new RegExp(`rok${NET_SUBNET}-`));
        await admin.request('DELETE', `/api/v1/namespaces/${NS}/pods/netpod`);
        await until('netpod gone', async () => (await pod('netpod')) === undefined, 30_000);
        await until('its namespace deleted', () => !netns().includes(`rok${NET_SUBNET}-`), 10_000);
      } finally {
        await second.stop();
        await network.destroy();
        rmSync(netDir, { recursive: true, force: true });
        // A node without its kubelet would go NotReady; this one is gone for good.
        await admin.request('DELETE', '/api/v1/nodes/net-1').catch(() => undefined);
      }
    },
  );

  test("the nodes stay Ready past the node lifecycle controller's grace period (50 s): fresh Leases, no taint", async () => {
    // Without heartbeats the controller would mark the nodes Unknown 50 s after the last one.
    await sleep(Math.max(0, agentStarted + 65_000 - Date.now()));
    const list = await admin.request<{ items: Array<KubeObject & { spec: Json; status: Json }> }>('GET', '/api/v1/nodes');
    assert.deepEqual(list.items.map((n) => n.metadata.name).sort(), ['node-1', 'node-2', 'node-3']);
    for (const n of list.items) {
      assert.equal((n.status['conditions'] as Json[]).find((c) => c['type'] === 'Ready')?.['status'], 'True');
      assert.deepEqual(n.spec['taints'] ?? [], [], `${n.metadata.name} has no taints`);
      const lease = await admin.get<{ spec: { renewTime: string } }>(`/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${n.metadata.name}`);
      assert.ok(Date.now() - Date.parse(lease!.spec.renewTime) < 15_000, `${n.metadata.name}'s lease renewed within 15 s`);
    }
    assert.deepEqual(
      [...nodeReady].filter((x) => x.startsWith('node-')).sort(),
      ['node-1=True', 'node-2=True', 'node-3=True'],
      'no node was ever seen NotReady or Unknown',
    );
  });
});
