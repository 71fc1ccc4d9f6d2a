// Keeps each pod's replication annotation (offset, lag, when) fresh enough for humans
// (`kubectl redis status`), as decide/replication-report.ts decides. Invariants: the leader
// only, on steady rounds of a Redis at rest only, and at most once every CHECK_EVERY_MS (never
// in the way of a failover or a bring-up: 600 first reports written while a fleet came up slowed
// it threefold, and a check on every 100 ms round cost a third more sidecar CPU at rest); one
// pass at a time, in the background; a failed write is logged at debug and tried again on a later
// pass (nothing depends on these figures); what this instance wrote counts until the informer
// shows it.
import type { Logger } from 'pino';
import { REPLICATION_ANNOTATION, readReplicationRecord, replicationRecord, type ReplicationRecord } from '../../../api/labels.ts';
import { decideReplicationReports, type DecideInput } from '../decide/index.ts';
import type { PodView } from './pods.ts';
import type { KubeWriter } from './types.ts';

/** A Redis's pods are looked at for a report at most this often. */
export const CHECK_EVERY_MS = 5000;

export interface ReplicationReporterOptions {
  log: Logger;
  isLeader: () => boolean;
  /** Monotonic ms (the worker's clock). */
  now: () => number;
  /** The Redis is at rest: nothing changed lately, every pod answering. */
  atRest: () => boolean;
  patchPodMetadata: KubeWriter['patchPodMetadata'];
  wallNow?: () => number;
}

export class ReplicationReporter {
  readonly #o: ReplicationReporterOptions;
  /** By pod uid: what this instance wrote last. */
  readonly #written = new Map<string, ReplicationRecord>();
  #busy: Promise<void> | null = null;
  #checkedAt = -Infinity;

  constructor(options: ReplicationReporterOptions) {
    this.#o = options;
  }

  /** Starts a pass unless one is running; the promise ends with it (for the worker's in-flight set). */
  report(input: DecideInput, master: string, views: readonly PodView[]): Promise<void> | null {
    if (this.#busy || !this.#o.isLeader() || !this.#o.atRest()) return null;
    const now = this.#o.now();
    if (now - this.#checkedAt < CHECK_EVERY_MS) return null;
    this.#checkedAt = now;
    const byName = new Map(views.map((v) => [v.name, v]));
    for (const uid of this.#written.keys()) if (!views.some((v) => v.uid === uid)) this.#written.delete(uid);
    const published = new Map<string, ReplicationRecord | null>();
    for (const v of views) {
      const seen = readReplicationRecord(v.annotations[REPLICATION_ANNOTATION]);
      const mine = this.#written.get(v.uid) ?? null;
      published.set(v.name, mine && (!seen || Date.parse(mine.at) > Date.parse(seen.at)) ? mine : seen);
    }
    const reports = decideReplicationReports(input, master, published, (this.#o.wallNow ?? Date.now)());
    if (reports.length === 0) return null;
    this.#busy = (async () => {
      for (const r of reports) {
        const view = byName.get(r.pod);
        if (!view || !this.#o.isLeader()) continue;
        try {
          await this.#o.patchPodMetadata(view.namespace, view.name, { annotations: { [REPLICATION_ANNOTATION]: replicationRecord(r.record) }, uid: view.uid });
          this.#written.set(view.uid, r.record);
        } catch (err) {
          this.#o.log.debug({ pod: view.name, err: err instanceof Error ? err.message : String(err) }, 'could not write the replication annotation');
        }
      }
    })().finally(() => {
      this.#busy = null;
    });
    return this.#busy;
  }
}
