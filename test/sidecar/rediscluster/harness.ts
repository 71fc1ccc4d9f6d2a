// Test harness for the REAL RedisCluster manager: a REAL kube-apiserver (test/k8s/api-server.ts:
// the project's CRDs, so redisclusters with its status and scale subresources as the CRD declares
// them, and the operator's RBAC: each instance is a ServiceAccount of the operator's namespace
// reaching the API through a fault proxy), real redis-server processes in cluster mode whose
// "pods" are Pod objects there (no kubelet runs: status.podIP = the server's loopback address,
// written as a kubelet would), and RedisClusterManager instances wired as main.ts wires them, each with
// its own identity, Lease client and Redis source address.
// Invariants: nothing here talks to anything but 127.0.0.0/8; every instance and server registers
// its own cleanup (t.after / close()); an instance's crash() leaves its Lease to expire; reads are
// synchronous (watch caches) and every write here resolves once they show it; one API server
// serves a whole test file, and each test leaves it as it found it (nothing in its namespace, no
// Lease), so tests do not see each other's objects.
import { Writable } from 'node:stream';
import { after, type TestContext } from 'node:test';
import { pino, type Logger } from 'pino';
import type { Registry } from 'prom-client';
import {
  REDIS_CLUSTER_KIND as CLUSTER_KIND,
  CLUSTER_NODE_ANNOTATION,
  REDIS_CLUSTER_PLURAL as CLUSTER_PLURAL,
  RESHARD_ANNOTATION,
  SHARD_LABEL,
  redisClusterPodSelectorLabels as clusterPodSelectorLabels,
  readClusterNodeRecord,
  readReshardRecord,
  type ClusterNodeRecord,
  type ReshardRecord,
} from '../../../src/api/rediscluster-names.ts';
import { GROUP, ROLE_LABEL, VERSION } from '../../../src/api/labels.ts';
import { DEFAULT_TIMING, type ManagerTiming } from '../../../src/sidecar/config.ts';
import { RedisClusterManager } from '../../../src/sidecar/rediscluster/manager/manager.ts';
import { createSidecarMetrics } from '../../../src/sidecar/metrics.ts';
import type { RedisClusterHooks } from '../../../src/sidecar/rediscluster/manager/types.ts';
import { KubeClient } from '../../../src/sidecar/adapters/kube/client.ts';
import { LeaderElector } from '../../../src/sidecar/adapters/kube/leader.ts';
import type { StoredObject } from '../../support/kube-client/objects.ts';
import { startApiServer, type ApiServer } from '../../k8s/api-server.ts';
import { until } from '../../support/until.ts';
import { OPERATOR_NAMESPACE } from '../../k8s/operator.ts';
import { runningStatus, TEST_LEADER } from '../redis/manager/harness-cluster.ts';
import { startRedis, TEST_OPERATOR_PASSWORD, TEST_PASSWORD, type RedisServer } from '../../support/redis-server.ts';

export const NS = 'cluster-test';
/** The operator's namespace: its Lease role (manifests/rbac.yaml) is granted there only. */
export const LEASE_NS = OPERATOR_NAMESPACE;
export const LEASE_NAME = 'redis-operator-sidecar';
/** Holds a deleted pod while the test plays its grace period (see terminatePod). */
const TERMINATING_FINALIZER = 'test.redis.example.com/terminating';

export interface Instance {
  id: string;
  manager: RedisClusterManager;
  elector: LeaderElector;
  registry: Registry;
  logs: string[];
  stop(): Promise<void>;
  /** Stops without releasing the Lease (another instance waits for it to expire). */
  crash(): Promise<void>;
}

export interface InstanceOptions {
  id: string;
  sourceIp?: string;
  timing?: Partial<ManagerTiming>;
  hooks?: RedisClusterHooks;
}

export type Pod = StoredObject & { status?: { podIP?: string } };

/**
 * The file's API server, shared by its tests (a start costs ~4 s): the first ClusterEnv starts it,
 * it closes after the file's last test, and each ClusterEnv leaves it as it found it.
 */
let shared: Promise<ApiServer> | undefined;
after(async () => {
  const api = await shared?.catch(() => undefined);
  await api?.close();
});

/** A 404 from a delete of something already gone is what the caller wanted. */
const unlessGone = (err: unknown) => {
  if ((err as { code?: number }).code !== 404) throw err;
};

export class ClusterEnv {
  readonly api: ApiServer;
  readonly instances: Instance[] = [];
  /** Servers by pod name (the one a pod's address points at now). */
  readonly servers = new Map<string, RedisServer>();

  /** Where this test's part of the shared server's request log begins. */
  readonly #firstRequest: number;

  private constructor(api: ApiServer) {
    this.api = api;
    this.#firstRequest = api.requests.length;
  }

  static async start(t: TestContext): Promise<ClusterEnv> {
    shared ??= startApiServer({ namespaces: [NS] });
    const env = new ClusterEnv(await shared);
    t.after(() => env.close());
    return env;
  }

