// Probe scheduling for one Redis: one loop per pod (by UID), each probing its pod's Redis every intervalMs (read again
// each round: the acting instance probes faster than a standby) and folding the answer into the pod's track
// (decide/observe.ts). Invariants:
// - One loop and one track per pod UID: a pod recreated under the same name starts afresh, and a
//   pod that is gone has its loop stopped and its track dropped.
// - A probe that started before the one already folded is discarded (it would put stale facts
//   back); so is a probe of a pod whose loop has stopped.
// - A hung pod delays only its own loop: loops never wait for each other.
// - A change that matters (answering or not, role, master, link, loading) wakes the decide loop
//   instead of waiting for its next tick.
// - A loop's rest is cut (its sleep's signal aborted) when it is woken or stopped: a stopped
//   scheduler leaves no timer behind.
import { cuttableRest, type Sleep } from '../../core/sleep.ts';
import { track, type DecideConfig, type RedisTrack } from '../decide/index.ts';
import type { ProbeResult, RedisFacts } from '../../adapters/redis/index.ts';
import type { PodView } from './pods.ts';

export interface ProbeSchedulerOptions {
  /** Probes the pod's Redis at ip (as the operator's user, or as `default` on a node not adopted yet). */
  probe(uid: string, ip: string): Promise<ProbeResult>;
  /** Whether probing may happen at all now (a password is known, the worker runs). */
  active(): boolean;
  config(): Pick<DecideConfig, 'silentAfterSeconds' | 'offsetStallMs'>;
  changed(): void;
  intervalMs: number | (() => number);
  now(): number;
  /** The rests between probes; given a signal that aborts when the rest is cut (core/sleep.ts). */
  sleep: Sleep;
}

interface Loop {
  stopped: boolean;
  done: Promise<void>;
  /** Ends the loop's current sleep early (it then sleeps whatever is left of the interval read anew). */
  wake: (() => void) | null;
}

/** How soon a loop looks again while probing may not happen yet. */
const INACTIVE_RETRY_MS = 100;

function digest(facts: RedisFacts | null): string {
  if (!facts) return 'none';
  const r = facts.replication;
  return `${r.role}|${r.masterHost}|${r.masterLinkStatus}|${facts.loading}`;
}

export class ProbeScheduler {
  readonly #o: ProbeSchedulerOptions;
  readonly #tracks = new Map<string, RedisTrack>();
  readonly #foldedStart = new Map<string, number>();
  readonly #loops = new Map<string, Loop>();
  readonly #views = new Map<string, PodView>();

  constructor(options: ProbeSchedulerOptions) {
    this.#o = options;
  }

  track(uid: string): RedisTrack | undefined {
    return this.#tracks.get(uid);
  }

  get tracks(): Iterable<RedisTrack> {
    return this.#tracks.values();
  }

  /** Starts a loop for every pod not yet probed; stops those of pods gone. Returns the UIDs dropped. */
  sync(views: PodView[]): string[] {
    const uids = new Set(views.map((v) => v.uid));
    this.#views.clear();
    for (const v of views) this.#views.set(v.uid, v);
    const dropped: string[] = [];
    for (const [uid, loop] of this.#loops) {
      if (uids.has(uid)) continue;
      loop.stopped = true;
      loop.wake?.();
      this.#loops.delete(uid);
      this.#tracks.delete(uid);
      this.#foldedStart.delete(uid);
      dropped.push(uid);
    }
    for (const v of views) {
      if (this.#loops.has(v.uid)) continue;
      const loop: Loop = { stopped: false, done: Promise.resolve(), wake: null };
      loop.done = this.#run(v.uid, loop);
      this.#loops.set(v.uid, loop);
    }
    return dropped;
  }

  /** Probes these pods now (after a write to them), outside their loops. */
  async probeNow(uids: Iterable<string>): Promise<void> {
    await Promise.all([...uids].map((uid) => this.#probe(uid)));
  }

  /** The interval may have shrunk (the Redis was stirred): sleeping loops re-read it now. */
  hurry(): void {
    for (const l of this.#loops.values()) l.wake?.();
  }

  /** Stops every loop; resolves when they ended. */
  stop(): Promise<void> {
    const loops = [...this.#loops.values()];
    for (const l of loops) {
      l.stopped = true;
      l.wake?.();
    }
    return Promise.all(loops.map((l) => l.done)).then(() => undefined);
  }

  async #run(uid: string, loop: Loop): Promise<void> {
    while (!loop.stopped) {
      const started = this.#o.now();
      if (!this.#o.active()) {
        // Not a turn: the password is not known yet. Looking again soon, rather than a whole
        // interval later, lets the first probe follow the password at once.
        await this.#nap(loop, INACTIVE_RETRY_MS);
        continue;
      }
      await this.#probe(uid);
      // Woken early, the loop sleeps what is left of the interval as it reads now: a loop that
      // probed a moment ago never probes again sooner than the fast interval.
      for (;;) {
        if (loop.stopped) return;
        const interval = typeof this.#o.intervalMs === 'number' ? this.#o.intervalMs : this.#o.intervalMs();
        const left = interval - (this.#o.now() - started);
        if (left <= 0) break;
        if (!(await this.#nap(loop, left))) break;
      }
    }
  }

  /** Sleeps ms or until woken (the sleep cancelled); resolves true when woken early. */
  async #nap(loop: Loop, ms: number): Promise<boolean> {
    const rest = cuttableRest(this.#o.sleep, ms);
    loop.wake = rest.cut;
    try {
      return await rest.promise;
    } finally {
      if (loop.wake === rest.cut) loop.wake = null;
    }
  }

  async #probe(uid: string): Promise<void> {
    const view = this.#views.get(uid);
    // After stop() the pools are closed: a late probe must not open a new connection.
    if (!view?.ip || !this.#o.active()) return;
    const ip = view.ip;
    const started = this.#o.now();
    const result = await this.#o.probe(uid, ip);
    this.#fold(uid, ip, result, started);
  }

  #fold(uid: string, ip: string, result: ProbeResult, started: number): void {
    if (!this.#loops.has(uid)) return;
    const last = this.#foldedStart.get(uid);
    if (last !== undefined && started < last) return;
    this.#foldedStart.set(uid, started);
    const prev = this.#tracks.get(uid);
    const next = track(prev, ip, result, this.#o.now(), this.#o.config());
    this.#tracks.set(uid, next);
    const changed =
      !prev ||
      prev.ip !== ip ||
      (prev.lastError === null) !== (next.lastError === null) ||
      digest(prev.facts) !== digest(next.facts);
    if (changed) this.#o.changed();
  }
}
