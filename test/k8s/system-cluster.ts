// The system tests' view of the operator on a REAL cluster (real-cluster.ts: real nodes, the
// real Metacontroller, the operator's Deployment from its own image): the `SystemCluster` face the
// scenarios in test/system/ use, answered from an informer cache of the real API server
// (synchronous reads, as the scenarios poll), with writes through the real kubectl or the API,
// faults through the fault proxy every in-cluster client reaches the API through, and containers
// through their node's containerd (ctr).
// Invariants: nothing here decides what Kubernetes would do: Services route by the real
// EndpointSlices, rows come from the installed CRD's printer columns over the stored object,
// scale goes through the real scale subresource; waitFor failures carry a dump of the cluster;
// every iptables rule a cut adds is removed by restore() or the test's end (or goes with its pod).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { childNames, ROLE_LABEL, ROLE_MASTER } from '../../src/api/labels.ts';
import { shardLeaseName, shardOf } from '../../src/sidecar/redis/decide/shards.ts';
import {
  eventTable,
  isPodReady,
  loadPrinterColumns,
  podTable,
  redisRow,
  redisTable,
} from '../support/kubectl-tables.ts';
import type { KubeObject, StoredObject } from '../support/kube-client/objects.ts';
import { httpClient, type HttpKubeClient, type ResourceRef } from '../support/kube-client/index.ts';
import { selectorMatcher } from '../support/kube-client/selectors.ts';
import type { Endpoint, LinkCut, SystemCluster, SystemClusterOptions, WatchOptions } from '../system/cluster.ts';
import { eventRecords, nodeClient, pollUntil, redisPassword, redisTls } from '../support/cluster-views.ts';
import { asRecord as rec } from '../support/records.ts';
import { OPERATOR_NAMESPACE } from './operator.ts';
import { DEFAULT_IMAGES, realClusterMissing, startRealCluster, type RealCluster } from './real-cluster.ts';
import type { RealNode } from './real-node.ts';
import { resetCluster, takeBaseline, type Baseline } from './system-reset.ts';

type Json = Record<string, unknown>;
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export const LEASE_NAME = 'redis-operator-sidecar';
const OPERATOR_PODS = 'app.kubernetes.io/name=redis-operator,app.kubernetes.io/component=operator';

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
  deployments: 'apps/v1',
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

/** What each cluster was when it was first up, for reset(). */
const baselines = new WeakMap<SystemCluster, Baseline>();

/** Why the system scenarios cannot run here (one line), or undefined. */
export function missing(images: string[] = []): string | undefined {
  return realClusterMissing([...DEFAULT_IMAGES, ...images]);
}

