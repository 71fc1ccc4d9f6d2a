// The reshard record on the RedisCluster (annotation redis.example.com/reshard) and its Events:
// Running with moved/total progress, then Done, or Refused with the reason.
// Invariants:
// - Running is written when a reshard starts and then at most every PROGRESS_EVERY_MS; Done and
//   Refused at once. A Refused record is written once per (from, to): a refused count costs
//   no API write and no Event per round, even though its reason carries memory figures that
//   move every round, and even while our own write has not come back through the informer.
// - An instance that takes over a reshard another one started continues its record (same
//   target: the total is kept, progress is what is left to move), so progress never goes back.
// - No slot moves before the Running record of its target is written (decided() answers whether
//   moves may go), and a new episode's record is written against the RedisCluster version the
//   decision was made from (a spec changed since: 409, nothing moves, the next round decides
//   again). The hook removes a leaving shard only once the record says Done for the count it
//   wants, so a record always shows a reshard that may have moved slots.
// - Balanced with no record Done for that count: Done is written (once, no Event), so that a
//   scale-down whose shards never received slots still lets their StatefulSets go.
import type { Logger } from 'pino';
import {
  RESHARD_ANNOTATION,
  readReshardRecord,
  reshardRecord,
  type ReshardRecord,
} from '../../../api/rediscluster-names.ts';
import { kubeFailure, type RedisRef } from '../../adapters/kube/client.ts';
import type { ReshardDecision } from '../decide/reshard.ts';
import type { ClusterKube, EventToSend } from './types.ts';

export const PROGRESS_EVERY_MS = 3000;

interface Episode {
  from: number;
  to: number;
  total: number;
  moved: number;
  startedAt: number;
  writtenAt: number;
  /** The last wait reason written, '' while moving. */
  why: string;
}

export interface ReshardRecorderOptions {
  ref: RedisRef;
  kube: Pick<ClusterKube, 'patchClusterAnnotations'>;
  log: Logger;
  event(e: EventToSend): void;
  /** Monotonic ms. */
  now(): number;
  /** Wall clock ms (the record's `at`). */
  wallNow(): number;
}

export class ReshardRecorder {
  readonly #o: ReshardRecorderOptions;
  #annotation: string | undefined;
  #resourceVersion: string | undefined;
  #episode: Episode | null = null;
  /** The refusal this instance wrote last, `from->to`; cleared when slots move or the count is met. */
  #refused = '';
  /** The count this instance last wrote a quiet Done for (the informer may not show it yet). */
  #doneTo: number | null = null;
  /** The wait reason this instance last wrote into another instance's Running record. */
  #waiting = '';

  constructor(options: ReshardRecorderOptions) {
    this.#o = options;
  }

  /** The annotation as the RedisCluster has it now, and the object's resourceVersion. */
  observe(annotation: string | undefined, resourceVersion?: string): void {
    this.#annotation = annotation;
    this.#resourceVersion = resourceVersion;
  }

  get running(): boolean {
    return this.#episode !== null;
  }

  /** The leader changed hands: start from the record, not from this instance's old memory. */
  forget(): void {
    this.#episode = null;
    this.#waiting = '';
  }

