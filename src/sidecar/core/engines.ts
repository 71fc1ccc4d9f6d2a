// The engines the nodes run, for either kind: writes each pod's engine annotation (the hook shows
// it as status.nodes) and tells a move between engines as Events, as core/decide/engines.ts
// decides. The kind's worker calls observe() on its rounds with what each node answered.
// Invariants: the leader only (a standby writes and tells nothing, and forgets the move, on
// reset() or when observed as one, so that it starts from what the pods answer if it leads
// later); one write pass at a time, in the background, never awaited by the round; a failed
// write is logged at debug and planned again on a later round (nothing depends on it but
// status); what this instance wrote counts until the informer shows the pod again (the core
// pod-label writer's overlay).
import type { Logger } from 'pino';
import { ENGINE_ANNOTATION, targetEngine, type NodeEngine } from '../../api/node-engine.ts';
import { decideEngineMove, engineWrites, type EngineMoveEvent, type MoveState } from './decide/engines.ts';
import { PodLabelWriter, type PodPatcher } from './pod-labels.ts';

export interface EngineWatchOptions {
  log: Logger;
  isLeader: () => boolean;
  event: (e: EngineMoveEvent) => void;
  /** Absent (test harnesses): the move is told, nothing is written. */
  kube?: PodPatcher | undefined;
  namespace: string;
  /** Keeps a background write in the worker's in-flight set. */
  track?: ((p: Promise<unknown>) => void) | undefined;
}

export interface EngineWatchPod {
  name: string;
  uid: string;
  annotations: Readonly<Record<string, string>>;
  /** What its node answered this round; null: it did not. */
  engine: NodeEngine | null;
  /** Runs its StatefulSet's current template; null: not known. */
  updated: boolean | null;
  /** A master now (by the kind's own view). */
  master: boolean;
}

export class EngineWatch {
  readonly #o: EngineWatchOptions;
  readonly #written: PodLabelWriter | null;
  #move: MoveState | null = null;
  #busy: Promise<void> | null = null;

  constructor(options: EngineWatchOptions) {
    this.#o = options;
    this.#written = options.kube ? new PodLabelWriter(options.kube, options.namespace) : null;
  }

  /** One round's pods; spec.engine as the spec says it (absent: not said); how many pods the spec asks for. */
  observe(pods: readonly EngineWatchPod[], specEngine: unknown, expected: number): void {
    if (!this.#o.isLeader()) {
      this.#move = null;
      return;
    }
    const movePods = pods.map((p) => ({ pod: p.name, engine: p.engine, updated: p.updated, master: p.master }));
    const d = decideEngineMove(this.#move, movePods, targetEngine(specEngine, movePods), expected);
    this.#move = d.state;
    for (const e of d.events) {
      this.#o.log.info({ reason: e.reason }, e.message);
      this.#o.event(e);
    }
    this.#write(pods);
  }

  /** Leadership lost: a later leadership starts from what the pods answer. */
  reset(): void {
    this.#move = null;
  }

  #write(pods: readonly EngineWatchPod[]): void {
    const writer = this.#written;
    if (!writer || this.#busy) return;
    writer.retain(new Set(pods.map((p) => p.uid)));
    const writes = engineWrites(
      pods.map((p) => ({
        name: p.name,
        uid: p.uid,
        published: writer.overlay(p.uid)?.annotations[ENGINE_ANNOTATION] ?? p.annotations[ENGINE_ANNOTATION],
        engine: p.engine,
      })),
    );
    if (writes.length === 0) return;
    this.#busy = (async () => {
      for (const w of writes) {
        if (!this.#o.isLeader()) return;
        const done = await writer.patch(w.pod, w.uid, { annotations: { [ENGINE_ANNOTATION]: w.value } });
        if (done.ok) this.#o.log.info({ pod: w.pod, engine: w.value }, 'engine reported on the pod');
        else this.#o.log.debug({ pod: w.pod, err: done.failure.message }, 'could not write the engine annotation');
      }
    })().finally(() => {
      this.#busy = null;
    });
    this.#o.track?.(this.#busy);
  }
}
