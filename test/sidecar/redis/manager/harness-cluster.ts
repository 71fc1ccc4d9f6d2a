// The API side of the manager harness: a REAL kube-apiserver (test/k8s/api-server.ts: the CRDs and
// the operator's RBAC applied, each manager instance a ServiceAccount of the operator's namespace
// reaching it through a fault proxy), Pod objects standing in for the pods of real redis-server
// processes (no kubelet runs: status.podIP = the server's loopback address, written as a kubelet
// would), what a test reads back (roles, the published master, Events, pod PATCHes), and manager
// instances wired as main.ts wires them, each with its own identity, Lease client and Redis source
// address.
// A test file that calls Cluster.shareApiServer() has one API server for all its Clusters, each
// starting from a reset one (what earlier tests made deleted, no fault rule, a request log of its
// own); without it (bench/failover.ts) each Cluster starts and stops its own.
// Invariants: every instance, watcher and delayed write registers its own cleanup, undone by
// close(); a delayed write (later()) never rejects: its failure is kept in failedWrites; the
// split-brain watcher sees EVERY pod write in the API server's order, so "two pods labelled master
// at once" is checked at each step, not sampled; reads are synchronous (watch caches) and every
// harness write resolves once they show it.
import { Writable } from 'node:stream';
import { after } from 'node:test';
import { pino, type Logger } from 'pino';
import {
  COMPONENT_LABEL,
  LINK_ANNOTATION,
  podSelectorLabels,
  ROLE_LABEL,
  ROLE_MASTER,
} from '../../../../src/api/labels.ts';
import { ENGINE_ANNOTATION } from '../../../../src/api/node-engine.ts';
import { DEFAULT_TIMING, type ManagerTiming } from '../../../../src/sidecar/config.ts';
import { KubeClient } from '../../../../src/sidecar/adapters/kube/client.ts';
import { LeaderElector } from '../../../../src/sidecar/adapters/kube/leader.ts';
import type { LeaderSettings } from '../../../../src/sidecar/adapters/kube/lease-decision.ts';
import { RedisManager, type RedisHooks } from '../../../../src/sidecar/redis/manager/index.ts';
import type { FailurePolicyConfig } from '../../../../src/sidecar/core/failure-policy.ts';
import { createSidecarMetrics, type SidecarMetrics } from '../../../../src/sidecar/metrics.ts';
import { startApiServer, type ApiServer, type StoredObject, type WatchHandle } from '../../../k8s/api-server.ts';
import type { RequestRecord } from '../../../k8s/fault-proxy.ts';
import { OPERATOR_NAMESPACE } from '../../../k8s/operator.ts';
import { TEST_OPERATOR_PASSWORD, TEST_PASSWORD } from '../../../support/redis-server.ts';
import { until } from '../../../support/until.ts';

export const NS = 'redis-test';
/** The operator's namespace: its Lease role (manifests/rbac.yaml) is granted there only. */
export const LEASE_NS = OPERATOR_NAMESPACE;
export const LEASE_NAME = 'redis-operator-sidecar';

/** Fast but consistent with the election invariant (renewDeadline < leaseDuration). */
export const TEST_LEADER: LeaderSettings = {
  leaseDurationSeconds: 2,
  renewDeadlineMs: 1200,
  retryPeriodMs: 200,
  requestTimeoutMs: 500,
};

export type Pod = StoredObject & {
  status?: { podIP?: string; phase?: string; conditions?: Array<{ type: string; status: string }> };
};

/** A manager instance as main.ts wires it, with its logs kept in memory. */
export interface Instance {
  id: string;
  kube: KubeClient;
  elector: LeaderElector;
  manager: RedisManager;
  metrics: SidecarMetrics;
  logs: string[];
  /** Graceful: stop acting, release the lease, close everything. */
  stop(): Promise<void>;
  /** A crash: stops without releasing the lease (others wait for it to expire). */
  crash(): Promise<void>;
}

export interface InstanceOptions {
  id: string;
  /** Source address of the instance's Redis connections (so iptables can cut only its links). */
  sourceIp?: string;
  timing?: Partial<ManagerTiming>;
  leader?: LeaderSettings;
  hooks?: RedisHooks;
  namespaces?: string[];
  failurePolicy?: FailurePolicyConfig;
  /** Passed to the manager as main.ts passes it (the Sentinel endpoint's feed). */
  onObserved?: () => void;
}

/**
 * The API server the Clusters of this test file borrow once shareApiServer() was called (null: each starts its own).
 */
let shared: { api: Promise<ApiServer> | null } | null = null;

/** What a test may have made, deleted before the next borrower (kube-* namespaces are left alone). */
const MADE_BY_TESTS = [
  'redises',
  'pods',
  'secrets',
  'events',
  'configmaps',
  'statefulsets',
  'persistentvolumeclaims',
  'leases',
];

