// The writer of the manager tests: an application writing through the master Service, which
// routes to the pod labelled master (its podIP), as kube-proxy would.
// Invariant: the target follows EVERY pod write of the Redis (a store watch, not polling), and each
// change of the published master address is recorded with its time in `published`.
import { performance } from 'node:perf_hooks';
import type { WatchHandle } from '../../../k8s/api-server.ts';
import { AckedWriter } from '../../../support/acked-writer.ts';
import { NS, type Cluster } from './harness-cluster.ts';
import { redisClient } from './harness-redis.ts';

/**
 * An application writing through the master Service: SET then WAIT 1 on the pod labelled master,
 * read from the store's watch as kube-proxy would route.
 */
export class Writer extends AckedWriter {
  /** When the published master address changed, and to what. */
  readonly published: Array<{ at: number; ip: string | null }> = [];
  readonly cluster: Cluster;
  readonly redis: string;
  /** Shared with the target function handed to the base class (which cannot see `this` yet). */
  readonly #master: { ip: string | null };
  #watch: WatchHandle | null = null;

  constructor(cluster: Cluster, redis: string, options: { prefix?: string; waitTimeoutMs?: number } = {}) {
    const master: { ip: string | null } = { ip: null };
    super({
      target: () => (master.ip ? { ip: master.ip, via: master.ip } : null),
      connect: (ip) => redisClient(ip),
      ...options,
    });
    this.#master = master;
    this.cluster = cluster;
    this.redis = redis;
  }

  get masterIp(): string | null {
    return this.#master.ip;
  }

  override start(): this {
    this.#refresh();
    this.#watch = this.cluster.store.watch(
      'pods',
      { namespace: NS, labelSelector: `app.kubernetes.io/instance=${this.redis}` },
      () => this.#refresh(),
    );
    return super.start();
  }

  override async stop(): Promise<void> {
    this.#watch?.stop();
    await super.stop();
  }

  #refresh(): void {
    const ip = this.cluster.masterIp(this.redis);
    if (ip === this.#master.ip) return;
    this.#master.ip = ip;
    this.published.push({ at: performance.now(), ip });
    this.retarget();
  }
}
