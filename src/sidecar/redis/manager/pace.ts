// How closely one Redis is watched: its pods' probes at the fast rate while something stirred it
// (or a probe fails), at the idle rate once it is at rest (schedule.ts atRest), and when its next
// round is due (schedule.ts nextRoundInMs).
// Invariants: a stir of a Redis at rest moves its probe loops to the fast rate at once (hurry),
// not at their next idle turn; the next round is never later than the tick of the current rate.
import type { ManagerTiming } from '../../config.ts';
import type { DecideConfig, RedisTrack } from '../decide/index.ts';
import { atRest, nextRoundInMs } from './schedule.ts';

export interface RedisPaceOptions {
  now: () => number;
  timing: Pick<ManagerTiming, 'idleProbeIntervalMs' | 'probeIntervalMs' | 'tickIntervalMs'>;
  /** The probe tracks of the Redis's pods. */
  tracks: () => Iterable<RedisTrack>;
  /** Moves the probe loops to the current rate now. */
  hurry: () => void;
}

export class RedisPace {
  readonly #o: RedisPaceOptions;
  /** Last time something stirred this Redis. */
  #stirredAt = -Infinity;

  constructor(options: RedisPaceOptions) {
    this.#o = options;
  }

  idle(): boolean {
    return atRest(this.#o.now(), this.#stirredAt, this.#o.tracks()).idle;
  }

  /** Something changed, or the operator is about to write: the fast rate from now on. */
  stir(): void {
    const wasIdle = this.idle();
    this.#stirredAt = this.#o.now();
    if (wasIdle) this.#o.hurry();
  }

  probeIntervalMs(): number {
    return this.idle() ? this.#o.timing.idleProbeIntervalMs : this.#o.timing.probeIntervalMs;
  }

  /** Until the next round (config null: an invalid spec, no decision thresholds). */
  restMs(config: DecideConfig | null, retryAts: Iterable<number>): number {
    const tick = this.idle() ? this.#o.timing.idleProbeIntervalMs : this.#o.timing.tickIntervalMs;
    return nextRoundInMs(this.#o.now(), tick, config, this.#o.tracks(), retryAts);
  }
}
