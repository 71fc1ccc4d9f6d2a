// The local cluster stand-in (issue 4), composed: the kube-api stand-in over HTTP with the API
// server's validation and our CRD installed, the REAL hook service over HTTP (in this process via
// buildApp, or `node src/server/main.ts` as a child), the Metacontroller stand-in running the
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
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { KubeConfig } from '@kubernetes/client-node';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import { parseAllDocuments, parse, stringify } from 'yaml';
import { childNames, ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import { buildApp } from '../../src/server/app.ts';
import {
  DEFAULT_RESOURCES,
  defineResource,
  KubeApiError,
  startKubeApi,
  type KubeApiServer,
  type KubeObject,
  type ObjectStore,
  type ResourceDef,
  type StoredObject,
} from '../support/kube-api/index.ts';
import { eventRecords, nodeClient, pollUntil, redisPassword, type EventRecord } from '../support/cluster-views.ts';
import { freePort, nodeBinary, tailLines } from '../support/host.ts';
import { eventTable, isPodReady, loadPrinterColumns, podTable, redisRow, redisTable, type PrinterColumn } from './kubectl.ts';
import { loadCompositeController, startMetacontroller, type Metacontroller } from './metacontroller/index.ts';
import { installValidation } from './validation.ts';
import { redisProcessesOnSubnet, startWorkloads, type Workloads } from './workloads/index.ts';
import { spawnGroup, type ProcessGroup } from './workloads/processes.ts';
import { asRecord as rec, isRecord } from '../support/records.ts';

export { redisProcessesOnSubnet } from './workloads/index.ts';
export * as kubectl from './kubectl.ts';

type Json = Record<string, unknown>;

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CRD_PATH = path.join(REPO_ROOT, 'manifests/crd.yaml');
export const EXAMPLE_PATH = path.join(REPO_ROOT, 'manifests/examples/redis.yaml');
/** Where the operator's Deployment runs (manifests/namespace.yaml): the sidecars' Lease lives here. */
export const OPERATOR_NAMESPACE = 'redis-operator';
export const LEASE_NAME = 'redis-operator-sidecar';

export interface ClusterOptions {
  /** Third octet N: pods on 127.0.N.2+, sidecars' source addresses 127.0.N.250+. One per test file. */
  subnet: number;
  /** A directory for PVCs, pod files, logs and kubeconfigs (default: a fresh temp dir, removed by stop()). */
  dataRoot?: string;
  /** The kubelet's time scale (probe periods, back-off, grace periods); default 1 = the pod spec's own figures. */
  timeScale?: number;
  /** Sidecar instances on one Lease (default 2: sidecar-a, sidecar-b). 0 runs none. */
  sidecars?: number;
  /** The stand-ins' logs (Metacontroller, workloads, the in-process hook); default silent. */
  logger?: Logger;
  /** `inline` (default): buildApp in this process on a random port; `process`: `node src/server/main.ts`. */
  hook?: 'inline' | 'process';
  /** LOG_LEVEL of the sidecar processes (default info; their logs go to <dataRoot>/logs). */
  sidecarLogLevel?: string;
  /** Extra environment for every sidecar (e.g. timings). */
  sidecarEnv?: Record<string, string>;
  /** Metacontroller's periodic resync (default: the CompositeController's resyncPeriodSeconds). */
  resyncPeriodMs?: number;
  /** Wait for every sidecar's /readyz and a Lease holder before returning (default true). */
  waitForSidecars?: boolean;
  /** Keep dataRoot after stop() (for post-mortems); also when KEEP_CLUSTER_DATA=1. */
  keepData?: boolean;
}

export interface Sidecar {
  readonly name: string;
  readonly metricsPort: number;
  readonly sourceIp: string;
  readonly logFile: string;
  readonly kubeconfig: string;
  alive(): boolean;
  /** The running process (undefined after it exited). */
  readonly process: ProcessGroup | undefined;
}

export interface Endpoint {
  pod: string;
  ip: string;
}

export type { EventRecord } from '../support/cluster-views.ts';

export interface Cluster {
  readonly subnet: number;
  readonly api: KubeApiServer;
  readonly store: ObjectStore;
  readonly workloads: Workloads;
  readonly metacontroller: Metacontroller;
  readonly hookUrl: string;
  readonly dataRoot: string;
  readonly sidecars: readonly Sidecar[];
  readonly printerColumns: PrinterColumn[];
  /** kubectl apply: YAML (one or more documents) or objects; creates, or merge-patches what exists. */
  apply(input: string | KubeObject | KubeObject[]): Promise<StoredObject[]>;
  get(resource: string, name: string, namespace?: string): StoredObject | undefined;
  list(resource: string, options?: { namespace?: string; labelSelector?: string }): StoredObject[];
  /** kubectl delete (the object's finalizers and the kubelet's graceful termination apply). */
  delete(resource: string, name: string, namespace?: string): void;
  deletePod(name: string, namespace?: string): void;
  /** kubectl scale redis <name> --replicas=N: a merge PATCH of the scale subresource over HTTP. */
  scale(name: string, replicas: number, namespace?: string): Promise<void>;
  /** Polls `check` (every 25 ms) until it returns a truthy value; on timeout throws with a dump of the cluster. */
  waitFor<T>(check: () => T | undefined | null | false | Promise<T | undefined | null | false>, timeoutMs: number, description: string): Promise<T>;
  /** `my-redis 7.2 Ready 2 Running` (the printer columns without AGE); undefined when the Redis is gone. */
  redisRow(name: string, namespace?: string): string | undefined;
  /** The same as redisRow (the name the issue's brief uses). */
  getRedisRow(name: string, namespace?: string): string | undefined;
  /** The pod (and IP) the <name>-master Service routes to right now; undefined unless exactly one. */
  masterEndpoint(name: string, namespace?: string): Endpoint | undefined;
  /** Pods of a Redis labelled master right now (should never be more than one). */
  masterLabelled(name: string, namespace?: string): string[];
  /** The Redis' pods, sorted by name. */
  pods(name: string, namespace?: string): StoredObject[];
  /** The Redis password (the Secret the pods read). */
  password(name: string, namespace?: string): string | undefined;
  /** A fail-fast Redis client for a pod address, authenticated with the Redis' password. */
  redis(ip: string, name: string, namespace?: string): Redis;
  /** Core Events, oldest first (optionally only those about the object `name`). */
  events(filter?: { namespace?: string; name?: string; reason?: string }): EventRecord[];
  /** The sidecar holding the Lease right now (by the Lease object), if any. */
  leader(): string | undefined;
  sidecar(name: string): Sidecar;
  /** Signals a sidecar process; resolves when it exited (for SIGKILL/SIGTERM/SIGINT). */
  killSidecar(name: string, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a sidecar again (its container restarting), same identity. */
  restartSidecar(name: string): Promise<void>;
  /** The last lines a sidecar logged. */
  sidecarLog(name: string, lines?: number): string[];
  /** kubectl-like tables of the Redis, its pods and recent events. */
  describe(name?: string, namespace?: string): string;
  /** Everything a failure message needs. */
  dump(): string;
  stop(): Promise<void>;
}

// ------------------------------------------------------------------ CRD -> API resource

/** The API resource a CRD serves (what the API server registers when the CRD is created). */
export function resourceFromCrd(crd: unknown): ResourceDef {
  const spec = rec(rec(crd)['spec']);
  const names = rec(spec['names']);
  const versions = (Array.isArray(spec['versions']) ? spec['versions'] : []).map(rec);
  const version = versions.find((v) => v['storage'] === true && v['served'] === true);
  if (!version) throw new Error('CRD has no served storage version');
  const sub = rec(version['subresources']);
  const scale = isRecord(sub['scale']) ? sub['scale'] : undefined;
  const strip = (p: unknown) => String(p ?? '').replace(/^\./, '');
  return defineResource({
    group: String(spec['group']),
    version: String(version['name']),
    resource: String(names['plural']),
    singular: String(names['singular'] ?? String(names['kind']).toLowerCase()),
    kind: String(names['kind']),
    listKind: String(names['listKind'] ?? `${String(names['kind'])}List`),
    namespaced: spec['scope'] !== 'Cluster',
    shortNames: Array.isArray(names['shortNames']) ? names['shortNames'].map(String) : [],
    custom: true,
    statusSubresource: isRecord(sub['status']),
    ...(scale
      ? {
          scale: {
            specReplicasPath: strip(scale['specReplicasPath']),
            statusReplicasPath: strip(scale['statusReplicasPath']),
            ...(scale['labelSelectorPath'] ? { labelSelectorPath: strip(scale['labelSelectorPath']) } : {}),
          },
        }
      : {}),
    generation: true,
    deleteReturnsObject: true,
  });
}

const CRD_RESOURCE = defineResource({
  group: 'apiextensions.k8s.io',
  version: 'v1',
  resource: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
  shortNames: ['crd', 'crds'],
  statusSubresource: true,
  generation: true,
  deleteReturnsObject: true,
});

// ------------------------------------------------------------------ small helpers

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A pino JSON line as `HH:MM:SS.mmm LEVEL msg {fields}` (for dumps). */
function shortLog(line: string): string {
  try {
    const o = JSON.parse(line) as Json;
    const levels: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
    const { time, level, msg, pid: _pid, hostname: _h, ...rest } = o;
    const t = typeof time === 'number' ? new Date(time).toISOString().slice(11, 23) : '';
    return `${t} ${levels[Number(level)] ?? String(level)} ${String(msg ?? '')} ${JSON.stringify(rest)}`.slice(0, 400);
  } catch {
    return line.slice(0, 400);
  }
}

function readLeader(store: ObjectStore): string | undefined {
  const lease = store.get('leases.coordination.k8s.io', OPERATOR_NAMESPACE, LEASE_NAME);
  const holder = rec(lease?.['spec'])['holderIdentity'];
  return typeof holder === 'string' && holder !== '' ? holder : undefined;
}

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
  const resources = [
    ...DEFAULT_RESOURCES.filter((d) => !(d.group === redisResource.group && d.resource === redisResource.resource)),
    redisResource,
    CRD_RESOURCE,
  ];

  const cleanups: Array<() => Promise<void> | void> = [];
  let stopped: Promise<void> | undefined;
  const sidecars = new Map<string, SidecarState>();

  interface SidecarState {
    name: string;
    metricsPort: number;
    sourceIp: string;
    logFile: string;
    kubeconfig: string;
    group: ProcessGroup | undefined;
  }

  const api = await startKubeApi({ resources });
  cleanups.push(() => api.close());
  const store = api.store;
  let workloads: Workloads | undefined;
  let mc: Metacontroller | undefined;
  let hookUrl = '';
  try {
    installValidation(store, { crdPath: CRD_PATH });
    for (const ns of ['default', OPERATOR_NAMESPACE])
      store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { keepStatus: false });
    // Creating the CRD is what registers the kind on a real server; here the table already has
    // it (from the same file), and the object is kept so `get crd` shows what is installed.
    store.create('customresourcedefinitions', crdDoc, { keepStatus: false, validate: false });

    // The hook service.
    if ((options.hook ?? 'inline') === 'inline') {
      const app = buildApp({ logger: logger.child({ standIn: 'hook' }), defaultMetrics: false });
      await app.listen({ host: '127.0.0.1', port: 0 });
      const addr = app.server.address();
      hookUrl = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
      cleanups.push(() => app.close());
    } else {
      const port = await freePort();
      const logFile = path.join(dataRoot, 'logs', 'hook.log');
      const group = spawnGroup([nodeBinary(), 'src/server/main.ts'], {
        cwd: REPO_ROOT,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' },
        logFile,
      });
      cleanups.push(async () => {
        group.signal('SIGKILL');
        await group.exited;
      });
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

    const count = options.sidecars ?? 2;
    for (let i = 0; i < count; i++) {
      const name = `sidecar-${String.fromCharCode(97 + i)}`;
      const kubeconfig = path.join(dataRoot, `kubeconfig-${name}.yaml`);
      const kc = new KubeConfig();
      kc.loadFromOptions(api.kubeConfigOptions(name, OPERATOR_NAMESPACE));
      writeFileSync(kubeconfig, kc.exportConfig(), { mode: 0o600 });
      sidecars.set(name, {
        name,
        metricsPort: await freePort(),
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
    s.group = spawnGroup([nodeBinary(), 'src/sidecar/main.ts'], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        KUBECONFIG: s.kubeconfig,
        POD_NAME: s.name,
        POD_NAMESPACE: OPERATOR_NAMESPACE,
        METRICS_PORT: String(s.metricsPort),
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
        const ok = await fetch(`http://127.0.0.1:${s.metricsPort}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) pending.delete(s);
      }
      if (performance.now() > deadline) {
        await stopAll();
        throw new Error(`sidecars not ready within 60 s: ${[...pending].map((s) => s.name).join(', ') || 'no Lease holder'}`);
      }
      await sleep(50);
    }
  }

  const columns = loadPrinterColumns(CRD_PATH);
  /** A Service's endpoints right now; none when the Service does not exist (yet, or any more). */
  const endpoints = (namespace: string, service: string) => (store.get('services', namespace, service) ? wl.serviceAddresses(namespace, service) : []);

  const cluster: Cluster = {
    subnet,
    api,
    store,
    workloads: wl,
    metacontroller,
    hookUrl,
    dataRoot,
    printerColumns: columns,
    get sidecars(): Sidecar[] {
      return [...sidecars.values()].map((s) => cluster.sidecar(s.name));
    },

    async apply(input) {
      const objects: KubeObject[] =
        typeof input === 'string'
          ? parseAllDocuments(input)
              .map((d) => d.toJSON() as KubeObject)
              .filter((o) => isRecord(o))
          : Array.isArray(input)
            ? input
            : [input];
      const out: StoredObject[] = [];
      for (const raw of objects) {
        const obj = structuredClone(raw);
        const def = store.resources.resolve(String(obj.kind));
        const name = obj.metadata?.name;
        if (typeof name !== 'string' || name === '') throw new Error(`apply: a ${String(obj.kind)} without metadata.name`);
        const namespace = def.namespaced ? (obj.metadata?.namespace ?? 'default') : undefined;
        if (def.namespaced) obj.metadata = { ...obj.metadata, name, namespace: namespace! };
        const existing = store.get(def, namespace, name);
        if (!existing) {
          out.push(store.create(def, obj, { keepStatus: false }));
        } else {
          // kubectl apply's effect for fields we set (a merge patch; fields removed from the
          // manifest are not pruned here).
          const { status: _status, ...patch } = obj as Json;
          out.push(store.patch(def, namespace, name, patch, { type: 'merge' }));
        }
      }
      return out;
    },

    get: (resource, name, namespace = 'default') => {
      const def = store.resources.resolve(resource);
      return store.get(def, def.namespaced ? namespace : undefined, name);
    },
    list: (resource, o = {}) => store.list(resource, o),
    delete(resource, name, namespace = 'default') {
      const def = store.resources.resolve(resource);
      store.delete(def, def.namespaced ? namespace : undefined, name);
    },
    deletePod(name, namespace = 'default') {
      store.delete('pods', namespace, name);
    },

    async scale(name, replicas, namespace = 'default') {
      const url = `${api.url}/apis/${redisResource.group}/${redisResource.version}/namespaces/${namespace}/${redisResource.resource}/${name}/scale`;
      const res = await fetch(url, {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json', authorization: 'Bearer kubectl' },
        body: JSON.stringify({ spec: { replicas } }),
      });
      if (!res.ok) throw new Error(`kubectl scale redis ${name} --replicas=${replicas}: HTTP ${res.status} ${await res.text()}`);
    },

    waitFor: (check, timeoutMs, description) => pollUntil(check, timeoutMs, description, () => cluster.dump()),

    redisRow(name, namespace = 'default') {
      const r = store.get(redisResource, namespace, name);
      return r ? redisRow(r, columns) : undefined;
    },

    getRedisRow: (name, namespace = 'default') => cluster.redisRow(name, namespace),

    masterEndpoint(name, namespace = 'default') {
      const eps = endpoints(namespace, childNames(name).masterService);
      return eps.length === 1 && eps[0]!.ip ? { pod: eps[0]!.pod, ip: eps[0]!.ip } : undefined;
    },

    masterLabelled(name, namespace = 'default') {
      return cluster
        .pods(name, namespace)
        .filter((p) => p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER)
        .map((p) => p.metadata.name);
    },

    pods(name, namespace = 'default') {
      return store.list('pods', { namespace, labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/managed-by=redis-operator` });
    },

    password: (name, namespace = 'default') => redisPassword(name, store.get(redisResource, namespace, name), (s) => store.get('secrets', namespace, s)),
    redis: (ip, name, namespace = 'default') => nodeClient(ip, cluster.password(name, namespace)),

    events: (filter = {}) => eventRecords(store.list('events', filter.namespace ? { namespace: filter.namespace } : {}), filter),

    leader: () => readLeader(store),

    sidecar(name) {
      const s = sidecars.get(name);
      if (!s) throw new Error(`no sidecar ${name} (have ${[...sidecars.keys()].join(', ') || 'none'})`);
      return {
        name: s.name,
        metricsPort: s.metricsPort,
        sourceIp: s.sourceIp,
        logFile: s.logFile,
        kubeconfig: s.kubeconfig,
        alive: () => s.group?.alive() ?? false,
        get process() {
          return s.group?.alive() ? s.group : undefined;
        },
      };
    },

    async killSidecar(name, signal = 'SIGKILL') {
      const s = sidecars.get(name);
      if (!s) throw new Error(`no sidecar ${name}`);
      await killSidecarProcess(s, signal);
    },

    async restartSidecar(name) {
      const s = sidecars.get(name);
      if (!s) throw new Error(`no sidecar ${name}`);
      await killSidecarProcess(s, 'SIGKILL');
      launch(s);
    },

    sidecarLog(name, lines = 30) {
      const s = sidecars.get(name);
      return s ? tailLines(s.logFile, lines) : [];
    },

    describe(name, namespace = 'default') {
      const redises = store.list(redisResource, { namespace }).filter((r) => name === undefined || r.metadata.name === name);
      const pods = name === undefined ? store.list('pods', { namespace }) : cluster.pods(name, namespace);
      const events = store.list('events', { namespace }).filter((e) => name === undefined || rec(e['involvedObject'])['name'] === name);
      events.sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
      return [
        `$ kubectl get redis -n ${namespace}`,
        redises.length > 0 ? redisTable(redises, columns) : 'No resources found',
        '',
        `$ kubectl get pods -n ${namespace} -o wide -L ${ROLE_LABEL}`,
        pods.length > 0 ? podTable(pods) : 'No resources found',
        '',
        `$ kubectl get events -n ${namespace} (last 15)`,
        events.length > 0 ? eventTable(events.slice(-15)) : 'No events',
      ].join('\n');
    },

    dump() {
      const parts: string[] = ['---- cluster dump ----'];
      const namespaces = new Set<string>(['default', ...store.list(redisResource).map((r) => r.metadata.namespace ?? 'default')]);
      for (const ns of namespaces) parts.push(cluster.describe(undefined, ns));
      for (const r of store.list(redisResource)) {
        const key = `${r.metadata.namespace}/${r.metadata.name}`;
        parts.push(`\nstatus of redis ${key}:\n${stringify(r['status'] ?? {}).trimEnd()}`);
        const eps = endpoints(r.metadata.namespace ?? 'default', childNames(r.metadata.name).masterService);
        parts.push(
          `${childNames(r.metadata.name).masterService} endpoints: ${eps.map((e) => `${e.pod}=${e.ip}${e.ready ? '' : ' (not ready)'}`).join(', ') || 'none'}`,
        );
        const s = metacontroller.stats(key);
        parts.push(
          `metacontroller ${key}: syncs=${s.syncCalls} finalizes=${s.finalizeCalls} statusWrites=${s.statusWrites} childWrites=${s.childWrites} failures=${s.failures}${s.lastError ? ` lastError=${s.lastError}` : ''}`,
        );
      }
      for (const p of store.list('pods')) {
        if (isPodReady(p)) continue;
        const statuses = (Array.isArray(rec(p['status'])['containerStatuses']) ? (rec(p['status'])['containerStatuses'] as unknown[]) : []).map(rec);
        parts.push(`pod ${p.metadata.name} not ready: ${JSON.stringify(statuses.map((c) => c['state']))}`);
      }
      parts.push(`\nlease holder: ${cluster.leader() ?? 'none'}`);
      for (const s of sidecars.values()) {
        parts.push(`\n${s.name} (${s.group?.alive() ? `pid ${s.group.pid}` : 'not running'}), last log lines:`);
        for (const line of tailLines(s.logFile, 12)) parts.push(`  ${shortLog(line)}`);
      }
      return parts.join('\n');
    },

    stop() {
      stopped ??= (async () => {
        const errors: string[] = [];
        // Sidecars first (a sidecar acting on a half-torn-down cluster only adds noise), then
        // Metacontroller, the workloads (every redis-server), the hook, the API server.
        await Promise.all([...sidecars.values()].map((s) => killSidecarProcess(s, 'SIGKILL')));
        for (const c of cleanups.reverse()) {
          try {
            await c();
          } catch (err) {
            errors.push(err instanceof Error ? err.message : String(err));
          }
        }
        const leaked = redisProcessesOnSubnet(subnet);
        for (const pid of leaked) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        if (ownsDataRoot && !keepData) rmSync(dataRoot, { recursive: true, force: true });
        if (leaked.length > 0) errors.push(`redis-server processes were left on 127.0.${subnet}.x: ${leaked.join(', ')} (killed now)`);
        if (errors.length > 0) throw new Error(`cluster stop: ${errors.join('; ')}`);
      })();
      return stopped;
    },
  };
  return cluster;
}

/** True when the error is the API server refusing a write (for tests that expect a 422). */
export function isInvalid(err: unknown): err is KubeApiError {
  return err instanceof KubeApiError && err.code === 422;
}

/** The design's Redis, verbatim from manifests/examples/redis.yaml. */
export function exampleManifest(): string {
  return readFileSync(EXAMPLE_PATH, 'utf8');
}
