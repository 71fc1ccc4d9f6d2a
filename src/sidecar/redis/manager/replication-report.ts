// Keeps each pod's replication annotation (offset, lag, when) fresh enough for humans
// (`kubectl redis status`), as decide/replication-report.ts decides. Invariants: the leader
// only, on steady rounds of a Redis at rest only, and at most once every CHECK_EVERY_MS (never
// in the way of a failover or a bring-up: 600 first reports written while a fleet came up slowed
// it threefold, and a check on every 100 ms round cost a third more sidecar CPU at rest); one
// pass at a time, in the background; a failed write is logged at debug and tried again on a later
// pass (nothing depends on these figures); what this instance wrote (the core pod-label
// writer's overlay) counts until the informer shows a later one.
import type { Logger } from 'pino';
import {
  REPLICATION_ANNOTATION,
  readReplicationRecord,
  replicationRecord,
  type ReplicationRecord,
} from '../../../api/labels.ts';
import { decideReplicationReports, type DecideInput } from '../decide/index.ts';
import { PodLabelWriter, type PodPatcher } from '../../core/pod-labels.ts';
import type { PodView } from './pods.ts';

/** A Redis's pods are looked at for a report at most this often. */
export const CHECK_EVERY_MS = 5000;

export interface ReplicationReporterOptions {
  log: Logger;
  isLeader: () => boolean;
  /** Monotonic ms (the worker's clock). */
  now: () => number;
  /** The Redis is at rest: nothing changed lately, every pod answering. */
  atRest: () => boolean;
  kube: PodPatcher;
  /** The Redis's namespace (its pods'). */
  namespace: string;
  wallNow?: () => number;
}

export class ReplicationReporter {
  readonly #o: ReplicationReporterOptions;
  /** By pod uid: what this instance wrote last. */
  readonly #written: PodLabelWriter;
  #busy: Promise<void> | null = null;
  #checkedAt = -Infinity;

  constructor(options: ReplicationReporterOptions) {
    this.#o = options;
    this.#written = new PodLabelWriter(options.kube, options.namespace);
  }

  /** Starts a pass unless one is running; the promise ends with it (for the worker's in-flight set). */
  report(input: DecideInput, master: string, views: readonly PodView[]): Promise<void> | null {
    if (this.#busy || !this.#o.isLeader() || !this.#o.atRest()) return null;
    const now = this.#o.now();
    if (now - this.#checkedAt < CHECK_EVERY_MS) return null;
    this.#checkedAt = now;
    const byName = new Map(views.map((v) => [v.name, v]));
    this.#written.retain(new Set(views.map((v) => v.uid)));
    const published = new Map<string, ReplicationRecord | null>();
    for (const v of views) {
      const seen = readReplicationRecord(v.annotations[REPLICATION_ANNOTATION]);
      const mine = readReplicationRecord(this.#written.overlay(v.uid)?.annotations[REPLICATION_ANNOTATION]);
      published.set(v.name, mine && (!seen || Date.parse(mine.at) > Date.parse(seen.at)) ? mine : seen);
    }
    const reports = decideReplicationReports(input, master, published, (this.#o.wallNow ?? Date.now)());
    if (reports.length === 0) return null;
    this.#busy = (async () => {
      for (const r of reports) {
        const view = byName.get(r.pod);
        if (!view || !this.#o.isLeader()) continue;
        const annotations = { [REPLICATION_ANNOTATION]: replicationRecord(r.record) };
        const done = await this.#written.patch(view.name, view.uid, { annotations });
        if (done.ok) continue;
        this.#o.log.debug({ pod: view.name, err: done.failure.message }, 'could not write the replication annotation');
      }
    })().finally(() => {
      this.#busy = null;
    });
    return this.#busy;
  }
}
