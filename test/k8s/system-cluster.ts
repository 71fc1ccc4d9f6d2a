// The system tests' view of the operator on the REAL control plane (test/k8s/local-cluster.ts):
// the same `SystemCluster` face the scenarios in test/system/ use, answered from an informer
// cache of the real API server (synchronous reads, as the scenarios poll), with writes through
// the real kubectl or the API, faults through the fault proxy in front of the API server, and
// pod processes through the node agent.
// Invariants: nothing here decides what Kubernetes would do: Services route by the real
// EndpointSlices, rows come from the installed CRD's printer columns over the stored object,
// scale goes through the real scale subresource; waitFor failures carry a dump of the cluster.
import { execFileSync, spawnSync } from 'node:child_process';
import { parseAllDocuments, stringify } from 'yaml';
import { childNames, ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import { eventTable, isPodReady, loadPrinterColumns, podTable, redisRow, redisTable } from '../cluster/kubectl.ts';
import type { KubeObject, StoredObject } from '../support/kube-api/index.ts';
import type { ResourceRef } from '../support/kube-client/index.ts';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '../support/kube-api/selectors.ts';
import { startLocalCluster, type LocalCluster, type LocalClusterOptions } from './local-cluster.ts';
import { tailLines } from '../support/host.ts';
import type { Endpoint, SystemCluster, WatchOptions } from '../system/cluster.ts';
import { eventRecords, nodeClient, pollUntil, redisPassword, redisTls } from '../support/cluster-views.ts';
import { asRecord as rec } from '../support/records.ts';

type Json = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Every resource the scenarios read, by the plural they use. */
const RESOURCES: Record<string, string> = {
  pods: 'v1',
  services: 'v1',
  secrets: 'v1',
  configmaps: 'v1',
  persistentvolumeclaims: 'v1',
  persistentvolumes: 'v1',
  events: 'v1',
  statefulsets: 'apps/v1',
  poddisruptionbudgets: 'policy/v1',
  networkpolicies: 'networking.k8s.io/v1',
  redises: 'redis.example.com/v1',
  redisbackups: 'redis.example.com/v1',
  redisclusters: 'redis.example.com/v1',
  jobs: 'batch/v1',
  cronjobs: 'batch/v1',
  leases: 'coordination.k8s.io/v1',
  endpointslices: 'discovery.k8s.io/v1',
};

export async function startRealSystemCluster(options: LocalClusterOptions): Promise<SystemCluster> {
  const lc = await startLocalCluster(options);
  const refs = new Map<string, ResourceRef>();
  try {
    for (const [plural, apiVersion] of Object.entries(RESOURCES)) refs.set(plural, await lc.ref(apiVersion, plural));
  } catch (err) {
    await lc.stop();
    throw err;
  }
  return systemView(lc, refs);
}

function systemView(lc: LocalCluster, refs: Map<string, ResourceRef>): SystemCluster {
  const columns = loadPrinterColumns();
  const ref = (resource: string): ResourceRef => {
    const r = refs.get(resource);
    if (!r) throw new Error(`system cluster: ${resource} is not one of ${[...refs.keys()].join(', ')}`);
    return r;
  };
  const namespaced = (resource: string, ns: string) => (ref(resource).namespaced ? ns : undefined);

  /** Ready endpoints of a Service from its EndpointSlices: pod name and IP. */
  function serviceAddresses(namespace: string, service: string): Array<Endpoint & { ready: boolean }> {
    if (!lc.client.get(ref('services'), namespace, service)) return [];
    const out: Array<Endpoint & { ready: boolean }> = [];
    for (const slice of lc.client.list(ref('endpointslices'), { namespace, labelSelector: `kubernetes.io/service-name=${service}` })) {
      for (const ep of arr(slice['endpoints']).map(rec)) {
        const cond = rec(ep['conditions']);
        const pod = String(rec(ep['targetRef'])['name'] ?? '');
        for (const ip of arr(ep['addresses'])) out.push({ pod, ip: String(ip), ready: cond['ready'] !== false && cond['terminating'] !== true });
      }
    }
    return out;
  }

  /**
   * What the scenarios read comes from the watch cache; after a write they expect to read it back
   * (the stand-in's store is synchronous). resourceVersions are etcd revisions here, so the cache
   * has caught up once it holds that version or a later one, or the object is gone.
   */
  async function cacheCaughtUp(res: ResourceRef, ns: string | undefined, written: StoredObject, deleted = false): Promise<void> {
    const want = Number(written.metadata.resourceVersion);
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (!lc.client.informed(res)) return;
      const cached = lc.client.get(res, ns, written.metadata.name);
      if (deleted ? !cached || cached.metadata.deletionTimestamp !== undefined : cached && Number(cached.metadata.resourceVersion) >= want) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  const view: SystemCluster = {
    backend: 'real',
    local: lc,
    get metacontroller() {
      return lc.metacontroller;
    },
    faults: lc.faults.faults,
    async apply(input) {
      // The stand-in's apply: create, or merge-patch what exists. (`kubectl apply` of a partial
      // manifest would prune the fields an earlier apply set; the scenarios mean a patch.)
      const objects = typeof input === 'string' ? parseDocuments(input) : Array.isArray(input) ? input : [input];
      const out: StoredObject[] = [];
      for (const obj of objects) {
        const res = await lc.client.resourceForKind(String(obj.apiVersion), String(obj.kind));
        const ns = res.namespaced ? (obj.metadata?.namespace ?? 'default') : undefined;
        const body = res.namespaced ? { ...obj, metadata: { ...obj.metadata, namespace: ns } } : obj;
        let written: StoredObject;
        try {
          written = await lc.client.create(res, body as KubeObject);
        } catch (err) {
          if ((err as { code?: number }).code !== 409) throw err;
          const { status: _s, ...patch } = body as Json;
          written = await lc.client.patch(res, ns, String(obj.metadata?.name), patch, { type: 'merge' });
        }
        out.push(written);
        await cacheCaughtUp(res, ns, written);
      }
      return out;
    },
    get: (resource, name, namespace = 'default') => lc.client.get(ref(resource), namespaced(resource, namespace), name),
    list: (resource, o = {}) => lc.client.list(ref(resource), o),
    async delete(resource, name, namespace = 'default') {
      const answer = await lc.client.delete(ref(resource), namespaced(resource, namespace), name, { propagationPolicy: 'Background' });
      if (answer) await cacheCaughtUp(ref(resource), namespaced(resource, namespace), answer, true);
    },
    async deletePod(name, namespace = 'default') {
      await lc.client.delete(ref('pods'), namespace, name);
    },
    async scale(name, replicas, namespace = 'default', resource = 'redis') {
      await lc.kubectl(['scale', resource, name, '-n', namespace, `--replicas=${replicas}`]);
    },
    async getScale(name, namespace = 'default') {
      return rec(JSON.parse(await lc.kubectl(['get', '--raw', `/apis/redis.example.com/v1/namespaces/${namespace}/redises/${name}/scale`])));
    },
    watch(resource, options: WatchOptions, cb) {
      const labels = parseLabelSelector(options.labelSelector ?? '');
      const fields = options.fieldSelector ? parseFieldSelector(options.fieldSelector, ['metadata.name', 'metadata.namespace']) : [];
      const matches = (o: StoredObject) =>
        (!options.namespace || o.metadata.namespace === options.namespace) &&
        matchesLabels(labels, o.metadata.labels) &&
        matchesFields(fields, (f) => (f === 'metadata.name' ? o.metadata.name : o.metadata.namespace));
      return lc.client.watch(ref(resource), (ev) => {
        if (matches(ev.object)) cb(ev);
      });
    },
    waitFor: (check, timeoutMs, description) => pollUntil(check, timeoutMs, description, () => view.dump()),
    redisRow(name, namespace = 'default') {
      const r = lc.client.get(ref('redises'), namespace, name);
      return r ? redisRow(r, columns) : undefined;
    },
    masterEndpoint(name, namespace = 'default') {
      const eps = serviceAddresses(namespace, childNames(name).masterService).filter((e) => e.ready);
      return eps.length === 1 ? { pod: eps[0]!.pod, ip: eps[0]!.ip } : undefined;
    },
    serviceEndpoints: (namespace, service) =>
      serviceAddresses(namespace, service)
        .filter((e) => e.ready)
        .map((e) => e.pod),
    masterLabelled: (name, namespace = 'default') =>
      view
        .pods(name, namespace)
        .filter((p) => p.metadata.labels?.[ROLE_LABEL] === ROLE_MASTER)
        .map((p) => p.metadata.name),
    pods: (name, namespace = 'default') =>
      lc.client.list(ref('pods'), { namespace, labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/managed-by=redis-operator` }),
    password: (name, namespace = 'default') =>
      redisPassword(name, lc.client.get(ref('redises'), namespace, name), (s) => lc.client.get(ref('secrets'), namespace, s)),
    redis: (ip, name, namespace = 'default') =>
      nodeClient(
        ip,
        view.password(name, namespace),
        redisTls(name, lc.client.get(ref('redises'), namespace, name), (s) => lc.client.get(ref('secrets'), namespace, s)),
      ),
    events: (filter = {}) => eventRecords(lc.client.list(ref('events'), filter.namespace ? { namespace: filter.namespace } : {}), filter),
    leader: () => lc.leader(),
    sidecarNames: () => lc.sidecars.map((s) => s.name),
    sidecarAlive: (name) => sidecar(name).group?.alive() ?? false,
    sidecarReady: (name) => sidecar(name).ready(),
    sidecarLog: (name, lines = 30) => tailLines(sidecar(name).logFile, lines),
    async killSidecar(name, signal = 'SIGKILL') {
      await sidecar(name).kill(signal);
    },
    async restartSidecar(name) {
      const s = sidecar(name);
      await s.kill('SIGKILL');
      s.launch();
    },
    killPodProcess: (ns, pod, signal) => lc.agent.killPodProcess(ns, pod, signal),
    podLog: (ns, pod) => lc.agent.podLog(ns, pod),
    claimPath: (ns, claim) => lc.agent.claimPath(ns, claim),
    processes: () => lc.agent.processes(),
    cutLink(t, a, b) {
      // Pod-to-pod traffic crosses the bridge, not the host's OUTPUT chain: drop it inside both
      // pods' network namespaces, each rule naming the other address.
      const rules: Array<[string, string[]]> = [];
      for (const [self, other] of [
        [a, b],
        [b, a],
      ] as const) {
        const ns = lc.network.netnsOf(self);
        if (!ns) throw new Error(`cutLink: ${self} is not a live pod address`);
        for (const chain of [
          ['OUTPUT', '-d', other],
          ['INPUT', '-s', other],
        ])
          rules.push([ns, [...chain, '-j', 'DROP']]);
      }
      for (const [ns, rule] of rules) execFileSync('ip', ['netns', 'exec', ns, 'iptables', '-w', '-I', ...rule], { stdio: ['ignore', 'ignore', 'pipe'] });
      let restored = false;
      const cut = {
        restore() {
          if (restored) return;
          restored = true;
          // A namespace already gone took its rules with it.
          for (const [ns, rule] of rules) spawnSync('ip', ['netns', 'exec', ns, 'iptables', '-w', '-D', ...rule], { stdio: 'ignore' });
        },
      };
      t?.after(() => cut.restore());
      return cut;
    },
    describe(name, namespace = 'default') {
      const redises = lc.client.list(ref('redises'), { namespace }).filter((r) => name === undefined || r.metadata.name === name);
      const pods = name === undefined ? lc.client.list(ref('pods'), { namespace }) : view.pods(name, namespace);
      const events = lc.client.list(ref('events'), { namespace }).filter((e) => name === undefined || rec(e['involvedObject'])['name'] === name);
      events.sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
      return [
        `$ kubectl get redis -n ${namespace}`,
        redises.length ? redisTable(redises, columns) : 'No resources found',
        '',
        `$ kubectl get pods -n ${namespace} -o wide -L ${ROLE_LABEL}`,
        pods.length ? podTable(pods) : 'No resources found',
        '',
        `$ kubectl get events -n ${namespace} (last 15)`,
        events.length ? eventTable(events.slice(-15)) : 'No events',
      ].join('\n');
    },
    dump() {
      const parts = ['---- cluster dump (real control plane) ----', view.describe(undefined, 'default')];
      for (const r of lc.client.list(ref('redises'))) {
        const ns = r.metadata.namespace ?? 'default';
        parts.push(`\nstatus of redis ${ns}/${r.metadata.name}:\n${stringify(r['status'] ?? {}).trimEnd()}`);
        parts.push(
          `${childNames(r.metadata.name).masterService} endpoints: ${
            serviceAddresses(ns, childNames(r.metadata.name).masterService)
              .map((e) => `${e.pod}=${e.ip}${e.ready ? '' : ' (not ready)'}`)
              .join(', ') || 'none'
          }`,
        );
        const s = lc.metacontroller?.stats(`${ns}/${r.metadata.name}`);
        if (s)
          parts.push(
            `metacontroller: syncs=${s.syncCalls} statusWrites=${s.statusWrites} childWrites=${s.childWrites} failures=${s.failures}${s.lastError ? ` lastError=${s.lastError}` : ''}`,
          );
      }
      for (const p of lc.client.list(ref('pods')))
        if (!isPodReady(p))
          parts.push(
            `pod ${p.metadata.namespace}/${p.metadata.name} not ready: ${JSON.stringify(arr(rec(p['status'])['containerStatuses']).map((c) => rec(c)['state']))}`,
          );
      parts.push(`\nlease holder: ${lc.leader() ?? 'none'}`);
      for (const s of lc.sidecars)
        parts.push(
          `\n${s.name} last log lines:\n  ${tailLines(s.logFile, 10)
            .map((l) => l.slice(0, 300))
            .join('\n  ')}`,
        );
      return parts.join('\n');
    },
    stop: () => lc.stop(),
  };
  function sidecar(name: string) {
    const s = lc.sidecars.find((x) => x.name === name);
    if (!s) throw new Error(`no sidecar ${name}`);
    return s;
  }
  return view;
}

export function parseDocuments(yaml: string): KubeObject[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJSON() as KubeObject)
    .filter(Boolean);
}
