// The wait, after each batch of a slot move, for the target's replicas to have what the target
// has (mover.ts). A WAIT on the sidecar's own connection would count nothing, as that connection
// wrote nothing: the keys reach the target over the source's MIGRATE connection. So the target's
// replication offset is read after the batch, and each replica's processed offset polled until it
// is there or WAIT_MS passed.
// Invariants:
// - A replica that misses the deadline is not waited for again by this wait (one per group) while
//   another one keeps up: a dead replica costs one deadline, not one per batch.
// - A target that does not answer its offset is not waited for: the next command fails anyway.
import { performance } from 'node:perf_hooks';
import type { ClusterAdapter } from '../../adapters/redis/rediscluster.ts';

export const WAIT_MS = 1000;

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class ReplicaWait {
  readonly #redis: ClusterAdapter;
  readonly #target: string;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  #awaited: string[];

  constructor(
    redis: ClusterAdapter,
    target: string,
    replicas: readonly string[],
    clock: { now?(): number; sleep?(ms: number): Promise<void> },
  ) {
    this.#redis = redis;
    this.#target = target;
    this.#awaited = [...replicas];
    this.#now = clock.now ?? (() => performance.now());
    this.#sleep = clock.sleep ?? pause;
  }

  async caughtUp(): Promise<void> {
    if (this.#awaited.length === 0) return;
    const at = await this.#redis.replicationOffset(this.#target);
    if (!at.ok) return;
    const deadline = this.#now() + WAIT_MS;
    let behind = this.#awaited;
    for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
      const offsets = await Promise.all(behind.map((ip) => this.#redis.replicationOffset(ip)));
      behind = behind.filter((_, i) => {
        const o = offsets[i]!;
        return !o.ok || o.value < at.value;
      });
      if (behind.length === 0) return;
      if (this.#now() >= deadline) break;
      await this.#sleep(delay);
    }
    const kept = this.#awaited.filter((ip) => !behind.includes(ip));
    if (kept.length > 0) this.#awaited = kept;
  }
}
