// The local cluster stand-in (issue 4), composed: the kube-api stand-in over HTTP with the API
// server's validation and our CRD installed, the REAL hook service over HTTP (in this process via
// buildApp, or the Deployment's hook command as a child), the Metacontroller stand-in running the
// shipped CompositeController against that hook, the workloads stand-in (StatefulSets, PVCs, a
// kubelet running each pod as a real redis-server on 127.0.<subnet>.x), and N instances of the
// REAL sidecar (`node src/sidecar/main.ts`) as child processes on one Lease, each with its own
// kubeconfig (its token names it in the request log and to fault rules).
//
//   const c = await startCluster({ subnet: 50 });          // test code only; never in the image
//   t.after(() => c.stop());
//   await c.apply(readFileSync('manifests/examples/redis.yaml', 'utf8'));
//   await c.waitFor(() => c.redisRow('my-redis') === 'my-redis 7.2 Ready 2 Running', 60_000, 'Running');
//   c.masterEndpoint('my-redis');                         // { pod, ip } behind my-redis-master now
//
// Invariants:
// - Nothing leaves 127.0.0.0/8: the API server, the hook and the sidecars' metrics listen on
//   127.0.0.1, pods on 127.0.<subnet>.2+, sidecars' Redis connections come from 127.0.<subnet>.250+.
// - stop() leaves no process behind (sidecars, a hook process, every redis-server and probe);
//   every child runs under `setpriv --pdeathsig KILL` in its own process group and a process
//   'exit' hook SIGKILLs whatever is left, so a crashed or interrupted test leaks nothing either.
// - waitFor() failures carry a dump of the cluster (Redis status, pods with role/ready/IP, recent
//   events, Metacontroller errors, the sidecars' last log lines): a timeout explains itself.
// Modules: model.ts (options, the Cluster interface, paths and names), crd.ts (our CRD as an API
// resource), handle.ts (the Cluster handle); this one starts everything and the sidecars.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { parse } from 'yaml';
import { buildApp } from '../../src/server/app.ts';
import { DEFAULT_RESOURCES, KubeApiError, startKubeApi, type KubeObject } from '../support/kube-api/index.ts';
import { hookCommand } from '../support/hook-command.ts';
import { nodeBinary, tailLines } from '../support/host.ts';
import { HOOK_LISTENING, logEnd, logFrom, pinoPort, reportedPort } from '../support/ports.ts';
import { CRD_RESOURCE, resourceFromCrd } from './crd.ts';
import { clusterHandle, metricsPortOf, readLeader, type SidecarState } from './handle.ts';
import { loadCompositeController, startMetacontroller, type Metacontroller } from './metacontroller/index.ts';
import {
  CLUSTER_CONTROLLER_PATH,
  CLUSTER_CRD_PATH,
  CRD_PATH,
  EXAMPLE_PATH,
  OPERATOR_NAMESPACE,
  REPO_ROOT,
  type Cluster,
  type ClusterOptions,
} from './model.ts';
import { installValidation } from './validation.ts';
import { startWorkloads, type Workloads } from './workloads/index.ts';
import { spawnGroup } from './workloads/processes.ts';

export { redisProcessesOnSubnet } from './workloads/index.ts';
export * as kubectl from './kubectl.ts';
export { resourceFromCrd } from './crd.ts';
export { CLUSTER_CONTROLLER_PATH, CLUSTER_CRD_PATH, CRD_PATH, EXAMPLE_PATH, LEASE_NAME, OPERATOR_NAMESPACE, REPO_ROOT } from './model.ts';
export type { Cluster, ClusterOptions, Endpoint, EventRecord, Sidecar } from './model.ts';

