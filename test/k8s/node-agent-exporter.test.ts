// The exporter container the hook adds to every Redis pod, run by the node agent on a REAL control
// plane: the hook's own pod template (its redis container, REDIS_START_SCRIPT with the operator's
// ACL user, and the exporter with no command and its env), on a loopback node (127.0.0.1 and :9121
// rewritten to the pod IP) and, as root, on a pod network (its own namespace: nothing rewritten,
// the shim lets redis listen on the pod's loopback too). Each exporter answers `redis_up 1` for its
// own Redis, its imageID is the binary's digest, and its httpGet liveness probe on the named port
// passes, and restarts it alone when it hangs. Skipped, with the reason, without the control plane
// binaries or redis-server; without the exporter binary it fails naming the command that fetches it.
// Network: control plane on 127.0.89.x, node-1 on 127.0.90.1 (pods 127.0.90.2+); the pod network
// on bridge rok92 (pods 198.18.92.x, its node on 127.0.92.1); ports 6379 and 9121.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { exporterBinary } from '../cluster/workloads/exporter-image.ts';
import { redisProcessesOnSubnet } from '../cluster/workloads/index.ts';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import { createPodNetwork, unavailableReason } from './pod-network.ts';
import { KubeClient, type Json } from './node-agent/api-client.ts';
import { startNodeAgent, type NodeAgent } from './node-agent/index.ts';
import { authCli, hookChildren, PASSWORD, skipReason, sleep, until, type Pod } from './node-agent/testing.ts';

const NS = 'node-agent-exporter';
const BASE = 89;
const NET_SUBNET = 92;
const TIME_SCALE = 0.2;

/** The exporter's answer at <ip>:9121 (undefined while it cannot be reached). */
async function scrape(ip: string, route = '/metrics'): Promise<string | undefined> {
  try {
    const res = await fetch(`http://${ip}:9121${route}`, { signal: AbortSignal.timeout(5000) });
    return res.ok ? await res.text() : undefined;
  } catch {
    return undefined;
  }
}

const statuses = (p: Pod | undefined) => (p?.status?.['containerStatuses'] ?? []) as Json[];
const containerOf = (p: Pod | undefined, name: string) => statuses(p).find((c) => c['name'] === name);
const running = (cs: Json | undefined) => cs !== undefined && 'running' in ((cs['state'] as Json | undefined) ?? {});
const environ = (pid: number) =>
  Object.fromEntries(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );

