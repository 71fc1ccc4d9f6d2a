// The workloads stand-in (test/cluster/workloads): StatefulSet controller, PVCs and a kubelet
// running real redis-server processes, driven through the in-process API store with the hook's
// own children. Network: third octets 40..48 (one per test), pods on 127.0.N.2+, port 6379;
// nothing outside 127.0.0.0/8.
import { after, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { ObjectStore, type StoredObject } from '../support/kube-api/index.ts';
import { installValidation } from './validation.ts';
import { parseHookRequest, sync, type KubeObject } from '../../src/hook/index.ts';
import { ROLE_LABEL } from '../../src/api/labels.ts';
import { KUBELET_FINALIZER, POD_NAME_LABEL, REVISION_LABEL, redisProcessesOnSubnet, startWorkloads, type Workloads } from './workloads/index.ts';
import { until } from '../support/until.ts';

const PASSWORD = 'stand-in-password';
const FAST = 0.1;
/** How long a wait on real redis-server processes may take on a busy machine. */
const WAIT_MS = 20_000;

type Json = Record<string, unknown>;

function designSpec(replicas = 2): Json {
  return {
    version: '7.2',
    master: { replicas: 1 },
    replicas,
    persistence: { enableRdb: true, rdbSchedule: '*/15 * * * *', enableAof: true, size: '1Gi' },
    resources: { requests: { memory: '256Mi', cpu: '100m' }, limits: { memory: '512Mi', cpu: '500m' } },
  };
}

/** The hook's children for a Redis called my-redis (what Metacontroller would apply). */
function hookChildren(namespace: string, spec: Json): KubeObject[] {
  const parsed = parseHookRequest({
    parent: { apiVersion: 'redis.example.com/v1', kind: 'Redis', metadata: { name: 'my-redis', namespace, uid: randomUUID(), generation: 1 }, spec },
    children: {},
    related: {},
  });
  if (!parsed.ok) throw new Error(parsed.message);
  return sync(parsed.request).children;
}

interface Cluster {
  store: ObjectStore;
  wl: Workloads;
  ns: string;
  subnet: number;
  dataRoot: string;
}

interface ClusterOptions {
  subnet: number;
  spec?: Json;
  /** Create the auth Secret (default true). */
  secret?: boolean;
  timeScale?: number;
  /** Edit the hook's objects before they are created. */
  edit?: (o: KubeObject) => void;
  /** Which StatefulSets to create (default both). */
  sets?: string[];
  /** Hook objects not to create (true = skip). */
  skip?: (o: KubeObject) => boolean;
}

async function startCluster(t: TestContext, o: ClusterOptions): Promise<Cluster> {
  // With the API server's validation and defaulting, as the whole local cluster runs.
  const store = new ObjectStore();
  installValidation(store);
  const ns = `wl-${o.subnet}`;
  const dataRoot = mkdtempSync(path.join(os.tmpdir(), `workloads-${o.subnet}-`));
  const logger = process.env['WORKLOADS_LOG'] ? pino({ level: process.env['WORKLOADS_LOG'] }, pino.destination(2)) : undefined;
  const wl = startWorkloads({ store, subnet: o.subnet, dataRoot, timeScale: o.timeScale ?? FAST, ...(logger ? { logger } : {}) });
  t.after(async () => {
    await wl.stop();
    assert.deepEqual(redisProcessesOnSubnet(o.subnet), [], 'stop() left redis-server processes behind');
    rmSync(dataRoot, { recursive: true, force: true });
  });
  if (o.secret !== false) createSecret(store, ns);
  for (const child of hookChildren(ns, o.spec ?? designSpec())) {
    if (child.kind === 'StatefulSet' && o.sets && !o.sets.includes(child.metadata.name)) continue;
    if (o.skip?.(child)) continue;
    o.edit?.(child);
    store.create(child.kind, child as Json);
  }
  return { store, wl, ns, subnet: o.subnet, dataRoot };
}

/** The pods' two Secrets: the clients' password and the operator user's (the sidecar makes both; there is none here). */
function createSecret(store: ObjectStore, ns: string): void {
  store.create('secrets', { metadata: { name: 'my-redis-auth', namespace: ns }, stringData: { password: PASSWORD } });
  store.create('secrets', { metadata: { name: 'my-redis-operator', namespace: ns }, stringData: { password: `${PASSWORD}-operator` } });
}

function cli(ip: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'redis-cli',
      ['-h', ip, '-p', '6379', ...args],
      { env: { REDISCLI_AUTH: PASSWORD, PATH: process.env['PATH'] ?? '' }, timeout: 5000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`redis-cli ${args.join(' ')} at ${ip}: ${err.message} ${stderr}`));
        else resolve(stdout.trim());
      },
    );
  });
}