/** Back to what a fresh server holds for the tests: their objects gone (finalizers dropped first), no fault rule. */
async function reset(api: ApiServer): Promise<void> {
  api.faults.clear();
  for (const resource of MADE_BY_TESTS) {
    const objects = api.store.list(resource).filter((o) => !o.metadata.namespace?.startsWith('kube-'));
    await Promise.all(
      objects.map(async ({ metadata: { namespace, name, finalizers } }) => {
        if (finalizers?.length)
          await api.store.patch(resource, namespace, name, { metadata: { finalizers: null } }, { type: 'merge' });
        if (api.store.get(resource, namespace, name)) await api.store.delete(resource, namespace, name);
      }),
    );
  }
}

/** An Event about a Redis, as the tests read it (reportingInstance = the instance that sent it). */
export interface RedisEvent {
  reason: string;
  message: string;
  type: string;
  instance: string;
}

export class Cluster {
  /** The API server, with a request log of this Cluster's own (what its clients asked since it started). */
  readonly api: ApiServer;
  readonly instances: Instance[] = [];
  /** Writes made by later() that failed, as `<what>: <message>` (a test asserts it empty). */
  readonly failedWrites: string[] = [];
  readonly #cleanups: Array<() => unknown> = [];
  readonly #borrowed: boolean;

  private constructor(api: ApiServer, borrowed: boolean) {
    const from = api.requests.length;
    this.api = Object.create(api, { requests: { get: () => api.requests.slice(from) } }) as ApiServer;
    this.#borrowed = borrowed;
  }

  /**
   * From now on every Cluster of this test file borrows one API server, reset for each (what
   * the tests made deleted, fault rules cleared, a request log of its own) instead of starting its
   * own: a start is 4-8 s on a loaded machine, a reset a fraction of one. The server stops after
   * the file's last test. Call once at the top of a test file (it registers the file's after hook).
   */
  static shareApiServer(): void {
    if (shared) return;
    const s: { api: Promise<ApiServer> | null } = { api: null };
    shared = s;
    after(async () => {
      const api = await s.api?.catch(() => null);
      await api?.close();
    });
  }

  static async start(): Promise<Cluster> {
    if (!shared) return new Cluster(await startApiServer({ namespaces: [NS] }), false);
    if (shared.api) {
      const api = await shared.api;
      await reset(api);
      return new Cluster(api, true);
    }
    const s = shared;
    s.api = startApiServer({ namespaces: [NS] });
    // A failed start is not kept: the next test tries again.
    s.api.catch(() => (s.api = null));
    return new Cluster(await s.api, true);
  }

  get store() {
    return this.api.store;
  }

  /**
   * Requests of this Cluster's clients the API server itself refused as unauthenticated or
   * forbidden (401, 403; not a fault rule's answer): a call the sidecar makes that its roles
   * (manifests/rbac.yaml) do not allow.
   */
  refused(): RequestRecord[] {
    return this.api.requests.filter((r) => (r.status === 401 || r.status === 403) && r.fault === undefined);
  }

  /** Stops everything; throws (after stopping) when the API server refused a call of the sidecar's (refused()). */
  async close(): Promise<void> {
    for (const i of [...this.instances]) await i.stop().catch(() => undefined);
    for (const c of this.#cleanups.reverse()) await c();
    const refused = this.refused();
    if (!this.#borrowed) await this.api.close();
    if (refused.length > 0)
      throw new Error(
        `the API server refused calls of the sidecar's: ${refused.map((r) => `${r.status} ${r.method} ${r.path} (${r.client})`).join('; ')}`,
      );
  }

  /** The Redis resource (spec defaults apply in the manager's validation). */
  async createRedis(name: string, spec: Record<string, unknown> = {}, namespace = NS): Promise<StoredObject> {
    await this.api.namespace(namespace);
    return this.store.create('redises', {
      apiVersion: 'redis.example.com/v1',
      kind: 'Redis',
      metadata: { name, namespace },
      spec: { replicas: 2, ...spec },
    });
  }

  /**
   * The generated auth Secret and the operator user's Secret, made beforehand with the passwords
   * test servers start with (as if an earlier leader had); operatorPassword null leaves the second
   * one to the leader.
   */
  async createAuthSecret(
    redis: string,
    password = TEST_PASSWORD,
    namespace = NS,
    operatorPassword: string | null = TEST_OPERATOR_PASSWORD,
  ): Promise<void> {
    await this.api.namespace(namespace);
    const secrets: Array<[string, string | null]> = [
      [`${redis}-auth`, password],
      [`${redis}-operator`, operatorPassword],
    ];
    for (const [name, value] of secrets) {
      if (value === null) continue;
      await this.store.create('secrets', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace },
        type: 'Opaque',
        stringData: { password: value },
      });
    }
  }

