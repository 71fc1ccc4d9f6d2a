// The RedisCluster manager: watches RedisCluster resources and their pods (never a Redis pod:
// its pod informer selects app.kubernetes.io/name=redis-cluster) and the operator's StatefulSets
// (their update revisions drive rollouts) in the watched namespaces, and
// runs one RedisClusterWorker per RedisCluster. RedisClusters are divided among sidecar instances by
// the same shard Leases as Redis (shardOf(namespace, name)); only the holder of one acts on it.
// Invariants: watched, never polled (informers only); a worker exists exactly while its
// RedisCluster does (a new uid under the same name gets a fresh worker), unless it is refused its
// names (an older Redis makes children with the same ones: core/name-refusal.ts), when it has no
// worker and no status series; events are routed to the worker they concern and never wait on it.
import type { KubernetesObject, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { INSTANCE_LABEL } from '../../../api/labels.ts';
import type { RedisStatus } from '../../../api/schema.ts';
import { statusSeries } from '../../core/decide/status-series.ts';
import type { ManagerTiming } from '../../config.ts';
import { isNotFound, type MultiInformer, type RedisClusterObject } from '../../adapters/kube/client.ts';
import type { ShardedLeader } from '../../adapters/kube/shard-leadership.ts';
import type { FailurePolicyConfig } from '../../core/failure-policy.ts';
import { NameRefusals, parentFacts } from '../../core/name-refusal.ts';
import { REDIS_CLUSTER_KIND } from '../../../api/rediscluster-names.ts';
import type { ParentFacts } from '../../../api/name-conflict.ts';
import type { SidecarMetrics } from '../../metrics.ts';
import { createClusterMetrics, type ClusterMetrics } from '../metrics.ts';
import type { RedisClusterHooks, ClusterKube, LeaderView } from './types.ts';
import { RedisClusterWorker } from './worker.ts';

type Item = RedisClusterObject & KubernetesObject;

export interface RedisClusterManagerOptions {
  kube: ClusterKube;
  leader: LeaderView | ShardedLeader;
  logger: Logger;
  /** The sidecar's registry (its metrics are added there). */
  registry: Registry;
  /**
   * The sidecar's status series and failover counter, shared with Redis: a RedisCluster's are
   * labelled redis=<its name>, what its alerts read (NotRunning, FrequentFailovers, BackupFailed,
   * BackupTooOld in hook/rediscluster/monitoring/rules.ts).
   */
  status?: Pick<SidecarMetrics, 'observeStatus' | 'forgetStatus' | 'failovers'> | undefined;
  timing: ManagerTiming;
  redisLocalAddress?: string | undefined;
  hooks?: RedisClusterHooks | undefined;
  failurePolicy?: FailurePolicyConfig | undefined;
  /** The Redises of a namespace (their manager's informer): an older one of a colliding name refuses a RedisCluster. */
  rivals?: ((namespace: string) => ParentFacts[]) | undefined;
  /** A RedisCluster went away: a Redis it refused may be managed now (RedisManager.recheckRefused). */
  onRemoved?: ((namespace: string) => void) | undefined;
}

const key = (namespace: string, name: string) => `${namespace}/${name}`;
const sharded = (l: LeaderView | ShardedLeader): l is ShardedLeader => 'isLeaderOf' in l;

export class RedisClusterManager {
  readonly #o: RedisClusterManagerOptions;
  readonly #log: Logger;
  readonly #metrics: ClusterMetrics;
  readonly #workers = new Map<string, { uid: string | undefined; shard: number; worker: RedisClusterWorker }>();
  #clusters: MultiInformer<Item> | null = null;
  #pods: MultiInformer<V1Pod> | null = null;
  #sets: MultiInformer<V1StatefulSet> | null = null;
  #synced = false;
  #stopping = false;

  readonly #names: NameRefusals;

  constructor(options: RedisClusterManagerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ module: 'cluster-manager' });
    this.#metrics = createClusterMetrics(options.registry, options.status);
    this.#names = new NameRefusals({
      kind: REDIS_CLUSTER_KIND,
      kube: options.kube,
      logger: options.logger,
      rivals: options.rivals,
    });
  }

  /** The RedisClusters of a namespace as the informer has them: what the Redis manager weighs its own against. */
  parentsIn(namespace: string): ParentFacts[] {
    return (this.#clusters?.list(namespace) ?? []).map((c) => parentFacts(REDIS_CLUSTER_KIND, c.metadata ?? {}));
  }

  /** Refused its names (core/name-refusal.ts): no worker runs for it. */
  refused(namespace: string, name: string): boolean {
    return this.#names.isRefused({ namespace, name });
  }

  /** A Redis went away: the RedisClusters of its namespace refused their names are judged again. */
  recheckRefused(namespace: string): void {
    for (const c of this.#clusters?.list(namespace) ?? [])
      if (c.metadata?.name && this.refused(namespace, c.metadata.name)) this.#upsert(c);
  }

  get ready(): boolean {
    return this.#synced && !this.#stopping;
  }

  worker(namespace: string, name: string): RedisClusterWorker | undefined {
    return this.#workers.get(key(namespace, name))?.worker;
  }

  async start(): Promise<void> {
    if (this.#clusters) return;
    const pods = this.#o.kube.clusterPodInformer();
    const clusters = this.#o.kube.redisClusterInformer();
    const sets = this.#o.kube.statefulSetInformer?.() ?? null;
    this.#pods = pods;
    this.#sets = sets;
    this.#clusters = clusters;
    const onPod = (p: V1Pod | V1StatefulSet) => {
      const ns = p.metadata?.namespace;
      const name = p.metadata?.labels?.[INSTANCE_LABEL];
      if (ns && name) this.#workers.get(key(ns, name))?.worker.wake();
    };
    for (const verb of ['add', 'update', 'delete'] as const) {
      pods.on(verb, onPod);
      sets?.on(verb, onPod);
    }
    clusters.on('add', (c) => this.#upsert(c));
    clusters.on('update', (c) => this.#upsert(c));
    clusters.on('delete', (c) => void this.#remove(c));
    let told = false;
    clusters.onError((err) => {
      if (told || !isNotFound(err)) return;
      told = true;
      this.#log.warn('the RedisCluster CRD is not installed: no RedisCluster is managed (listed again every 30 s)');
    });
    await pods.start();
    await sets?.start();
    await clusters.start();
    this.#synced = true;
    this.#log.info({ clusters: this.#workers.size }, 'watching RedisCluster resources and their pods');
  }

  /** Leadership changed (of one shard, or of the single Lease): the workers concerned plan now. */
  leadershipChanged(_leading: boolean, shard?: number): void {
    this.#names.leadershipChanged();
    for (const w of this.#workers.values()) if (shard === undefined || w.shard === shard) w.worker.wake();
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.allSettled([this.#pods?.stop(), this.#clusters?.stop(), this.#sets?.stop()]);
    const workers = [...this.#workers.values()];
    this.#workers.clear();
    await Promise.allSettled(workers.map((w) => w.worker.stop()));
  }

  #upsert(c: Item): void {
    if (this.#stopping) return;
    const ns = c.metadata?.namespace;
    const name = c.metadata?.name;
    if (!ns || !name) return;
    const k = key(ns, name);
    const l = this.#o.leader;
    const shard = sharded(l) ? l.shardOf(ns, name) : 0;
    const leader = sharded(l) ? { isLeader: () => l.isLeaderOf(shard) } : l;
    const existing = this.#workers.get(k);
    if (this.#names.check({ namespace: ns, name, uid: c.metadata?.uid }, c.metadata ?? {}, c.status, leader)) {
      if (existing) {
        this.#workers.delete(k);
        void existing.worker.stop();
      }
      return;
    }
    // Its status has the shape of a Redis's where the series look (phase, conditions, backup).
    this.#o.status?.observeStatus(ns, name, statusSeries(c.status as RedisStatus | undefined));
    if (existing && existing.uid === c.metadata?.uid) {
      existing.worker.update(c);
      return;
    }
    if (existing) {
      this.#workers.delete(k);
      void existing.worker.stop();
    }
    const worker = new RedisClusterWorker({
      namespace: ns,
      name,
      kube: this.#o.kube,
      leader,
      logger: this.#o.logger,
      metrics: this.#metrics,
      timing: this.#o.timing,
      pods: () => this.#pods?.list(ns).filter((p) => p.metadata?.labels?.[INSTANCE_LABEL] === name) ?? [],
      statefulSets: () => this.#sets?.list(ns) ?? [],
      redisLocalAddress: this.#o.redisLocalAddress,
      hooks: this.#o.hooks,
      failurePolicy: this.#o.failurePolicy,
    });
    this.#workers.set(k, { uid: c.metadata?.uid, shard, worker });
    worker.update(c);
    worker.start();
    this.#log.info({ namespace: ns, name }, 'managing RedisCluster');
  }

  async #remove(c: Item): Promise<void> {
    const ns = c.metadata?.namespace;
    const name = c.metadata?.name;
    if (!ns || !name) return;
    const k = key(ns, name);
    this.#names.forget({ namespace: ns, name, uid: c.metadata?.uid });
    this.#o.onRemoved?.(ns);
    const existing = this.#workers.get(k);
    if (!existing || (c.metadata?.uid && existing.uid !== c.metadata.uid)) return;
    this.#workers.delete(k);
    this.#log.info({ namespace: ns, name }, 'RedisCluster deleted: no longer managed');
    await existing.worker.stop();
    this.#metrics.forget(ns, name);
    this.#o.status?.forgetStatus(ns, name);
    this.#o.status?.failovers.remove({ namespace: ns, redis: name });
  }
}