// ------------------------------------------------------------------ small helpers

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ------------------------------------------------------------------ the cluster

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const subnet = options.subnet;
  const logger = options.logger ?? pino({ level: 'silent' });
  const ownsDataRoot = options.dataRoot === undefined;
  const dataRoot = options.dataRoot ?? mkdtempSync(path.join(os.tmpdir(), `redis-cluster-${subnet}-`));
  mkdirSync(path.join(dataRoot, 'logs'), { recursive: true });
  const keepData = options.keepData === true || process.env['KEEP_CLUSTER_DATA'] === '1';

  const crdDoc = parse(readFileSync(CRD_PATH, 'utf8')) as KubeObject;
  const redisResource = resourceFromCrd(crdDoc);
  // RedisBackups are stored so a Redis naming one in spec.restore can see it (no Job runs here).
  const backupCrdDoc = parse(readFileSync(CRD_PATH.replace(/crd\.yaml$/, 'redisbackup-crd.yaml'), 'utf8')) as KubeObject;
  // RedisClusters are served, validated and defaulted like Redises, and run by their own controller.
  const clusterCrdDoc = parse(readFileSync(CLUSTER_CRD_PATH, 'utf8')) as KubeObject;
  const resources = [
    ...DEFAULT_RESOURCES.filter((d) => !(d.group === redisResource.group && d.resource === redisResource.resource)),
    redisResource,
    resourceFromCrd(backupCrdDoc),
    resourceFromCrd(clusterCrdDoc),
    CRD_RESOURCE,
  ];

  const cleanups: Array<() => Promise<void> | void> = [];
  const sidecars = new Map<string, SidecarState>();

  const api = await startKubeApi({ resources });
  cleanups.push(() => api.close());
  const store = api.store;
  let workloads: Workloads | undefined;
  let mc: Metacontroller | undefined;
  let hookUrl = '';
  try {
    installValidation(store, { crdPath: CRD_PATH, extraCrds: { RedisCluster: CLUSTER_CRD_PATH } });
    for (const ns of ['default', OPERATOR_NAMESPACE])
      store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { keepStatus: false });
    // Creating the CRD is what registers the kind on a real server; here the table already has
    // it (from the same file), and the object is kept so `get crd` shows what is installed.
    store.create('customresourcedefinitions', crdDoc, { keepStatus: false, validate: false });
    store.create('customresourcedefinitions', clusterCrdDoc, { keepStatus: false, validate: false });

    // The hook service.
    if ((options.hook ?? 'inline') === 'inline') {
      const app = buildApp({ logger: logger.child({ standIn: 'hook' }), defaultMetrics: false });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const addr = app.server.address();
      hookUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      cleanups.push(() => app.close());
    } else {
      const logFile = path.join(dataRoot, 'logs', 'hook.log');
      const offset = logEnd(logFile);
      const group = spawnGroup(hookCommand(), {
        cwd: REPO_ROOT,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
        logFile,
      });
      cleanups.push(async () => {
        group.signal('SIGKILL');
        await group.exited;
      });
      const port = await reportedPort(
        'the hook service',
        group,
        () => pinoPort(logFrom(logFile, offset), HOOK_LISTENING, group.pid),
        () => tailLines(logFile, 20),
        15_000,
      );
      hookUrl = `http://127.0.0.1:${port}`;
      const deadline = performance.now() + 15_000;
      for (;;) {
        const ok = await fetch(`${hookUrl}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) break;
        if (!group.alive() || performance.now() > deadline) throw new Error(`the hook service did not become ready: ${tailLines(logFile, 20).join('\n')}`);
        await sleep(50);
      }
    }

    workloads = startWorkloads({ store, subnet, dataRoot: path.join(dataRoot, 'workloads'), logger, timeScale: options.timeScale ?? 1 });
    const wl = workloads;
    cleanups.push(() => wl.stop());
    mc = startMetacontroller({
      store,
      controller: loadCompositeController(),
      hookBaseUrl: hookUrl,
      logger,
      ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
    });
    const m = mc;
    cleanups.push(() => m.stop());
    // The stand-in runs one CompositeController per instance: a second one for RedisClusters.
    const clusters = startMetacontroller({
      store,
      controller: loadCompositeController(CLUSTER_CONTROLLER_PATH),
      hookBaseUrl: hookUrl,
      logger,
      ...(options.resyncPeriodMs !== undefined ? { resyncPeriodMs: options.resyncPeriodMs } : {}),
    });
    cleanups.push(() => clusters.stop());

    const count = options.sidecars ?? 2;
    for (let i = 0; i < count; i++) {
      const name = `sidecar-${String.fromCharCode(97 + i)}`;
      const kubeconfig = path.join(dataRoot, `kubeconfig-${name}.yaml`);
      const kc = new KubeConfig();
      kc.loadFromOptions(api.kubeConfigOptions(name, OPERATOR_NAMESPACE));
      writeFileSync(kubeconfig, kc.exportConfig(), { mode: 0o600 });
      sidecars.set(name, {
        name,
        metricsPort: 0,
        logOffset: 0,
        sourceIp: `127.0.${subnet}.${250 + i}`,
        logFile: path.join(dataRoot, 'logs', `${name}.log`),
        kubeconfig,
        group: undefined,
      });
    }
  } catch (err) {
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
    if (ownsDataRoot && !keepData) rmSync(dataRoot, { recursive: true, force: true });
    throw err;
  }
  const wl = workloads!;
  const metacontroller = mc!;

  async function stopAll(): Promise<void> {
    await Promise.all([...sidecars.values()].map((s) => killSidecarProcess(s, 'SIGKILL')));
    for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
    if (ownsDataRoot && !keepData) rmSync(dataRoot, { recursive: true, force: true });
  }

  function launch(s: SidecarState): void {
    s.logOffset = logEnd(s.logFile);
    s.metricsPort = 0;
    s.group = spawnGroup([nodeBinary(), 'src/sidecar/main.ts'], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        KUBECONFIG: s.kubeconfig,
        POD_NAME: s.name,
        POD_NAMESPACE: OPERATOR_NAMESPACE,
        METRICS_PORT: '0',
        METRICS_HOST: '127.0.0.1',
        REDIS_LOCAL_ADDRESS: s.sourceIp,
        LOG_LEVEL: options.sidecarLogLevel ?? 'info',
        ...options.sidecarEnv,
      },
      logFile: s.logFile,
    });
  }

  async function killSidecarProcess(s: SidecarState, signal: NodeJS.Signals): Promise<void> {
    const g = s.group;
    if (!g || !g.alive()) return;
    g.signal(signal);
    if (signal === 'SIGKILL' || signal === 'SIGTERM' || signal === 'SIGINT') await g.exited;
  }

  for (const s of sidecars.values()) launch(s);
  if (sidecars.size > 0 && options.waitForSidecars !== false) {
    // As on a real cluster, the operator runs before anyone applies a Redis: wait until every
    // sidecar's informers have synced (/readyz) and one of them holds the Lease.
    const deadline = performance.now() + 60_000;
    const pending = new Set(sidecars.values());
    while (pending.size > 0 || readLeader(store) === undefined) {
      for (const s of [...pending]) {
        if (!s.group?.alive()) {
          await stopAll();
          throw new Error(`sidecar ${s.name} exited during start-up:\n${tailLines(s.logFile, 20).join('\n')}`);
        }
        const port = metricsPortOf(s);
        const ok =
          port !== 0 &&
          (await fetch(`http://127.0.0.1:${port}/readyz`).then(
            (r) => r.ok,
            () => false,
          ));
        if (ok) pending.delete(s);
      }
      if (performance.now() > deadline) {
        await stopAll();
        throw new Error(`sidecars not ready within 60 s: ${[...pending].map((s) => s.name).join(', ') || 'no Lease holder'}`);
      }
      await sleep(50);
    }
  }

  return clusterHandle({
    subnet,
    api,
    workloads: wl,
    metacontroller,
    hookUrl,
    dataRoot,
    ownsDataRoot,
    keepData,
    redisResource,
    sidecars,
    cleanups,
    launch,
    killSidecarProcess,
  });
}

/** True when the error is the API server refusing a write (for tests that expect a 422). */
export function isInvalid(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError && err.code === 422;
}

/** The design's Redis, verbatim from manifests/examples/redis.yaml. */
export function exampleManifest(): string {
  return readFileSync(EXAMPLE_PATH, 'utf8');
}
