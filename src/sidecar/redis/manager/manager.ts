// The replication manager: watches Redis resources, their pods and StatefulSets (all namespaces, or the
// configured ones) and runs one RedisWorker per Redis. It routes informer events to the worker
// they concern and never waits on a worker, so one Redis cannot stall another.
// Invariants: a worker exists exactly while its Redis exists (a Redis recreated under the same
// name, with a new UID, gets a fresh worker); only the leader acts (the workers check
// leader.isLeader() before every write; leadership changes only wake them). With a sharded
// leadership, "the leader" is per Redis: the holder of its shard's Lease. A Redis refused its
// names (an older RedisCluster makes children with the same ones: core/name-refusal.ts) gets no
// worker and no status series.
import type { KubernetesObject, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { INSTANCE_LABEL } from '../../../api/labels.ts';
import type { RedisObject } from '../../../api/schema.ts';
import type { ManagerTiming } from '../../config.ts';
import type { KubeClient, MultiInformer } from '../../adapters/kube/client.ts';
import type { ShardedLeader } from '../../adapters/kube/shard-leadership.ts';
import { statusSeries } from '../../core/decide/status-series.ts';
import type { SidecarMetrics } from '../../metrics.ts';
import type { FailurePolicyConfig } from '../../core/failure-policy.ts';
import { NameRefusals, parentFacts } from '../../core/name-refusal.ts';
import type { ParentFacts } from '../../../api/name-conflict.ts';
import { RedisWorker, type KubeWriter, type LeaderView, type RedisHooks } from './worker.ts';
import { podChangeKey } from './pods.ts';

type RedisItem = RedisObject & KubernetesObject;

export interface RedisManagerOptions {
  /** statefulSetInformer is optional: without it, rollouts never start (every revision is unknown). */
  kube: Pick<KubeClient, 'redisInformer' | 'podInformer'> &
    Partial<Pick<KubeClient, 'statefulSetInformer'>> &
    KubeWriter;
  /** One Lease for every Redis, or one per shard. */
  leader: LeaderView | ShardedLeader;
  logger: Logger;
  metrics: SidecarMetrics;
  timing: ManagerTiming;
  redisLocalAddress?: string | undefined;
  hooks?: RedisHooks | undefined;
  /** Back-off of failing steps (default DEFAULT_FAILURE_POLICY). */
  failurePolicy?: FailurePolicyConfig | undefined;
  /** The RedisClusters of a namespace (their manager's informer): an older one of a colliding name refuses a Redis. */
  rivals?: ((namespace: string) => ParentFacts[]) | undefined;
  /** A Redis went away: a RedisCluster it refused may be managed now (RedisClusterManager.recheckRefused). */
  onRemoved?: ((namespace: string) => void) | undefined;
  /** Any Redis or pod event, after the indexes took it in (the Sentinel endpoint's feed rebuilds its view). */
  onObserved?: (() => void) | undefined;
}

const key = (namespace: string, name: string) => `${namespace}/${name}`;

const sharded = (l: LeaderView | ShardedLeader): l is ShardedLeader => 'isLeaderOf' in l;

export class RedisManager {
  readonly #o: RedisManagerOptions;
  readonly #log: Logger;
  readonly #workers = new Map<string, { uid: string | undefined; shard: number; worker: RedisWorker }>();
  /**
   * The pods of the informer by namespace/instance label, then UID: each worker reads its own
   * three pods instead of filtering every pod of the namespace on every round (with 200 Redis in
   * one namespace that filter was an eighth of a sidecar's CPU).
   */
  readonly #podsOf = new Map<string, Map<string, V1Pod>>();
  readonly #podKey = new Map<string, string>();
  #redises: MultiInformer<RedisItem> | null = null;
  #pods: MultiInformer<V1Pod> | null = null;
  #sets: MultiInformer<V1StatefulSet> | null = null;
  #started = false;
  #synced = false;
  #stopping = false;

  readonly #names: NameRefusals;

  constructor(options: RedisManagerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ module: 'manager' });
    this.#names = new NameRefusals({
      kind: 'Redis',
      kube: options.kube,
      logger: options.logger,
      rivals: options.rivals,
    });
  }

  /** The Redises of a namespace as the informer has them: what the RedisCluster manager weighs its own against. */
  parentsIn(namespace: string): ParentFacts[] {
    return (this.#redises?.list(namespace) ?? []).map((r) => parentFacts('Redis', r.metadata ?? {}));
  }

  /** Every Redis the informer holds, with its pods: what this instance's Sentinel endpoint answers from. */
  observed(): Array<{ redis: RedisItem; pods: V1Pod[] }> {
    return (this.#redises?.list() ?? []).map((redis) => ({
      redis,
      pods: [...(this.#podsOf.get(key(redis.metadata.namespace ?? '', redis.metadata.name))?.values() ?? [])],
    }));
  }

  /** Refused its names (core/name-refusal.ts): no worker runs for it. */
  refused(namespace: string, name: string): boolean {
    return this.#names.isRefused({ namespace, name });
  }

  /** A RedisCluster went away: the Redises of its namespace refused their names are judged again. */
  recheckRefused(namespace: string): void {
    for (const r of this.#redises?.list(namespace) ?? [])
      if (r.metadata?.name && this.refused(namespace, r.metadata.name)) this.#upsert(r);
  }

  /** True once both informers have listed (their caches are usable) and until stop(). */
  get ready(): boolean {
    return this.#synced && !this.#stopping;
  }

  /** Starts the informers and a worker per Redis. Resolves once both informers have listed. */
  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    const pods = this.#o.kube.podInformer();
    const redises = this.#o.kube.redisInformer();
    this.#pods = pods;
    this.#redises = redises;
    const sets = this.#o.kube.statefulSetInformer?.() ?? null;
    this.#sets = sets;
    const onChild = (o: V1Pod | V1StatefulSet) => {
      const ns = o.metadata?.namespace;
      const name = o.metadata?.labels?.[INSTANCE_LABEL];
      if (ns && name) this.#workers.get(key(ns, name))?.worker.wake();
    };
    // A pod update that changes nothing a decision reads (podChangeKey) wakes nobody.
    const seen = new Map<string, string>();
    const onPod = (verb: 'add' | 'update' | 'delete') => (p: V1Pod) => {
      const uid = p.metadata?.uid ?? '';
      const k = podChangeKey(p);
      const same = verb === 'update' && seen.get(uid) === k;
      if (verb === 'delete') seen.delete(uid);
      else seen.set(uid, k);
      if (!same) onChild(p);
    };
    // Registered before onChild: a woken worker finds the pod already indexed.
    pods.on('add', (p) => this.#indexPod(p, false));
    pods.on('update', (p) => this.#indexPod(p, false));
    pods.on('delete', (p) => this.#indexPod(p, true));
    for (const verb of ['add', 'update', 'delete'] as const) {
      pods.on(verb, onPod(verb));
      sets?.on(verb, onChild);
    }
    redises.on('add', (r) => this.#upsert(r));
    redises.on('update', (r) => this.#upsert(r));
    redises.on('delete', (r) => void this.#remove(r));
    const observed = () => this.#o.onObserved?.();
    for (const verb of ['add', 'update', 'delete'] as const) {
      pods.on(verb, observed);
      redises.on(verb, observed);
    }
    // Pods first: a worker created from the Redis list then sees its pods at once.
    await pods.start();
    await sets?.start();
    await redises.start();
    this.#synced = true;
    this.#log.info({ redises: this.#workers.size }, 'watching Redis resources and their pods');
  }

  /**
   * Leadership changed (of one shard, or of the single Lease when shard is undefined): its workers
   * plan again now (a new leader finishes what is half done).
   */
  leadershipChanged(leading: boolean, shard?: number): void {
    const l = this.#o.leader;
    const held = sharded(l) ? l.held().length : leading ? 1 : 0;
    this.#names.leadershipChanged();
    this.#o.metrics.leader.set(held > 0 ? 1 : 0);
    this.#o.metrics.shardsHeld.set(held);
    for (const w of this.#workers.values()) {
      if (shard !== undefined && w.shard !== shard) continue;
      if (leading) w.worker.failures.reset();
      w.worker.wake();
    }
  }

  worker(namespace: string, name: string): RedisWorker | undefined {
    return this.#workers.get(key(namespace, name))?.worker;
  }

  get workers(): RedisWorker[] {
    return [...this.#workers.values()].map((w) => w.worker);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.allSettled([this.#pods?.stop(), this.#sets?.stop(), this.#redises?.stop()]);
    const workers = [...this.#workers.values()];
    this.#workers.clear();
    await Promise.allSettled(workers.map((w) => w.worker.stop()));
  }

  #indexPod(pod: V1Pod, deleted: boolean): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const before = this.#podKey.get(uid);
    const ns = pod.metadata?.namespace;
    const instance = pod.metadata?.labels?.[INSTANCE_LABEL];
    const after = !deleted && ns && instance ? key(ns, instance) : undefined;
    if (before !== undefined && before !== after) {
      const set = this.#podsOf.get(before);
      set?.delete(uid);
      if (set?.size === 0) this.#podsOf.delete(before);
    }
    if (after === undefined) {
      this.#podKey.delete(uid);
      return;
    }
    this.#podKey.set(uid, after);
    let set = this.#podsOf.get(after);
    if (!set) this.#podsOf.set(after, (set = new Map<string, V1Pod>()));
    set.set(uid, pod);
  }

  #upsert(r: RedisItem): void {
    if (this.#stopping) return;
    const ns = r.metadata?.namespace;
    const name = r.metadata?.name;
    if (!ns || !name) return;
    const k = key(ns, name);
    const l = this.#o.leader;
    const shard = sharded(l) ? l.shardOf(ns, name) : 0;
    const leader = sharded(l) ? { isLeader: () => l.isLeaderOf(shard) } : l;
    const existing = this.#workers.get(k);
    if (this.#names.check({ namespace: ns, name, uid: r.metadata.uid }, r.metadata, r.status, leader)) {
      if (existing) {
        this.#workers.delete(k);
        void existing.worker.stop();
      }
      return;
    }
    this.#o.metrics.observeStatus(ns, name, statusSeries(r.status));
    if (existing && existing.uid !== r.metadata.uid) {
      // Same name, new object: the old worker's memory (tracks, events) is about something else.
      this.#workers.delete(k);
      void existing.worker.stop();
    } else if (existing) {
      existing.worker.update(r);
      return;
    }
    const worker = new RedisWorker({
      namespace: ns,
      name,
      kube: this.#o.kube,
      leader,
      logger: this.#o.logger,
      metrics: this.#o.metrics,
      timing: this.#o.timing,
      pods: () => [...(this.#podsOf.get(k)?.values() ?? [])],
      statefulSets: () => this.#sets?.list(ns) ?? [],
      redisLocalAddress: this.#o.redisLocalAddress,
      hooks: this.#o.hooks,
      failurePolicy: this.#o.failurePolicy,
    });
    this.#workers.set(k, { uid: r.metadata.uid, shard, worker });
    worker.update(r);
    worker.start();
    this.#log.info({ namespace: ns, name }, 'managing Redis');
  }

  async #remove(r: RedisItem): Promise<void> {
    const ns = r.metadata?.namespace;
    const name = r.metadata?.name;
    if (!ns || !name) return;
    const k = key(ns, name);
    this.#names.forget({ namespace: ns, name, uid: r.metadata.uid });
    this.#o.onRemoved?.(ns);
    const existing = this.#workers.get(k);
    if (!existing || (r.metadata.uid && existing.uid !== r.metadata.uid)) return;
    this.#workers.delete(k);
    this.#o.metrics.forgetStatus(ns, name);
    this.#log.info({ namespace: ns, name }, 'Redis deleted: no longer managed');
    await existing.worker.stop();
  }
}
