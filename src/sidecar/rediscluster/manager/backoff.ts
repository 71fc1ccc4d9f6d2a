// Failure episodes of the cluster worker's steps, keyed by what a step does and to whom: the
// Redis manager's policy (manager/failure-policy.ts) over string keys. Pure: time is `now`.
// Invariants: a temporary failure is retried at the next round the first time, then after a
// doubling back-off up to maxTemporaryBackoffMs; a permanent one (Redis refused the command
// itself) waits permanentBackoffMs; neither gives up. An episode is told when it starts and when
// it ends; a step no longer planned ends its episode.
import { DEFAULT_FAILURE_POLICY, classifyRedisFailure, type FailureClass, type FailurePolicyConfig } from '../../redis/manager/failure-policy.ts';
import type { RedisFailure } from '../../adapters/redis/types.ts';
import type { ClusterStep } from '../decide/types.ts';

export interface ClusterEpisode {
  key: string;
  failures: number;
  firstAt: number;
  retryAt: number;
  detail: string;
  class: FailureClass;
}

/** What a step does and to whom. */
export function clusterStepKey(step: ClusterStep): string {
  switch (step.kind) {
    case 'addslots':
      return `addslots/${step.pod}/${step.ranges.map((r) => r.join('-')).join(',')}`;
    case 'meet':
      return `meet/${step.pod}/${step.ip}`;
    case 'replicate':
      return `replicate/${step.pod}/${step.masterId}`;
    case 'failover':
      return `failover/${step.pod}/${step.failedId}`;
    case 'forget':
      return `forget/${step.id}`;
    case 'reset':
      return `reset/${step.pod}`;
    case 'move':
      return `move/${step.slot}/${step.from}/${step.to}`;
    case 'stable':
      return `stable/${step.slot}/${step.pods.join(',')}`;
  }
}

export function failureClass(error: { kind: string; message: string }): FailureClass {
  return classifyRedisFailure({ kind: error.kind as RedisFailure['kind'], message: error.message });
}

export class ClusterBackoff {
  readonly #config: FailurePolicyConfig;
  readonly #episodes = new Map<string, ClusterEpisode>();

  constructor(config: FailurePolicyConfig = DEFAULT_FAILURE_POLICY) {
    this.#config = config;
  }

  deferred(key: string, now: number): boolean {
    const e = this.#episodes.get(key);
    return e !== undefined && now < e.retryAt;
  }

  /** Returns the episode; `started` when this is its first failure. */
  failed(key: string, detail: string, cls: FailureClass, now: number): { episode: ClusterEpisode; started: boolean } {
    const known = this.#episodes.get(key);
    const failures = (known?.failures ?? 0) + 1;
    const backoff =
      cls === 'permanent'
        ? this.#config.permanentBackoffMs
        : failures === 1
          ? 0
          : Math.min(this.#config.maxTemporaryBackoffMs, this.#config.initialBackoffMs * 2 ** (failures - 2));
    const episode = { key, failures, firstAt: known?.firstAt ?? now, retryAt: now + backoff, detail, class: cls };
    this.#episodes.set(key, episode);
    return { episode, started: known === undefined };
  }

  succeeded(key: string): ClusterEpisode | null {
    const e = this.#episodes.get(key) ?? null;
    this.#episodes.delete(key);
    return e;
  }

  /** Ends the episodes of steps not planned any more; returns them. */
  retain(keys: ReadonlySet<string>): ClusterEpisode[] {
    const ended: ClusterEpisode[] = [];
    for (const [key, e] of this.#episodes) {
      if (keys.has(key)) continue;
      this.#episodes.delete(key);
      ended.push(e);
    }
    return ended;
  }

  reset(): void {
    this.#episodes.clear();
  }

  get open(): ClusterEpisode[] {
    return [...this.#episodes.values()];
  }
}