  /** Records the decision; for a move, answers whether its Running record is in place (moves may go). */
  async decided(d: ReshardDecision): Promise<boolean> {
    const current = readReshardRecord(this.#annotation);
    if (d.kind !== 'wait') this.#waiting = '';
    if (d.kind === 'move' || d.kind === 'balanced') this.#refused = '';
    if (d.kind === 'move') this.#doneTo = null;
    if (d.kind === 'wait') {
      // A running reshard that waits says why in its record (status.resharding shows it), once per reason.
      const e = this.#episode;
      if (e && e.to === d.to && e.why !== d.reason) {
        e.why = d.reason;
        this.#o.log.info({ from: e.from, to: e.to, reason: d.reason }, 'reshard waiting');
        await this.#write('Running', `waiting: ${d.reason}`);
      } else if (
        !e &&
        current?.state === 'Running' &&
        current.to === d.to &&
        current.why !== `waiting: ${d.reason}` &&
        this.#waiting !== d.reason
      ) {
        // A reshard another instance started, waiting here before this one moved anything: said
        // too (CI once saw one wait here for two minutes with no word in the log or the record).
        this.#waiting = d.reason;
        this.#o.log.info(
          { from: current.from, to: d.to, reason: d.reason },
          'reshard another instance started is waiting',
        );
        await this.#patch(
          reshardRecord({ ...current, at: new Date(this.#o.wallNow()).toISOString(), why: `waiting: ${d.reason}` }),
        );
      }
      return false;
    }
    if (d.kind === 'move') {
      if (this.#episode && this.#episode.to === d.to) {
        if (this.#episode.why !== '') {
          this.#episode.why = '';
          await this.#write('Running', '');
        }
        return true;
      }
      const resumed = current?.state === 'Running' && current.to === d.to;
      const total = resumed ? Math.max(current.total, current.moved + d.moves.length) : d.moves.length;
      this.#episode = {
        from: resumed ? current.from : d.from,
        to: d.to,
        total,
        moved: total - d.moves.length,
        startedAt: this.#o.now(),
        writtenAt: -Infinity,
        why: '',
      };
      if (!(await this.#write('Running', '', this.#resourceVersion))) {
        this.#episode = null;
        return false;
      }
      if (!resumed)
        this.#o.event({
          type: 'Normal',
          reason: 'ReshardStarted',
          message: `resharding ${d.from} -> ${d.to} shards: ${d.reason}`,
        });
      else
        this.#o.log.info(
          { from: current.from, to: d.to, left: d.moves.length },
          'resuming a reshard another instance started',
        );
      return true;
    }
    if (d.kind === 'balanced') {
      // An episode towards another count (the spec went back before it moved anything) is over.
      const e = this.#episode?.to === d.to ? this.#episode : null;
      this.#episode = e;
      if (!e && current?.state !== 'Running') {
        if ((current?.state !== 'Done' || current.to !== d.to) && this.#doneTo !== d.to) {
          const record: ReshardRecord = {
            from: d.from,
            to: d.to,
            state: 'Done',
            moved: 0,
            total: 0,
            at: new Date(this.#o.wallNow()).toISOString(),
            why: '',
          };
          if (await this.#patch(reshardRecord(record))) this.#doneTo = d.to;
        }
        return false;
      }
      // Another instance's Running record: Done for the count balanced now (its target, or the
      // count the spec went back to before anything moved).
      const same = current!.to === d.to;
      const done = e ?? {
        from: same ? current!.from : d.from,
        to: d.to,
        total: same ? current!.total : 0,
        moved: 0,
        startedAt: this.#o.now(),
        writtenAt: 0,
        why: '',
      };
      done.moved = done.total;
      this.#episode = done;
      await this.#write('Done', '');
      this.#episode = null;
      const seconds = e ? ((this.#o.now() - e.startedAt) / 1000).toFixed(1) : null;
      this.#o.event({
        type: 'Normal',
        reason: 'ReshardDone',
        message: `resharded ${done.from} -> ${done.to} shards: ${done.total} slots moved${seconds ? ` (${seconds} s on this instance)` : ''}`,
      });
      return false;
    }
    if (d.kind === 'refuse') {
      this.#episode = null;
      const key = `${d.from}->${d.to}`;
      if (this.#refused === key) return false;
      if (current?.state === 'Refused' && current.from === d.from && current.to === d.to) {
        this.#refused = key;
        return false;
      }
      const record: ReshardRecord = {
        from: d.from,
        to: d.to,
        state: 'Refused',
        moved: 0,
        total: 0,
        at: new Date(this.#o.wallNow()).toISOString(),
        why: d.reason,
      };
      if (await this.#patch(reshardRecord(record))) {
        this.#refused = key;
        this.#o.event({
          type: 'Warning',
          reason: 'ReshardRefused',
          message: `${d.from} -> ${d.to} shards refused, nothing moved: ${d.reason}`,
        });
      }
    }
    return false;
  }

  /** Slots moved by this round; the Running record is refreshed at most every PROGRESS_EVERY_MS. */
  async progress(slots: number): Promise<void> {
    const e = this.#episode;
    if (!e) return;
    e.moved = Math.min(e.total, e.moved + slots);
    if (this.#o.now() - e.writtenAt >= PROGRESS_EVERY_MS) await this.#write('Running', '');
  }

  async #write(state: ReshardRecord['state'], why: string, resourceVersion?: string): Promise<boolean> {
    const e = this.#episode!;
    const record: ReshardRecord = {
      from: e.from,
      to: e.to,
      state,
      moved: e.moved,
      total: e.total,
      at: new Date(this.#o.wallNow()).toISOString(),
      why,
    };
    if (!(await this.#patch(reshardRecord(record), resourceVersion))) return false;
    e.writtenAt = this.#o.now();
    return true;
  }

  async #patch(value: string, resourceVersion?: string): Promise<boolean> {
    try {
      await this.#o.kube.patchClusterAnnotations(this.#o.ref, { [RESHARD_ANNOTATION]: value }, resourceVersion);
      this.#annotation = value;
      return true;
    } catch (err) {
      const f = kubeFailure(err);
      this.#o.log.warn({ code: f.code, err: f.message }, 'could not write the reshard record');
      return false;
    }
  }
}