describe('the exporter container on the node agent', { skip: skipReason() }, () => {
  let cp: ControlPlane;
  let agent: NodeAgent;
  let admin: KubeClient;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'node-agent-exporter-'));
  const logger = process.env['NODE_AGENT_LOG'] ? pino({ level: process.env['NODE_AGENT_LOG'] }, pino.destination(2)) : undefined;
  const children = hookChildren(NS);
  const pod = (name: string) => admin.get<Pod>(`/api/v1/namespaces/${NS}/pods/${name}`);

  /** A bare pod from the hook's master pod template, on `node`, the claim replaced by an emptyDir. */
  function hookPod(name: string, node: string): Json {
    const set = children.find((c) => c.kind === 'StatefulSet' && (c['metadata'] as Json)['name'] === 'my-redis-master') as Json;
    const template = structuredClone(((set['spec'] as Json)['template'] as Json) ?? {}) as {
      metadata: Json;
      spec: Json & { containers: Json[]; volumes?: Json[] };
    };
    const exporter = template.spec.containers.find((c) => c['name'] === 'exporter');
    assert.ok(exporter, 'the hook adds the exporter container (spec.monitoring is on by default)');
    assert.equal(exporter['command'], undefined, "no command: the image's entrypoint runs");
    // A hang shows within seconds (the hook's probe: 5 s x 6), and the hung process goes after 1 s.
    Object.assign(exporter['livenessProbe'] as Json, { timeoutSeconds: 1, failureThreshold: 2, terminationGracePeriodSeconds: 1 });
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: template.metadata['labels'] },
      spec: {
        ...template.spec,
        nodeSelector: { 'kubernetes.io/hostname': node },
        terminationGracePeriodSeconds: 5,
        volumes: [...(template.spec.volumes ?? []), { name: 'data', emptyDir: {} }],
      },
    };
  }

  /** Runs the pod and checks its exporter; answers its IP. */
  async function exporterServes(name: string, node: string, from: NodeAgent): Promise<{ ip: string; pid: number }> {
    await admin.request('POST', `/api/v1/namespaces/${NS}/pods`, { body: hookPod(name, node) });
    const ip = await until(
      `${name}: both containers running`,
      async () => {
        const p = await pod(name);
        return running(containerOf(p, 'redis')) && running(containerOf(p, 'exporter')) ? String(p!.status!['podIP']) : undefined;
      },
      60_000,
    );
    await until(`redis_up 1 at ${ip}:9121`, async () => /^redis_up 1$/m.test((await scrape(ip)) ?? ''), 30_000);
    // Its own pod's Redis: the same run_id (logged in as the operator user: the only password it has).
    const runId = /^run_id:(\w+)/m.exec(await authCli(ip, 'INFO', 'server'))?.[1];
    assert.ok(runId);
    assert.match((await scrape(ip)) ?? '', new RegExp(`^redis_instance_info\\{.*run_id="${runId}".*\\} 1$`, 'm'));
    const exporter = containerOf(await pod(name), 'exporter')!;
    assert.match(String(exporter['imageID']), /^node-agent:\/\/redis_exporter@sha256:[0-9a-f]{64}$/);
    assert.equal(exporter['ready'], true, 'no readiness probe: ready once running');
    const proc = from.processes().find((x) => x.pod === name && x.container === 'exporter');
    assert.ok(proc);
    return { ip, pid: proc.pid };
  }

  /** Liveness (period 10 s x TIME_SCALE, 2 failures) holds while it answers; a hang restarts the exporter alone. */
  async function livenessWorks(name: string, from: NodeAgent, ip: string): Promise<void> {
    await sleep(3 * 10_000 * TIME_SCALE);
    assert.equal(containerOf(await pod(name), 'exporter')!['restartCount'], 0, 'the liveness probe passes on the named port');
    assert.ok(from.killPodProcess(NS, name, 'SIGSTOP', 'exporter'), 'an exporter process to stop');
    await until(
      `${name}: the hung exporter restarted`,
      async () => {
        const e = containerOf(await pod(name), 'exporter');
        return e?.['restartCount'] === 1 && running(e);
      },
      30_000,
    );
    const p = await pod(name);
    assert.equal(containerOf(p, 'redis')!['restartCount'], 0, 'redis was left alone');
    assert.equal(p!.status!['podIP'], ip);
    await until(`redis_up 1 again at ${ip}`, async () => /^redis_up 1$/m.test((await scrape(ip)) ?? ''), 30_000);
  }

  before(async () => {
    // As every monitoring test: without the binary this fails, naming what to run (never skips).
    const bin = exporterBinary();
    assert.equal(typeof bin, 'string', typeof bin === 'object' ? bin.error : '');
    cp = await startControlPlane({ subnet: BASE, ...(process.env['NODE_AGENT_LOG'] ? { onProgress: (l: string) => console.error(l) } : {}) });
    agent = await startNodeAgent({
      controlPlane: cp,
      subnetBase: BASE,
      dataDir,
      nodes: 1,
      provisioner: false,
      timeScale: TIME_SCALE,
      ...(logger ? { logger } : {}),
    });
    admin = new KubeClient(cp.adminKubeconfig);
    await admin.request('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } } });
    await until('the default ServiceAccount', () => admin.get(`/api/v1/namespaces/${NS}/serviceaccounts/default`));
    for (const [name, password] of [
      ['my-redis-auth', PASSWORD],
      ['my-redis-operator', `${PASSWORD}-operator`],
    ]) {
      await admin.request('POST', `/api/v1/namespaces/${NS}/secrets`, {
        body: { apiVersion: 'v1', kind: 'Secret', metadata: { name }, stringData: { password } },
      });
    }
    const config = children.find((c) => c.kind === 'ConfigMap');
    assert.ok(config);
    await admin.request('POST', `/api/v1/namespaces/${NS}/configmaps`, { body: config });
  });

  after(async () => {
    admin?.close();
    await agent?.stop();
    assert.deepEqual(redisProcessesOnSubnet(BASE + 1), [], 'stop() left redis-server processes behind');
    await cp?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('a loopback pod: redis_up 1 at <pod IP>:9121 (127.0.0.1 and :9121 rewritten), liveness on port metrics', async () => {
    const { ip, pid } = await exporterServes('exp-loop', 'node-1', agent);
    assert.match(ip, new RegExp(`^127\\.0\\.${BASE + 1}\\.\\d+$`));
    const env = environ(pid);
    assert.equal(env['REDIS_ADDR'], `redis://${ip}:6379`);
    assert.equal(env['REDIS_EXPORTER_WEB_LISTEN_ADDRESS'], `${ip}:9121`);
    assert.equal(env['REDIS_USER'], 'redis-operator');
    assert.match(agent.podLog(NS, 'exp-loop', 'exporter'), /Providing metrics at 127\.0\.\d+\.\d+:9121\/metrics/);
    await livenessWorks('exp-loop', agent, ip);
  });

  test(
    "a pod network: the pod's own 127.0.0.1 and :9121, nothing rewritten; the probe reaches the bridge address",
    { skip: unavailableReason() ?? false },
    async () => {
      const network = await createPodNetwork({ subnet: NET_SUBNET });
      const netDir = mkdtempSync(path.join(os.tmpdir(), 'node-agent-exporter-net-'));
      const second = await startNodeAgent({
        controlPlane: cp,
        network,
        dataDir: netDir,
        nodes: ['exp-net-1'],
        provisioner: false,
        timeScale: TIME_SCALE,
        ...(logger ? { logger } : {}),
      });
      try {
        const { ip, pid } = await exporterServes('exp-net', 'exp-net-1', second);
        assert.match(ip, new RegExp(`^198\\.18\\.${NET_SUBNET}\\.\\d+$`));
        const env = environ(pid);
        assert.equal(env['REDIS_ADDR'], 'redis://127.0.0.1:6379');
        assert.equal(env['REDIS_EXPORTER_WEB_LISTEN_ADDRESS'], ':9121');
        await livenessWorks('exp-net', second, ip);
        await admin.request('DELETE', `/api/v1/namespaces/${NS}/pods/exp-net`);
        await until('exp-net gone', async () => (await pod('exp-net')) === undefined, 30_000);
      } finally {
        await second.stop();
        await network.destroy();
        rmSync(netDir, { recursive: true, force: true });
        await admin.request('DELETE', '/api/v1/nodes/exp-net-1').catch(() => undefined);
      }
    },
  );
});