export async function startSystemCluster(options: SystemClusterOptions): Promise<SystemCluster> {
  const rc = await startRealCluster({
    subnet: options.subnet,
    nodes: options.nodes ?? 1,
    images: [...DEFAULT_IMAGES, ...(options.images ?? [])],
    apiFaults: true,
    operator: {
      ...(options.sidecarEnv ? { sidecarEnv: options.sidecarEnv } : {}),
      ...(options.install ? { helm: options.install } : {}),
      ...(options.extraCrds ? { extraCrds: options.extraCrds } : {}),
    },
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  const client = httpClient(rc.kubeconfig);
  const refs = new Map<string, ResourceRef>();
  try {
    for (const [plural, apiVersion] of Object.entries(RESOURCES)) {
      const r = await client.resource(apiVersion, plural);
      await client.inform(r);
      refs.set(plural, r);
    }
    const view = systemView(rc, client, refs, await shardCount(rc));
    if (options.waitForSidecars !== false)
      await view.waitFor(async () => sidecarsUp(view), 120_000, 'every sidecar ready and every shard Lease held');
    baselines.set(view, await takeBaseline(rc));
    return view;
  } catch (err) {
    await client.close();
    await rc.stop();
    throw err;
  }
}

/** SHARDS of the installed Deployment's sidecar (the process's default, 1, when unset). */
async function shardCount(rc: RealCluster): Promise<number> {
  const env = await rc.kubectl([
    'get',
    'deployment',
    'redis-operator',
    '-n',
    OPERATOR_NAMESPACE,
    '-o',
    'jsonpath={.spec.template.spec.containers[?(@.name=="sidecar")].env[?(@.name=="SHARDS")].value}',
  ]);
  return Number(env.trim() || '1');
}

async function sidecarsUp(view: SystemCluster): Promise<boolean> {
  const names = view.sidecarNames();
  if (names.length === 0) return false;
  for (const n of names) if (!(await view.sidecarReady(n))) return false;
  return view.leaseHolders().every((h) => h !== '');
}

/** The last log lines of a container, from its node's log files (CRI format, the prefix cut). */
function containerLog(node: RealNode | undefined, pod: StoredObject, container?: string): string[] {
  if (!node) return [];
  const dir = path.join(node.dir, 'var-log/pods', `${pod.metadata.namespace}_${pod.metadata.name}_${pod.metadata.uid}`);
  const out: string[] = [];
  let containers: string[];
  try {
    containers = readdirSync(dir).sort();
  } catch {
    return [];
  }
  for (const c of containers) {
    if (container !== undefined && c !== container) continue;
    const files = readdirSync(path.join(dir, c))
      .filter((f) => /^\d+\.log$/.test(f))
      .sort((a, b) => parseInt(a) - parseInt(b));
    for (const f of files) {
      for (const line of readFileSync(path.join(dir, c, f), 'utf8').split('\n')) {
        if (line === '') continue;
        // <time> <stream> <P|F> <text>
        const m = /^\S+ \S+ [PF] (.*)$/.exec(line);
        out.push(m ? m[1]! : line);
      }
    }
  }
  return out;
}

function systemView(
  rc: RealCluster,
  client: HttpKubeClient,
  refs: Map<string, ResourceRef>,
  shards: number,
): SystemCluster {
  const columns = loadPrinterColumns();
  const faults = rc.faults;
  if (!faults) throw new Error('system cluster: started without its API fault proxy');
  const frozen = new Set<string>();
  const ref = (resource: string): ResourceRef => {
    const r = refs.get(resource);
    if (!r) throw new Error(`system cluster: ${resource} is not one of ${[...refs.keys()].join(', ')}`);
    return r;
  };
  const namespaced = (resource: string, ns: string) => (ref(resource).namespaced ? ns : undefined);
  const nodeOf = (pod: StoredObject) => rc.nodes.find((n) => n.name === String(rec(pod['spec'])['nodeName'] ?? ''));
  const operatorPods = () =>
    client
      .list(ref('pods'), { namespace: OPERATOR_NAMESPACE, labelSelector: OPERATOR_PODS })
      .filter((p) => !p.metadata.deletionTimestamp);
  const operatorPod = (name: string) => {
    const p = client.get(ref('pods'), OPERATOR_NAMESPACE, name);
    if (!p)
      throw new Error(
        `no operator pod ${name} (there are ${
          operatorPods()
            .map((x) => x.metadata.name)
            .join(', ') || 'none'
        })`,
      );
    return p;
  };

  /** The node and containerd id of a pod's container as its status reports them now. */
  function container(
    pod: StoredObject,
    name: string,
  ): { node: RealNode; id: string; running: boolean; restarts: number } | undefined {
    const node = nodeOf(pod);
    const st = arr(rec(pod['status'])['containerStatuses'])
      .map(rec)
      .find((c) => c['name'] === name);
    const id = String(st?.['containerID'] ?? '').replace(/^containerd:\/\//, '');
    if (!node || !st || !id) return undefined;
    return { node, id, running: rec(st['state'])['running'] !== undefined, restarts: Number(st['restartCount'] ?? 0) };
  }

  /** The PID (in its node's PID namespace) of a running container's main process. */
  async function taskPid(node: RealNode, id: string): Promise<number | undefined> {
    for (const line of (await node.ctr(['tasks', 'ls'])).split('\n').slice(1)) {
      const [task, pid] = line.trim().split(/\s+/);
      if (task === id) return Number(pid);
    }
    return undefined;
  }

  /** Ready endpoints of a Service from its EndpointSlices: pod name and IP. */
  function serviceAddresses(namespace: string, service: string): Array<Endpoint & { ready: boolean }> {
    if (!client.get(ref('services'), namespace, service)) return [];
    const out: Array<Endpoint & { ready: boolean }> = [];
    for (const slice of client.list(ref('endpointslices'), {
      namespace,
      labelSelector: `kubernetes.io/service-name=${service}`,
    })) {
      for (const ep of arr(slice['endpoints']).map(rec)) {
        const cond = rec(ep['conditions']);
        const pod = String(rec(ep['targetRef'])['name'] ?? '');
        for (const ip of arr(ep['addresses']))
          out.push({ pod, ip: String(ip), ready: cond['ready'] !== false && cond['terminating'] !== true });
      }
    }
    return out;
  }

  /**
   * What the scenarios read comes from the watch cache; after a write they expect to read it back.
   * resourceVersions are etcd revisions here, so the cache has caught up once it holds that
   * version or a later one, or the object is gone.
   */
  async function cacheCaughtUp(
    res: ResourceRef,
    ns: string | undefined,
    written: StoredObject,
    deleted = false,
  ): Promise<void> {
    const want = Number(written.metadata.resourceVersion);
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if (!client.informed(res)) return;
      const cached = client.get(res, ns, written.metadata.name);
      if (
        deleted
          ? !cached || cached.metadata.deletionTimestamp !== undefined
          : cached && Number(cached.metadata.resourceVersion) >= want
      )
        return;
      await sleep(10);
    }
  }

  const holderOf = (lease: string) =>
    String(rec(client.get(ref('leases'), OPERATOR_NAMESPACE, lease)?.['spec'])['holderIdentity'] ?? '');

  const view: SystemCluster = {
    controlPlane: rc.controlPlane,
    kubeconfig: rc.kubeconfig,
    hostAddress: rc.network.serviceAddress,
    dataRoot: rc.dataRoot,
    faults: faults.faults,
    kubectl: (args, input) => rc.kubectl(args, input),
    async apply(input) {
      // Create, or merge-patch what exists. (`kubectl apply` of a partial manifest would prune the
      // fields an earlier apply set; the scenarios mean a patch.)
      const objects = typeof input === 'string' ? parseDocuments(input) : Array.isArray(input) ? input : [input];
      const out: StoredObject[] = [];
      for (const obj of objects) {
        const res = await client.resourceForKind(String(obj.apiVersion), String(obj.kind));
        const ns = res.namespaced ? (obj.metadata?.namespace ?? 'default') : undefined;
        const body = res.namespaced ? { ...obj, metadata: { ...obj.metadata, namespace: ns } } : obj;
        let written: StoredObject;
        try {
          written = await client.create(res, body as KubeObject);
        } catch (err) {
          if ((err as { code?: number }).code !== 409) throw err;
          const { status: _s, ...patch } = body as Json;
          written = await client.patch(res, ns, String(obj.metadata?.name), patch, { type: 'merge' });
        }
        out.push(written);
        await cacheCaughtUp(res, ns, written);
      }
      return out;
    },
    get: (resource, name, namespace = 'default') => client.get(ref(resource), namespaced(resource, namespace), name),
    list: (resource, o = {}) => client.list(ref(resource), o),
    async delete(resource, name, namespace = 'default') {
      const answer = await client.delete(ref(resource), namespaced(resource, namespace), name, {
        propagationPolicy: 'Background',
      });
      if (answer) await cacheCaughtUp(ref(resource), namespaced(resource, namespace), answer, true);
    },
    async deletePod(name, namespace = 'default') {
      await client.delete(ref('pods'), namespace, name);
    },
    async scale(name, replicas, namespace = 'default', resource = 'redis') {
      await rc.kubectl(['scale', resource, name, '-n', namespace, `--replicas=${replicas}`]);
    },
    async getScale(name, namespace = 'default') {
      return rec(
        JSON.parse(
          await rc.kubectl([
            'get',
            '--raw',
            `/apis/redis.example.com/v1/namespaces/${namespace}/redises/${name}/scale`,
          ]),
        ),
      );
    },
    watch(resource, options: WatchOptions, cb) {
      const selected = selectorMatcher(options.labelSelector, options.fieldSelector);
      const matches = (o: StoredObject) =>
        (!options.namespace || o.metadata.namespace === options.namespace) && selected(o);
      return client.watch(ref(resource), (ev) => {
        if (matches(ev.object)) cb(ev);
      });
    },
    waitFor: (check, timeoutMs, description) => pollUntil(check, timeoutMs, description, () => view.dump()),
    redisRow(name, namespace = 'default') {
      const r = client.get(ref('redises'), namespace, name);
      return r ? redisRow(r) : undefined;
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
      client
        .list(ref('pods'), {
          namespace,
          labelSelector: `app.kubernetes.io/instance=${name},app.kubernetes.io/managed-by=redis-operator`,
        })
        // Backup Job pods carry the Redis's instance label too; they are not its pods.
        .filter((p) => p.metadata.labels?.['batch.kubernetes.io/job-name'] === undefined)
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)),
    password: (name, namespace = 'default') =>
      redisPassword(name, client.get(ref('redises'), namespace, name), (s) => client.get(ref('secrets'), namespace, s)),
    redis: (ip, name, namespace = 'default') =>
      nodeClient(
        ip,
        view.password(name, namespace),
        redisTls(name, client.get(ref('redises'), namespace, name), (s) => client.get(ref('secrets'), namespace, s)),
      ),
    events: (filter = {}) =>
      eventRecords(client.list(ref('events'), filter.namespace ? { namespace: filter.namespace } : {}), filter),
    leader(name, namespace = 'default') {
      const holder = holderOf(shardLeaseName(LEASE_NAME, shardOf(namespace, name, shards), shards));
      return holder || undefined;
    },
    leaseHolders: () => Array.from({ length: shards }, (_, i) => holderOf(shardLeaseName(LEASE_NAME, i, shards))),
    sidecarNames: () =>
      operatorPods()
        .map((p) => p.metadata.name)
        .sort(),
    sidecarAlive(name) {
      const c = container(operatorPod(name), 'sidecar');
      return !frozen.has(name) && c?.running === true;
    },
    async sidecarReady(name) {
      const ip = String(rec(client.get(ref('pods'), OPERATOR_NAMESPACE, name)?.['status'])['podIP'] ?? '');
      if (!ip || frozen.has(name)) return false;
      return fetch(`http://${ip}:9121/readyz`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => r.ok,
        () => false,
      );
    },
    sidecarLog: (name, lines = 30) => {
      const pod = operatorPod(name);
      return containerLog(nodeOf(pod), pod, 'sidecar').slice(-lines);
    },
    async killSidecar(name) {
      const c = container(operatorPod(name), 'sidecar');
      if (!c?.running) throw new Error(`killSidecar: ${name}'s sidecar container is not running`);
      // runc gives up freezing ("unable to freeze") when a process does not stop in time, as on a
      // loaded machine, and may leave the cgroup half frozen: thaw it and try again, a few times.
      for (let attempt = 1; ; attempt++) {
        try {
          await c.node.ctr(['tasks', 'pause', c.id]);
          break;
        } catch (err) {
          await c.node.ctr(['tasks', 'resume', c.id]).catch(() => undefined);
          if (attempt >= 3 || !String((err as { stderr?: unknown }).stderr ?? err).includes('unable to freeze'))
            throw err;
        }
      }
      frozen.add(name);
    },
    async restartSidecar(name) {
      const pod = operatorPod(name);
      const c = container(pod, 'sidecar');
      if (!c) throw new Error(`restartSidecar: ${name} has no sidecar container`);
      await c.node.ctr(['tasks', 'kill', '--signal', 'SIGKILL', c.id]);
      // A frozen task dies of SIGKILL once thawed; runc may thaw it itself to deliver the signal,
      // and then the resume finds no task (or a closing shim): the restart below is the check.
      if (frozen.delete(name)) await c.node.ctr(['tasks', 'resume', c.id]).catch(() => undefined);
      await view.waitFor(
        () => {
          const now = container(operatorPod(name), 'sidecar');
          return now !== undefined && now.restarts > c.restarts && now.running;
        },
        60_000,
        `${name}'s sidecar container restarted by the kubelet`,
      );
    },
    async killPodProcess(namespace, podName, signal = 'SIGKILL', name = 'redis') {
      const pod = client.get(ref('pods'), namespace, podName);
      const c = pod && container(pod, name);
      if (!c?.running) return false;
      await c.node.ctr(['tasks', 'kill', '--signal', signal, c.id]);
      return true;
    },
    podLog(namespace, podName) {
      const pod = client.get(ref('pods'), namespace, podName);
      return pod ? containerLog(nodeOf(pod), pod).join('\n') : '';
    },
    claimPath(namespace, claim) {
      const volume = String(
        rec(client.get(ref('persistentvolumeclaims'), namespace, claim)?.['spec'])['volumeName'] ?? '',
      );
      const pv = volume ? client.get(ref('persistentvolumes'), undefined, volume) : undefined;
      const p = rec(rec(pv?.['spec'])['hostPath'])['path'];
      return typeof p === 'string' ? p : undefined;
    },
    async containers(namespace) {
      // Running tasks only: an exited container stays listed until the kubelet's container
      // garbage collection (every minute) removes it.
      const out: string[] = [];
      for (const node of rc.nodes) {
        const ls = await node.ctr(['containers', 'ls', '-q', `labels."io.kubernetes.pod.namespace"==${namespace}`]);
        const ids = new Set(
          ls
            .split('\n')
            .map((l) => l.trim())
            .filter(Boolean),
        );
        for (const line of (await node.ctr(['tasks', 'ls'])).split('\n').slice(1)) {
          const [task, , status] = line.trim().split(/\s+/);
          if (task && ids.has(task) && status !== 'STOPPED') out.push(`${node.name}/${task} ${status}`);
        }
      }
      return out;
    },
    async cutLink(t, a, b) {
      // Pod-to-pod traffic never crosses the host: drop it inside both pods' network namespaces,
      // each rule naming the other address.
      const rules: Array<{ node: RealNode; pid: number; rule: string[] }> = [];
      for (const [self, other] of [
        [a, b],
        [b, a],
      ] as const) {
        const pod = client.list(ref('pods')).find((p) => rec(p['status'])['podIP'] === self);
        const c =
          pod &&
          arr(rec(pod['status'])['containerStatuses'])
            .map((x) => String(rec(x)['name']))
            .map((n) => container(pod, n))
            .find((x) => x?.running);
        const pid = c && (await taskPid(c.node, c.id));
        if (!c || !pid) throw new Error(`cutLink: ${self} is not the address of a pod with a running container`);
        for (const chain of [
          ['OUTPUT', '-d', other],
          ['INPUT', '-s', other],
        ])
          rules.push({ node: c.node, pid, rule: [...chain, '-j', 'DROP'] });
      }
      const iptables = (r: (typeof rules)[number], op: '-I' | '-D') =>
        r.node.enter(['nsenter', `--net=/proc/${r.pid}/ns/net`, 'iptables', '-w', op, ...r.rule]);
      for (const r of rules) await iptables(r, '-I');
      let restored: Promise<void> | undefined;
      const cut: LinkCut = {
        restore: () =>
          (restored ??= (async () => {
            // A pod already gone took its namespace and rules with it.
            for (const r of rules) await iptables(r, '-D').catch(() => undefined);
          })()),
      };
      t?.after(() => cut.restore());
      return cut;
    },
    describe(name, namespace = 'default') {
      const redises = client
        .list(ref('redises'), { namespace })
        .filter((r) => name === undefined || r.metadata.name === name);
      const pods = name === undefined ? client.list(ref('pods'), { namespace }) : view.pods(name, namespace);
      const events = client
        .list(ref('events'), { namespace })
        .filter((e) => name === undefined || rec(e['involvedObject'])['name'] === name);
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
      const parts = ['---- cluster dump (real cluster) ----', view.describe(undefined, 'default')];
      for (const r of client.list(ref('redises'))) {
        const ns = r.metadata.namespace ?? 'default';
        parts.push(`\nstatus of redis ${ns}/${r.metadata.name}:\n${stringify(r['status'] ?? {}).trimEnd()}`);
        parts.push(
          `${childNames(r.metadata.name).masterService} endpoints: ${
            serviceAddresses(ns, childNames(r.metadata.name).masterService)
              .map((e) => `${e.pod}=${e.ip}${e.ready ? '' : ' (not ready)'}`)
              .join(', ') || 'none'
          }`,
        );
      }
      for (const p of client.list(ref('pods')))
        if (!isPodReady(p))
          parts.push(
            `pod ${p.metadata.namespace}/${p.metadata.name} not ready: ${JSON.stringify(arr(rec(p['status'])['containerStatuses']).map((c) => rec(c)['state']))}`,
          );
      parts.push(
        `\nshard Lease holders: ${view.leaseHolders().join(', ')}${frozen.size ? `; frozen sidecars: ${[...frozen].join(', ')}` : ''}`,
      );
      for (const p of client.list(ref('pods'), { namespace: 'metacontroller' }))
        parts.push(
          `\n${p.metadata.name} last log lines:\n  ${containerLog(nodeOf(p), p)
            .slice(-8)
            .map((l) => l.slice(0, 300))
            .join('\n  ')}`,
        );
      for (const p of operatorPods())
        parts.push(
          `\n${p.metadata.name} sidecar last log lines:\n  ${containerLog(nodeOf(p), p, 'sidecar')
            .slice(-10)
            .map((l) => l.slice(0, 300))
            .join('\n  ')}`,
        );
      return parts.join('\n');
    },
    async reset() {
      const baseline = baselines.get(view);
      if (!baseline) throw new Error('reset: this cluster has no baseline');
      return resetCluster(view, rc, baseline, frozen);
    },
    async stop() {
      await client.close();
      await rc.stop();
    },
  };
  return view;
}

export function parseDocuments(yaml: string): KubeObject[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJSON() as KubeObject)
    .filter(Boolean);
}