function pod(c: Cluster, name: string): StoredObject | undefined {
  return c.store.get('pods', c.ns, name);
}

function status(p: StoredObject | undefined): Json {
  return (p?.['status'] ?? {}) as Json;
}

function condition(p: StoredObject | undefined, type: string): string | undefined {
  return ((status(p)['conditions'] as Array<{ type: string; status: string }> | undefined) ?? []).find((x) => x.type === type)?.status;
}

function containerStatus(p: StoredObject | undefined): Json {
  return ((status(p)['containerStatuses'] as Json[] | undefined) ?? [])[0] ?? {};
}

const isReady = (p: StoredObject | undefined) => condition(p, 'Ready') === 'True';
const isRunning = (p: StoredObject | undefined) => status(p)['phase'] === 'Running' && typeof status(p)['podIP'] === 'string';

async function runningPod(c: Cluster, name: string): Promise<StoredObject> {
  return until(
    `${name} Running with an IP`,
    () => {
      const p = pod(c, name);
      return p && isRunning(p) && !p.metadata.deletionTimestamp ? p : undefined;
    },
    WAIT_MS,
  );
}

async function readyPod(c: Cluster, name: string): Promise<StoredObject> {
  return until(
    `${name} Ready`,
    () => {
      const p = pod(c, name);
      return isReady(p) ? p : undefined;
    },
    WAIT_MS,
  );
}

