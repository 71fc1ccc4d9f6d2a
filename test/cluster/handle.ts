// The Cluster handle startCluster (index.ts) returns: kubectl-like reads and writes on the
// stand-in's store, waits whose timeouts explain themselves (a dump of the cluster), the Redis'
// master and pods, the sidecar processes, and stop().
// Invariants:
// - stop() runs once (later calls get the same promise): sidecars first, then the cleanups in
//   reverse order of start-up; a redis-server left on the subnet is killed and reported as an error.
// - Reads go to the store as it is now (no cache), so a check sees every write made before it.
import { rmSync } from 'node:fs';
import { parseAllDocuments, stringify } from 'yaml';
import { childNames, ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import type { KubeApiServer, KubeObject, ObjectStore, ResourceDef, StoredObject } from '../support/kube-api/index.ts';
import { eventRecords, nodeClient, pollUntil, redisPassword, redisTls } from '../support/cluster-views.ts';
import { tailLines } from '../support/host.ts';
import { logFrom, pinoPort, SIDECAR_LISTENING } from '../support/ports.ts';
import { asRecord as rec, isRecord } from '../support/records.ts';
import { eventTable, isPodReady, loadPrinterColumns, podTable, redisRow, redisTable } from './kubectl.ts';
import type { Metacontroller } from './metacontroller/index.ts';
import { CRD_PATH, LEASE_NAME, OPERATOR_NAMESPACE, type Cluster, type Sidecar } from './model.ts';
import { redisProcessesOnSubnet, type Workloads } from './workloads/index.ts';
import type { ProcessGroup } from './workloads/processes.ts';

type Json = Record<string, unknown>;

/** A sidecar process's identity; the same identity survives restarts (`group` changes, and the metrics port with it). */
export interface SidecarState {
  name: string;
  /** The port the running process bound (METRICS_PORT=0) and logged; 0 until read from its log (metricsPortOf). */
  metricsPort: number;
  /** Where the running process's lines begin in logFile. */
  logOffset: number;
  sourceIp: string;
  logFile: string;
  kubeconfig: string;
  group: ProcessGroup | undefined;
}

/** What startCluster started, and how it runs the sidecars. */
export interface ClusterParts {
  subnet: number;
  api: KubeApiServer;
  workloads: Workloads;
  metacontroller: Metacontroller;
  hookUrl: string;
  dataRoot: string;
  ownsDataRoot: boolean;
  keepData: boolean;
  redisResource: ResourceDef;
  sidecars: Map<string, SidecarState>;
  /** What stop() undoes, in reverse order (the API server first in, last out). */
  cleanups: Array<() => Promise<void> | void>;
  launch(s: SidecarState): void;
  killSidecarProcess(s: SidecarState, signal: NodeJS.Signals): Promise<void>;
}

/** The metrics port of the sidecar's running process, once it has logged it (0 before). */
export function metricsPortOf(s: SidecarState): number {
  if (s.metricsPort === 0 && s.group) s.metricsPort = pinoPort(logFrom(s.logFile, s.logOffset), SIDECAR_LISTENING, s.group.pid) ?? 0;
  return s.metricsPort;
}

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

export function readLeader(store: ObjectStore): string | undefined {
  const lease = store.get('leases.coordination.k8s.io', OPERATOR_NAMESPACE, LEASE_NAME);
  const holder = rec(lease?.['spec'])['holderIdentity'];
  return typeof holder === 'string' && holder !== '' ? holder : undefined;
}

export function clusterHandle(parts: ClusterParts): Cluster {
  const { subnet, api, metacontroller, hookUrl, dataRoot, ownsDataRoot, keepData, redisResource, sidecars, cleanups, launch, killSidecarProcess } = parts;
  const store = api.store;
  const wl = parts.workloads;
  let stopped: Promise<void> | undefined;

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

    async scale(name, replicas, namespace = 'default', resource = 'redis') {
      const plural = resource === 'rediscluster' ? 'redisclusters' : redisResource.resource;
      const url = `${api.url}/apis/${redisResource.group}/${redisResource.version}/namespaces/${namespace}/${plural}/${name}/scale`;
      const res = await fetch(url, {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json', authorization: 'Bearer kubectl' },
        body: JSON.stringify({ spec: { replicas } }),
      });
      if (!res.ok) throw new Error(`kubectl scale ${resource} ${name} --replicas=${replicas}: HTTP ${res.status} ${await res.text()}`);
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
    redis: (ip, name, namespace = 'default') =>
      nodeClient(
        ip,
        cluster.password(name, namespace),
        redisTls(name, store.get(redisResource, namespace, name), (s) => store.get('secrets', namespace, s)),
      ),

    events: (filter = {}) => eventRecords(store.list('events', filter.namespace ? { namespace: filter.namespace } : {}), filter),

    leader: () => readLeader(store),

    sidecar(name) {
      const s = sidecars.get(name);
      if (!s) throw new Error(`no sidecar ${name} (have ${[...sidecars.keys()].join(', ') || 'none'})`);
      return {
        name: s.name,
        metricsPort: metricsPortOf(s),
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