  /**
   * A pod of Redis `redis` named `<redis>-<suffix>` (master-0, replica-N) at the server's address, Running and Ready.
   */
  async addPod(redis: string, suffix: string, ip: string | null, namespace = NS): Promise<Pod> {
    const component = suffix.startsWith('master') ? 'master-set' : 'replica-set';
    await this.api.namespace(namespace);
    return (await this.store.create('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: `${redis}-${suffix}`,
        namespace,
        labels: { ...podSelectorLabels(redis), [COMPONENT_LABEL]: component },
      },
      spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] },
      status: ip ? runningStatus(ip, true) : { phase: 'Pending' },
    })) as Pod;
  }

  /** The pods of a set in order: master-0 at the first address (or server), then replica-0, replica-1, ... */
  async addPods(redis: string, at: Array<string | { ip: string }>, namespace = NS): Promise<Pod[]> {
    const pods: Pod[] = [];
    for (const [i, x] of at.entries())
      pods.push(
        await this.addPod(
          redis,
          i === 0 ? 'master-0' : `replica-${i - 1}`,
          typeof x === 'string' ? x : x.ip,
          namespace,
        ),
      );
    return pods;
  }

  pod(name: string, namespace = NS): Pod | undefined {
    return this.store.get('pods', namespace, name) as Pod | undefined;
  }

  async setPodStatus(name: string, ip: string | null, ready: boolean, namespace = NS): Promise<void> {
    await this.store.mutate('pods', namespace, name, (p) => {
      p['status'] = ip ? runningStatus(ip, ready) : { phase: 'Pending' };
    });
  }

  /** As a StatefulSet would after the pod was deleted: a new pod (new UID, no role label) at `ip`. */
  async recreatePod(redis: string, suffix: string, ip: string | null, namespace = NS): Promise<Pod> {
    await this.store.delete('pods', namespace, `${redis}-${suffix}`);
    return this.addPod(redis, suffix, ip, namespace);
  }

  /**
   * Runs `write` after `ms` (what the kubelet would report a while after something happened),
   * without the test waiting for it. Resolves when it is done (or when close() cancels it); a
   * failure is recorded in failedWrites instead of becoming an unhandled rejection.
   */
  later(ms: number, what: string, write: () => Promise<unknown>): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        write().then(
          () => resolve(),
          (err: unknown) => {
            this.failedWrites.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
            resolve();
          },
        );
      }, ms);
      this.#cleanups.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Names of the pods of `redis` labelled master right now (what the master Service selects). */
  masters(redis: string, namespace = NS): string[] {
    return (
      this.store.list('pods', {
        namespace,
        labelSelector: `app.kubernetes.io/instance=${redis},${ROLE_LABEL}=${ROLE_MASTER}`,
      }) as Pod[]
    ).map((p) => p.metadata.name);
  }

  /** The published master address: podIP of the (single) pod labelled master. */
  masterIp(redis: string, namespace = NS): string | null {
    const pods = this.store.list('pods', {
      namespace,
      labelSelector: `app.kubernetes.io/instance=${redis},${ROLE_LABEL}=${ROLE_MASTER}`,
    }) as Pod[];
    return pods.length === 1 ? (pods[0]!.status?.podIP ?? null) : null;
  }

  roles(redis: string, namespace = NS): Record<string, string> {
    const out: Record<string, string> = {};
    for (const p of this.store.list('pods', {
      namespace,
      labelSelector: `app.kubernetes.io/instance=${redis}`,
    }) as Pod[]) {
      out[p.metadata.name] =
        `${p.metadata.labels?.[ROLE_LABEL] ?? '-'}/${p.metadata.annotations?.[LINK_ANNOTATION] ?? '-'}`;
    }
    return out;
  }

  /**
   * The Events of `redis` once `ready` holds for them. The sidecar sends its Events without
   * waiting for them (best effort), and the tests' watch shows each a moment after the API server
   * stored it: one may land after what it tells of (a label moved, a write acknowledged).
   */
  eventsWhen(
    redis: string,
    what: string,
    ready: (events: RedisEvent[]) => boolean,
    timeoutMs = 10_000,
    namespace = NS,
  ): Promise<RedisEvent[]> {
    return until(
      what,
      () => {
        const events = this.events(redis, namespace);
        return ready(events) && events;
      },
      timeoutMs,
      { everyMs: 20 },
    );
  }

  events(redis: string, namespace = NS): RedisEvent[] {
    return (
      this.store.list('events', { namespace }) as Array<
        StoredObject & {
          involvedObject?: { name?: string };
          reason?: string;
          message?: string;
          type?: string;
          reportingInstance?: string;
        }
      >
    )
      .filter((e) => e.involvedObject?.name === redis)
      .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion))
      .map((e) => ({
        reason: e.reason ?? '',
        message: e.message ?? '',
        type: e.type ?? '',
        instance: e.reportingInstance ?? '',
      }));
  }

  /**
   * Whether every pod carries the leader's one annotation of the engine its node runs: a window
   * asserting that no pod is patched starts only after it, since it lands some time after the pods
   * answer.
   */
  enginesWritten(namespace = NS): boolean {
    return this.store
      .list('pods', { namespace })
      .every((p) => (p.metadata as { annotations?: Record<string, string> }).annotations?.[ENGINE_ANNOTATION]);
  }

  /** PATCH requests on pods since index `from` of the request log. */
  podPatches(from = 0): Array<{ path: string; client: string; status?: number | undefined }> {
    return this.api.requests.slice(from).filter((r) => r.method === 'PATCH' && r.path.includes('/pods/'));
  }

  /**
   * Watches every pod write of `redis` in store order and records each moment at which more than
   * one pod carried the master label. Call stop() (or it stops at close()).
   */
  watchMasters(redis: string, namespace = NS): { violations: string[]; maxSeen: number; stop(): void } {
    const roles = new Map<string, string | undefined>();
    const out = { violations: [] as string[], maxSeen: 0, stop: () => handle.stop() };
    const handle: WatchHandle = this.store.watch(
      'pods',
      { namespace, labelSelector: `app.kubernetes.io/instance=${redis}` },
      (ev) => {
        const p = ev.object as Pod;
        if (!p.metadata?.name) return;
        if (ev.type === 'DELETED') roles.delete(p.metadata.name);
        else roles.set(p.metadata.name, p.metadata.labels?.[ROLE_LABEL]);
        const masters = [...roles].filter(([, r]) => r === ROLE_MASTER).map(([n]) => n);
        out.maxSeen = Math.max(out.maxSeen, masters.length);
        if (masters.length > 1) out.violations.push(`rv ${p.metadata.resourceVersion}: ${masters.join(', ')}`);
      },
    );
    this.#cleanups.push(() => handle.stop());
    return out;
  }

  /** Starts a manager instance the way main.ts does (own token = identity, own Lease client). */
  async startInstance(o: InstanceOptions): Promise<Instance> {
    const logs: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const line of chunk.toString().split('\n')) if (line) logs.push(line);
        cb();
      },
    });
    const logger: Logger = pino({ level: 'debug', base: { instance: o.id } }, sink);
    const timing: ManagerTiming = { ...DEFAULT_TIMING, ...o.timing };
    const kube = new KubeClient(await this.api.kubeConfig(o.id), {
      identity: o.id,
      namespaces: o.namespaces ?? [],
      requestTimeoutMs: timing.kubeRequestTimeoutMs,
      informerRestartDelayMs: 200,
      logger,
    });
    const metrics = createSidecarMetrics();
    let manager: RedisManager | null = null;
    const settings = o.leader ?? TEST_LEADER;
    const elector = new LeaderElector({
      client: kube.leaseClient(LEASE_NS, LEASE_NAME, settings.requestTimeoutMs),
      identity: o.id,
      settings,
      logger,
      onStartedLeading: () => manager?.leadershipChanged(true),
      onStoppedLeading: () => manager?.leadershipChanged(false),
    });
    manager = new RedisManager({
      kube,
      leader: elector,
      logger,
      metrics,
      timing,
      redisLocalAddress: o.sourceIp,
      hooks: o.hooks,
      failurePolicy: o.failurePolicy,
      onObserved: o.onObserved,
    });
    const m = manager;
    let stopped = false;
    const instance: Instance = {
      id: o.id,
      kube,
      elector,
      manager: m,
      metrics,
      logs,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        await elector.stop();
        await m.stop();
        this.instances.splice(this.instances.indexOf(instance), 1);
      },
      crash: async () => {
        if (stopped) return;
        stopped = true;
        // The lease is left as it is: others take over only when it expires.
        await elector.stop({ release: false });
        await m.stop();
        this.instances.splice(this.instances.indexOf(instance), 1);
      },
    };
    this.instances.push(instance);
    elector.start();
    await m.start();
    return instance;
  }
}

export function runningStatus(ip: string, ready: boolean) {
  return {
    phase: 'Running',
    podIP: ip,
    podIPs: [{ ip }],
    conditions: [
      { type: 'Ready', status: ready ? 'True' : 'False' },
      { type: 'ContainersReady', status: ready ? 'True' : 'False' },
    ],
  };
}