/** redis-cli, retried while the server is still starting (connection refused, LOADING). */
async function cliRetry(ip: string, ...args: string[]): Promise<string> {
  for (let i = 0; ; i++) {
    try {
      const out = await cli(ip, ...args);
      if (!out.startsWith('LOADING')) return out;
    } catch (e) {
      if (i > 250) throw e;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What the sidecar would do to make a pod Ready on its own: promote it. */
async function promote(c: Cluster, name: string): Promise<string> {
  const ip = status(await runningPod(c, name))['podIP'] as string;
  await cliRetry(ip, 'REPLICAOF', 'NO', 'ONE');
  return ip;
}

function podNames(c: Cluster): string[] {
  return c.store.list('pods', { namespace: c.ns }).map((p) => p.metadata.name);
}

describe('workloads stand-in', () => {
  after(() => {
    for (let n = 40; n <= 48; n++) assert.deepEqual(redisProcessesOnSubnet(n), []);
  });

  test("the hook's StatefulSets become pods named by ordinal, each a real redis-server on its own IP, Ready only when the probe says so", async (t) => {
    const c = await startCluster(t, { subnet: 40 });
    const names = ['my-redis-master-0', 'my-redis-replica-0', 'my-redis-replica-1'];
    const pods = await Promise.all(names.map((n) => runningPod(c, n)));
    assert.deepEqual(podNames(c), names);

    const ips = pods.map((p) => status(p)['podIP'] as string);
    assert.equal(new Set(ips).size, 3, 'every pod has its own IP');
    for (const [i, p] of pods.entries()) {
      assert.match(ips[i]!, /^127\.0\.40\.\d+$/);
      assert.equal(status(p)['hostIP'], c.wl.hostIP);
      assert.equal(c.wl.podAddress(c.ns, names[i]!), ips[i]);
      assert.equal(await cliRetry(ips[i]!, 'PING'), 'PONG', `${names[i]} answers at its pod IP`);
      // StatefulSet pod identity
      const set = names[i]!.replace(/-\d+$/, '');
      assert.equal(p.metadata.labels?.[POD_NAME_LABEL], names[i]);
      assert.match(p.metadata.labels?.[REVISION_LABEL] ?? '', new RegExp(`^${set}-[a-z0-9]{10}$`));
      assert.equal(p.metadata.labels?.['app.kubernetes.io/component'], set.endsWith('master') ? 'master-set' : 'replica-set');
      assert.deepEqual(
        p.metadata.ownerReferences?.map((r) => [r.kind, r.name, r.controller]),
        [['StatefulSet', set, true]],
      );
      assert.ok(p.metadata.finalizers?.includes(KUBELET_FINALIZER));
      const spec = p['spec'] as Json;
      assert.equal(spec['hostname'], names[i]);
      assert.equal(spec['subdomain'], 'my-redis-headless');
      const volumes = spec['volumes'] as Json[];
      assert.deepEqual(
        volumes.find((v) => v['name'] === 'data'),
        { name: 'data', persistentVolumeClaim: { claimName: `data-${names[i]}` } },
      );
      // The container runs from the ConfigMap's redis.conf, with its data on the claim's directory.
      assert.equal(await cli(ips[i]!, 'CONFIG', 'GET', 'dir'), `dir\n${c.wl.claimPath(c.ns, `data-${names[i]}`)}`);
      assert.equal(await cli(ips[i]!, 'CONFIG', 'GET', 'repl-ping-replica-period'), 'repl-ping-replica-period\n1');
      assert.equal(await cli(ips[i]!, 'CONFIG', 'GET', 'appendonly'), 'appendonly\nyes');
    }

    // Every node starts as a replica of nowhere: the startup probe passes, the readiness probe does not.
    for (const n of names) {
      const p = await until(`${n} started`, () => (containerStatus(pod(c, n))['started'] === true ? pod(c, n) : undefined), WAIT_MS);
      assert.equal(condition(p, 'Ready'), 'False');
      assert.equal(containerStatus(p)['ready'], false);
      assert.match(await cli(status(p)['podIP'] as string, 'INFO', 'replication'), /role:slave[\s\S]*master_link_status:down/);
    }
    assert.deepEqual(c.wl.serviceEndpoints(c.ns, 'my-redis-headless'), names, 'the headless Service publishes not-ready pods');
    assert.deepEqual(c.wl.serviceEndpoints(c.ns, 'my-redis-replicas'), []);

    // Promoted, master-0 turns Ready; replica-0 pointed at it turns Ready once its link is up.
    const masterIP = await promote(c, 'my-redis-master-0');
    await readyPod(c, 'my-redis-master-0');
    assert.equal(condition(pod(c, 'my-redis-replica-0'), 'Ready'), 'False');
    await cli(ips[1]!, 'REPLICAOF', masterIP, '6379');
    await readyPod(c, 'my-redis-replica-0');
    assert.match(await cli(ips[1]!, 'INFO', 'replication'), /master_link_status:up/);
    assert.equal(condition(pod(c, 'my-redis-replica-1'), 'Ready'), 'False');

    // Service endpoints follow the role label (what the sidecar writes) and readiness.
    assert.deepEqual(c.wl.serviceEndpoints(c.ns, 'my-redis-master'), []);
    c.store.mutate('pods', c.ns, 'my-redis-master-0', (p) => {
      p.metadata.labels = { ...p.metadata.labels, [ROLE_LABEL]: 'master' };
    });
    for (const n of ['my-redis-replica-0', 'my-redis-replica-1']) {
      c.store.mutate('pods', c.ns, n, (p) => {
        p.metadata.labels = { ...p.metadata.labels, [ROLE_LABEL]: 'replica' };
      });
    }
    assert.deepEqual(
      c.wl.serviceAddresses(c.ns, 'my-redis-master').map((e) => [e.pod, e.ip]),
      [['my-redis-master-0', masterIP]],
    );
    assert.deepEqual(c.wl.serviceEndpoints(c.ns, 'my-redis-replicas'), ['my-redis-replica-0'], 'replica-1 is not Ready (link down)');
    c.store.mutate('pods', c.ns, 'my-redis-master-0', (p) => {
      p.metadata.labels = { ...p.metadata.labels, [ROLE_LABEL]: 'replica' };
    });
    assert.deepEqual(c.wl.serviceEndpoints(c.ns, 'my-redis-master'), []);
    assert.deepEqual(c.wl.serviceEndpoints(c.ns, 'my-redis-replicas'), ['my-redis-master-0', 'my-redis-replica-0']);

    // StatefulSet status follows the pods.
    const sts = await until(
      'replica set status',
      () => {
        const s = c.store.get('statefulsets', c.ns, 'my-redis-replica');
        return (s?.['status'] as Json | undefined)?.['readyReplicas'] === 1 ? s : undefined;
      },
      WAIT_MS,
    );
    const st = sts['status'] as Json;
    assert.deepEqual(
      [st['observedGeneration'], st['replicas'], st['readyReplicas'], st['currentReplicas'], st['updatedReplicas'], st['availableReplicas']],
      [1, 2, 1, 2, 2, 1],
    );
    assert.equal(st['currentRevision'], st['updateRevision']);
  });

  test('a deleted pod terminates gracefully and comes back under its name at a new address, with its PVC data', async (t) => {
    const c = await startCluster(t, { subnet: 41, sets: ['my-redis-master'] });
    const ip = await promote(c, 'my-redis-master-0');
    const before = await readyPod(c, 'my-redis-master-0');
    const claimDir = c.wl.claimPath(c.ns, 'data-my-redis-master-0');
    assert.ok(claimDir && existsSync(claimDir));
    await cli(ip, 'CONFIG', 'SET', 'min-replicas-to-write', '0');
    await cli(ip, 'SET', 'survivor', 'kept-on-the-claim');

    const deleted = c.store.delete('pods', c.ns, 'my-redis-master-0');
    assert.equal(deleted.deleted, false, 'the pod stays, Terminating, until its process has exited');
    assert.ok(deleted.object.metadata.deletionTimestamp);
    assert.deepEqual(c.wl.serviceEndpoints(c.ns, 'my-redis-headless'), ['my-redis-master-0'], 'headless publishes terminating pods');

    const after = await until(
      'a new my-redis-master-0',
      () => {
        const p = pod(c, 'my-redis-master-0');
        return p && p.metadata.uid !== before.metadata.uid && isRunning(p) ? p : undefined;
      },
      WAIT_MS,
    );
    const newIP = status(after)['podIP'] as string;
    assert.notEqual(newIP, ip, 'a recreated pod gets a new IP');
    assert.equal(containerStatus(after)['restartCount'], 0);
    assert.equal(c.wl.claimPath(c.ns, 'data-my-redis-master-0'), claimDir, 'same claim, same directory');
    assert.equal(await cliRetry(newIP, 'GET', 'survivor'), 'kept-on-the-claim');
    assert.match(await cli(newIP, 'INFO', 'replication'), /role:slave/, 'it comes back as a replica of nowhere');
    await assert.rejects(cli(ip, 'PING'), 'nothing answers at the old address');
    assert.equal(isReady(after), false);
  });

  const missing = [
    {
      what: 'Secret',
      subnet: 42,
      reason: 'CreateContainerConfigError',
      message: /^secret "my-redis-auth" not found$/,
      // The sandbox exists (env is resolved when the container is created), so the pod has its IP.
      hasIP: true,
    },
    {
      what: 'ConfigMap',
      subnet: 48,
      reason: 'ContainerCreating',
      message: /^MountVolume\.SetUp failed for volume "config" : configmap "my-redis-config" not found$/,
      // Volumes are set up before the sandbox: no IP yet.
      hasIP: false,
    },
  ] as const;
  for (const m of missing) {
    test(`a missing ${m.what} keeps the pod waiting (${m.reason}) until it is created`, async (t) => {
      let held: KubeObject | undefined;
      const c = await startCluster(t, {
        subnet: m.subnet,
        secret: m.what !== 'Secret',
        sets: ['my-redis-master'],
        skip: (o) => {
          if (o.kind !== m.what) return false;
          held = o;
          return true;
        },
      });
      const waiting = await until(
        m.reason,
        () => {
          const s = containerStatus(pod(c, 'my-redis-master-0'))['state'] as Json | undefined;
          return (s?.['waiting'] as Json | undefined)?.['reason'] === m.reason && (s?.['waiting'] as Json)['message'] ? pod(c, 'my-redis-master-0') : undefined;
        },
        WAIT_MS,
      );
      assert.equal(status(waiting)['phase'], 'Pending');
      assert.match(((containerStatus(waiting)['state'] as Json)['waiting'] as Json)['message'] as string, m.message);
      assert.equal(typeof status(waiting)['podIP'] === 'string', m.hasIP);
      assert.equal(condition(waiting, 'Ready'), 'False');
      assert.equal(c.wl.processes().length, 0);
      if (m.what === 'Secret') createSecret(c.store, c.ns);
      else c.store.create('configmaps', held as Json);
      const p = await runningPod(c, 'my-redis-master-0');
      assert.equal(await cliRetry(status(p)['podIP'] as string, 'PING'), 'PONG', 'started with the password and config it waited for');
    });
  }

  test('a container that dies is restarted in place: same pod, same IP, restartCount + 1', async (t) => {
    // A shorter liveness timeout than the hook's 5 s (the mechanism is under test, not the figure):
    // a probe of a hung server lasts its whole timeout, unscaled.
    const c = await startCluster(t, {
      subnet: 43,
      sets: ['my-redis-master'],
      edit: (o) => {
        if (o.kind !== 'StatefulSet') return;
        const podSpec = ((o['spec'] as Json)['template'] as Json)['spec'] as Json;
        ((podSpec['containers'] as Json[])[0]!['livenessProbe'] as Json)['timeoutSeconds'] = 1;
      },
    });
    const p = await runningPod(c, 'my-redis-master-0');
    const ip = status(p)['podIP'] as string;
    const firstPid = c.wl.processes()[0]?.pid;
    assert.ok(c.wl.killPodProcess(c.ns, 'my-redis-master-0', 'SIGKILL'));
    const restarted = await until(
      'restartCount 1 and running',
      () => {
        const q = pod(c, 'my-redis-master-0');
        return containerStatus(q)['restartCount'] === 1 && (containerStatus(q)['state'] as Json)['running'] ? q : undefined;
      },
      WAIT_MS,
    );
    assert.equal(restarted.metadata.uid, p.metadata.uid);
    assert.equal(status(restarted)['podIP'], ip);
    const last = (containerStatus(restarted)['lastState'] as Json)['terminated'] as Json;
    assert.equal(last['exitCode'], 137);
    assert.notEqual(c.wl.processes()[0]?.pid, firstPid);
    assert.equal(await cliRetry(ip, 'PING'), 'PONG');

    // Liveness probes only run once the startup probe passed.
    await until('started after the restart', () => containerStatus(pod(c, 'my-redis-master-0'))['started'] === true, WAIT_MS);
    // A hung redis (SIGSTOP) fails its liveness probe and is restarted (SIGTERM is ignored while
    // stopped, so SIGKILL comes after the grace period).
    assert.ok(c.wl.killPodProcess(c.ns, 'my-redis-master-0', 'SIGSTOP'));
    const revived = await until(
      'restartCount 2 after liveness failures',
      () => {
        const q = pod(c, 'my-redis-master-0');
        return containerStatus(q)['restartCount'] === 2 && (containerStatus(q)['state'] as Json)['running'] ? q : undefined;
      },
      60_000,
    );
    assert.equal(status(revived)['podIP'], ip);
  });

  for (const policy of ['Retain', 'Delete'] as const) {
    test(`scale up and down (whenScaled/whenDeleted ${policy}): highest ordinals go first, claims ${policy === 'Retain' ? 'stay' : 'go'}`, async (t) => {
      const c = await startCluster(t, {
        subnet: policy === 'Retain' ? 44 : 45,
        sets: ['my-redis-replica'],
        edit: (o) => {
          if (o.kind === 'StatefulSet') (o['spec'] as Json)['persistentVolumeClaimRetentionPolicy'] = { whenDeleted: policy, whenScaled: policy };
        },
      });
      await Promise.all(['my-redis-replica-0', 'my-redis-replica-1'].map((n) => runningPod(c, n)));
      c.store.updateScale('statefulsets', c.ns, 'my-redis-replica', { spec: { replicas: 4 } });
      await Promise.all(['my-redis-replica-2', 'my-redis-replica-3'].map((n) => runningPod(c, n)));
      assert.deepEqual(podNames(c), ['my-redis-replica-0', 'my-redis-replica-1', 'my-redis-replica-2', 'my-redis-replica-3']);
      const claims = () => c.store.list('persistentvolumeclaims', { namespace: c.ns }).map((x) => x.metadata.name);
      assert.deepEqual(
        claims(),
        [0, 1, 2, 3].map((i) => `data-my-redis-replica-${i}`),
      );
      const dirs = [0, 1, 2, 3].map((i) => c.wl.claimPath(c.ns, `data-my-redis-replica-${i}`)!);
      const owners = c.store.get('persistentvolumeclaims', c.ns, 'data-my-redis-replica-0')?.metadata.ownerReferences ?? [];
      assert.deepEqual(
        owners.map((r) => r.kind),
        policy === 'Delete' ? ['StatefulSet'] : [],
      );

      const terminating: string[] = [];
      const watch = c.store.watch('pods', { namespace: c.ns }, (ev) => {
        const p = ev.object as StoredObject;
        if (p.metadata.deletionTimestamp && !terminating.includes(p.metadata.name)) terminating.push(p.metadata.name);
      });
      t.after(() => watch.stop());
      c.store.updateScale('statefulsets', c.ns, 'my-redis-replica', { spec: { replicas: 1 } });
      await until('scaled down to replica-0', () => podNames(c).join() === 'my-redis-replica-0', WAIT_MS);
      assert.deepEqual(terminating, ['my-redis-replica-3', 'my-redis-replica-2', 'my-redis-replica-1']);
      const kept = [
        'data-my-redis-replica-0',
        ...(policy === 'Retain' ? ['data-my-redis-replica-1', 'data-my-redis-replica-2', 'data-my-redis-replica-3'] : []),
      ];
      await until(`claims ${kept.join()}`, () => claims().join() === kept.join(), WAIT_MS);
      const wantDirs = policy === 'Retain' ? [true, true, true, true] : [true, false, false, false];
      await until('claim directories', () => dirs.map((d) => existsSync(d)).join() === wantDirs.join(), WAIT_MS);
      const sts = await until(
        'status replicas 1',
        () => {
          const s = c.store.get('statefulsets', c.ns, 'my-redis-replica');
          return (s?.['status'] as Json | undefined)?.['replicas'] === 1 ? s : undefined;
        },
        WAIT_MS,
      );
      assert.equal((sts['status'] as Json)['currentReplicas'], 1);

      // Deleting the StatefulSet: its pods go (garbage collection), and so do its claims under whenDeleted: Delete.
      c.store.delete('statefulsets', c.ns, 'my-redis-replica');
      await until('no pods', () => podNames(c).length === 0, WAIT_MS);
      await until('claims after the set is deleted', () => claims().join() === (policy === 'Retain' ? kept.join() : ''), WAIT_MS);
      await until('claim-0 directory', () => existsSync(dirs[0]!) === (policy === 'Retain'), WAIT_MS);
      assert.deepEqual(c.wl.processes(), []);
    });
  }

  test('OrderedReady creates pod N+1 only when N is Ready; a template change rolls pods from the highest ordinal, one at a time', async (t) => {
    const c = await startCluster(t, {
      subnet: 46,
      sets: ['my-redis-replica'],
      spec: designSpec(3),
      edit: (o) => {
        // The operator's sets use OnDelete (the sidecar orders rollouts); this tests the controller's own RollingUpdate.
        if (o.kind === 'StatefulSet') Object.assign(o['spec'] as Json, { podManagementPolicy: 'OrderedReady', updateStrategy: { type: 'RollingUpdate' } });
      },
    });
    // A "sidecar" that promotes every pod it sees, so each becomes Ready on its own.
    const promoted = new Set<string>();
    const events: string[] = [];
    const watch = c.store.watch('pods', { namespace: c.ns }, (ev) => {
      const p = ev.object as StoredObject;
      if (ev.type === 'ADDED') events.push(`+${p.metadata.name}`);
      if (ev.type === 'DELETED') events.push(`-${p.metadata.name}`);
    });
    t.after(() => watch.stop());
    let stopPromoting = false;
    let promoting = false;
    const promoter = (async () => {
      while (!stopPromoting) {
        for (const p of promoting ? c.store.list('pods', { namespace: c.ns }) : []) {
          const ip = status(p)['podIP'] as string | undefined;
          if (!ip || promoted.has(p.metadata.uid) || !isRunning(p) || p.metadata.deletionTimestamp) continue;
          if (containerStatus(p)['started'] !== true) continue;
          try {
            await cli(ip, 'REPLICAOF', 'NO', 'ONE');
            promoted.add(p.metadata.uid);
          } catch {
            // not answering yet
          }
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    t.after(async () => {
      stopPromoting = true;
      await promoter;
    });

    // While replica-0 is started but not Ready, replica-1 does not exist.
    await until('replica-0 started, not Ready', () => containerStatus(pod(c, 'my-redis-replica-0'))['started'] === true, WAIT_MS);
    assert.equal(isReady(pod(c, 'my-redis-replica-0')), false);
    assert.deepEqual(podNames(c), ['my-redis-replica-0']);
    promoting = true;
    await Promise.all(['my-redis-replica-0', 'my-redis-replica-1', 'my-redis-replica-2'].map((n) => readyPod(c, n)));
    assert.deepEqual(events, ['+my-redis-replica-0', '+my-redis-replica-1', '+my-redis-replica-2']);
    const oldUids = new Map(podNames(c).map((n) => [n, pod(c, n)!.metadata.uid]));

    // Template change -> new revision; pods replaced 2, 1, 0, each after the previous is Ready again.
    let maxDown = 0;
    const sampler = setInterval(() => {
      const down = ['my-redis-replica-0', 'my-redis-replica-1', 'my-redis-replica-2'].filter(
        (n) => !isReady(pod(c, n)) || pod(c, n)?.metadata.deletionTimestamp,
      ).length;
      maxDown = Math.max(maxDown, down);
    }, 5);
    t.after(() => clearInterval(sampler));
    events.length = 0;
    const oldRevision = ((c.store.get('statefulsets', c.ns, 'my-redis-replica')?.['status'] ?? {}) as Json)['updateRevision'];
    c.store.mutate('statefulsets', c.ns, 'my-redis-replica', (s) => {
      const tmpl = (s['spec'] as Json)['template'] as Json;
      const meta = tmpl['metadata'] as Json;
      meta['annotations'] = { ...(meta['annotations'] as Json), 'example.com/restartedAt': 'now' };
    });
    const sts = await until(
      'rollout complete',
      () => {
        const s = c.store.get('statefulsets', c.ns, 'my-redis-replica');
        const st = (s?.['status'] ?? {}) as Json;
        const done =
          st['updateRevision'] !== oldRevision && st['updatedReplicas'] === 3 && st['readyReplicas'] === 3 && st['currentRevision'] === st['updateRevision'];
        return done ? s : undefined;
      },
      30_000,
    );
    clearInterval(sampler);
    assert.deepEqual(events, [
      '-my-redis-replica-2',
      '+my-redis-replica-2',
      '-my-redis-replica-1',
      '+my-redis-replica-1',
      '-my-redis-replica-0',
      '+my-redis-replica-0',
    ]);
    assert.equal(maxDown, 1, 'one pod at a time');
    const rev = (sts['status'] as Json)['updateRevision'];
    for (const n of podNames(c)) {
      assert.notEqual(pod(c, n)!.metadata.uid, oldUids.get(n));
      assert.equal(pod(c, n)!.metadata.labels?.[REVISION_LABEL], rev);
      assert.equal(pod(c, n)!.metadata.annotations?.['example.com/restartedAt'], 'now');
    }
  });

  test("with the pod spec's own probe periods (timeScale 1): pod start to Running to Ready", async (t) => {
    const c = await startCluster(t, { subnet: 47, sets: ['my-redis-master'], timeScale: 1 });
    const t0 = Date.now();
    const p = await runningPod(c, 'my-redis-master-0');
    const tRunning = Date.now() - t0;
    await promote(c, 'my-redis-master-0');
    const tPromoted = Date.now() - t0;
    await until('started', () => containerStatus(pod(c, 'my-redis-master-0'))['started'] === true, 15_000);
    const tStarted = Date.now() - t0;
    await readyPod(c, 'my-redis-master-0');
    const tReady = Date.now() - t0;
    const ip = status(p)['podIP'] as string;
    // Demoted to a replica of nowhere: NotReady after failureThreshold x periodSeconds; promoted again: Ready.
    await cli(ip, 'REPLICAOF', '127.0.0.1', '1');
    const d0 = Date.now();
    await until('NotReady', () => condition(pod(c, 'my-redis-master-0'), 'Ready') === 'False', 15_000);
    const tNotReady = Date.now() - d0;
    await cli(ip, 'REPLICAOF', 'NO', 'ONE');
    const r0 = Date.now();
    await readyPod(c, 'my-redis-master-0');
    const tReadyAgain = Date.now() - r0;
    t.diagnostic(`pod_running_ms=${tRunning} promoted_ms=${tPromoted} startup_probe_passed_ms=${tStarted} ready_ms=${tReady}`);
    t.diagnostic(`demoted_to_not_ready_ms=${tNotReady} promoted_to_ready_ms=${tReadyAgain}`);
    assert.equal(containerStatus(pod(c, 'my-redis-master-0'))['restartCount'], 0);
  });
});