  /** The requests the sidecars made since this ClusterEnv started, in arrival order. */
  requests(): ApiServer['requests'] {
    return this.api.requests.slice(this.#firstRequest);
  }

  get store() {
    return this.api.store;
  }

  /**
   * Stops the instances and removes what the test made (the next test of the file finds an empty
   * namespace and no Lease); then fails if the API server refused a sidecar a call (401/403): its
   * RBAC is the operator's own (manifests/rbac.yaml), so that is a finding, not noise. (A 403 a
   * test injects through api.faults counts too: none does yet.)
   */
  async close(): Promise<void> {
    for (const i of [...this.instances]) await i.stop().catch(() => undefined);
    this.api.faults.clear();
    // In parallel: each delete waits until the watch cache shows it.
    await Promise.all(
      this.store.list('pods', { namespace: NS }).map(async (p) => {
        if (p.metadata.finalizers?.length)
          await this.store
            .patch('pods', NS, p.metadata.name, { metadata: { finalizers: null } }, { type: 'merge' })
            .catch(unlessGone);
        if (this.pod(p.metadata.name)) await this.store.delete('pods', NS, p.metadata.name).catch(unlessGone);
      }),
    );
    await Promise.all(
      [CLUSTER_PLURAL, 'secrets', 'events'].flatMap((resource) =>
        this.store
          .list(resource, { namespace: NS })
          .map((o) => this.store.delete(resource, NS, o.metadata.name).catch(unlessGone)),
      ),
    );
    if (this.store.get('leases', LEASE_NS, LEASE_NAME))
      await this.store.delete('leases', LEASE_NS, LEASE_NAME).catch(unlessGone);
    const refused = this.requests().filter((r) => r.status === 401 || r.status === 403);
    if (refused.length)
      throw new Error(
        `the API server refused the sidecar ${refused.length} call(s): ${refused.map((r) => `${r.client} ${r.method} ${r.path}${r.query ? `?${r.query}` : ''} ${r.status}`).join('; ')}`,
      );
  }

  createCluster(name: string, spec: Record<string, unknown>): Promise<StoredObject> {
    return this.store.create(CLUSTER_PLURAL, {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: CLUSTER_KIND,
      metadata: { name, namespace: NS },
      spec,
    });
  }

  /** The operator user's Secret and the clients' one, with the passwords the test servers start with. */
  async createSecrets(name: string): Promise<void> {
    for (const [secret, value] of [
      [`${name}-auth`, TEST_PASSWORD],
      [`${name}-operator`, TEST_OPERATOR_PASSWORD],
    ] as const) {
      await this.store.create('secrets', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: secret, namespace: NS },
        type: 'Opaque',
        stringData: { password: value },
      });
    }
  }

  async patchSpec(name: string, spec: Record<string, unknown>): Promise<void> {
    await this.store.patch(CLUSTER_PLURAL, NS, name, { spec }, { type: 'merge' });
  }

  /** A pod `<name>-shard-<shard>-<ordinal>` at `ip`, Running and Ready. */
  async addPod(name: string, shard: number, ordinal: number, ip: string): Promise<Pod> {
    return (await this.store.create('pods', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: podName(name, shard, ordinal),
        namespace: NS,
        labels: { ...clusterPodSelectorLabels(name), [SHARD_LABEL]: String(shard) },
      },
      spec: { containers: [{ name: 'redis', image: 'redis:7.2' }] },
      status: runningStatus(ip, true),
    })) as Pod;
  }

  async deletePod(pod: string): Promise<void> {
    await this.store.delete('pods', NS, pod);
  }

  /**
   * Deletes a pod that takes its time to go, as a real one does (grace period): it stays, marked
   * for deletion, until the returned function lets it go. No kubelet runs here, so an unscheduled
   * pod would go at once: a finalizer of the test's holds it instead.
   */
  async terminatePod(pod: string): Promise<() => Promise<void>> {
    await this.store.patch('pods', NS, pod, { metadata: { finalizers: [TERMINATING_FINALIZER] } }, { type: 'merge' });
    await this.store.delete('pods', NS, pod);
    return () =>
      this.store.patch('pods', NS, pod, { metadata: { finalizers: null } }, { type: 'merge' }).then(() => undefined);
  }

  /**
   * What most scenarios start from: the Secrets, a RedisCluster of `shards` shards with one
   * replica each (downAfterMilliseconds 1000, failoverTimeout 3000) and its pods' redis-servers.
   * Returns the addresses, shard by shard (pod 0, pod 1). No sidecar yet.
   */
  async startShards(
    t: TestContext,
    name: string,
    shards: number,
    ip: (shard: number, ordinal: number) => string,
    extra: Record<string, string> = {},
  ): Promise<string[]> {
    await this.createSecrets(name);
    await this.createCluster(name, {
      master: { replicas: shards },
      replicas: 1,
      sentinel: { downAfterMilliseconds: 1000, failoverTimeout: 3000 },
    });
    const ips: string[] = [];
    for (let s = 0; s < shards; s++) {
      for (let o = 0; o < 2; o++) {
        ips.push(ip(s, o));
        await this.startNode(t, name, s, o, ip(s, o), extra);
      }
    }
    return ips;
  }

  /** Starts a cluster-mode redis-server at ip for the pod (and the pod itself). */
  async startNode(
    t: TestContext,
    name: string,
    shard: number,
    ordinal: number,
    ip: string,
    extra: Record<string, string> = {},
    nodeTimeoutMs = 1000,
  ): Promise<RedisServer> {
    const server = await startRedis(t, { ip, cluster: { nodeTimeoutMs }, extra });
    this.servers.set(podName(name, shard, ordinal), server);
    await this.addPod(name, shard, ordinal, ip);
    return server;
  }

  pod(name: string): Pod | undefined {
    return this.store.get('pods', NS, name) as Pod | undefined;
  }

  pods(name: string): Pod[] {
    return this.store.list('pods', { namespace: NS, labelSelector: `app.kubernetes.io/instance=${name}` }) as Pod[];
  }

  /** Each pod's role label and node record. */
  records(name: string): Map<string, { role: string | undefined; record: ClusterNodeRecord | null }> {
    return new Map(
      this.pods(name).map((p) => [
        p.metadata.name,
        {
          role: p.metadata.labels?.[ROLE_LABEL],
          record: readClusterNodeRecord(p.metadata.annotations?.[CLUSTER_NODE_ANNOTATION]),
        },
      ]),
    );
  }

  reshard(name: string): ReshardRecord | null {
    const c = this.store.get(CLUSTER_PLURAL, NS, name);
    return readReshardRecord(c?.metadata.annotations?.[RESHARD_ANNOTATION]);
  }

  /**
   * The Events once each reason in `want` shows at least `count` times: the sidecar writes Events
   * on their own, so the watch cache may show them a moment after what a test waited for.
   */
  async eventsWith(
    name: string,
    want: Record<string, number>,
    timeoutMs = 10_000,
  ): Promise<Array<{ reason: string; message: string; type: string }>> {
    const enough = () => {
      const events = this.events(name);
      return (
        Object.entries(want).every(([reason, count]) => events.filter((e) => e.reason === reason).length >= count) &&
        events
      );
    };
    return until(`Events ${JSON.stringify(want)} on ${name}`, enough, timeoutMs, {
      everyMs: 50,
      dump: () => JSON.stringify(this.events(name).map((e) => e.reason)),
    });
  }

  events(name: string): Array<{ reason: string; message: string; type: string }> {
    return (
      this.store.list('events', { namespace: NS }) as Array<
        StoredObject & {
          involvedObject?: { name?: string; kind?: string };
          reason?: string;
          message?: string;
          type?: string;
        }
      >
    )
      .filter((e) => e.involvedObject?.name === name && e.involvedObject.kind === CLUSTER_KIND)
      .sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion))
      .map((e) => ({ reason: e.reason ?? '', message: e.message ?? '', type: e.type ?? '' }));
  }

  /** For a timeout message: the reshard record, the Events and each instance's last log lines. */
  dump(name: string, lines = 30): string {
    const out = [
      `reshard: ${JSON.stringify(this.reshard(name))}`,
      `events: ${this.events(name)
        .map((e) => `${e.reason}: ${e.message}`)
        .join('\n  ')}`,
    ];
    for (const i of this.instances) out.push(`--- ${i.id}`, ...i.logs.slice(-lines));
    return out.join('\n');
  }

  /** A RedisClusterManager instance as main.ts wires it (one Lease for everything). */
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
      requestTimeoutMs: timing.kubeRequestTimeoutMs,
      informerRestartDelayMs: 200,
      logger,
    });
    const metrics = createSidecarMetrics();
    const registry = metrics.registry;
    let manager: RedisClusterManager | null = null;
    const elector = new LeaderElector({
      client: kube.leaseClient(LEASE_NS, LEASE_NAME, TEST_LEADER.requestTimeoutMs),
      identity: o.id,
      settings: TEST_LEADER,
      logger,
      onStartedLeading: () => manager?.leadershipChanged(true),
      onStoppedLeading: () => manager?.leadershipChanged(false),
    });
    manager = new RedisClusterManager({
      kube,
      leader: elector,
      logger,
      registry,
      status: metrics,
      timing,
      redisLocalAddress: o.sourceIp,
      hooks: o.hooks,
    });
    const m = manager;
    let stopped = false;
    const finish = async (release: boolean) => {
      if (stopped) return;
      stopped = true;
      await elector.stop({ release });
      await m.stop();
      this.instances.splice(this.instances.indexOf(instance), 1);
    };
    const instance: Instance = {
      id: o.id,
      manager: m,
      elector,
      registry,
      logs,
      stop: () => finish(true),
      crash: () => finish(false),
    };
    this.instances.push(instance);
    elector.start();
    await m.start();
    return instance;
  }
}

export function podName(name: string, shard: number, ordinal: number): string {
  return `${name}-shard-${shard}-${ordinal}`;
}
